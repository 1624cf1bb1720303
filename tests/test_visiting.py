"""graph/visiting.py must call a visitor exactly as LibCST's own walk does, and give the same
children, on every kind of node: f-strings with and without a format spec (LibCST skips an empty
one), decorators, `match`, imports of every shape, comprehensions, lambdas."""

from __future__ import annotations

import libcst as cst
import pytest

from sparkpar_lint.graph.positions import walk
from sparkpar_lint.graph.visiting import children, visit

SOURCE = '''\
from . import a
from ..pkg import (b as c, d)
from mod import *
import os.path as p, sys

@decorator(x=[1, 2])
@other
async def f(a, /, b: int = 3, *args, c, **kw) -> list[int]:
    """Doc."""
    name = f"{a}"
    spec = f"{a!r:>{b}.{c}f} and {kw=}"
    async with ctx() as (x, y):
        async for item in stream:
            yield item
    match a:
        case {"k": [1, *rest]} | Point(x=0) if rest:
            pass
        case _:
            return [i for i in range(3) if i] or {k: v for k, v in kw.items()}
    try:
        z = lambda q, *r: q[1:2, ::3]
    except* (ValueError, TypeError) as error:
        raise RuntimeError() from error
    finally:
        del z
    global g
    b += not -a if a else ~b
    return (yield)


class C(Base, metaclass=M):
    x: int = 1
    def m(self): return self.x; pass
'''


class _Recorder(cst.CSTVisitor):
    """Notes every callback; stops below each lambda, as a visitor returning False does."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, int]] = []

    def on_visit(self, node: cst.CSTNode) -> bool:
        self.calls.append(("visit", id(node)))
        return not isinstance(node, cst.Lambda)

    def on_leave(self, original_node: cst.CSTNode) -> None:
        self.calls.append(("leave", id(original_node)))


def test_visit_calls_back_as_libcst_does() -> None:
    module = cst.parse_module(SOURCE)
    theirs, ours = _Recorder(), _Recorder()
    module.visit(theirs)
    visit(module, ours)
    assert ours.calls == theirs.calls
    assert len(ours.calls) > 1000


@pytest.mark.parametrize("spec", ["f'{a}'", "f'{a:>{b}}'"])
def test_either_f_string_shape_first(spec: str) -> None:
    """The first f-string met decides nothing for the next: one without a format spec never
    announces that field, one with it does."""
    for source in (f"{spec}\nf'{{x:>3}}' + f'{{y}}'\n", f"f'{{y}}'\n{spec}\n"):
        module = cst.parse_module(source)
        theirs, ours = _Recorder(), _Recorder()
        module.visit(theirs)
        visit(module, ours)
        assert ours.calls == theirs.calls


def test_children_are_libcsts() -> None:
    for node in walk(cst.parse_module(SOURCE)):
        assert [id(child) for child in children(node)] == [id(child) for child in node.children]


def test_attribute_callbacks_are_left_to_libcst() -> None:
    """A visitor with a per-field callback is walked by LibCST, which calls it."""
    seen: list[str] = []

    class _Funcs(cst.CSTVisitor):
        def visit_Call_func(self, node: cst.Call) -> None:
            seen.append(cst.Module([]).code_for_node(node.func))

    visit(cst.parse_module("f(g(1))\n"), _Funcs())
    assert seen == ["f", "g"]
