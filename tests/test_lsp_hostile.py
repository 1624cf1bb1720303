"""`sparkpar server` spoken to in raw JSON-RPC over stdio, as a broken or hostile client would:
every request gets a response (an error code where it is bad), garbage pops nothing up in the
editor and logs no traceback, and the server keeps serving afterwards."""

from __future__ import annotations

import itertools
import json
import time

import pytest
from lsp_raw import JOB, TIMEOUT, RawClient


def _started(root) -> RawClient:
    (root / "job.py").write_text(JOB)
    client = RawClient(root)
    reply = client.request(1, "initialize", {"capabilities": {}, "processId": None, "rootUri": root.as_uri()})
    assert "capabilities" in reply["result"]
    client.send({"method": "initialized", "params": {}})
    uri = (root / "job.py").as_uri()
    document = {"uri": uri, "languageId": "python", "version": 1, "text": JOB}
    client.send({"method": "textDocument/didOpen", "params": {"textDocument": document}})
    client.wait_for(lambda m: m.get("method") == "textDocument/publishDiagnostics" and m["params"]["diagnostics"])
    client.uri = uri
    return client


def _stopped_cleanly(client: RawClient, *, shut_down: bool = False) -> None:
    if not shut_down:
        client.request(999, "shutdown", None)
    client.send({"method": "exit"})
    assert client.process.wait(TIMEOUT) == 0
    stderr = client.stderr()
    assert "Traceback" not in stderr and 'File "' not in stderr, stderr
    assert "Task exception" not in stderr, stderr


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """One server for the module: a start costs seconds of CPU, and surviving one hostile message
    after another is what a real editor session asks of it."""
    client = _started(tmp_path_factory.mktemp("server"))
    yield client
    _stopped_cleanly(client)


@pytest.fixture
def client(server):
    """The module's server, with every reply to earlier tests read: a request of an id no test uses
    is answered after them, and what each test sees starts empty."""
    drain = f"drain-{next(_DRAINS)}"
    _hover(server, drain, {"line": 0, "character": 0})
    server.seen = []
    yield server
    popups = [m for m in server.seen if m.get("method") == "window/showMessage"]
    assert popups == []


_DRAINS = itertools.count()


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
    ],
)
def test_malformed_notification_or_response_is_dropped_quietly(client, message):
    client.raw(json.dumps(message).encode())
    _still_serving(client, 6)


def _error(client, match) -> dict:
    return client.wait_for(lambda m: "error" in m and "method" not in m and match(m))["error"]


def test_json_that_is_no_json_rpc_request_is_an_invalid_request(client):
    cases = [
        (b"5", None),
        (b"null", None),
        (b'"hover"', None),
        (b'{"jsonrpc": "2.0"}', None),
        (b'{"id": 20, "method": "textDocument/hover", "params": {}}', 20),  # no "jsonrpc"
        (b'{"jsonrpc": "1.0", "id": 21, "method": "textDocument/hover", "params": {}}', 21),
        (b'{"jsonrpc": "2.0", "id": 22, "method": 5, "params": {}}', 22),
        # A notification's method with an id: pygls would drop the id and never answer.
        (
            b'{"jsonrpc": "2.0", "id": 24, "method": "textDocument/didSave", "params": {"textDocument": {"uri": ""}}}',
            24,
        ),
        # An id that cannot be echoed is answered as null.
        (b'{"jsonrpc": "2.0", "id": {"a": 1}, "method": "textDocument/hover", "params": {}}', None),
        (b'{"jsonrpc": "2.0", "id": [1], "method": "shutdown"}', None),
        (b'{"jsonrpc": "2.0", "id": true, "method": "textDocument/hover", "params": {}}', None),
        (b'{"jsonrpc": "2.0", "id": null, "method": "textDocument/hover", "params": {}}', None),
    ]
    for body, msg_id in cases:
        client.raw(body)
        error = _error(client, lambda m, msg_id=msg_id: m.get("id") == msg_id)
        assert error["code"] == -32600, (body, error)
    _still_serving(client, 23)


def test_a_batch_answers_each_request_in_it_with_an_invalid_request(client):
    place = {"textDocument": {"uri": client.uri}, "position": {"line": 1, "character": 45}}
    hover = {"jsonrpc": "2.0", "method": "textDocument/hover", "params": place}
    client.raw(json.dumps([{**hover, "id": 30}, {**hover, "id": 31}, {"jsonrpc": "2.0", "method": "x"}]).encode())
    assert _error(client, lambda m: m.get("id") == 30)["code"] == -32600
    assert _error(client, lambda m: m.get("id") == 31)["code"] == -32600
    client.raw(b"[]")
    assert _error(client, lambda m: m.get("id") is None)["code"] == -32600
    _still_serving(client, 32)


