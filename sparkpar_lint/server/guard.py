"""What the language server does with messages it cannot use: a request whose params do not fit
gets a JSON-RPC error response (the editor would otherwise wait forever), garbage is answered
with a parse error or an invalid-request error, or dropped, nothing pops up in the editor, and
the log gets one line, not a traceback. pygls' defaults do the opposite on each count."""

from __future__ import annotations

import json
import logging
import re
from typing import Any, BinaryIO

from lsprotocol import types as lsp
from pygls.exceptions import JsonRpcException, JsonRpcInvalidRequest, JsonRpcParseError, JsonRpcServerNotInitialized
from pygls.protocol import LanguageServerProtocol
from pygls.protocol.json_rpc import JsonRPCNotification

# What a message that could not be structured becomes: a notification nobody handles.
DROPPED = "$/sparkpar/dropped"
# What a header block the input could not frame becomes (FramedInput): answered as a parse error.
UNREADABLE = "$/sparkpar/unreadable"
# Far above any document an editor syncs; a claim above it is refused unread rather than
# buffered (a lying length would otherwise exhaust memory or swallow the stream).
MAX_MESSAGE = 256 * 1024 * 1024
_CHUNK = 64 * 1024
# A header line, wherever it ends: after a body shorter or longer than its Content-Length said,
# the next header is glued to the garbage before it, and reading resumes there.
_LENGTH = re.compile(rb"content-length:[ \t]*(-?\d+)[ \t]*\r?\n\Z", re.IGNORECASE)


def _valid_id(msg_id: object) -> bool:
    return isinstance(msg_id, int | float | str) and not isinstance(msg_id, bool)


def _as_dict(message: object) -> dict:
    """A batch element's fields, whether pygls structured it or left it a dict."""
    if isinstance(message, dict):
        return message
    return {name: getattr(message, name) for name in ("id", "method") if hasattr(message, name)}


class GuardedProtocol(LanguageServerProtocol):
    _initialize_seen = False

    def structure_message(self, data: dict[str, Any]):
        if "jsonrpc" not in data:
            return data  # a nested object (or not JSON-RPC at all: handle_message says so)
        invalid = self._invalid_request(data)
        if invalid is not None:
            self._refuse(data, JsonRpcInvalidRequest.CODE, invalid)
            return JsonRPCNotification(method=DROPPED, jsonrpc="2.0", params=None)
        try:
            return super().structure_message(data)
        except JsonRpcException as error:
            if "method" in data and _valid_id(data.get("id")):
                self._send_response(
                    data["id"], error=lsp.ResponseError(error.code, f"{error.message} for {data['method']}")
                )
            # A response to a request we never sent, or a bad notification: nothing to answer.
            return JsonRPCNotification(method=DROPPED, jsonrpc="2.0", params=None)

    @staticmethod
    def _invalid_request(data: dict[str, Any]) -> str | None:
        """Why `data` is not a JSON-RPC 2.0 message at all (None when it is one)."""
        if data.get("jsonrpc") != "2.0":
            return "Invalid Request: jsonrpc must be '2.0'"
        if "method" in data and not isinstance(data["method"], str):
            return "Invalid Request: method must be a string"
        if "id" in data and not _valid_id(data["id"]):
            return "Invalid Request: id must be a number or a string"
        if "method" not in data and "id" not in data:
            return "Invalid Request: neither a request, a notification nor a response"
        known = lsp.METHOD_TO_TYPES.get(data["method"]) if "method" in data else None
        if "id" in data and known is not None and known[1] is None:  # no response type
            # pygls would drop the id and handle it as the notification: the requester waits forever.
            return f"Invalid Request: {data['method']} is a notification"
        return None

    def _refuse(self, data: object, code: int, message: str) -> None:
        """Answer `data` if it asked for an answer (a request; a bad id is answered as null)."""
        if not isinstance(data, dict) or "method" not in data and "id" not in data:
            self._send_response(None, error=lsp.ResponseError(code, message))  # type: ignore[arg-type]
        elif "method" in data and "id" in data:
            msg_id = data["id"] if _valid_id(data["id"]) else None
            self._send_response(msg_id, error=lsp.ResponseError(code, message))  # type: ignore[arg-type]

    def handle_message(self, message):
        if isinstance(message, list):
            # LSP has no batches: each request in one is refused, so no requester waits forever.
            asked: list[dict | None] = [_as_dict(m) for m in message if "id" in _as_dict(m) and "method" in _as_dict(m)]
            for request in asked or [None]:
                self._refuse(request, JsonRpcInvalidRequest.CODE, "Invalid Request: batches are not supported")
            return
        if not hasattr(message, "jsonrpc"):  # JSON, but not a JSON-RPC message
            self._refuse(message, JsonRpcInvalidRequest.CODE, "Invalid Request: not a JSON-RPC 2.0 message")
            return
        method = getattr(message, "method", None)
        if method in (DROPPED, UNREADABLE, lsp.EXIT) or method is None:
            return super().handle_message(message)
        is_request = hasattr(message, "id")
        if self._shutdown:
            # pygls drops these unanswered; LSP says a request after shutdown is an invalid request.
            if is_request:
                self._refuse_request(message, JsonRpcInvalidRequest.CODE, "Invalid Request: the server is shut down")
            return
        if method == lsp.INITIALIZE and is_request:
            if self._initialize_seen:
                self._refuse_request(message, JsonRpcInvalidRequest.CODE, "Invalid Request: already initialized")
                return
            self._initialize_seen = True
        elif not self._initialize_seen:
            # LSP: before `initialize` a request is answered with ServerNotInitialized and a
            # notification is dropped.
            if is_request:
                self._refuse_request(message, JsonRpcServerNotInitialized.CODE, "Server Not Initialized")
            return
        return super().handle_message(message)

    def _refuse_request(self, message, code: int, text: str) -> None:
        self._send_response(message.id, error=lsp.ResponseError(code, f"{text} ({message.method})"))


