"""Jupyter notebooks: cells from the JSON, and cell sources written back without disturbing the rest.

Outputs, metadata, key order and the file's indentation stay as they were; only the `source` of
cells a fix changed is replaced, in the same shape (a list of lines or one string).
"""

from __future__ import annotations

import json

from sparkpar_lint.sources.cells import PYTHON_CELL_MAGICS, Cell, cell_magic


class NotebookError(ValueError):
    """The file cannot be read as a notebook; the message names the file and the reason."""


def load(path: str, data: bytes) -> dict:
    try:
        notebook = json.loads(data.decode("utf-8-sig"))
    except UnicodeDecodeError as error:
        raise NotebookError(f"{path}: not a valid notebook: not UTF-8 (byte at offset {error.start})") from None
    except json.JSONDecodeError as error:
        raise NotebookError(
            f"{path}: not a valid notebook: invalid JSON at line {error.lineno} column {error.colno}: {error.msg}"
        ) from None
    except RecursionError:  # json recurses per nested array or object
        raise NotebookError(f"{path}: not a valid notebook: JSON nested too deeply") from None
    cells = notebook.get("cells") if isinstance(notebook, dict) else None
    if not isinstance(cells, list):  # `"cells": []` is a new, empty notebook: nothing to check
        raise NotebookError(f"{path}: not a valid notebook: it has no cells")
    for number, cell in enumerate(cells, 1):
        source = cell.get("source", "") if isinstance(cell, dict) else None
        if not isinstance(source, str) and not (isinstance(source, list) and all(isinstance(s, str) for s in source)):
            raise NotebookError(f"{path}: not a valid notebook: cell {number} has no readable source")
    return notebook


def read_cells(path: str, data: bytes) -> list[Cell]:
    notebook = load(path, data)
    python = _is_python(notebook)
    return [_cell(number, raw, python) for number, raw in enumerate(notebook["cells"], 1)]


def write_cells(data: bytes, sources: dict[int, str]) -> bytes:
    """The notebook with the given cells' sources replaced (keys are 1-based cell numbers)."""
    text = data.decode("utf-8-sig")
    notebook = json.loads(text)
    for number, source in sources.items():
        cell = notebook["cells"][number - 1]
        cell["source"] = source.splitlines(keepends=True) if isinstance(cell.get("source"), list) else source
    return _dump_like(notebook, text).encode("utf-8")


def source_text(raw: dict) -> str:
    source = raw.get("source", "")
    return "".join(source) if isinstance(source, list) else source


def _cell(number: int, raw: dict, python: bool) -> Cell:
    text = source_text(raw)
    lines = text.split("\n")
    trailing = text.endswith("\n")
    if trailing:
        lines.pop()
    cell = Cell(number, "other", lines, extra={"trailing_newline": trailing})
    if raw.get("cell_type") != "code" or not python:
        return cell
    magic = cell_magic(lines)
    first = next((i for i, line in enumerate(lines) if line.strip()), 0)
    if magic == "sql" or (lines and lines[first].strip() == "%sql"):
        cell.kind, cell.header = "sql", lines[first]
        cell.extra["header_line"] = first
    elif magic is None or magic in PYTHON_CELL_MAGICS:
        cell.kind = "code"
    return cell


def _is_python(notebook: dict) -> bool:
    metadata = notebook.get("metadata")
    if not isinstance(metadata, dict):
        return True
    for key, name in (("language_info", "name"), ("kernelspec", "language")):
        entry = metadata.get(key)
        if isinstance(entry, dict) and isinstance(entry.get(name), str):
            return entry[name].lower() in ("python", "python3", "pyspark")
    return True


def _dump_like(notebook: dict, original: str) -> str:
    """Serialise with the layout of `original` (indent, ASCII escapes, final newline) when one fits."""
    parsed = json.loads(original)
    ending = "\n" if original.endswith("\n") else ""
    for indent in (1, 2, 4, None, 3, "\t"):
        for ascii_only in (False, True):
            if json.dumps(parsed, indent=indent, ensure_ascii=ascii_only) + ending == original:
                return json.dumps(notebook, indent=indent, ensure_ascii=ascii_only) + ending
    return json.dumps(notebook, indent=1, ensure_ascii=False) + "\n"  # nbformat's own layout


def cell_positions(text: str) -> dict[int, tuple[str, list[int]]]:
    """Where each cell's source sits in the notebook's JSON text: cell number -> (the decoded
    source, the offset in `text` of each of its characters, then one past its end). An editor
    that opens the `.ipynb` file as text is shown findings at these places."""
    scanner = _Scanner(text)
    try:
        scanner.value(())
    except (IndexError, ValueError):
        return {}
    return scanner.sources


class _Scanner:
    """Just enough of a JSON reader to find `cells[i].source` strings with their offsets."""

    def __init__(self, text: str) -> None:
        self.text, self.at = text, 0
        self.sources: dict[int, tuple[str, list[int]]] = {}

    def value(self, path: tuple) -> None:
        self._space()
        char = self.text[self.at]
        if char == "{":
            self._members(path)
        elif char == "[":
            self._elements(path)
        elif char == '"':
            self._record(path, *self._string())
        else:
            while self.at < len(self.text) and self.text[self.at] not in ",]} \t\r\n":
                self.at += 1

    def _record(self, path: tuple, piece: str, offsets: list[int]) -> None:
        if len(path) >= 3 and path[0] == "cells" and path[2] == "source" and isinstance(path[1], int):
            text, where = self.sources.get(path[1] + 1, ("", []))
            # A source given as a list of lines: each piece continues the text, replacing the
            # previous piece's end offset.
            self.sources[path[1] + 1] = (text + piece, where[:-1] + offsets)

    def _members(self, path: tuple) -> None:
        self.at += 1
        while True:
            self._space()
            if self.text[self.at] == "}":
                self.at += 1
                return
            key = self._string()[0]
            self._space()
            self.at += 1  # ':'
            self.value((*path, key) if len(path) < 3 else path + ("",))
            self._space()
            if self.text[self.at] == ",":
                self.at += 1

    def _elements(self, path: tuple) -> None:
        self.at += 1
        index = 0
        while True:
            self._space()
            if self.text[self.at] == "]":
                self.at += 1
                return
            self.value((*path, index) if path == ("cells",) else path)
            index += 1
            self._space()
            if self.text[self.at] == ",":
                self.at += 1

    def _string(self) -> tuple[str, list[int]]:
        self.at += 1  # opening quote
        chars, offsets = [], []
        while self.text[self.at] != '"':
            start = self.at
            if self.text[self.at] == "\\":
                escape = self.text[self.at + 1]
                if escape == "u":
                    code = int(self.text[self.at + 2 : self.at + 6], 16)
                    self.at += 6
                    if 0xD800 <= code < 0xDC00 and self.text[self.at : self.at + 2] == "\\u":
                        code = (
                            0x10000 + ((code - 0xD800) << 10) + (int(self.text[self.at + 2 : self.at + 6], 16) - 0xDC00)
                        )
                        self.at += 6
                    chars.append(chr(code))
                else:
                    chars.append(_ESCAPES.get(escape, escape))
                    self.at += 2
            else:
                chars.append(self.text[self.at])
                self.at += 1
            offsets.append(start)
        offsets.append(self.at)
        self.at += 1
        return "".join(chars), offsets

    def _space(self) -> None:
        while self.text[self.at] in " \t\r\n":
            self.at += 1


_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "b": "\b", "f": "\f", '"': '"', "\\": "\\", "/": "/"}
