"""The nesting pre-check's fast pass (strings and comments cut out by pattern, brackets counted at C
speed) must never clear a file the tokenizer would refuse, and must not be fooled by brackets in
strings and comments."""

from __future__ import annotations

import io
import tokenize

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sparkpar_lint import parsing
from sparkpar_lint.parsing import TooDeeplyNested, check_nesting


def tokenizer_verdict(source: str, limit: int) -> tuple[int, int] | None:
    """Where the plain tokenizer walk finds the first bracket past `limit` (None: nowhere)."""
    depth = 0
    try:
        for token in tokenize.generate_tokens(io.StringIO(source).readline):
            if token.type == tokenize.OP and token.string in "([{":
                depth += 1
                if depth > limit:
                    return token.start[0], token.start[1] + 1
            elif token.type == tokenize.OP and token.string in ")]}":
                depth = max(0, depth - 1)
    except (tokenize.TokenError, SyntaxError):
        return None
    return None


def verdict(source: str) -> tuple[int, int] | None:
    try:
        check_nesting(source)
    except TooDeeplyNested as error:
        return error.line, error.column
    return None


def test_closers_in_strings_and_comments_do_not_hide_deep_brackets():
    source = (
        "s = ')]}' + \")]}\\\")\" + '''\n)))]]]\n''' + r'\\')' # ))))\n"
        'doc = """ \\""" ))) """\n'
        "f = f'{x})))'\n"
        "y = " + "(" * 250 + "1" + ")" * 250 + "\n"
    )
    assert verdict(source) == tokenizer_verdict(source, parsing.MAX_BRACKET_DEPTH) == (6, 205)


def test_openers_in_strings_and_comments_are_not_nesting():
    source = "s = '" + "(" * 300 + "'\n# " + "[" * 300 + "\nt = '''\n" + "{" * 300 + "\n'''\n"
    assert verdict(source) is None


def test_unbalanced_code_is_left_to_the_tokenizer():
    source = ")\n" + "x = " + "(" * 250 + "1" + ")" * 250 + "\n"
    assert verdict(source) == tokenizer_verdict(source, parsing.MAX_BRACKET_DEPTH) == (2, 205)


PIECES = [
    "(",
    ")",
    "[",
    "]",
    "{",
    "}",
    "x",
    " ",
    "\n",
    "\\\n",
    "'('",
    "')'",
    '"(\\"("',
    "'''(\n'''",
    '"""\n)"""',
    "# )(\n",
    "f'{('",
    "r'\\'('",
    "'",
    '"',
    "#",
]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(PIECES), max_size=60))
def test_fast_pass_never_clears_what_the_tokenizer_refuses(monkeypatch_limit, pieces):
    source = "".join(pieces)
    assert verdict(source) == tokenizer_verdict(source, parsing.MAX_BRACKET_DEPTH)


@pytest.fixture(scope="module")
def monkeypatch_limit():
    # A small limit so that random bracket soup reaches it often.
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(parsing, "MAX_BRACKET_DEPTH", 3)
        yield


def test_ordinary_code_is_cleared_without_the_tokenizer():
    # The point of the fast pass: a file with hundreds of brackets, some of them unbalanced inside
    # strings and comments, needs no tokenizer walk.
    line = "df = df.withColumn('a(', F.col(\"x\")[0] + f'{y}]') # ) [\n"
    source = 'doc = """ ((( \\""" """\n' + line * 100
    assert parsing._surely_shallow(source)
    assert not parsing._surely_shallow("x = " + "(" * 201 + ")" * 201 + "\n")


def test_parse_and_analysis_leave_the_collector_as_they_found_it():
    import gc

    from sparkpar_lint.analysis import analyze

    source = "from pyspark.sql import functions as F\ndf.groupBy('k').agg(F.first('v'))\n"
    assert gc.isenabled() and gc.get_freeze_count() == 0
    assert [f.rule_id for f in analyze("job.py", source)] == ["SPX101"]
    assert gc.isenabled() and gc.get_freeze_count() == 0
    gc.disable()
    try:
        parsing.parse_module(source)
        assert not gc.isenabled()  # a caller's choice is kept
    finally:
        gc.enable()


@pytest.mark.parametrize(
    ("source", "where"),
    [
        ("x = " + "-" * 50_000 + "1\n", (1, 205)),  # used to stall LibCST's parser for minutes
        ("x = " + "not " * 20_000 + "1\n", (1, 805)),  # used to crash it (SIGABRT)
        ("async def f():\n    return " + "await " * 300 + "g()\n", (2, 1212)),
        ("x = (\n" + "~\n" * 300 + "1)\n", (202, 1)),  # a run across lines inside brackets
        ("x = " + "- " * 200 + "1\n", None),  # at the limit
        ("x = " + "- 1 " * 1000 + "\n", None),  # operands between: no run
        ("s = '" + "-" * 500 + "'\n# " + "-" * 500 + "\nt = '''\n" + "not " * 300 + "\n'''\n", None),
    ],
)
def test_prefix_operators_in_a_row_are_nesting(source, where):
    assert verdict(source) == where
