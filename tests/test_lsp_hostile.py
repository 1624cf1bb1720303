"""`sparkpar server` spoken to in raw JSON-RPC over stdio, as a broken or hostile client would:
every request gets a response (an error code where it is bad), garbage pops nothing up in the
editor and logs no traceback, and the server keeps serving afterwards."""

from __future__ import annotations

import json
import queue
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

SPARKPAR = [sys.executable, "-c", "from sparkpar_lint.cli import main; main()", "server"]
JOB = "from pyspark.sql import functions as F\nout = df.orderBy('ts').groupBy('k').agg(F.first('v'))\n"
TIMEOUT = 60


class RawClient:
    def __init__(self, root: Path) -> None:
        self.process = subprocess.Popen(
            SPARKPAR, cwd=root, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
        self.messages: queue.Queue[dict | None] = queue.Queue()
        self.seen: list[dict] = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        stream = self.process.stdout
        while True:
            length = None
            while (line := stream.readline()) not in (b"\r\n", b""):
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":")[1])
            if not line or length is None:
                self.messages.put(None)
                return
            self.messages.put(json.loads(stream.read(length)))

    def raw(self, body: bytes) -> None:
        self.process.stdin.write(b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
        self.process.stdin.flush()

    def send(self, message: dict) -> None:
        self.raw(json.dumps({"jsonrpc": "2.0", **message}).encode())

    def wait_for(self, match) -> dict:
        deadline = time.monotonic() + TIMEOUT
        while time.monotonic() < deadline:
            try:
                message = self.messages.get(timeout=1)
            except queue.Empty:
                continue
            assert message is not None, "the server closed its output"
            self.seen.append(message)
            if match(message):
                return message
        raise AssertionError(f"no matching message in {TIMEOUT}s; saw {self.seen}")

    def request(self, msg_id, method: str, params) -> dict:
        self.send({"id": msg_id, "method": method, "params": params})
        return self.wait_for(lambda m: m.get("id") == msg_id and "method" not in m)


@pytest.fixture
def client(tmp_path):
    (tmp_path / "job.py").write_text(JOB)
    client = RawClient(tmp_path)
    reply = client.request(1, "initialize", {"capabilities": {}, "processId": None, "rootUri": tmp_path.as_uri()})
    assert "capabilities" in reply["result"]
    client.send({"method": "initialized", "params": {}})
    uri = (tmp_path / "job.py").as_uri()
    document = {"uri": uri, "languageId": "python", "version": 1, "text": JOB}
    client.send({"method": "textDocument/didOpen", "params": {"textDocument": document}})
    client.wait_for(lambda m: m.get("method") == "textDocument/publishDiagnostics" and m["params"]["diagnostics"])
    client.uri = uri
    yield client
    client.request(999, "shutdown", None)
    client.send({"method": "exit"})
    assert client.process.wait(TIMEOUT) == 0
    stderr = client.process.stderr.read().decode()
    assert "Traceback" not in stderr and 'File "' not in stderr, stderr
    popups = [m for m in client.seen if m.get("method") == "window/showMessage"]
    assert popups == []


def _hover(client, msg_id, position) -> dict:
    return client.request(msg_id, "textDocument/hover", {"textDocument": {"uri": client.uri}, "position": position})


def _still_serving(client, msg_id) -> None:
    reply = _hover(client, msg_id, {"line": 1, "character": 45})
    assert "SPX101" in reply["result"]["contents"]["value"]


@pytest.mark.parametrize("body", [b"this is not json", b"[1, 2", b"\xff\xfe", b'{"jsonrpc": "2.0", "id": '])
def test_unreadable_message_is_a_parse_error_and_nothing_pops_up(client, body):
    client.raw(body)
    reply = client.wait_for(lambda m: "error" in m and m.get("id") is None)
    assert reply["error"]["code"] == -32700
    _still_serving(client, 2)


@pytest.mark.parametrize(
    "params",
    [
        {"textDocument": {"uri": "file:///x.py"}, "position": {"line": -1, "character": -5}},
        "a string",
        [1, 2],
        {"textDocument": 5},
        None,
    ],
)
def test_request_with_invalid_params_gets_an_invalid_params_error(client, params):
    reply = client.request(7, "textDocument/hover", params)
    assert reply["error"]["code"] == -32602
    _still_serving(client, 8)


def test_request_on_a_document_never_opened_answers_without_a_traceback(client, tmp_path):
    never = (tmp_path / "never.py").as_uri()
    place = {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 0}}
    hover = client.request(
        3, "textDocument/hover", {"textDocument": {"uri": never}, "position": {"line": 0, "character": 0}}
    )
    assert hover == {"jsonrpc": "2.0", "id": 3, "result": None}
    actions = client.request(
        4, "textDocument/codeAction", {"textDocument": {"uri": never}, "range": place, "context": {"diagnostics": []}}
    )
    assert actions == {"jsonrpc": "2.0", "id": 4, "result": []}
    _still_serving(client, 5)


@pytest.mark.parametrize(
    "message",
    [
        {"jsonrpc": "2.0", "id": 42},  # a response to a request the server never sent
        {"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {"textDocument": 5}},
        {"jsonrpc": "2.0", "method": "textDocument/didChange", "params": "x"},
        {"jsonrpc": "2.0", "id": None, "method": "textDocument/hover", "params": {}},
        {"jsonrpc": "2.0", "id": True, "method": "textDocument/hover", "params": {}},
    ],
)
def test_malformed_notification_or_response_is_dropped_quietly(client, message):
    client.raw(json.dumps(message).encode())
    _still_serving(client, 6)
