"""Source bytes to text, the way Python reads a module."""

from __future__ import annotations

import io
import tokenize


def decode(data: bytes) -> str:
    """Bytes to text as Python itself would read them: UTF-8 unless a PEP 263 cookie says otherwise."""
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    except SyntaxError:
        # detect_encoding blames "the encoding declaration" for any non-UTF-8 byte in the first two
        # lines; decoding as UTF-8 names the byte and its offset instead.
        data.decode("utf-8")
        raise
    return data.decode(encoding)
