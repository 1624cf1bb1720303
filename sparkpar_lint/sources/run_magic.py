"""The notebooks a notebook runs with `%run ./other`: Databricks runs the other notebook in the
same namespace, so what it defines reaches this one and a change there can change findings here.

A workspace path into a Git folder (`%run /Repos/<user>/<repo>/jobs/setup`, or the same under
`/Workspace`) names the file at `jobs/setup` in the repository: it is looked up as an absolute
import would be, from the notebook's folder up to the project root. Other workspace paths
(`/Users/...`, `/Shared/...`) name nothing in the checkout and are skipped.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable

# `%run ./x`, `# MAGIC %run ./x` in a source export, `"%run ./x\n",` in a Jupyter file's JSON.
_RUN = re.compile(rb'^[ \t]*"?(?:# MAGIC[ \t]*)?%run[ \t]+"?([^\s"\\]+)', re.MULTILINE)
_SUFFIXES = ("", ".py", ".ipynb", ".sql")
# A masked `%run ./helpers` line (a code cell's magic, or an export's `# MAGIC %run` cell).
_RUN_LINE = re.compile(r"^(?:# MAGIC[ \t]*)?%run[ \t]+((?:\.\.?/)+[\w/]+?)(?:\.py)?[ \t]*$")
_RUN_IN_REPO = re.compile(
    r"^(?:# MAGIC[ \t]*)?%run[ \t]+(?:/Workspace)?/Repos/[^/\s]+/[^/\s]+/([\w/]+?)(?:\.py)?[ \t]*$"
)
_IDENTIFIER = re.compile(r"[A-Za-z_]\w*\Z")
# `/Repos/<user>/<repo>/<path in the repository>`, optionally under `/Workspace`.
_IN_REPO = re.compile(r"(?:/Workspace)?/Repos/[^/]+/[^/]+/(.+)\Z")


def run_targets(notebook: str, data: bytes, search_dirs: Callable[[str], tuple[str, ...]]) -> list[str]:
    """Files `%run` names: a relative path resolved from the notebook's directory, a Git folder's
    workspace path in the checkout (looked up in `search_dirs(directory)`, the folders an absolute
    import is looked up in); other workspace paths and targets not on disk are left out."""
    here = os.path.dirname(os.path.abspath(notebook))
    found: list[str] = []
    for match in _RUN.finditer(data):
        target = match.group(1).decode("utf-8", "replace")
        if target.startswith(("./", "../")):
            path = _with_suffix(os.path.normpath(os.path.join(here, target)))
        else:
            path = _in_checkout(here, target, search_dirs)
        if path is not None and os.path.realpath(path) not in found:
            found.append(os.path.realpath(path))
    return found


def _with_suffix(base: str) -> str | None:
    return next((base + s for s in _SUFFIXES if os.path.isfile(base + s)), None)


def _in_checkout(here: str, target: str, search_dirs: Callable[[str], tuple[str, ...]]) -> str | None:
    """The file a `/Repos/<user>/<repo>/<path>` workspace path names in this checkout, if any."""
    match = _IN_REPO.match(target)
    if match is None:
        return None
    inside = os.path.normpath(match.group(1))
    if inside.startswith(".."):
        return None
    return next((p for d in search_dirs(here) if (p := _with_suffix(os.path.join(d, inside))) is not None), None)


def run_as_import(masked: str, original: str) -> str:
    """The virtual line of a notebook's `%run ./helpers`: `from .helpers import *` before the
    masked original, so the analysis reads the other notebook's functions as a star import's (the
    original comes back when the text is restored); `masked` unchanged for any other line."""
    match = _RUN_LINE.match(original)
    if match is None:
        in_repo = _RUN_IN_REPO.match(original)
        names = in_repo.group(1).split("/") if in_repo is not None else []
        if not names or not all(_IDENTIFIER.match(name) for name in names):
            return masked
        # The repository's path read as an absolute import: found from the notebook's folder up to
        # the project root, as `run_targets` finds it.
        return f"from {'.'.join(names)} import *  {masked}"
    parts = match.group(1).split("/")
    level = 1 + sum(1 for part in parts if part == "..")
    names = [part for part in parts if part not in (".", "..")]
    # `./a/../b`: a `..` after a name has no import spelling; leave the line masked.
    if parts[: len(parts) - len(names)] != [p for p in parts if p in (".", "..")] or not all(
        _IDENTIFIER.match(name) for name in names
    ):
        return masked
    return f"from {'.' * level}{'.'.join(names)} import *  {masked}"
