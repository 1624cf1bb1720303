"""The plain alias a dropped call can leave behind (`ordered = views.orderBy("ts")` becomes
`ordered = views`), removed where that changes nothing: the statement goes and its one reader
reads the aliased name instead.

Only inside a function, where every reader is in sight (a module-level name may be imported, or
shared by a notebook's `%run`), and only when:
- the alias is bound once and read once, later in the same body and not from a nested scope;
- the aliased name is the function's own (a parameter or bound earlier in its body) and nothing
  between the alias and its reader binds it again, so both name the same DataFrame;
- the statement holds no comment, which would have nowhere to go.
A self-assignment (`df = df.orderBy("ts")` becomes `df = df`) just goes, under the same terms.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from functools import lru_cache

import libcst as cst

from sparkpar_lint.edits.model import Replacement
from sparkpar_lint.graph.positions import walk

# (function, its body's statements, index of `name = value` among them)
_Found = tuple[cst.FunctionDef, Sequence[cst.BaseStatement], int]
_NESTED = (cst.FunctionDef, cst.ClassDef, cst.Lambda, cst.ListComp, cst.SetComp, cst.DictComp, cst.GeneratorExp)


def alias_removal(
    module: cst.Module | None, value: cst.Call, receiver: cst.BaseExpression
) -> tuple[tuple[cst.CSTNode, Replacement], ...] | None:
    """((statement, REMOVE), (reader, name)) or None: `value` is the call the fix drops, leaving
    `receiver` as the assigned value."""
    if module is None or not isinstance(receiver, cst.Name):
        return None
    found = _alias_statement(module, value)
    if found is None:
        return None
    function, body, index = found
    statement = body[index]
    target = assigned_name(statement)
    if target is None:
        return None  # not met: the statements found are `name = call`
    alias = target.value
    aliased = receiver.value
    if _has_comment(statement) or _declared(function, {alias, aliased}):
        return None
    if not _local(function, body[:index], aliased):
        return None
    if alias == aliased:
        return ((statement, cst.RemovalSentinel.REMOVE),)
    uses = [n for n in _names(function) if n.value == alias]
    if len(uses) != 2:
        return None  # bound or read elsewhere (or a parameter of that name)
    reader = next(n for n in uses if n is not target)
    later = next((i for i in range(index + 1, len(body)) if _reads_plainly(body[i], reader)), None)
    if later is None:
        return None
    between = body[index + 1 : later]
    if any(aliased in bound_names(s) for s in between) or aliased in _bound_before_assignment(body[later]):
        return None
    return ((statement, cst.RemovalSentinel.REMOVE), (reader, cst.Name(aliased)))


def assigned_name(statement: cst.CSTNode) -> cst.Name | None:
    """`name` of a `name = value` statement line."""
    if not isinstance(statement, cst.SimpleStatementLine) or not isinstance(statement.body[0], cst.Assign):
        return None
    target = statement.body[0].targets[0].target
    return target if isinstance(target, cst.Name) else None


def _alias_statement(module: cst.Module, value: cst.Call) -> _Found | None:
    """(function, its body's statements, index) of `name = value` directly in a function's body."""
    return _alias_statements(module).get(id(value))


@lru_cache(maxsize=1)
def _alias_statements(module: cst.Module) -> dict[int, _Found]:
    """id(value) -> (function, body, index) for every `name = value` directly in a function's
    body, from one walk: a rule asks once per finding, and a walk each time made a module with a
    sorted aggregate on every line quadratic. Kept for the last module only (rules ask about one
    module at a time, and the fixer's next pass parses a new one)."""
    found: dict[int, _Found] = {}
    for function in (node for node in walk(module, trivia=False) if isinstance(node, cst.FunctionDef)):
        body: Sequence[cst.BaseStatement] = function.body.body if isinstance(function.body, cst.IndentedBlock) else ()
        for index, statement in enumerate(body):
            if not isinstance(statement, cst.SimpleStatementLine) or len(statement.body) != 1:
                continue
            assign = statement.body[0]
            if (
                isinstance(assign, cst.Assign)
                and isinstance(assign.value, cst.Call)
                and len(assign.targets) == 1
                and isinstance(assign.targets[0].target, cst.Name)
            ):
                found.setdefault(id(assign.value), (function, body, index))
    return found


def _names(node: cst.CSTNode) -> Iterator[cst.Name]:
    if isinstance(node, cst.Name):
        yield node
    for child in node.children:
        yield from _names(child)


def _has_comment(node: cst.CSTNode) -> bool:
    return isinstance(node, cst.Comment) or any(_has_comment(c) for c in node.children)


def _declared(function: cst.FunctionDef, names: set[str]) -> bool:
    """`global` or `nonlocal` of one of `names` anywhere in the function."""

    def walk(node: cst.CSTNode) -> bool:
        if isinstance(node, (cst.Global, cst.Nonlocal)) and any(n.name.value in names for n in node.names):
            return True
        return any(walk(c) for c in node.children)

    return walk(function)


def _local(function: cst.FunctionDef, before: Sequence[cst.BaseStatement], name: str) -> bool:
    """`name` is a parameter of the function or bound by a statement of its body before the alias."""
    params = function.params
    every = [*params.posonly_params, *params.params, *params.kwonly_params]
    every += [p for p in (params.star_arg, params.star_kwarg) if isinstance(p, cst.Param)]
    return any(p.name.value == name for p in every) or any(name in bound_names(s) for s in before)


def _reads_plainly(statement: cst.CSTNode, reader: cst.Name) -> bool:
    """`reader` is in `statement`, read there outside any nested scope and not as an attribute's
    or keyword's name."""

    def walk(node: cst.CSTNode, parent: cst.CSTNode | None) -> bool | None:
        if node is reader:
            named = isinstance(parent, cst.Attribute) and parent.attr is node
            keyword = isinstance(parent, cst.Arg) and parent.keyword is node
            return not (named or keyword)
        for child in node.children:
            found = walk(child, node)
            if found is not None:
                return found and not isinstance(node, _NESTED)
        return None

    return bool(walk(statement, None))


def bound_names(node: cst.CSTNode) -> set[str]:
    """Names a statement binds anywhere in it (nested scopes too: a superset is the safe side)."""
    names: set[str] = set()

    def targets(target: cst.CSTNode) -> None:
        if isinstance(target, cst.Name):
            names.add(target.value)
        elif isinstance(target, (cst.Tuple, cst.List)):
            for element in target.elements:
                targets(element.value)
        elif isinstance(target, cst.StarredElement):
            targets(target.value)

    def walk(node: cst.CSTNode) -> None:
        if isinstance(node, (cst.AssignTarget, cst.AugAssign, cst.AnnAssign, cst.NamedExpr)):
            targets(node.target)
        elif isinstance(node, (cst.For, cst.CompFor)):
            targets(node.target)
        elif isinstance(node, cst.AsName):
            targets(node.name)
        elif isinstance(node, cst.Del):
            targets(node.target)
        elif isinstance(node, (cst.FunctionDef, cst.ClassDef)):
            names.add(node.name.value)
        elif isinstance(node, (cst.MatchAs, cst.MatchStar)) and node.name is not None:
            names.add(node.name.value)
        elif isinstance(node, cst.ImportAlias) and node.asname is None:
            names.add((cst.helpers.get_full_name_for_node(node.name) or "").split(".")[0])
        for child in node.children:
            walk(child)

    walk(node)
    return names


def _bound_before_assignment(statement: cst.CSTNode) -> set[str]:
    """What the reader's statement binds before its value is read: all it binds, but the targets
    of a plain assignment (bound after the value)."""
    if isinstance(statement, cst.SimpleStatementLine) and len(statement.body) == 1:
        small = statement.body[0]
        if isinstance(small, cst.Assign):
            return bound_names(small.value)
        if isinstance(small, (cst.Return, cst.Expr)) and small.value is not None:
            return bound_names(small.value)
    return bound_names(statement)
