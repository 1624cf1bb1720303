"""`StatefulProcessor` classes (`transformWithState(InPandas)`): which attributes hold Spark state.

`init` binds attributes to the state store's handles (`self.count = handle.getValueState(...)`);
updating those is the sanctioned way to keep per-key state, unlike any other attribute of the
processor, which one instance shares across every key of a task.
"""

from __future__ import annotations

import libcst as cst
import libcst.matchers as m

_STATE_GETTERS = frozenset({"getValueState", "getListState", "getMapState"})


def state_handles(graph, function) -> frozenset[str]:
    """Attribute names bound to state handles in the class that defines `function`."""
    owner = processor_class(graph, function)
    if owner is None:
        return frozenset()
    names = set()
    for assign in m.findall(owner, m.Assign(value=m.Call(func=m.Attribute()))):
        getter = assign.value.func.attr.value
        for target in assign.targets:
            attr = target.target
            if getter in _STATE_GETTERS and m.matches(attr, m.Attribute(value=m.Name("self"))):
                names.add(attr.attr.value)
    return frozenset(names)


def expires_state(owner: cst.ClassDef) -> bool:
    """The processor bounds its state: a handle created with a TTL (`getValueState(name, schema,
    ttl_ms)`) or timers that can clear it (`registerTimer`)."""
    for call in m.findall(owner, m.Call(func=m.Attribute())):
        method = call.func.attr.value
        if method == "registerTimer":
            return True
        if method in _STATE_GETTERS and (
            len(call.args) >= 3 or any(a.keyword is not None and "ttl" in a.keyword.value.lower() for a in call.args)
        ):
            return True
    return False


def processor_class(graph, function) -> cst.ClassDef | None:
    """The class whose method `function` is."""
    return next((d for d in graph.definitions if isinstance(d, cst.ClassDef) and function.node in d.body.body), None)
