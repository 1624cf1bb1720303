"""Reading and writing the files `sparkpar fix` rewrites, without ever losing an edit.

The text is decoded as Python would (PEP 263), and written back in the same encoding through a
temporary file in the same directory that replaces the original atomically.
"""

from __future__ import annotations

import io
import os
import tempfile
import tokenize


def encoding_of(data: bytes) -> str:
    encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    # detect_encoding calls UTF-8 with a BOM "utf-8-sig", which also writes the BOM back.
    return encoding


def write_atomically(path: str, text: str, encoding: str) -> None:
    data = text.encode(encoding)
    directory = os.path.dirname(os.path.abspath(path))
    mode = os.stat(path).st_mode
    handle, temporary = tempfile.mkstemp(dir=directory, prefix=".sparkpar-", suffix=".tmp")
    try:
        with os.fdopen(handle, "wb") as stream:
            stream.write(data)
            stream.flush()
            os.fsync(stream.fileno())
        os.chmod(temporary, mode)
        os.replace(temporary, path)
    except BaseException:
        if os.path.exists(temporary):
            os.unlink(temporary)
        raise
