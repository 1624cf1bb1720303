"""Values hashed from a row's own columns, the SPX105 fixes for draws and ids that depend on the
partitioning: a hash of what a row holds is the same whichever partition holds it.

`xxhash64("*")` hashes every column of the stage's input. Spark expands the star inside a
function only in a projection or a filter (`withColumn`, `select`, `filter`), so these fixes are
offered there only; `F.struct("*")` does the same inside a window over such a projection.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import libcst as cst

from sparkpar_lint.edits.code import column_function, string
from sparkpar_lint.edits.model import UNSAFE, Fix, Imports
from sparkpar_lint.graph.stage_graph import ColumnCall, StageGraph, StageNode
from sparkpar_lint.graph.tree_paths import path_to
from sparkpar_lint.model import NoFix

# Doubles hold every integer below 2**53: pmod(hash, 2**53) / 2**53 is exact and uniform in [0, 1).
_RANGE_BITS = 53
# Stages where Spark expands `"*"` inside a function's arguments.
STAR_STAGES = frozenset({"withColumn", "withColumns", "select", "filter", "where"})
# Calls a hashed draw may sit under without leaving the row's own projection or filter.
_WINDOWED = frozenset({"over", "orderBy", "partitionBy", "rowsBetween", "rangeBetween"})


def _power() -> cst.BinaryOperation:
    return cst.BinaryOperation(
        left=cst.Integer("2"),
        operator=cst.Power(whitespace_before=cst.SimpleWhitespace(""), whitespace_after=cst.SimpleWhitespace("")),
        right=cst.Integer(str(_RANGE_BITS)),
    )


def row_hash(like: cst.Call, seed: cst.BaseExpression | None) -> tuple[cst.Call, Imports]:
    """`F.xxhash64("*")`, or `F.xxhash64("*", F.lit(seed))`: the row's columns (and the seed)."""
    args: list[cst.BaseExpression] = [string("*")]
    imports: Imports = ()
    if seed is not None:
        literal, imports = column_function(like, "lit", [seed])
        args.append(literal)
    hashed, more = column_function(like, "xxhash64", args)
    return hashed, imports + more


def uniform_from_row(
    like: cst.Call, seed: cst.BaseExpression | None, bracketed: bool
) -> tuple[cst.BaseExpression, Imports]:
    """`F.pmod(F.xxhash64("*"), 2**53) / 2**53`: a value in [0, 1) that follows the row, in
    brackets where it is an operand (`rand() * 10` must stay `(...) * 10`)."""
    hashed, imports = row_hash(like, seed)
    reduced, more = column_function(like, "pmod", [hashed, _power()])
    value = cst.BinaryOperation(left=reduced, operator=cst.Divide(), right=_power())
    if bracketed:
        value = value.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
    return value, imports + more


def bucket_filters(
    like: cst.Call, receiver: cst.Name, cuts: list[int], buckets: int, indent: str
) -> tuple[cst.List, Imports]:
    """`[df.filter(F.pmod(F.xxhash64("*"), 100) < 80), df.filter(... >= 80)]`, one split a line:
    the rows whose hash bucket falls in each weight's share, in `randomSplit`'s order."""
    imports: Imports = ()
    conditions: list[cst.BaseExpression] = []
    bounds = [0, *cuts, buckets]
    for low, high in zip(bounds, bounds[1:]):
        hashed, more = row_hash(like, None)
        bucket, even_more = column_function(like, "pmod", [hashed, cst.Integer(str(buckets))])
        imports += more + even_more
        if low == 0:
            conditions.append(_compare(bucket, cst.LessThan(), high))
        elif high == buckets:
            conditions.append(_compare(bucket, cst.GreaterThanEqual(), low))
        else:
            between = cst.Call(
                func=cst.Attribute(value=bucket, attr=cst.Name("between")),
                args=[
                    cst.Arg(cst.Integer(str(low)), comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))),
                    cst.Arg(cst.Integer(str(high - 1))),
                ],
            )
            conditions.append(between)
    return _filters(receiver, conditions, indent), imports


def copy_numbered_hash(like: cst.Call, window: cst.Name) -> tuple[cst.Call, Imports]:
    """`F.xxhash64("*", F.row_number().over(Window.partitionBy(F.struct("*")).orderBy(F.struct("*"))))`:
    the row's columns and its number among rows identical to it. Identical rows are
    interchangeable, so which copy gets which number changes no (row, id) pair."""
    whole, imports = column_function(like, "struct", [string("*")])
    spec = cst.Call(
        func=cst.Attribute(
            value=cst.Call(func=cst.Attribute(value=window, attr=cst.Name("partitionBy")), args=[cst.Arg(whole)]),
            attr=cst.Name("orderBy"),
        ),
        args=[cst.Arg(whole)],
    )
    numbered, more = column_function(like, "row_number", [])
    copy = cst.Call(func=cst.Attribute(value=numbered, attr=cst.Name("over")), args=[cst.Arg(spec)])
    hashed, most = column_function(like, "xxhash64", [string("*"), copy])
    return hashed, imports + more + most