def test_a_message_nested_too_deeply_to_read_is_a_parse_error(client):
    client.raw(b'{"jsonrpc": "2.0", "id": 33, "method": "x", "params": ' + b"[" * 100_000 + b"]" * 100_000 + b"}")
    assert _error(client, lambda m: m.get("id") is None)["code"] == -32700
    _still_serving(client, 34)


@pytest.mark.parametrize(
    "garbage",
    [
        b"Content-Length: 99999999999999999999\r\n\r\n{}",  # would exhaust memory
        b"Content-Length: 1000000000\r\n\r\n{}",  # would wait forever for the rest
        b'Content-Type: application/json\r\n\r\n{"jsonrpc": "2.0", "method": "x"}',
        b"Content-Length: -5\r\n\r\n{}",
        b"Content-Length: 0\r\n\r\n",
    ],
)
def test_headers_that_do_not_frame_a_message_are_a_parse_error_and_reading_resumes(client, garbage):
    client.process.stdin.write(garbage)
    client.process.stdin.flush()
    assert _error(client, lambda m: m.get("id") is None)["code"] == -32700
    _still_serving(client, 40)  # the next message, glued to the garbage, is read


def test_a_body_longer_than_its_content_length_loses_nothing_after_it(tmp_path):
    client = _started(tmp_path)  # its own server: the test ends by shutting it down
    client.process.stdin.write(b'Content-Length: 5\r\n\r\n{"jsonrpc": "2.0", "method": "x"}')
    client.process.stdin.flush()
    assert _error(client, lambda m: m.get("id") is None)["code"] == -32700
    _still_serving(client, 41)
    # Header names are case-insensitive.
    body = json.dumps({"jsonrpc": "2.0", "id": 42, "method": "shutdown"}).encode()
    client.process.stdin.write(b"content-length: %d\r\n\r\n%s" % (len(body), body))
    client.process.stdin.flush()
    assert client.wait_for(lambda m: m.get("id") == 42) == {"jsonrpc": "2.0", "id": 42, "result": None}
    _stopped_cleanly(client, shut_down=True)


def test_notifications_on_documents_never_opened_pop_nothing_up(client, tmp_path):
    never = (tmp_path / "never.py").as_uri()
    (tmp_path / "on_disk.py").write_text(JOB)
    change = {"textDocument": {"uri": never, "version": 2}, "contentChanges": [{"text": "x = 1\n"}]}
    client.send({"method": "textDocument/didChange", "params": change})
    client.send({"method": "textDocument/didSave", "params": {"textDocument": {"uri": never}}})
    client.send(
        {"method": "textDocument/didSave", "params": {"textDocument": {"uri": (tmp_path / "on_disk.py").as_uri()}}}
    )
    notebook = {"notebookDocument": {"uri": (tmp_path / "nb.ipynb").as_uri(), "version": 2}, "change": {}}
    client.send({"method": "notebookDocument/didChange", "params": notebook})
    _still_serving(client, 50)
    time.sleep(1)  # past the debounce: nothing is analysed or published for them
    _still_serving(client, 51)
    published = [m["params"]["uri"] for m in client.seen if m.get("method") == "textDocument/publishDiagnostics"]
    assert set(published) <= {client.uri}  # the open document may be republished, nothing else


def test_lifecycle_out_of_order_is_answered(tmp_path):
    client = RawClient(tmp_path)
    hover = {"textDocument": {"uri": (tmp_path / "job.py").as_uri()}, "position": {"line": 0, "character": 0}}
    assert client.request(1, "textDocument/hover", hover)["error"]["code"] == -32002
    client.send({"method": "textDocument/didOpen", "params": {"textDocument": 5}})  # dropped
    reply = client.request(2, "initialize", {"capabilities": {}, "processId": None, "rootUri": tmp_path.as_uri()})
    assert "capabilities" in reply["result"]
    again = client.request(3, "initialize", {"capabilities": {}, "processId": None})
    assert again["error"]["code"] == -32600
    assert client.request(4, "shutdown", None) == {"jsonrpc": "2.0", "id": 4, "result": None}
    assert client.request(5, "textDocument/hover", hover)["error"]["code"] == -32600
    assert client.request(6, "shutdown", None)["error"]["code"] == -32600
    client.send({"method": "exit"})
    assert client.process.wait(TIMEOUT) == 0
    assert "Traceback" not in client.stderr()
    assert not [m for m in client.seen if m.get("method") == "window/showMessage"]
