"""A fix: node replacements in the module a finding was found in, plus the imports they need."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

import libcst as cst


class Applicability(StrEnum):
    """When `sparkpar fix` may apply a fix: always (safe), only with `--unsafe-fixes` (it makes a
    choice the author must review), or never (display only: offered in the editor and in SARIF,
    applied by hand). The values are what outputs and the cache write."""

    SAFE = "safe"
    UNSAFE = "unsafe"
    DISPLAY_ONLY = "display-only"


# What an original node becomes: a node, REMOVE (a statement dropped), or a function of the node
# as already rewritten below it, for fixes that change both a node and something inside it (the
# functions take the node type they were made for, hence `Any`).
Replacement = cst.CSTNode | cst.RemovalSentinel | Callable[[Any], cst.CSTNode | cst.RemovalSentinel]
# (module, name) pairs the replacement code needs, e.g. ("pyspark.sql", "functions").
Imports = tuple[tuple[str, str | None], ...]

# The short names the rules build their fixes with.
SAFE = Applicability.SAFE
UNSAFE = Applicability.UNSAFE


@dataclass(frozen=True)
class Fix:
    safety: Applicability
    description: str  # one line for the pull-request summary: what changed
    # (original node, replacement): originals are nodes of the very module the graph was built on.
    replacements: tuple[tuple[cst.CSTNode, Replacement], ...]
    imports: Imports = ()

    def applies(self, unsafe: bool) -> bool:
        """Whether `sparkpar fix` applies this fix, with or without `--unsafe-fixes`."""
        return self.safety is Applicability.SAFE or (unsafe and self.safety is Applicability.UNSAFE)
