"""Rewrites of method chains: insert an operator right before or after another, or drop one.

Each helper returns a function of the already-rewritten call (a `Fix` replacement), so a fix that
changes an operator's receiver still composes with fixes inside its arguments. The functions are
`partial`s of module-level functions, not closures, so findings carrying them can be pickled.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial

import libcst as cst

Rewrite = Callable[[cst.CSTNode], cst.CSTNode]


def method_call(receiver: cst.BaseExpression, method: str, args: Sequence[cst.BaseExpression | cst.Arg]) -> cst.Call:
    """`receiver.method(args)`, arguments separated the usual way (`a, b`)."""
    arguments = [a if isinstance(a, cst.Arg) else cst.Arg(a) for a in args]
    arguments = [
        a.with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
        if i < len(arguments) - 1
        else a.with_changes(comma=cst.MaybeSentinel.DEFAULT)
        for i, a in enumerate(arguments)
    ]
    return cst.Call(func=cst.Attribute(value=receiver, attr=cst.Name(method)), args=arguments)


def receiver_of(call: cst.Call) -> cst.BaseExpression | None:
    """What `call` is invoked on: `df` in `df.mapInPandas(...)`; None for a plain function call."""
    return call.func.value if isinstance(call.func, cst.Attribute) else None


def through_rdd(receiver: cst.BaseExpression) -> cst.BaseExpression | None:
    """The DataFrame under a `.rdd` conversion (`df` in `df.rdd`), or None if there is none."""
    if isinstance(receiver, cst.Attribute) and receiver.attr.value == "rdd":
        return receiver.value
    return None


def insert_before(method: str, args: Sequence[cst.BaseExpression | cst.Arg], *, skip_rdd: bool = False) -> Rewrite:
    """`x.op(...)` → `x.method(args).op(...)`; with `skip_rdd`, `x.rdd.op(...)` → `x.method(args).rdd.op(...)`."""
    return wrap_receiver(partial(_call_on, method, tuple(args)), skip_rdd=skip_rdd)


def wrap_receiver(build: Callable[[cst.BaseExpression], cst.BaseExpression], *, skip_rdd: bool = False) -> Rewrite:
    """`x.op(...)` → `build(x).op(...)`; with `skip_rdd`, `x.rdd.op(...)` → `build(x).rdd.op(...)`.

    `build` must pickle (a module-level function or a `partial` of one): findings, fixes and all,
    travel between the linter's worker processes.
    """
    return partial(_wrap_receiver, build, skip_rdd)


def append_after(method: str, args: Sequence[cst.BaseExpression | cst.Arg]) -> Rewrite:
    """`x.op(...)` → `x.op(...).method(args)`."""
    return partial(_call_on, method, tuple(args))


def _call_on(method: str, args: tuple[cst.BaseExpression | cst.Arg, ...], receiver: cst.BaseExpression) -> cst.Call:
    return method_call(receiver, method, args)


def _wrap_receiver(
    build: Callable[[cst.BaseExpression], cst.BaseExpression], skip_rdd: bool, call: cst.Call
) -> cst.Call:
    receiver = receiver_of(call)
    if receiver is None or not isinstance(call.func, cst.Attribute):  # built only for method calls
        return call
    frame = through_rdd(receiver) if skip_rdd else None
    if frame is not None:
        return call.with_changes(func=call.func.with_changes(value=receiver.with_changes(value=build(frame))))
    return call.with_changes(func=call.func.with_changes(value=build(receiver)))


def drop_call(call: cst.Call) -> cst.BaseExpression:
    """`x.op(...)` → `x`: the operator removed from its chain (a plain function call stays)."""
    receiver = receiver_of(call)
    return call if receiver is None else receiver
