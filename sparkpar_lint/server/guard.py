"""What the language server does with messages it cannot use: a request whose params do not fit
gets a JSON-RPC error response (the editor would otherwise wait forever), garbage is answered
with a parse error or dropped, nothing pops up in the editor, and the log gets one line, not a
traceback. pygls' defaults do the opposite on each count."""

from __future__ import annotations

import json
import logging
from typing import Any

from lsprotocol import types as lsp
from pygls.exceptions import JsonRpcException, JsonRpcParseError
from pygls.protocol import LanguageServerProtocol
from pygls.protocol.json_rpc import JsonRPCNotification

# What a message that could not be structured becomes: a notification nobody handles.
DROPPED = "$/sparkpar/dropped"


class GuardedProtocol(LanguageServerProtocol):
    def structure_message(self, data: dict[str, Any]):
        try:
            return super().structure_message(data)
        except JsonRpcException as error:
            msg_id = data.get("id")
            if "method" in data and isinstance(msg_id, (int, str)) and not isinstance(msg_id, bool):
                method = data["method"] if isinstance(data["method"], str) else "?"
                self._send_response(msg_id, error=lsp.ResponseError(error.code, f"{error.message} for {method}"))
            # A response to a request we never sent, or a bad notification: nothing to answer.
            return JsonRPCNotification(method=DROPPED, jsonrpc="2.0", params=None)


def answer_unreadable(protocol: LanguageServerProtocol, error: Exception) -> bool:
    """Answer a message body that is not JSON with a parse error (id null, as JSON-RPC says);
    True when `error` was that."""
    if not isinstance(error, json.JSONDecodeError | UnicodeDecodeError):
        return False
    protocol._send_response(None, error=lsp.ResponseError(JsonRpcParseError.CODE, f"Parse error: {error}"))  # type: ignore[arg-type]
    return True


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
