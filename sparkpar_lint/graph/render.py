"""`sparkpar graph`: the stage graph as rich text, Mermaid, Graphviz dot or JSON."""

from __future__ import annotations

import io
import json
from collections.abc import Callable
from typing import Any

import libcst as cst

from sparkpar_lint.command_input import parse_source
from sparkpar_lint.graph.builder import build_graph
from sparkpar_lint.graph.stage_graph import Order, Partitioning, StageGraph, StageNode
from sparkpar_lint.model import Span
from sparkpar_lint.output.escape import path_text, visible
from sparkpar_lint.parsing import with_deep_stack

FORMATS = ("rich", "mermaid", "dot", "json")


# Where a span of the parsed text is in the file: (cell or None, span). Notebooks are parsed as
# one virtual module (sources/virtual.py); their nodes are shown at `cell N:line`.
Locate = Callable[[Span], tuple[int | None, Span]]


def render_graph(path: str, source: str, fmt: str, locate: Locate | None = None) -> str:
    """The graph of `source` in `fmt`; command_input.InputError when it does not parse."""
    return with_deep_stack(_render_graph, path, parse_source(path, source), fmt, locate)


def _render_graph(path: str, module: cst.Module, fmt: str, locate: Locate | None) -> str:
    graph = build_graph(module, path)
    where = {node.id: locate(node.span) if locate else (None, node.span) for node in graph.nodes}
    return {"rich": _rich, "mermaid": _mermaid, "dot": _dot, "json": _json}[fmt](graph, where)


def node_properties(node: StageNode, where: tuple[int | None, Span] | None = None) -> dict[str, Any]:
    cell, span = where or (None, node.span)
    return {
        "id": node.id,
        "api": node.api,
        **({"cell": cell} if cell is not None else {}),
        "line": span.line,
        "column": span.column,
        "inputs": node.inputs,
        "streaming": node.streaming,
        "keys": list(node.keys),
        "state": node.state,
        "selectivity": node.selectivity,
        "forwarding": node.forwarding,
        "order_requirement": node.order_requirement,
        "order_effect": node.order_effect,
        "partitioning": _partitioning(node.output_partitioning),
        "input_order": _order(node.input_order),
        "output_order": _order(node.output_order),
        "shuffle": node.is_shuffle,
        "functions": [f.name for f in node.functions],
        "column_functions": sorted({c.function for c in node.columns.calls}),
    }


def _order(order: Order) -> str:
    if order.kind == "per-key":
        return f"per-key({', '.join(order.keys)}; by {', '.join(order.by) or '?'})"
    if order.kind in ("total", "within-partition") and order.by:
        return f"{order.kind}(by {', '.join(order.by)})"
    return order.kind


def _partitioning(partitioning: Partitioning) -> str:
    if partitioning.keys:
        return f"{partitioning.kind}({', '.join(partitioning.keys)})"
    return partitioning.kind


def _line(where: tuple[int | None, Span]) -> str:
    cell, span = where
    return f"L{span.line}" if cell is None else f"cell {cell}:{span.line}"


def _label(node: StageNode, where: tuple[int | None, Span]) -> str:
    keys = f"({', '.join(node.keys)})" if node.keys else ""
    return f"{node.method}{keys} {_line(where)}"


def _json(graph: StageGraph, where: dict[int, tuple[int | None, Span]]) -> str:
    nodes = [node_properties(n, where[n.id]) for n in graph.nodes]
    return json.dumps({"path": graph.path, "nodes": nodes}, indent=2)


def _mermaid(graph: StageGraph, where: dict[int, tuple[int | None, Span]]) -> str:
    lines = ["flowchart LR"]
    for node in graph.nodes:
        label = f"{_label(node, where[node.id])}<br/>{node.state}, {node.selectivity}"
        lines.append(f'    n{node.id}["{_mermaid_text(label)}"]')
    for node in graph.nodes:
        for source in node.inputs:
            lines.append(f"    n{source} -->|{_mermaid_text(_order(graph.node(source).output_order))}| n{node.id}")
    return "\n".join(lines) + "\n"


def _mermaid_text(text: str) -> str:
    # Column names come from the checked code: a quote or bar would end the label, a newline
    # would start a line of the CI log; only our own <br/> stays markup.
    text = visible(text).replace("#", "#35;").replace('"', "#quot;").replace("|", "#124;")
    return text.replace("<", "#lt;").replace(">", "#gt;").replace("#lt;br/#gt;", "<br/>")


def _dot(graph: StageGraph, where: dict[int, tuple[int | None, Span]]) -> str:
    lines = ["digraph stages {", "    rankdir=LR;", "    node [shape=box];"]
    for node in graph.nodes:
        label = f"{_dot_text(_label(node, where[node.id]))}\\n{_dot_text(f'{node.state}, {node.selectivity}')}"
        lines.append(f'    n{node.id} [label="{label}"];')
    for node in graph.nodes:
        for source in node.inputs:
            lines.append(f'    n{source} -> n{node.id} [label="{_dot_text(_order(graph.node(source).output_order))}"];')
    lines.append("}")
    return "\n".join(lines) + "\n"


def _dot_text(text: str) -> str:
    """Text for a double-quoted dot string: backslashes and quotes escaped, controls visible."""
    return visible(text).replace("\\", "\\\\").replace('"', '\\"')


def _rich(graph: StageGraph, where: dict[int, tuple[int | None, Span]]) -> str:
    from rich.console import Console
    from rich.markup import escape
    from rich.tree import Tree

    # Paths and column names come from the checked tree: shown, never read as markup or controls.
    tree = Tree(f"[bold]{escape(path_text(graph.path))}[/bold]: {len(graph.nodes)} stages")
    branches: dict[int, Tree] = {}
    for node in graph.nodes:
        props = node_properties(node, where[node.id])
        text = escape(
            visible(
                f"{_line(where[node.id])}:{props['column'] + 1}  "
                f"state={props['state']} selectivity={props['selectivity']} "
                f"forwarding={props['forwarding']} order-req={props['order_requirement']} "
                f"order-effect={props['order_effect']} partitioning={props['partitioning']} "
                f"in={props['input_order']}"
            )
        )
        streaming = " [cyan]streaming[/cyan]" if node.streaming else ""
        parent = branches.get(node.inputs[0]) if node.inputs else None
        branches[node.id] = (parent or tree).add(f"[bold]{escape(visible(node.api))}[/bold] {text}{streaming}")
    buffer = io.StringIO()
    Console(file=buffer, width=160, no_color=True, highlight=False).print(tree)
    return buffer.getvalue()
