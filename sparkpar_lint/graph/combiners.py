"""The algebra of combine functions: is `f(a, b)` a commutative monoid operation?

Spark applies a combiner (`reduceByKey`, `fold`, `aggregate`, ...) within each partition and then
across partitions, in whatever order map outputs arrive, so it must be associative and commutative
(the OpKeyedUnordered template of the data-trace-types paper). A sequential fold (`seqOp`, SQL
`aggregate` over an array) folds values into an accumulator one by one and must not care about the
order of the values: `f(f(z, x), y) == f(f(z, y), x)`.

The verdict is proved, not guessed: arithmetic bodies are evaluated on exact fractions and the
counterexample is the proof; concatenation, projections and overwriting dict merges are recognised
by shape. What cannot be decided is "unknown", for the pytest plugin's property test.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import libcst as cst

from sparkpar_lint.graph.user_functions import parameter_names
from sparkpar_lint.graph.visiting import visit

SAFE, UNSAFE, UNKNOWN = "safe", "unsafe", "unknown"
MERGE, SEQ = "merge", "seq"  # merge two partial results / fold one value into an accumulator

# Library callables passed by name: their verdict and, when unsafe, the proof.
NAMED = {
    "operator.add": (SAFE, ""),
    "operator.mul": (SAFE, ""),
    "operator.or_": (SAFE, ""),
    "operator.and_": (SAFE, ""),
    "operator.xor": (SAFE, ""),
    "max": (SAFE, ""),
    "min": (SAFE, ""),
    "builtins.max": (SAFE, ""),
    "builtins.min": (SAFE, ""),
    "operator.sub": (UNSAFE, "operator.sub: (1 - 2) - 3 = -4 but 1 - (2 - 3) = 2"),
    "operator.truediv": (UNSAFE, "operator.truediv: (8 / 4) / 2 = 1 but 8 / (4 / 2) = 4"),
    "operator.floordiv": (UNSAFE, "operator.floordiv: (8 // 4) // 2 = 1 but 8 // (4 // 2) = 4"),
    "operator.concat": (UNSAFE, "operator.concat: 'x' + 'y' = 'xy' but 'y' + 'x' = 'yx'"),
}
# Wrappers whose result does not depend on the order of their argument's elements.
ORDER_NORMALIZING_CALLS = frozenset({"sorted", "set", "frozenset", "sum", "len", "max", "min", "Counter"})
_STRING_CALLS = frozenset({"str", "repr", "format"})
_SEQUENCE_CALLS = frozenset({"list", "tuple"})
# Column functions in SQL folds (`F.aggregate(arr, zero, lambda acc, x: F.concat(acc, x))`).
_COLUMN_CONCATENATIONS = {"concat": "str", "concat_ws": "str", "array_append": "list", "array_prepend": "list"}
_SAMPLES = ((1, 2, 3), (2, 5, 11), (7, 3, 4))
# The evaluator's sandbox: nodes visited per evaluation and the widest number it computes with.
MAX_STEPS = 10_000
MAX_BITS = 4_096
_MAX_DIGITS = 400


# A value of the exact evaluation: a Fraction, a bool (a comparison), or a tuple of them. Any, as
# operations between them are tried and the TypeError of a mismatch counts as "unknown".
Value = Any
# A body's single-assignment locals, by name.
Locals = dict[str, cst.BaseExpression]


@dataclass(frozen=True)
class Verdict:
    kind: str  # safe | unsafe | unknown
    proof: str = ""  # for unsafe: a one-line counterexample


def classify_named(qualified: str) -> Verdict:
    kind, proof = NAMED.get(qualified, (UNKNOWN, ""))
    return Verdict(kind, proof)


def classify(function: cst.Lambda | cst.FunctionDef, role: str = MERGE, value_shape: str | None = None) -> Verdict:
    """The verdict on a 2-argument combine function; `value_shape` is what the upstream stage emits
    as values ("list", "str", "tuple", "dict", "set") when the graph knows it."""
    params = parameter_names(function)
    if len(params) != 2:
        return Verdict(UNKNOWN)
    a, b = params
    body, locals_ = _body(function)
    if body is None:
        return _statement_verdict(function, a, b)
    return _expression_verdict(body, locals_, a, b, role, value_shape)


def _body(function: cst.Lambda | cst.FunctionDef) -> tuple[cst.BaseExpression | None, Locals]:
    """The returned expression and the single-assignment locals it may read, or None."""
    if isinstance(function, cst.Lambda):
        return function.body, {}
    statements = function.body.body if isinstance(function.body, cst.IndentedBlock) else []
    locals_: Locals = {}
    for statement in statements:
        if not isinstance(statement, cst.SimpleStatementLine) or len(statement.body) != 1:
            return None, {}
        small = statement.body[0]
        if isinstance(small, cst.Expr) and isinstance(small.value, (cst.SimpleString, cst.ConcatenatedString)):
            continue  # docstring
        if isinstance(small, cst.Assign) and len(small.targets) == 1 and isinstance(small.targets[0].target, cst.Name):
            locals_[small.targets[0].target.value] = small.value
            continue
        if isinstance(small, cst.Return) and small.value is not None:
            return small.value, locals_
        return None, {}
    return None, {}


def _statement_verdict(function: cst.Lambda | cst.FunctionDef, a: str, b: str) -> Verdict:
    """Mutating merges: `a.update(b); return a` overwrites, `a.extend(b)` concatenates."""
    if not isinstance(function, cst.FunctionDef):
        return Verdict(UNKNOWN)
    for call in _calls(function.body):
        func = call.func
        if not (isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name)):
            continue
        target, method = func.value.value, func.attr.value
        arg_names = {x.value.value for x in call.args if isinstance(x.value, cst.Name)}
        if {target} | arg_names != {a, b}:
            continue
        if method == "update":
            return Verdict(
                UNSAFE,
                f"{target}.update({b if target == a else a}) overwrites shared keys: "
                "merging {'k': 1} and {'k': 2} keeps whichever comes last",
            )
        if method in ("extend", "append"):
            return Verdict(UNSAFE, f"{target}.{method}(...) concatenates: [1] + [2] = [1, 2] but [2] + [1] = [2, 1]")
    return Verdict(UNKNOWN)


def _calls(node: cst.CSTNode) -> list[cst.Call]:
    found: list[cst.Call] = []

    class _Visitor(cst.CSTVisitor):
        def visit_Call(self, call: cst.Call) -> None:
            found.append(call)

    visit(node, _Visitor())
    return found


def _expression_verdict(
    body: cst.BaseExpression, locals_: Locals, a: str, b: str, role: str, value_shape: str | None
) -> Verdict:
    body = _resolve(body, locals_)
    shape = _shape(body, locals_, {a, b}, value_shape)
    if shape == "normalized":
        return Verdict(SAFE)
    if shape in ("str", "list", "tuple"):
        example = {
            "str": ("'x'", "'y'", "'xy'", "'yx'"),
            "list": ("[1]", "[2]", "[1, 2]", "[2, 1]"),
            "tuple": ("(1,)", "(2,)", "(1, 2)", "(2, 1)"),
        }[shape]
        return Verdict(
            UNSAFE,
            f"{shape} concatenation depends on order: f({example[0]}, {example[1]}) = "
            f"{example[2]} but f({example[1]}, {example[0]}) = {example[3]}",
        )
    if shape != "dict-merge" and _set_union(body, {a, b}):
        return Verdict(SAFE)
    if shape == "dict-merge":
        return Verdict(
            UNSAFE, "a dict merge where the later value wins: merging {'k': 1} and {'k': 2} keeps whichever comes last"
        )
    return _arithmetic_verdict(body, locals_, a, b, role)


def _set_union(expr: cst.BaseExpression, params: set[str]) -> bool:
    """`a | b`, `a & b`, `a ^ b`, `a.union(b)` on the two parameters: sets and bit masks."""
    if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, (cst.BitOr, cst.BitAnd, cst.BitXor)):
        sides = (expr.left, expr.right)
    elif (
        isinstance(expr, cst.Call)
        and isinstance(expr.func, cst.Attribute)
        and expr.func.attr.value in ("union", "intersection", "symmetric_difference")
        and len(expr.args) == 1
    ):
        sides = (expr.func.value, expr.args[0].value)
    else:
        return False
    return {s.value for s in sides if isinstance(s, cst.Name)} == params


def _resolve(expr: cst.BaseExpression, locals_: Locals, depth: int = 0) -> cst.BaseExpression:
    if isinstance(expr, cst.Name) and expr.value in locals_ and depth < 8:
        return _resolve(locals_[expr.value], locals_, depth + 1)
    return expr


def _shape(expr: cst.BaseExpression, locals_: Locals, params: set[str], value_shape: str | None) -> str | None:
    """What the expression evidently builds: str/list/tuple concatenation, a dict merge, an
    order-normalised collection, or None (leave it to arithmetic)."""
    expr = _resolve(expr, locals_)
    if isinstance(expr, (cst.SimpleString, cst.ConcatenatedString, cst.FormattedString)):
        return "str"
    if isinstance(expr, (cst.List, cst.ListComp)):
        return "list"
    if isinstance(expr, cst.Dict):
        spread = [e for e in expr.elements if isinstance(e, cst.StarredDictElement)]
        return "dict-merge" if len(spread) >= 2 else None
    if isinstance(expr, cst.Name) and expr.value in params:
        return value_shape
    if isinstance(expr, cst.Call):
        func = expr.func
        if isinstance(func, cst.Name):
            if func.value in ORDER_NORMALIZING_CALLS:
                return "normalized"
            if func.value in _STRING_CALLS:
                return "str"
            if func.value in _SEQUENCE_CALLS:
                return "list" if func.value == "list" else "tuple"
            if func.value == "dict" and len(expr.args) >= 2:
                return "dict-merge"
        if isinstance(func, cst.Attribute) and func.attr.value in ("join", "format"):
            return "str"
        called = func.attr.value if isinstance(func, cst.Attribute) else getattr(func, "value", "")
        if called in _COLUMN_CONCATENATIONS:
            return _COLUMN_CONCATENATIONS[called]
        return None
    if isinstance(expr, cst.BinaryOperation):
        if isinstance(expr.operator, cst.Add):
            sides = [_shape(expr.left, locals_, params, value_shape), _shape(expr.right, locals_, params, value_shape)]
            if isinstance(expr.right, cst.Tuple) or isinstance(expr.left, cst.Tuple):
                return "tuple"
            for shape in ("str", "list", "tuple"):
                if shape in sides:
                    return shape
        if isinstance(expr.operator, cst.BitOr) and value_shape == "dict":
            return "dict-merge"
    return None


# ---------------------------------------------------------------- arithmetic, evaluated exactly


class _Unevaluable(Exception):
    pass


def _arithmetic_verdict(body: cst.BaseExpression, locals_: Locals, a: str, b: str, role: str) -> Verdict:
    arity = {a: _arity(body, locals_, a), b: _arity(body, locals_, b)}
    if role == MERGE:
        arity[a] = arity[b] = max(arity.values())

    def f(x: Value, y: Value) -> Value:
        return _eval(body, {a: x, b: y}, locals_)

    def value(n: int, width: int) -> Value:
        return Fraction(n) if width == 0 else tuple(Fraction(n * (i + 2)) for i in range(width))

    try:
        for x, y, z in _SAMPLES:
            if role == MERGE:
                vx, vy, vz = (value(n, arity[a]) for n in (x, y, z))
                if f(vx, vy) != f(vy, vx):
                    return Verdict(
                        UNSAFE,
                        f"not commutative: f({_show(vx)}, {_show(vy)}) = {_show(f(vx, vy))} "
                        f"but f({_show(vy)}, {_show(vx)}) = {_show(f(vy, vx))}",
                    )
                left, right = f(f(vx, vy), vz), f(vx, f(vy, vz))
                if left != right:
                    return Verdict(
                        UNSAFE,
                        f"not associative: f(f({_show(vx)}, {_show(vy)}), {_show(vz)}) = "
                        f"{_show(left)} but f({_show(vx)}, f({_show(vy)}, {_show(vz)})) = {_show(right)}",
                    )
            else:
                acc, vx, vy = value(z, arity[a]), value(x, arity[b]), value(y, arity[b])
                first, second = f(f(acc, vx), vy), f(f(acc, vy), vx)
                if first != second:
                    return Verdict(
                        UNSAFE,
                        f"folding {_show(vx)} then {_show(vy)} into {_show(acc)} gives "
                        f"{_show(first)} but {_show(vy)} then {_show(vx)} gives {_show(second)}",
                    )
    except (_Unevaluable, ZeroDivisionError, TypeError, IndexError, OverflowError, ValueError):
        return Verdict(UNKNOWN)
    return Verdict(SAFE)


def _show(value: Value) -> str:
    if isinstance(value, tuple):
        return "(" + ", ".join(_show(v) for v in value) + ("," if len(value) == 1 else "") + ")"
    if isinstance(value, Fraction) and value.denominator == 1:
        return str(value.numerator)
    return str(value)


def _arity(body: cst.BaseExpression, locals_: Locals, name: str) -> int:
    """How wide a tuple the parameter is, from the largest literal index it is subscripted with."""
    width = 0
    nodes = [body, *locals_.values()]
    for node in nodes:
        for sub in _subscripts(node):
            if isinstance(sub.value, cst.Name) and sub.value.value == name:
                index = _literal_index(sub)
                if index is not None:
                    width = max(width, index + 1)
    return width


def _subscripts(node: cst.CSTNode) -> list[cst.Subscript]:
    found: list[cst.Subscript] = []

    class _Visitor(cst.CSTVisitor):
        def visit_Subscript(self, sub: cst.Subscript) -> None:
            found.append(sub)

    visit(node, _Visitor())
    return found


def _literal_index(sub: cst.Subscript) -> int | None:
    if len(sub.slice) == 1 and isinstance(sub.slice[0].slice, cst.Index):
        value = sub.slice[0].slice.value
        if isinstance(value, cst.Integer):
            return int(value.value)
    return None


_BINARY: dict[type[cst.BaseBinaryOp], Callable[[Value, Value], Value]] = {
    cst.Add: lambda x, y: x + y,
    cst.Subtract: lambda x, y: x - y,
    cst.Multiply: lambda x, y: x * y,
    cst.Divide: lambda x, y: x / y,
    cst.FloorDivide: lambda x, y: x // y,
    cst.Modulo: lambda x, y: x % y,
}
_COMPARE: dict[type[cst.BaseCompOp], Callable[[Value, Value], Value]] = {
    cst.LessThan: lambda x, y: x < y,
    cst.GreaterThan: lambda x, y: x > y,
    cst.LessThanEqual: lambda x, y: x <= y,
    cst.GreaterThanEqual: lambda x, y: x >= y,
    cst.Equal: lambda x, y: x == y,
    cst.NotEqual: lambda x, y: x != y,
}


# The builtins a body may call on its numbers.
_FOLDS: dict[str, Callable[..., Any]] = {"max": max, "min": min, "abs": lambda *v: abs(v[0])}


def _eval(expr: cst.BaseExpression, env: dict[str, Value], locals_: Locals, depth: int = 0) -> Value:
    """`expr` evaluated on exact numbers in a sandbox: at most MAX_STEPS nodes visited and no
    number wider than MAX_BITS (`b * 1e99999999` or `x ** 64 ** 64` is unevaluable, not a stall)."""
    return _Sandbox(env, locals_).eval(expr, depth)


class _Sandbox:
    def __init__(self, env: dict[str, Value], locals_: Locals) -> None:
        self.env, self.locals = env, locals_
        self.steps = 0

    def eval(self, expr: cst.BaseExpression, depth: int) -> Value:
        self.steps += 1
        if depth > 40 or self.steps > MAX_STEPS:
            raise _Unevaluable
        return _bounded(self._eval(expr, depth))

    def _eval(self, expr: cst.BaseExpression, depth: int) -> Value:
        env, locals_ = self.env, self.locals
        if isinstance(expr, cst.Name):
            if expr.value in env:
                return env[expr.value]
            if expr.value in locals_:
                return self.eval(locals_[expr.value], depth + 1)
            raise _Unevaluable
        if isinstance(expr, (cst.Integer, cst.Float)):
            return _number(expr)
        if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.Minus):
            return -self.eval(expr.expression, depth + 1)
        if isinstance(expr, cst.BinaryOperation):
            operation = _BINARY.get(type(expr.operator))
            if operation is None:
                if isinstance(expr.operator, cst.Power):
                    base, exponent = self.eval(expr.left, depth + 1), self.eval(expr.right, depth + 1)
                    return _power(base, exponent)
                raise _Unevaluable
            left, right = self.eval(expr.left, depth + 1), self.eval(expr.right, depth + 1)
            if isinstance(left, tuple) or isinstance(right, tuple):
                raise _Unevaluable  # tuple `+` concatenates: decided by shape, not here
            return operation(left, right)
        if isinstance(expr, (cst.Tuple, cst.List)):
            return tuple(self.eval(e.value, depth + 1) for e in expr.elements)
        if isinstance(expr, cst.Subscript):
            index = _literal_index(expr)
            base = self.eval(expr.value, depth + 1)
            if index is None or not isinstance(base, tuple):
                raise _Unevaluable
            return base[index]
        if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Name) and expr.func.value in ("max", "min", "abs"):
            args = [self.eval(x.value, depth + 1) for x in expr.args if not x.keyword and not x.star]
            return _FOLDS[expr.func.value](*args)
        if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Name) and _numeric_cast(expr):
            # `int(a[0]) + int(b[0])`: a cast of a number is a number (int() truncates toward zero).
            number = self.eval(expr.args[0].value, depth + 1)
            if isinstance(number, tuple):
                raise _Unevaluable
            return Fraction(int(number)) if expr.func.value == "int" else number
        if isinstance(expr, cst.IfExp):
            test = self.test(expr.test, depth + 1)
            return self.eval(expr.body if test else expr.orelse, depth + 1)
        raise _Unevaluable

    def test(self, expr: cst.BaseExpression, depth: int) -> bool:
        if not isinstance(expr, cst.Comparison):
            raise _Unevaluable
        left = self.eval(expr.left, depth)
        for target in expr.comparisons:
            right = self.eval(target.comparator, depth)
            compare = _COMPARE.get(type(target.operator))
            if compare is None or not compare(left, right):
                return False
            left = right
        return True


def _numeric_cast(expr: cst.BaseExpression) -> bool:
    return (
        isinstance(expr, cst.Call)
        and isinstance(expr.func, cst.Name)
        and expr.func.value in ("int", "float")
        and len(expr.args) == 1
        and not expr.args[0].keyword
        and not expr.args[0].star
    )


def _number(literal: cst.Integer | cst.Float) -> Fraction:
    text = literal.value.replace("_", "").lower()
    try:
        if isinstance(literal, cst.Integer):
            return Fraction(int(text, 0))
        mantissa, _, exponent = text.partition("e")
        if len(mantissa) > _MAX_DIGITS or abs(int(exponent or 0)) > _MAX_DIGITS:
            raise _Unevaluable  # Fraction("1e99999999") alone builds a 100-million-digit integer
        return Fraction(text)
    except ValueError:  # more digits than int() converts
        raise _Unevaluable from None


def _power(base: Value, exponent: Value) -> Value:
    if not (isinstance(exponent, Fraction) and exponent.denominator == 1 and abs(exponent) <= 64):
        raise _Unevaluable
    if isinstance(base, Fraction):
        width = max(base.numerator.bit_length(), base.denominator.bit_length())
        if width * abs(int(exponent)) > MAX_BITS:
            raise _Unevaluable
    return base ** int(exponent)


def _bounded(value: Value) -> Value:
    if isinstance(value, Fraction) and max(value.numerator.bit_length(), value.denominator.bit_length()) > MAX_BITS:
        raise _Unevaluable
    return value


def shape_of_value(expr: cst.BaseExpression | None) -> str | None:
    """What a stage emits as a value (`(k, [v])` -> "list"), for `a + b` combiners downstream."""
    if expr is None:
        return None
    if isinstance(expr, (cst.List, cst.ListComp)):
        return "list"
    if isinstance(expr, cst.Tuple):
        return "tuple"
    if isinstance(expr, (cst.SimpleString, cst.ConcatenatedString, cst.FormattedString)):
        return "str"
    if isinstance(expr, (cst.Set, cst.SetComp)):
        return "set"
    if isinstance(expr, (cst.Dict, cst.DictComp)):
        return "dict"
    if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Name):
        return {"str": "str", "list": "list", "tuple": "tuple", "set": "set", "dict": "dict"}.get(expr.func.value)
    return None


__all__ = ["Verdict", "classify", "classify_named", "shape_of_value", "SAFE", "UNSAFE", "UNKNOWN", "MERGE", "SEQ"]
