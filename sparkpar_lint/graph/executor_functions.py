"""The functions a module hands Spark to run in tasks: passed by value, by name, or as a bound
method of the enclosing class (`rdd.map(self.parse)`).
"""

from __future__ import annotations

import libcst as cst

from sparkpar_lint.graph.passed_function import UserFunction
from sparkpar_lint.graph.stage_graph import StageGraph, StageNode
from sparkpar_lint.graph.user_functions import parameter_names

# Roles whose function runs on the driver (foreachBatch, DStream.transform/foreachRDD, DataFrame
# transform): plain Python there, not replicated.
DRIVER_ROLES = frozenset({"dataframe", "batch", "rdd"})


def executor_functions(graph: StageGraph) -> list[tuple[UserFunction, bool]]:
    """Every function the module hands to Spark to run in tasks, once each, with whether it is a
    bound method of the enclosing class (`rdd.map(self.parse)`: `self` is pickled into tasks)."""
    found: dict[int, tuple[UserFunction, bool]] = {}
    for function in graph.user_functions:
        if function.role not in DRIVER_ROLES:
            # A StatefulProcessor's method: one instance serves every key of a task.
            processor = function.role == "stateful-processor" and parameter_names(function.node)[:1] == ["self"]
            found.setdefault(id(function.node), (function, processor))
    for function in _bound_methods(graph):
        found.setdefault(id(function.node), (function, True))
    return list(found.values())


def _bound_methods(graph: StageGraph) -> list[UserFunction]:
    """`self.method` passed where the catalogue expects a function, resolved in its class."""
    candidates: list[tuple[StageNode, str, str]] = []  # (stage, its function role, method name)
    for node in graph.nodes:
        if node.spec is None or node.call is None or not node.spec.functions:
            continue
        if node.spec.function_role in DRIVER_ROLES:
            continue
        positional = [a.value for a in node.call.args if a.keyword is None]
        for index in node.spec.functions:
            arg = positional[index] if index < len(positional) else None
            if isinstance(arg, cst.Attribute) and isinstance(arg.value, cst.Name) and arg.value.value == "self":
                candidates.append((node, node.spec.function_role, arg.attr.value))
    if not candidates:
        return []
    classes = [c for c in graph.definitions if isinstance(c, cst.ClassDef)]
    methods = []
    for node, role, name in candidates:
        for class_def in classes:
            where = graph.span_of(class_def)
            if not (where.line <= node.span.line <= where.end_line):
                continue
            for statement in class_def.body.body:
                if isinstance(statement, cst.FunctionDef) and statement.name.value == name:
                    methods.append(UserFunction(name, statement, graph.span_of(statement.name), role))
    return methods