def split_buckets(weights: list[float]) -> tuple[list[int], int] | None:
    """The cumulative normalised weights as whole buckets out of 100, 1,000 or 10,000 (the
    first that holds them exactly), or None."""
    total = sum(weights)
    if not weights or total <= 0 or any(w < 0 for w in weights):
        return None
    for buckets in (100, 1000, 10000):
        cuts, running = [], 0.0
        for weight in weights[:-1]:
            running += weight / total * buckets
            cuts.append(round(running))
            if abs(running - round(running)) > 1e-6:
                break
        else:
            return cuts, buckets
    return None


def operand(root: cst.CSTNode, target: cst.CSTNode) -> bool | None:
    """Where `target` sits inside `root`: True as an operand (or the receiver of a method, as in
    `rand().alias("r")`), False as a call's argument, None when it is inside a window (where
    `"*"` does not expand) or not found."""
    path = path_to(root, target)
    if path is None or len(path) < 2:
        return None
    if any(
        isinstance(n, cst.Call) and isinstance(n.func, cst.Attribute) and n.func.attr.value in _WINDOWED for n in path
    ):
        return None
    return not isinstance(path[-2], cst.Arg)


def _compare(left: cst.BaseExpression, operator: cst.BaseCompOp, bound: int) -> cst.Comparison:
    return cst.Comparison(left=left, comparisons=[cst.ComparisonTarget(operator, cst.Integer(str(bound)))])


def _break(indent: str) -> cst.ParenthesizedWhitespace:
    return cst.ParenthesizedWhitespace(
        first_line=cst.TrailingWhitespace(), indent=False, last_line=cst.SimpleWhitespace(indent)
    )


_DRAWS = frozenset({"rand", "randn", "uuid", "shuffle"})


def hashed_draw(node: StageNode, call: ColumnCall) -> Fix | NoFix:
    """`rand(seed?)` → a uniform value hashed from the row's columns (and the seed).

    Unsafe: a draw the original could already give, the same under every partitioning and run,
    but identical rows now draw the same value. Only in a projection or filter (where `"*"`
    expands), not inside a window or next to an aggregate, and not beside another draw in the
    same stage (two unseeded draws would hash alike)."""
    what = f"`{call.function}`"
    if call.function != "rand" or call.call is None or node.call is None:
        return NoFix(f"{what} has no data to derive its value from; seed it or derive it from columns")
    if node.method not in STAR_STAGES or any(c.spec is not None and c.spec.aggregate for c in node.columns.calls):
        return NoFix(
            f'{what} sits in `{node.method}`, where Spark does not expand `xxhash64("*")`: hash the row\'s '
            "columns by name in a `withColumn` before it"
        )
    if any(c is not call and c.function in _DRAWS for c in node.columns.calls):
        return NoFix(
            f"{what} is one of several draws in this `{node.method}`: hashed from the same row they would be equal"
        )
    position = operand(node.call, call.call)
    if position is None:
        return NoFix(f'{what} sits inside a window, where Spark does not expand `xxhash64("*")`')
    seed = _seed(call.call)
    value, imports = uniform_from_row(call.call, seed, bracketed=position)
    description = (
        f'`{call.function}()` → `pmod(xxhash64("*"{", seed" if seed is not None else ""}), 2**53) / 2**53`: '
        "a uniform value hashed from the row's columns, the same under any partitioning (identical rows draw alike)"
    )
    return Fix(UNSAFE, description, ((call.call, value),), imports)


def hashed_split(graph: StageGraph, node: StageNode, source: str) -> Fix | NoFix:
    """`df.randomSplit([0.8, 0.2])` → `[df.filter(<bucket> < 80), df.filter(<bucket> >= 80)]`,
    the bucket `pmod(xxhash64("*"), 100)` of each row (for an unseeded split: any split could come out).

    Unsafe: each row lands in the split its content hashes to, the same under every
    partitioning; the split sizes follow the hash (close to the weights on many distinct rows,
    not Bernoulli draws), and identical rows land together."""
    call = node.call
    if call is None or not isinstance(call.func, cst.Attribute) or not isinstance(call.func.value, cst.Name):
        return NoFix("the split rows are not held in a variable that each split could filter")
    chain = list(graph.upstream(node))
    if not chain or chain[-1].spec is None or not chain[-1].spec.source:
        # A parameter's type is only guessed from the method: an RDD's split takes no columns.
        return NoFix(
            "the split rows come from outside this module, so whether they are a DataFrame or an RDD is not known"
        )
    weights = _weights(call)
    cuts = split_buckets(weights) if weights is not None else None
    if cuts is None:
        return NoFix("the split weights are not literal numbers whose shares fit whole percents (or thousandths)")
    line = source.splitlines()[node.span.line - 1] if node.span.line <= len(source.splitlines()) else ""
    indent = line[: len(line) - len(line.lstrip())]
    if node.receiver == "RDD":
        return _hashed_rdd_split(call, call.func.value, *cuts, indent, source)
    # No functions call to imitate: the engine writes the module's alias, or bare names if safe.
    splits, imports = bucket_filters(cst.Call(func=cst.Name("randomSplit")), call.func.value, *cuts, indent)
    description = (
        f'`randomSplit` → filters on each row\'s hash bucket (`pmod(xxhash64("*"), {cuts[1]})`): the same rows '
        "in each split under any partitioning; the sizes follow the hash, not random draws"
    )
    return Fix(UNSAFE, description, ((call, splits),), imports)


