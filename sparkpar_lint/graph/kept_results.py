"""Whether anything computed from a stage is kept: written, returned, handed to other code, or bound
to a name that something other than a preview reads. A notebook that numbers rows, shows them with
`display(numbered)` and then writes a table built from the raw frame keeps nothing of the
numbering, so how its ties fall decides nothing.

Conservative by construction: a stage is "not kept" only when every use of its value is seen and
each one is a preview (`display`, `print`, `show`), a stage that is itself not kept, or nothing at
all (a name bound and never read again). Writers, views, `foreach`, helpers and unknown APIs keep.
"""

from __future__ import annotations

import libcst as cst

from sparkpar_lint.graph.stage_graph import StageGraph, StageNode

# Actions that only show rows or a plan to a person.
LOOKS = frozenset({"show", "display", "printSchema", "explain"})
# Results a person may glance at without keeping: lazy frames and actions returning rows.
_VALUE_KINDS = frozenset({"DataFrame", "GroupedData", "RDD", "driver"})


def nothing_kept(graph: StageGraph, node: StageNode) -> bool:
    """True when results derived from `node` are shown and none is kept (see the module docstring).

    A result that is only bound and never read is not enough on its own: snippets and helpers
    end that way, and the reader's use of it is unknown. A preview says what the use was, and
    only beside a write of something else: a script that only shows rows has them as its output.
    """
    shown: list[int] = []
    seen: set[int] = set()
    if not _not_kept(graph, node, seen, shown) or not shown:
        return False
    # Where showing rows is all a script does, the shown rows are its product; a job that writes
    # its results elsewhere only inspects along the way.
    return any(n.spec is not None and n.spec.sink and n.id not in seen for n in graph.nodes)


def _not_kept(graph: StageGraph, node: StageNode, seen: set[int], shown: list[int]) -> bool:
    if node.id in seen:
        return True
    seen.add(node.id)
    consumers = graph.consumers(node)
    if node.method in LOOKS and not consumers:
        shown.append(node.id)
        return True
    spec = node.spec
    if node.call is None or node.imported is not None or node.sql is not None or node.streaming:
        return False
    if spec is None or spec.sink or spec.functions or spec.returns not in _VALUE_KINDS | {""}:
        return False
    if not _uses_seen(graph, node, consumers, shown):
        return False
    return all(_not_kept(graph, consumer, seen, shown) for consumer in consumers)


def _uses_seen(graph: StageGraph, node: StageNode, consumers: list[StageNode], seen_shown: list[int]) -> bool:
    """Every place the stage's value goes is a consumer stage or a preview, or it goes nowhere."""
    value, spec = node.call, node.spec
    if value is None or spec is None:
        return False  # `_not_kept` returned before calling here
    shown = graph.previewed_args
    if id(value) in shown:
        # An action printed or shown; a lazy frame on a line by itself computes nothing to show.
        if spec.returns != "driver":
            return False
        seen_shown.append(node.id)
        return True
    if any(_reads(c, value) for c in consumers):
        return True
    assign = next((a for a in graph.nodes_of(cst.Assign) if isinstance(a, cst.Assign) and a.value is value), None)
    target = assign.targets[0].target if assign is not None and len(assign.targets) == 1 else None
    if not isinstance(target, cst.Name):
        return False  # returned, passed on, stored in a container: kept
    for name in graph.nodes_of(cst.Name):
        if not isinstance(name, cst.Name) or name is target or name.value != target.value:
            continue
        if id(name) in shown:
            seen_shown.append(node.id)
        elif not any(_reads(c, name) for c in consumers):
            return False  # read somewhere we cannot follow
    return True


def _reads(consumer: StageNode, value: cst.BaseExpression) -> bool:
    """`consumer` is called on `value` or takes it as an argument."""
    call = consumer.call
    if call is None:
        return False
    if isinstance(call.func, cst.Attribute) and call.func.value is value:
        return True
    return any(arg.value is value for arg in call.args)
