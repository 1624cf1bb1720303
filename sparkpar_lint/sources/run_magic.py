"""The notebooks a notebook runs with `%run ./other`: Databricks runs the other notebook in the
same namespace, so what it defines reaches this one and a change there can change findings here."""

from __future__ import annotations

import os
import re

# `%run ./x`, `# MAGIC %run ./x` in a source export, `"%run ./x\n",` in a Jupyter file's JSON.
_RUN = re.compile(rb'^[ \t]*"?(?:# MAGIC[ \t]*)?%run[ \t]+"?([^\s"\\]+)', re.MULTILINE)
_SUFFIXES = ("", ".py", ".ipynb", ".sql")
# A masked `%run ./helpers` line (a code cell's magic, or an export's `# MAGIC %run` cell).
_RUN_LINE = re.compile(r"^(?:# MAGIC[ \t]*)?%run[ \t]+((?:\.\.?/)+[\w/]+?)(?:\.py)?[ \t]*$")
_IDENTIFIER = re.compile(r"[A-Za-z_]\w*\Z")


def run_targets(notebook: str, data: bytes) -> list[str]:
    """Files `%run` names with a relative path, resolved from the notebook's directory; workspace
    paths (`/Repos/...`) and targets not on disk are left out."""
    here = os.path.dirname(os.path.abspath(notebook))
    found: list[str] = []
    for match in _RUN.finditer(data):
        target = match.group(1).decode("utf-8", "replace")
        if not target.startswith(("./", "../")):
            continue
        base = os.path.normpath(os.path.join(here, target))
        path = next((base + s for s in _SUFFIXES if os.path.isfile(base + s)), None)
        if path is not None and os.path.realpath(path) not in found:
            found.append(os.path.realpath(path))
    return found


def run_as_import(masked: str, original: str) -> str:
    """The virtual line of a notebook's `%run ./helpers`: `from .helpers import *` before the
    masked original, so the analysis reads the other notebook's functions as a star import's (the
    original comes back when the text is restored); `masked` unchanged for any other line."""
    match = _RUN_LINE.match(original)
    if match is None:
        return masked
    parts = match.group(1).split("/")
    level = 1 + sum(1 for part in parts if part == "..")
    names = [part for part in parts if part not in (".", "..")]
    # `./a/../b`: a `..` after a name has no import spelling; leave the line masked.
    if parts[: len(parts) - len(names)] != [p for p in parts if p in (".", "..")] or not all(
        _IDENTIFIER.match(name) for name in names
    ):
        return masked
    return f"from {'.' * level}{'.'.join(names)} import *  {masked}"
