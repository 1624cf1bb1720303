"""Do the functions of one `aggregate`/`aggregateByKey`/`combineByKey`/`fold` call agree?

Each function can be fine on its own and the pair still depend on the partition count: a per-
partition `max` whose partial results are then added gives the sum of the partitions' maxima.
Spark folds the values of each partition with the sequential function (starting from the zero, or
from `createCombiner` of the partition's first value), then merges the partial results. The
verdict is proved the way `combiners` proves one function: the same values, split into partitions
in different ways, are folded on exact fractions; two different results are the counterexample.
"""

from __future__ import annotations

from fractions import Fraction

import libcst as cst

from sparkpar_lint.graph.combiners import (
    SAFE,
    UNKNOWN,
    UNSAFE,
    Value,
    Verdict,
    _arity,
    _body,
    _eval,
    _show,
    _Unevaluable,
)
from sparkpar_lint.graph.user_functions import parameter_names

_VALUES = (2, 5, 11, 3, 7)
_SPLITS: tuple[tuple[tuple[int, ...], ...], ...] = (((2, 5, 11, 3, 7),), ((2, 5), (11, 3, 7)), ((2,), (5, 11), (3, 7)))


class _Function:
    """A one- or two-parameter def/lambda evaluated on fractions (tuples for indexed parameters)."""

    def __init__(self, function: cst.Lambda | cst.FunctionDef) -> None:
        self.params = parameter_names(function)
        body, self.locals = _body(function)
        if body is None or len(self.params) not in (1, 2):
            raise _Unevaluable
        self.body = body
        self.widths = [_arity(self.body, self.locals, p) for p in self.params]

    def __call__(self, *args: Value) -> Value:
        return _eval(self.body, dict(zip(self.params, args)), self.locals)


def pair_verdict(
    zero: cst.BaseExpression | None,
    create: cst.Lambda | cst.FunctionDef | None,
    seq: cst.Lambda | cst.FunctionDef,
    merge: cst.Lambda | cst.FunctionDef,
    zero_on_driver: bool,
) -> Verdict:
    """`zero_on_driver`: RDD.aggregate/fold also start the merge of partial results from the zero."""
    try:
        seq_f, merge_f = _Function(seq), _Function(merge)
        create_f = _Function(create) if create is not None else None
        width = seq_f.widths[-1]  # how the values are read: a number or a tuple
        zero_value = _eval(zero, {}, {}) if zero is not None else None

        def value(n: int) -> Value:
            return Fraction(n) if width == 0 else tuple(Fraction(n * (i + 2)) for i in range(width))

        def partial(part: tuple[int, ...]) -> Value:
            values = [value(n) for n in part]
            acc = create_f(values[0]) if create_f is not None else seq_f(zero_value, values[0])
            for item in values[1:]:
                acc = seq_f(acc, item)
            return acc

        results = []
        for split in _SPLITS:
            partials = [partial(p) for p in split]
            total = zero_value if zero_on_driver else partials.pop(0)
            for item in partials:
                total = merge_f(total, item)
            results.append(total)
    except (_Unevaluable, ZeroDivisionError, TypeError, IndexError, OverflowError, ValueError):
        return Verdict(UNKNOWN)
    for split, result in zip(_SPLITS[1:], results[1:]):
        if result != results[0]:
            shown = " | ".join(", ".join(str(n) for n in p) for p in split)
            return Verdict(
                UNSAFE,
                f"{', '.join(map(str, _VALUES))} in one partition gives {_show(results[0])} but split as "
                f"{shown} gives {_show(result)}",
            )
    return Verdict(SAFE)
