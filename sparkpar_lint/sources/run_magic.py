"""The notebooks a notebook runs with `%run ./other`: Databricks runs the other notebook in the
same namespace, so what it defines reaches this one and a change there can change findings here."""

from __future__ import annotations

import os
import re

# `%run ./x`, `# MAGIC %run ./x` in a source export, `"%run ./x\n",` in a Jupyter file's JSON.
_RUN = re.compile(rb'^[ \t]*"?(?:# MAGIC[ \t]*)?%run[ \t]+"?([^\s"\\]+)', re.MULTILINE)
_SUFFIXES = ("", ".py", ".ipynb", ".sql")


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
