"""Ids a job mints itself, one per row, in the Python code that builds `createDataFrame`'s rows.

`rows = []`, then `for n in range(count): rows.append((f"TXN-{n:08d}", ...))` (or the same as a
comprehension, or a helper in this module that builds the list and returns it) gives every row its
own loop number, and `uuid4()` draws a fresh id for every row: the column is unique by
construction, however random the rest of the row is. A deduplication or a window keyed on it has
no two rows to choose between. Only what the code shows counts: a number from `range(...)` in the
one loop that appends (an outer loop would repeat it), written as itself, `str(n)`, `n + 1`, or one
f-string or concatenation around it; an id from `uuid4()`/`uuid1()` in any loop.
"""

from __future__ import annotations

import libcst as cst

from sparkpar_lint.graph.assignments import resolved
from sparkpar_lint.graph.call_arguments import call_argument
from sparkpar_lint.graph.schema_names import callee_name, ddl_names, struct_names
from sparkpar_lint.graph.stage_graph import StageGraph, StageNode
from sparkpar_lint.graph.tree_paths import path_to

_UUIDS = frozenset({"uuid4", "uuid1"})
_INJECTIVE_CASTS = frozenset({"str", "int"})
_MUTATORS = frozenset({"append", "extend", "insert"})
_Scope = cst.Module | cst.FunctionDef


def minted_sets(graph: StageGraph, node: StageNode) -> list[frozenset[str]]:
    """One set per column of `node`'s rows (a `createDataFrame` of rows built in Python) that the
    code gives a distinct value on every row."""
    if node.method != "createDataFrame" or node.call is None or graph.module is None:
        return []
    data = call_argument(node.call, 0, "data")
    found = _row_template(graph, data, node) if data is not None else None
    if found is None:
        return []
    row, counter = found
    if isinstance(row, cst.Dict):
        named = [
            (e.key.evaluated_value, e.value)
            for e in row.elements
            if isinstance(e, cst.DictElement) and isinstance(e.key, cst.SimpleString)
        ]
    elif isinstance(row, (cst.Tuple, cst.List)):
        schema = call_argument(node.call, 1, "schema")
        names = _schema_names(resolved(graph, schema, node)) if schema is not None else None
        if names is None or len(names) != len(row.elements):
            return []
        named = list(zip(names, (e.value for e in row.elements)))
    else:
        return []
    return [frozenset({name}) for name, value in named if isinstance(name, str) and _minted(value, counter)]


def _row_template(
    graph: StageGraph, data: cst.BaseExpression, at: StageNode
) -> tuple[cst.BaseExpression, str | None] | None:
    """(the expression each row is built from, the loop's counter when it runs over `range`)."""
    value = resolved(graph, data, at)
    if isinstance(value, cst.ListComp):
        loop = value.for_in
        if loop.inner_for_in is not None or not isinstance(loop.target, cst.Name):
            return None
        made = value.elt
        if isinstance(made, cst.Call) and isinstance(made.func, cst.Name):
            # `[make_customer() for _ in range(n)]`: the row the helper returns, drawn per call.
            helper = _helper(graph, made.func.value)
            row = _returned_row(helper) if helper is not None else None
            return (row, None) if row is not None else None
        return made, loop.target.value if _counts(loop.iter) else None
    if isinstance(value, cst.Call) and isinstance(value.func, cst.Name):
        helper = _helper(graph, value.func.value)
        returned = _returned_name(helper) if helper is not None else None
        return _appended_rows(graph, helper, returned) if helper is not None and returned is not None else None
    if isinstance(value, cst.List) and not value.elements and isinstance(data, cst.Name):
        return _appended_rows(graph, _enclosing(graph, at), data.value)
    return None


def _enclosing(graph: StageGraph, at: StageNode) -> _Scope | None:
    """The function whose body makes the stage's call, else the module."""
    path = path_to(graph.module, at.call) if graph.module is not None and at.call is not None else None
    functions = [n for n in path or [] if isinstance(n, cst.FunctionDef)]
    return functions[-1] if functions else graph.module


def _helper(graph: StageGraph, name: str) -> cst.FunctionDef | None:
    """The module's top-level `def name`, when it is defined once."""
    module = graph.module
    found = [s for s in module.body if isinstance(s, cst.FunctionDef) and s.name.value == name] if module else []
    return found[0] if len(found) == 1 else None


def _returned_row(function: cst.FunctionDef) -> cst.Dict | cst.Tuple | None:
    """The dict or tuple the function ends by returning, each name in it replaced by the value the
    function's body last gives that name (`customer_id = str(uuid.uuid4())`)."""
    body = function.body.body
    last = body[-1] if body else None
    if not (isinstance(last, cst.SimpleStatementLine) and isinstance(last.body[0], cst.Return)):
        return None
    row = last.body[0].value
    if not isinstance(row, (cst.Dict, cst.Tuple)):
        return None
    bound: dict[str, cst.BaseExpression] = {}
    for statement in body[:-1]:
        if isinstance(statement, cst.SimpleStatementLine):
            for small in statement.body:
                if isinstance(small, cst.Assign) and len(small.targets) == 1:
                    target = small.targets[0].target
                    if isinstance(target, cst.Name):
                        bound[target.value] = small.value
    elements = [
        e.with_changes(value=bound.get(e.value.value, e.value)) if isinstance(e.value, cst.Name) else e
        for e in row.elements
    ]
    return row.with_changes(elements=elements)


