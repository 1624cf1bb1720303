"""Long method chains are parsed a segment at a time (`sparkpar_lint.long_chains`): the tree must be
the one LibCST's own parse gives, node for node, in every shape a chain is written in."""

from __future__ import annotations

import libcst as cst
import pytest

from sparkpar_lint import long_chains
from sparkpar_lint.parsing import parse_module, with_deep_stack

N = 100  # past LONG_CHAIN, short enough for LibCST's own parse to compare against


def links(n: int, sep: str = "\n    ", link=lambda i: f".withColumn('c{i}', F.lit({i}))") -> str:
    return "".join(sep + link(i) for i in range(n))


SHAPES = {
    "parenthesised": "df = (df" + links(N) + "\n)\n",
    "one line": "df = df" + links(N, sep="") + "\n",
    "backslash": "df = df" + links(N, sep=" \\\n    ") + "\n",
    "comments between calls": "df = (df"
    + "".join(f"\n    # step {i}\n    .a({i})  # after {i}" for i in range(N))
    + "\n)\n",
    "empty lines between calls": "z = (a" + "".join(f"\n\n    \n    .m({i})" for i in range(N)) + ")\n",
    "subscripts": "x = (y" + links(N, link=lambda i: f"[{i}].m({i})") + ")\n",
    "nested chains in arguments": "x = (y"
    + links(N, link=lambda i: f".m(z{links(70, sep='', link=lambda j: f'.k({j})')})" if i % 20 == 0 else f".m({i})")
    + ")\n",
    "CRLF": ("df = (df" + links(N) + "\n)\n").replace("\n", "\r\n"),
    "tabs in if in def": "def f():\n\tif x:\n\t\tdf = (df" + links(N, sep="\n\t\t\t") + "\n\t\t)\n\treturn df\n",
    "method in class": "class A:\n    def f(self):\n        return (self.df" + links(N, sep="\n            ") + ")\n",
    "if/else, backslash": "if a:\n    y = b" + links(N, sep=" \\\n  ") + "\nelse:\n    pass\n",
    "continuation dedented": "def f():\n    x = (a" + links(N, sep="\n") + ")\n    return x\n",
    "two arguments": "print(1, df" + links(N) + ", key=df" + links(90, sep="") + ")\n",
    "string atom": "s = ('a' 'b'" + links(N, link=lambda i: f".replace('{i}', \"x\")") + ")\n",
    "parenthesised atom": "z = (a + b)" + links(N, sep="") + ".c\n",
    "operators around": "z = -a" + links(N, sep="") + " ** 2 + await q" + links(70, sep="") + "\n",
    "f-strings": "z = f'{a}'" + links(N, sep="", link=lambda i: f".m(f'{{x}}{i}')") + "\n",
    "lambda and comprehension": "f = lambda q: q" + links(N, sep="") + "\nw = [q" + links(N, sep="") + " for q in r]\n",
    "decorator": "@app" + links(N, sep="") + "\ndef g(): pass\n",
    "assignment target": "a" + links(N, sep="") + ".attr = 1\n",
    "chain of a chain": "z = (a" + links(N, sep="") + ")" + links(N, sep="") + "\n",
    "semicolons": "x = 1; y = a" + links(N, sep="") + "; z = 2\n",
    "non-ASCII": "é = (é" + links(N, link=lambda i: f".ü('é{i}')") + ")\n",
    "with statement": "with a" + links(N, sep="") + " as b:\n    pass\n",
    "dict value": "d = {'k': a" + links(N) + ",\n}\n",
    "no newline at the end": "x = a" + links(N, sep=""),
}


@pytest.mark.parametrize("source", SHAPES.values(), ids=SHAPES.keys())
def test_segmented_parse_is_libcst_parse(source):
    # The chain really is cut (else this would compare LibCST with itself).
    assert long_chains.may_hold_a_long_chain(source) and long_chains._Walk(source).run()
    mine = with_deep_stack(parse_module, source)
    theirs = with_deep_stack(cst.parse_module, source)
    assert mine.deep_equals(theirs)
    assert mine.code == source


@pytest.mark.parametrize(
    "source",
    [
        "x = not(a)" + links(N, sep="") + "\n",  # a placeholder would merge with `not`
        "match = 1\nmatch" + links(N, sep="") + "\n",  # a soft keyword
        "x = (a" + links(N) + ")\r\ny = 1\n",  # mixed newlines
        "x = (a" + links(10) + ")\n",  # short
    ],
    ids=["after a keyword", "soft keyword", "mixed newlines", "short"],
)
def test_chains_it_cannot_cut_get_libcst_parse(source):
    assert with_deep_stack(parse_module, source).deep_equals(with_deep_stack(cst.parse_module, source))


def test_syntax_error_in_a_long_chain_is_libcst_error():
    source = "x = (a" + links(N) + "\n    .b(1,,)\n)\n"
    with pytest.raises(cst.ParserSyntaxError) as mine:
        with_deep_stack(parse_module, source)
    with pytest.raises(cst.ParserSyntaxError) as theirs:
        with_deep_stack(cst.parse_module, source)
    assert str(mine.value) == str(theirs.value)


def test_ordinary_code_is_not_walked():
    flat = "".join(f"df = df.withColumn('c{i}', F.lit({i}))\n" for i in range(3000))
    assert not long_chains.may_hold_a_long_chain(flat)


def parsed_texts(monkeypatch, source: str) -> list[str]:
    """Every text handed to LibCST's parser while `source` is parsed."""
    texts: list[str] = []
    plain = cst.parse_module

    def recording(text, *args, **kwargs):
        texts.append(text)
        return plain(text, *args, **kwargs)

    monkeypatch.setattr(cst, "parse_module", recording)
    with_deep_stack(parse_module, source)
    return texts


def test_a_long_chain_reaches_libcst_only_in_short_pieces(monkeypatch):
    # What makes the parse linear, without timing it: LibCST (whose parse grows faster than the
    # square of one chain's length) never sees more than a segment of the chain, and all it is
    # given adds up to little more than the file.
    source = "df = (df" + links(3000) + "\n)\nout = df.groupBy('k').count()\n"
    texts = parsed_texts(monkeypatch, source)
    assert max(text.count(".withColumn(") for text in texts) <= long_chains.SEGMENT
    assert sum(map(len, texts)) < 1.1 * len(source)


def test_ordinary_code_is_parsed_once_whole(monkeypatch):
    # The 50,000-line benchmark's shape: many short statements cost LibCST one parse of the file.
    source = "".join(
        f"def job_{i}(df):\n    return df.withColumn('a', F.col('x') + {i}).filter(F.col('a') > 0)\n"
        for i in range(2000)
    )
    assert parsed_texts(monkeypatch, source) == [source]