def _hashed_rdd_split(
    call: cst.Call, receiver: cst.Name, cuts: list[int], buckets: int, indent: str, source: str
) -> Fix | NoFix:
    """An RDD's `randomSplit` → `[rdd.filter(lambda value: zlib.crc32(repr(value).encode()) % 100 < 80), ...]`:
    each value's `repr` (as `sortBy(repr)` numbers values in the zipWithIndex fix) hashed with a
    checksum that is the same in every process, unlike `hash()` of a string."""
    if re.search(r"\bzlib\b", source) and not re.search(r"^import zlib$", source, re.MULTILINE):
        return NoFix("the module binds `zlib` otherwise: a split on each value's checksum is the author's to write")
    if re.search(r"\brepr\b\s*=|def repr\b|import .*\brepr\b", source):
        return NoFix("the module rebinds `repr`: a split on each value's checksum is the author's to write")
    param = next(n for n in ("value", "item", "element", "value_") if not re.search(rf"\b{n}\b", source))
    checksum = cst.BinaryOperation(
        left=cst.parse_expression(f"zlib.crc32(repr({param}).encode())"),
        operator=cst.Modulo(),
        right=cst.Integer(str(buckets)),
    )
    bounds = [0, *cuts, buckets]
    conditions: list[cst.BaseExpression] = []
    for low, high in zip(bounds, bounds[1:]):
        if low == 0:
            conditions.append(_compare(checksum, cst.LessThan(), high))
        elif high == buckets:
            conditions.append(_compare(checksum, cst.GreaterThanEqual(), low))
        else:
            conditions.append(
                cst.Comparison(
                    left=cst.Integer(str(low)),
                    comparisons=[
                        cst.ComparisonTarget(cst.LessThanEqual(), checksum),
                        cst.ComparisonTarget(cst.LessThan(), cst.Integer(str(high))),
                    ],
                )
            )
    predicates = [cst.Lambda(cst.Parameters([cst.Param(cst.Name(param))]), c) for c in conditions]
    splits = _filters(receiver, predicates, indent)
    description = (
        f"`randomSplit` → filters on each value's checksum (`zlib.crc32(repr(value).encode()) % {buckets}`): "
        "the same values in each split under any partitioning; the sizes follow the checksum"
    )
    return Fix(UNSAFE, description, ((call, splits),), (("zlib", None),))


def _filters(receiver: cst.Name, conditions: Sequence[cst.BaseExpression], indent: str) -> cst.List:
    """`[receiver.filter(c1), receiver.filter(c2), ...]`, one a line."""
    inner, last = indent + "    ", len(conditions) - 1
    elements = [
        cst.Element(
            cst.Call(func=cst.Attribute(value=receiver, attr=cst.Name("filter")), args=[cst.Arg(condition)]),
            comma=cst.Comma(whitespace_after=_break(inner if i < last else indent)),
        )
        for i, condition in enumerate(conditions)
    ]
    return cst.List(elements, lbracket=cst.LeftSquareBracket(whitespace_after=_break(inner)))


def _weights(call: cst.Call) -> list[float] | None:
    given = next((a.value for a in call.args if a.keyword is not None and a.keyword.value == "weights"), None)
    positional = [a.value for a in call.args if a.keyword is None and not a.star]
    given = given if given is not None else (positional[0] if positional else None)
    if not isinstance(given, (cst.List, cst.Tuple)):
        return None
    values = []
    for element in given.elements:
        value = element.value
        if not isinstance(value, (cst.Integer, cst.Float)):
            return None
        values.append(float(value.evaluated_value))
    return values


def _seed(call: cst.Call) -> cst.BaseExpression | None:
    keyword = next((a.value for a in call.args if a.keyword is not None and a.keyword.value == "seed"), None)
    positional = [a.value for a in call.args if a.keyword is None and not a.star]
    return keyword if keyword is not None else (positional[0] if positional else None)