def _returned_name(function: cst.FunctionDef) -> str | None:
    """The name every `return` of the function hands back (one `return name` at its end)."""
    body = function.body.body
    last = body[-1] if body else None
    if isinstance(last, cst.SimpleStatementLine) and isinstance(last.body[0], cst.Return):
        value = last.body[0].value
        return value.value if isinstance(value, cst.Name) else None
    return None


def _appended_rows(graph: StageGraph, scope: _Scope | None, name: str) -> tuple[cst.BaseExpression, str | None] | None:
    """The row a list named `name` gets in its one `append`, in a `for` loop of `scope`, with the
    loop's counter when nothing else repeats it; None when anything else fills the list."""
    if scope is None or graph.module is None:
        return None
    changes = [call for call in _calls(scope) if _mutates(call, name)]
    if len(changes) != 1 or _extended(scope, name):
        return None
    append = changes[0]
    if callee_name(append.func) != "append" or len(append.args) != 1:
        return None
    path = path_to(scope, append) or []
    loops = [n for n in path if isinstance(n, (cst.For, cst.While))]
    if not loops or any(isinstance(n, (cst.FunctionDef, cst.Lambda)) for n in path[1:]):
        return None
    innermost = loops[-1]
    row = append.args[0].value
    if isinstance(row, cst.Name) and isinstance(innermost, cst.For):
        row = _bound_in(innermost, row.value) or row
    counter = None
    if len(loops) == 1 and isinstance(innermost, cst.For) and isinstance(innermost.target, cst.Name):
        target = innermost.target.value
        # A counter the loop body binds again (`n = pick()`) no longer counts.
        counter = target if _counts(innermost.iter) and _bound_in(innermost, target) is None else None
    return row, counter


def _calls(scope: cst.CSTNode) -> list[cst.Call]:
    found: list[cst.Call] = []

    class Collect(cst.CSTVisitor):
        def visit_Call(self, node: cst.Call) -> None:
            found.append(node)

    scope.visit(Collect())
    return found


def _extended(scope: cst.CSTNode, name: str) -> bool:
    """`rows += more` or `rows[i] = row` somewhere in the scope."""
    found = False

    class Look(cst.CSTVisitor):
        def visit_AugAssign(self, node: cst.AugAssign) -> None:
            nonlocal found
            found = found or (isinstance(node.target, cst.Name) and node.target.value == name)

        def visit_AssignTarget(self, node: cst.AssignTarget) -> None:
            nonlocal found
            target = node.target
            found = found or (
                isinstance(target, cst.Subscript) and isinstance(target.value, cst.Name) and target.value.value == name
            )

    scope.visit(Look())
    return found


def _mutates(call: cst.Call, name: str) -> bool:
    func = call.func
    return (
        isinstance(func, cst.Attribute)
        and isinstance(func.value, cst.Name)
        and func.value.value == name
        and func.attr.value in _MUTATORS
    )


def _bound_in(loop: cst.For, name: str) -> cst.BaseExpression | None:
    """The value a statement of the loop's body assigns to `name` (the last one)."""
    found = None
    for statement in loop.body.body:
        if isinstance(statement, cst.SimpleStatementLine):
            for small in statement.body:
                if (
                    isinstance(small, cst.Assign)
                    and len(small.targets) == 1
                    and isinstance(small.targets[0].target, cst.Name)
                    and small.targets[0].target.value == name
                ):
                    found = small.value
    return found


def _counts(iterable: cst.BaseExpression) -> bool:
    """`range(...)`: every value once."""
    return isinstance(iterable, cst.Call) and isinstance(iterable.func, cst.Name) and iterable.func.value == "range"


def _minted(value: cst.BaseExpression, counter: str | None) -> bool:
    """The value differs on every row: the loop counter, or a fresh uuid, through conversions
    that keep distinct values distinct."""
    if isinstance(value, cst.Name):
        return counter is not None and value.value == counter
    if isinstance(value, cst.Call):
        called = callee_name(value.func)
        if called in _UUIDS:
            return True
        if called in _INJECTIVE_CASTS and len(value.args) == 1:
            return _minted(value.args[0].value, counter)
        return False
    if isinstance(value, cst.Attribute) and value.attr.value == "hex":
        return _minted(value.value, counter)
    if isinstance(value, cst.FormattedString):
        expressions = [p for p in value.parts if isinstance(p, cst.FormattedStringExpression)]
        return len(expressions) == 1 and _minted(expressions[0].expression, counter)
    if isinstance(value, cst.BinaryOperation) and isinstance(value.operator, cst.Add):
        sides = (value.left, value.right)
        constant = [isinstance(s, (cst.SimpleString, cst.Integer)) for s in sides]
        return (constant[0] and _minted(sides[1], counter)) or (constant[1] and _minted(sides[0], counter))
    return False


def _schema_names(schema: cst.BaseExpression | None) -> list[str] | None:
    """`["a", "b"]`, `"a INT, b STRING"` or `StructType([StructField("a", ...), ...])`: the names,
    plain strings only (not `col("a")` in a list, nor a `StructType().add(...)` chain)."""
    if isinstance(schema, (cst.List, cst.Tuple)):
        values = [e.value.evaluated_value for e in schema.elements if isinstance(e.value, cst.SimpleString)]
        names = [v for v in values if isinstance(v, str)]
        return names if len(names) == len(schema.elements) else None
    if schema is None:
        return None
    return ddl_names(schema) or struct_names(schema, _string, added=False)


def _string(expr: cst.BaseExpression) -> str | None:
    return (
        expr.evaluated_value if isinstance(expr, cst.SimpleString) and isinstance(expr.evaluated_value, str) else None
    )
