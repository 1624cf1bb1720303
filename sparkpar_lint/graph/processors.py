"""`StatefulProcessor` classes (`transformWithState(InPandas)`): which attributes hold Spark state.

`init` binds attributes to the state store's handles (`self.count = handle.getValueState(...)`);
updating those is the sanctioned way to keep per-key state, unlike any other attribute of the
processor, which one instance shares across every key of a task.
"""

from __future__ import annotations

import libcst as cst
import libcst.matchers as m

from sparkpar_lint.graph.passed_function import UserFunction
from sparkpar_lint.graph.stage_graph import StageGraph

_STATE_GETTERS = frozenset({"getValueState", "getListState", "getMapState"})


def state_handles(graph: StageGraph, function: UserFunction) -> frozenset[str]:
    """Attribute names bound to state handles in the class that defines `function`."""
    owner = processor_class(graph, function)
    if owner is None:
        return frozenset()
    names = set()
    for assign in m.findall(owner, m.Assign(value=m.Call(func=m.Attribute()))):
        if not isinstance(assign, cst.Assign):
            continue
        getter = cst.ensure_type(cst.ensure_type(assign.value, cst.Call).func, cst.Attribute).attr.value
        for target in assign.targets:
            attr = target.target
            if (
                getter in _STATE_GETTERS
                and isinstance(attr, cst.Attribute)
                and m.matches(attr, m.Attribute(value=m.Name("self")))
            ):
                names.add(attr.attr.value)
    return frozenset(names)


def expires_state(owner: cst.ClassDef) -> bool:
    """The processor bounds its state: a handle created with a TTL (`getValueState(name, schema,
    ttl_ms)`) or timers that can clear it (`registerTimer`)."""
    for call in m.findall(owner, m.Call(func=m.Attribute())):
        if not isinstance(call, cst.Call) or not isinstance(call.func, cst.Attribute):
            continue
        method = call.func.attr.value
        if method == "registerTimer":
            return True
        if method in _STATE_GETTERS and (
            len(call.args) >= 3 or any(a.keyword is not None and "ttl" in a.keyword.value.lower() for a in call.args)
        ):
            return True
    return False


def processor_class(graph: StageGraph, function: UserFunction) -> cst.ClassDef | None:
    """The class whose method `function` is."""
    return next((d for d in graph.definitions if isinstance(d, cst.ClassDef) and function.node in d.body.body), None)
