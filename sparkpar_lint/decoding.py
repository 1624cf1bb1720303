"""Source bytes to text, the way Python reads a module."""

from __future__ import annotations

import io
import tokenize


class DecodeError(ValueError):
    """A file's bytes are not text in the encoding Python would read them in; the message names
    the file and the byte, in one line."""


def decode(data: bytes) -> str:
    """Bytes to text as Python itself would read them: UTF-8 unless a PEP 263 cookie says otherwise."""
    return text_and_encoding(data)[0]


def text_and_encoding(data: bytes) -> tuple[str, str]:
    """`decode`, with the encoding the text was read in, to write it back in (`utf-8-sig` keeps a BOM)."""
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    except SyntaxError:
        # detect_encoding blames "the encoding declaration" for any non-UTF-8 byte in the first two
        # lines; decoding as UTF-8 names the byte and its offset instead.
        data.decode("utf-8")
        raise
    return data.decode(encoding), encoding


def decode_file(path: str, data: bytes) -> tuple[str, str]:
    """`text_and_encoding` of the file at `path`; DecodeError naming it when Python could not read it."""
    try:
        return text_and_encoding(data)
    except (SyntaxError, UnicodeDecodeError, LookupError) as error:
        raise DecodeError(f"{path}: cannot decode: {_reason(error)}") from None


def _reason(error: Exception) -> str:
    if isinstance(error, UnicodeDecodeError):
        byte = error.object[error.start]
        return (
            f"not valid {error.encoding} (byte {byte:#04x} at offset {error.start}); save it as UTF-8"
            " or declare its encoding with a PEP 263 coding comment"
        )
    return str(error)
