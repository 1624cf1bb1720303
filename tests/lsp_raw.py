"""A raw JSON-RPC client of `sparkpar server` over stdio, for tests that send what a real editor
never would (the pygls client refuses to)."""

from __future__ import annotations

import json
import queue
import subprocess
import sys
import threading
import time
from pathlib import Path

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
        self.log: list[bytes] = []  # stderr, read as it comes so a chatty server never blocks on it
        threading.Thread(target=self._read, daemon=True).start()
        self.logger = threading.Thread(target=lambda: self.log.extend(self.process.stderr), daemon=True)
        self.logger.start()

    def stderr(self) -> str:
        """What the server logged (call after it exited)."""
        self.logger.join(TIMEOUT)
        return b"".join(self.log).decode(errors="replace")

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
