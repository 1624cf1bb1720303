"""`node.visit(visitor)` for a read-only `CSTVisitor`, and `node.children`, at a fraction of
LibCST's cost.

LibCST's walk rebuilds every node it passes (each new node validated as the parser's are), though
a `CSTVisitor` throws the copies away: over a whole module that costs about as much as parsing it.
`visit` calls the same `on_visit`/`on_leave` callbacks on the same nodes in the same order, and
builds nothing; so does `children` (which LibCST computes with such a walk).
"""

from __future__ import annotations

import re
import typing
from dataclasses import fields

import libcst as cst

# Per-attribute callbacks (`visit_Call_func`): a visitor defining one is walked by LibCST itself.
_ATTRIBUTE_CALLBACK = re.compile(r"(?:visit|leave)_[A-Z][A-Za-z]*_[a-z_]+\Z")
_FIELDS: dict[type, tuple[str, ...]] = {}
_NODE_FIELDS: dict[type, frozenset[str]] = {}


def visit(node: cst.CSTNode, visitor: cst.CSTVisitor) -> None:
    """What `node.visit(visitor)` does for a `CSTVisitor`: `on_visit`, the children (when it
    returned true), `on_leave`, depth first in LibCST's own order."""
    if _quick(type(visitor)):
        _visit(node, visitor)
    else:
        node.visit(visitor)


def children(node: cst.CSTNode) -> list[cst.CSTNode]:
    """`node.children` (its child nodes in file order) without rebuilding `node`."""
    names = _FIELDS.get(type(node))
    if names is None:
        names = _fields(node)
    found: list[cst.CSTNode] = []
    for name in names:
        value = getattr(node, name)
        if type(value) is tuple or type(value) is list:
            found.extend(value)
        elif isinstance(value, cst.CSTNode):
            found.append(value)
    return found


def _visit(node: cst.CSTNode, visitor: cst.CSTVisitor) -> None:
    if visitor.on_visit(node):
        names = _FIELDS.get(type(node))
        if names is None:
            names = _fields(node)
        for name in names:
            value = getattr(node, name)
            if type(value) is tuple or type(value) is list:
                for child in value:
                    _visit(child, visitor)
            elif isinstance(value, cst.CSTNode):
                _visit(value, visitor)
    visitor.on_leave(node)


def _quick(kind: type[cst.CSTVisitor]) -> bool:
    # Not kept per class: visitors are often classes made anew by each call of a function.
    return (
        kind.on_visit_attribute is cst.CSTVisitor.on_visit_attribute
        and kind.on_leave_attribute is cst.CSTVisitor.on_leave_attribute
        and not any(
            _ATTRIBUTE_CALLBACK.match(name)
            for part in kind.__mro__
            if not part.__module__.startswith("libcst.")  # LibCST's own are empty stubs
            for name in vars(part)
        )
    )


def _fields(node: cst.CSTNode) -> tuple[str, ...]:
    """The fields LibCST's walk visits, in its order, read from that walk of `node` (it announces
    each field to `on_visit_attribute`) and kept for its type when it announced every field that
    can hold a node: a few types skip an empty one (an f-string field's `format_spec`)."""
    probe = _FieldOrder()
    node._visit_and_replace_children(probe)
    found = tuple(dict.fromkeys(probe.names))
    if _node_fields(type(node)) <= set(found):
        _FIELDS[type(node)] = found
    return found


def _node_fields(kind: type) -> frozenset[str]:
    held = _NODE_FIELDS.get(kind)
    if held is None:
        held = _NODE_FIELDS[kind] = frozenset(f.name for f in fields(kind) if _may_hold_node(f.type))
    return held


def _may_hold_node(annotation: object) -> bool:
    if typing.get_origin(annotation) is typing.Literal:
        return False
    parts = typing.get_args(annotation)
    if parts:
        return any(_may_hold_node(part) for part in parts)
    if isinstance(annotation, type):
        return issubclass(annotation, cst.CSTNode)
    return annotation is not None  # a forward reference, or anything unforeseen


class _FieldOrder(cst.CSTVisitor):
    """Notes the fields a node's walk announces, without going below its children."""

    def __init__(self) -> None:
        self.names: list[str] = []

    def on_visit(self, node: cst.CSTNode) -> bool:
        return False

    def on_visit_attribute(self, node: cst.CSTNode, attribute: str) -> None:
        self.names.append(attribute)
