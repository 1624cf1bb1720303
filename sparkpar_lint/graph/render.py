"""`sparkpar graph`: the stage graph as rich text, Mermaid, Graphviz dot or JSON."""

from __future__ import annotations

import io
import json

import libcst as cst

from sparkpar_lint.command_input import parse_source
from sparkpar_lint.graph.builder import build_graph
from sparkpar_lint.graph.stage_graph import Order, Partitioning, StageGraph, StageNode
from sparkpar_lint.parsing import with_deep_stack

FORMATS = ("rich", "mermaid", "dot", "json")


def render_graph(path: str, source: str, fmt: str) -> str:
    """The graph of `source` in `fmt`; command_input.InputError when it does not parse."""
    return with_deep_stack(_render_graph, path, parse_source(path, source), fmt)


def _render_graph(path: str, module: cst.Module, fmt: str) -> str:
    graph = build_graph(module, path)
    return {"rich": _rich, "mermaid": _mermaid, "dot": _dot, "json": _json}[fmt](graph)


def node_properties(node: StageNode) -> dict:
    return {
        "id": node.id,
        "api": node.api,
        "line": node.span.line,
        "column": node.span.column,
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


def _label(node: StageNode) -> str:
    keys = f"({', '.join(node.keys)})" if node.keys else ""
    return f"{node.method}{keys} L{node.span.line}"


def _json(graph: StageGraph) -> str:
    return json.dumps({"path": graph.path, "nodes": [node_properties(n) for n in graph.nodes]}, indent=2)


def _mermaid(graph: StageGraph) -> str:
    lines = ["flowchart LR"]
    for node in graph.nodes:
        lines.append(f'    n{node.id}["{_label(node)}<br/>{node.state}, {node.selectivity}"]')
    for node in graph.nodes:
        for source in node.inputs:
            lines.append(f"    n{source} -->|{_order(graph.node(source).output_order)}| n{node.id}")
    return "\n".join(lines) + "\n"


def _dot(graph: StageGraph) -> str:
    lines = ["digraph stages {", "    rankdir=LR;", "    node [shape=box];"]
    for node in graph.nodes:
        label = f"{_label(node)}\\n{node.state}, {node.selectivity}".replace('"', '\\"')
        lines.append(f'    n{node.id} [label="{label}"];')
    for node in graph.nodes:
        for source in node.inputs:
            lines.append(f'    n{source} -> n{node.id} [label="{_order(graph.node(source).output_order)}"];')
    lines.append("}")
    return "\n".join(lines) + "\n"


def _rich(graph: StageGraph) -> str:
    from rich.console import Console
    from rich.tree import Tree

    tree = Tree(f"[bold]{graph.path}[/bold]: {len(graph.nodes)} stages")
    branches = {}
    for node in graph.nodes:
        props = node_properties(node)
        text = (
            f"[bold]{node.api}[/bold] L{node.span.line}:{node.span.column + 1}  "
            f"state={props['state']} selectivity={props['selectivity']} "
            f"forwarding={props['forwarding']} order-req={props['order_requirement']} "
            f"order-effect={props['order_effect']} partitioning={props['partitioning']} "
            f"in={props['input_order']}" + (" [cyan]streaming[/cyan]" if node.streaming else "")
        )
        parent = branches.get(node.inputs[0]) if node.inputs else None
        branches[node.id] = (parent or tree).add(text)
    buffer = io.StringIO()
    Console(file=buffer, width=160, no_color=True, highlight=False).print(tree)
    return buffer.getvalue()