def answer_unreadable(protocol: LanguageServerProtocol, error: Exception) -> bool:
    """Answer a message body that is not JSON with a parse error (id null, as JSON-RPC says);
    True when `error` was that."""
    if isinstance(error, RecursionError):
        reason = "Parse error: nested too deeply"
    elif isinstance(error, json.JSONDecodeError | UnicodeDecodeError):
        reason = f"Parse error: {error}"
    else:
        return False
    protocol._send_response(None, error=lsp.ResponseError(JsonRpcParseError.CODE, reason))  # type: ignore[arg-type]
    return True


def answer_unframed(protocol: LanguageServerProtocol, reason: str) -> None:
    protocol._send_response(None, error=lsp.ResponseError(JsonRpcParseError.CODE, f"Parse error: {reason}"))  # type: ignore[arg-type]


class FramedInput:
    """The server's input as pygls reads it (`readline` for headers, `read` for a body), kept in
    step with the client whatever the headers say: a header block without a usable
    Content-Length, or one claiming more than MAX_MESSAGE, becomes one UNREADABLE notification
    (answered with a parse error) instead of wedging or crashing the server, and reading resumes
    at the next header. Lines are read in chunks, so a giant unframed line costs no memory."""

    def __init__(self, stream: BinaryIO) -> None:
        self.stream = stream
        self.block = False  # a header line was read since the last body
        self.framed = False  # ... and it gave a usable length
        self.pending: list[bytes] = []  # lines (then a body) that stand for an unreadable block

    def readline(self) -> bytes:
        if self.pending:
            return self.pending.pop(0)
        line = self._line()
        if not line:
            return line
        match = _LENGTH.search(line)
        if match is not None and not self.framed:
            length = int(match.group(1))
            if 0 < length <= MAX_MESSAGE:
                self.block = self.framed = True
                return b"Content-Length: %d\r\n" % length
            reason = f"a Content-Length of {match.group(1).decode()} bytes"
            return self._unreadable(reason + (f" (the limit is {MAX_MESSAGE})" if length > 0 else ""))
        if line.strip():
            self.block = True
            return b"X-Ignored: \r\n"  # neither pygls' length pattern nor the end of the headers
        if self.block and not self.framed:
            return self._unreadable("a header without Content-Length")
        return line

    def _unreadable(self, reason: str) -> bytes:
        body = json.dumps({"jsonrpc": "2.0", "method": UNREADABLE, "params": {"reason": reason}}).encode()
        self.block = self.framed = False
        self.pending = [b"\r\n", body]
        return b"Content-Length: %d\r\n" % len(body)

    def read(self, size: int) -> bytes:
        self.block = self.framed = False
        if self.pending:
            return self.pending.pop(0)
        return self.stream.read(size)

    def _line(self) -> bytes:
        line = self.stream.readline(_CHUNK)
        while line and not line.endswith(b"\n"):
            more = self.stream.readline(_CHUNK)
            if not more:
                break
            line = line[-_CHUNK:] + more  # only a line's end can hold the header it ends with
        return line


class OneLineFormatter(logging.Formatter):
    """A log record as its first line: pygls logs whole tracebacks for every malformed message."""

    def format(self, record: logging.LogRecord) -> str:
        plain = logging.makeLogRecord({**record.__dict__, "exc_info": None, "exc_text": None, "stack_info": None})
        return super().format(plain).split("\n", 1)[0]


def one_line_logs() -> None:
    handler = logging.StreamHandler()
    handler.setFormatter(OneLineFormatter("sparkpar server: %(levelname)s: %(message)s"))
    logging.basicConfig(level=logging.WARNING, handlers=[handler])
    # The dropped message's notification is ours; its "unknown method" warning is noise.
    logging.getLogger("pygls.protocol.json_rpc").addFilter(lambda record: DROPPED not in str(record.args))
