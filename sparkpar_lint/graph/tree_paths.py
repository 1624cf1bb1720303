"""Paths through a LibCST tree, for rules and fixes that must know what encloses a node."""

from __future__ import annotations

import libcst as cst

from sparkpar_lint.graph.visiting import children


def path_to(root: cst.CSTNode, target: cst.CSTNode) -> list[cst.CSTNode] | None:
    """`root`, ..., `target`: the nodes from `root` down to `target` (by identity), or None."""
    if root is target:
        return [root]
    for child in children(root):
        below = path_to(child, target)
        if below is not None:
            return [root, *below]
    return None
