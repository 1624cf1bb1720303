"""A fix: node replacements in the module a finding was found in, plus the imports they need."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import libcst as cst

SAFE = "safe"
UNSAFE = "unsafe"


@dataclass(frozen=True)
class Fix:
    safety: str  # SAFE or UNSAFE
    description: str  # one line for the pull-request summary: what changed
    # (original node, replacement): originals are nodes of the very module the graph was built on.
    # A replacement is a node, or a function of the node as already rewritten below it, for
    # fixes that change both a node and something inside it.
    replacements: tuple[tuple[cst.CSTNode, cst.CSTNode | Callable[[cst.CSTNode], cst.CSTNode]], ...]
    # (module, name) pairs the replacement code needs, e.g. ("pyspark.sql", "functions").
    imports: tuple[tuple[str, str | None], ...] = ()
