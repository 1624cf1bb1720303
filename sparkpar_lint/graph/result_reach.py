"""Where the rows a stage picked end up: kept as a result (written, returned, handed to other code,
read in a loop that does more than print) or only looked at.

Stricter than "not a preview": a result is kept only where a use that keeps it is seen. `for row
in top.collect(): print(row)` shows ten rows to a person; `return top`, `top.write...`,
`report(top.collect())` and `pdf.to_csv(...)` make them what the job produces.
"""

from __future__ import annotations

import libcst as cst
from sqlglot import exp

from sparkpar_lint.graph.stage_graph import StageGraph, StageNode
from sparkpar_lint.graph.tree_paths import path_to
from sparkpar_lint.graph.visiting import visit

# Calls that show a value to a person, or read only its size or text: nothing is kept.
_LOOKS = frozenset({"print", "display", "len", "bool", "str", "repr", "format", "type", "isinstance"})
_HANDED_ON = frozenset({"foreach", "foreachPartition", "foreachBatch"})
# pandas writers on a collected frame (`toPandas().to_csv(...)`).
_PANDAS_WRITES = frozenset({"to_csv", "to_parquet", "to_excel", "to_json", "to_sql", "to_pickle", "to_feather"})
# Wrappers a value passes through on its way to the use that decides (an index, a field, a
# container, an f-string, arithmetic): the use of the whole is the use of the part.
_CARRIERS = (
    cst.Subscript,
    cst.SubscriptElement,
    cst.Index,
    cst.Attribute,
    cst.Element,
    cst.StarredElement,
    cst.List,
    cst.Tuple,
    cst.Set,
    cst.DictElement,
    cst.Dict,
    cst.FormattedStringExpression,
    cst.FormattedString,
    cst.BinaryOperation,
    cst.UnaryOperation,
    cst.Comparison,
    cst.ComparisonTarget,
    cst.IfExp,
    cst.ListComp,
    cst.SetComp,
    cst.DictComp,
    cst.GeneratorExp,
    cst.CompFor,
    cst.ConcatenatedString,
)
_NAME_DEPTH = 3


def kept_as_result(graph: StageGraph, node: StageNode) -> str | None:
    """How `node`'s rows are kept ("`parquet` writing it", "a `return`"), or None when no use
    that keeps them is seen: shown, counted, dropped, or used where we cannot follow."""
    stages = [node, *graph.downstream(node)]
    for stage in stages:
        if stage.id in graph.training_inputs:
            return "model training on it"
        spec = stage.spec
        if spec is not None and (spec.sink or stage.method in _HANDED_ON):
            return f"`{stage.method}` writing it"
        if sql_writes(stage):
            return "the statement writing it"
    for stage in stages:
        value = stage.call if stage.call is not None else _sql_call(graph, stage)
        if value is not None and graph.module is not None:
            found = _kept(graph, graph.module, value, 0)
            if found is not None:
                return found
    return None


def sql_writes(node: StageNode) -> bool:
    """A stage of an `INSERT`, `MERGE`, `CREATE TABLE ... AS` or `CREATE MATERIALIZED VIEW ... AS`
    statement (a pipeline's stored view): its rows are written."""
    expression = getattr(node.sql, "expression", None)
    if expression is None:
        return False
    root = expression.root()
    if isinstance(root, exp.Create):
        return str(root.kind).upper() != "VIEW" or root.find(exp.MaterializedProperty) is not None
    return isinstance(root, (exp.Insert, exp.Merge))


def _sql_call(graph: StageGraph, node: StageNode) -> cst.Call | None:
    """The `spark.sql(...)` call whose result `node` is (a query's last stage)."""
    if node.sql is None:
        return None
    calls = [call for call in graph.nodes_of(cst.Call) if graph.sql_results.get(id(call)) == node.id]
    return calls[0] if calls and isinstance(calls[0], cst.Call) else None


def _kept(graph: StageGraph, module: cst.Module, value: cst.CSTNode, depth: int) -> str | None:
    path = path_to(module, value)
    if path is None:
        return None
    child = value
    for parent in reversed(path[:-1]):
        if isinstance(parent, cst.Return):
            return "a `return`"
        if isinstance(parent, cst.Call):
            return _called(graph, parent, child)
        if isinstance(parent, cst.Arg):
            child = parent
            continue
        if isinstance(parent, cst.Assign):
            return _stored(graph, module, path, parent, depth) if parent.value is child else None
        if isinstance(parent, cst.For):
            return _looped(parent) if parent.iter is child else None
        if isinstance(parent, _CARRIERS):
            child = parent
            continue
        return None  # a statement that drops it, a test of its truth, or a use we do not follow
    return None


def _called(graph: StageGraph, call: cst.Call, child: cst.CSTNode) -> str | None:
    """`f(value)` keeps it unless f only shows or sizes it; `value.to_csv(...)` writes it. A
    Spark method called on it is a stage of its own, judged as the stage downstream."""
    func = call.func
    if func is child and isinstance(func, cst.Attribute):
        method = func.attr.value
        return f"`{method}` writing it" if method in _PANDAS_WRITES else None
    if not isinstance(child, cst.Arg):
        return None
    callee = func.attr.value if isinstance(func, cst.Attribute) else getattr(func, "value", None)
    if callee is None or callee in _LOOKS or graph.analyses_of(call):
        return None
    return f"`{callee}` receiving it"


def _stored(
    graph: StageGraph, module: cst.Module, path: list[cst.CSTNode], assign: cst.Assign, depth: int
) -> str | None:
    """`top = ...`, `report["top"] = ...`: kept when a read of `top` (`report`) in the same
    function (or module) keeps it; `self.top = ...` keeps it on the object."""
    if depth >= _NAME_DEPTH or len(assign.targets) != 1:
        return None
    target: cst.BaseExpression = assign.targets[0].target
    while isinstance(target, (cst.Subscript, cst.Attribute)):
        target = target.value
    if not isinstance(target, cst.Name):
        return None
    if target.value == "self":
        return "an attribute of `self`"
    scope = next((n for n in reversed(path) if isinstance(n, cst.FunctionDef)), module)
    for name in _names(scope, target.value):
        if name is target:
            continue
        found = _kept(graph, module, name, depth + 1)
        if found is not None:
            return found
    return None


def _names(scope: cst.CSTNode, value: str) -> list[cst.Name]:
    found: list[cst.Name] = []

    class _Visitor(cst.CSTVisitor):
        def visit_Name(self, node: cst.Name) -> None:
            if node.value == value:
                found.append(node)

    visit(scope, _Visitor())
    return found


def _looped(loop: cst.For) -> str | None:
    """`for row in rows:` whose body does more than print: the rows feed what it computes."""
    for statement in loop.body.body:
        if isinstance(statement, cst.SimpleStatementLine) and all(_shows(small) for small in statement.body):
            continue
        return "a loop over it"
    return None


def _shows(small: cst.BaseSmallStatement) -> bool:
    if isinstance(small, cst.Pass):
        return True
    if not isinstance(small, cst.Expr) or not isinstance(small.value, cst.Call):
        return False
    func = small.value.func
    return isinstance(func, cst.Name) and func.value in _LOOKS
