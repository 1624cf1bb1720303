"""Fuzzing the real CLI with hostile file names, contents and configs, and the real language
server with hostile messages (hypothesis).

Whatever comes in: no traceback, no hang past the file budget, exit 0/1/2 as documented, no raw
control character or workflow command in the output, and the one known-bad file is still
reported unless the configuration itself is refused."""

from __future__ import annotations

import contextlib
import json
import tempfile
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, assume, example, given, settings
from hypothesis import strategies as st
from lsp_raw import JOB, TIMEOUT, RawClient

from samples import BAD_JOB
from sparkpar_lint.cache import well_formed
from sparkpar_lint.cli import main
from sparkpar_lint.output import FORMATS

SNIPPETS = [
    b"x = " + b"(" * 300 + b"1" + b")" * 300,
    b"x = " + b"[" * 199 + b"]" * 199,
    b"x = " + b"a if b else " * 150 + b"c",
    b"df = df" + b".withColumn('a', F.lit(1))" * 60,
    b"total = sc.parallelize([1]).reduce(lambda a, b: a + b * 1e99999999)",
    b"total = rdd.fold(0, lambda a, b: (a ** 64) ** 64 - b)",
    b"name = '\x1b[31m::error::owned\x07'",
    b"F.col('a\\n::add-mask::x')",
    # Column names reach graph and plan output as keys and orderings (and `[/k]` is rich markup).
    b"out = spark.read.parquet('x').orderBy('t\\r::error::o').groupBy('[/k]\\n::add-mask::k\\x1b[2J').count()",
    b"\xef\xbb\xbf# -*- coding: latin-1 -*-\n",
    b"# -*- coding: bogus -*-\n",
    b"\x00\x01\x02",
    b"\r\r\r",
    b"def f(:\n",
    b"if x:\n\tpass\n        pass\n",
    b"\xff\xfe\xfd",
]
CONFIGS = [
    None,
    "[tool.sparkpar]\nselect = ['SPX1']\n",
    "[[tool.sparkpar]]\n",
    "[tool]\nsparkpar = 5\n",
    "[tool.sparkpar]\nextra-operators = [1, 2]\n",
    "[tool.sparkpar]\nexclude = ['*.py']\n",
    "[tool.sparkpar.per-file-ignores]\n'anchor.py' = ['SPX']\n",
    "[tool.sparkpar.severity]\nSPX101 = 'loud'\n",
    "not toml at all ][",
]

names = st.text(
    alphabet=st.characters(blacklist_characters="/\x00", blacklist_categories=("Cs",)), min_size=1, max_size=12
).filter(lambda n: n not in (".", "..") and len(n.encode()) < 200)
contents = st.one_of(
    st.lists(st.sampled_from(SNIPPETS), min_size=1, max_size=3).map(lambda parts: b"# spark\n" + b"\n".join(parts)),
    st.binary(max_size=120).map(lambda b: b"spark = 1\n" + b),
    st.text(max_size=120).map(lambda t: ("# spark\n" + t).encode("utf-8", "surrogatepass")),
)
configs = st.one_of(st.sampled_from(CONFIGS), st.text(max_size=60).map(lambda t: "[tool.sparkpar]\n" + t))


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(files=st.lists(st.tuples(names, contents), max_size=4), config=configs, fmt=st.sampled_from(FORMATS))
# Every finding ignored, and one file that does not decode: exit 2 with nothing on stdout, and
# the reason on stderr names that file, not the configuration.
@example(files=[("0", b"spark = 1\n\x80")], config=CONFIGS[6], fmt="concise")
def test_hostile_inputs_never_break_the_run(files, config, fmt):
    with tempfile.TemporaryDirectory() as directory, contextlib.chdir(directory):
        root = Path(directory)
        (root / "anchor.py").write_text(BAD_JOB)
        for name, data in files:
            with contextlib.suppress(OSError):  # a name the file system refuses is not our input
                if name != "anchor.py":
                    (root / (name + ".py")).write_bytes(data)
        if config is not None:
            (root / "pyproject.toml").write_text(config, encoding="utf-8", errors="surrogatepass")
        result = CliRunner().invoke(
            main, ["lint", ".", "--format", fmt, "--no-cache", "--file-timeout", "20"], catch_exceptions=True
        )
    output = result.stdout + result.stderr
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    assert "Traceback" not in output and "internal error" not in output
    assert result.exit_code in (0, 1, 2)
    assert "\x1b" not in output and "\x07" not in output
    for line in output.splitlines():
        assert not line.startswith("::") or (
            fmt == "github" and line.startswith(("::error ", "::warning ", "::notice "))
        )
    if config in (None, CONFIGS[1]):  # settings that keep SPX101 on anchor.py
        assert result.exit_code in (1, 2) and "anchor.py" in result.stdout, output
    elif result.exit_code == 2 and not result.stdout:
        # Nothing reported: the configuration or a file that could not be read says why.
        lines = result.stderr.splitlines()
        assert lines and all(line.startswith("sparkpar: ") for line in lines), output


def _clean(result, output: str) -> None:
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    assert "Traceback" not in output and "internal error" not in output
    assert result.exit_code in (0, 1, 2)
    assert "\x1b" not in output and "\x07" not in output
    assert not any(line.startswith("::") for line in output.splitlines()), output


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(files=st.lists(st.tuples(names, contents), max_size=4), config=configs)
def test_hostile_inputs_never_break_fix(files, config):
    with tempfile.TemporaryDirectory() as directory, contextlib.chdir(directory):
        root = Path(directory)
        (root / "anchor.py").write_text(BAD_JOB)
        for name, data in files:
            with contextlib.suppress(OSError):
                if name != "anchor.py":
                    (root / (name + ".py")).write_bytes(data)
        if config is not None:
            (root / "pyproject.toml").write_text(config, encoding="utf-8", errors="surrogatepass")
        result = CliRunner().invoke(main, ["fix", ".", "--file-timeout", "20"], catch_exceptions=True)
        anchor = (root / "anchor.py").read_text()
    _clean(result, result.stdout + result.stderr)
    if config in (None, CONFIGS[1]):  # settings that keep SPX101's safe fix on anchor.py
        assert result.exit_code in (0, 2) and anchor != BAD_JOB, result.stdout + result.stderr


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(name=names, data=contents, command=st.sampled_from(["graph", "plan"]))
def test_hostile_file_never_breaks_graph_or_plan(name, data, command):
    with tempfile.TemporaryDirectory() as directory, contextlib.chdir(directory):
        try:
            (Path(directory) / (name + ".py")).write_bytes(data)
        except OSError:  # a name the file system refuses is not our input
            return
        result = CliRunner().invoke(main, [command, name + ".py", "--file-timeout", "20"], catch_exceptions=True)
    _clean(result, result.stdout + result.stderr)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=20,
)
cell_sources = st.one_of(
    st.lists(st.one_of(st.sampled_from(["spark?\n", "%pip x\n", "df.orderBy('t').limit(1)\n"]), json_values)),
    json_values,
)
cells = st.fixed_dictionaries(
    {"source": cell_sources}, optional={"cell_type": st.sampled_from(["code", "markdown", 5]), "metadata": json_values}
)
notebooks = st.one_of(
    st.fixed_dictionaries({"cells": st.lists(cells, max_size=3)}, optional={"metadata": json_values}),
    json_values,
).map(json.dumps) | st.sampled_from(['{"cells": ' + "[" * 5000 + "]" * 5000 + "}", '{"cells": [{"source": '])


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(notebook=notebooks, command=st.sampled_from([["lint", "--no-cache"], ["fix"], ["graph"], ["plan"]]))
def test_hostile_notebook_json_never_breaks_a_command(notebook, command):
    with tempfile.TemporaryDirectory() as directory, contextlib.chdir(directory):
        Path("nb.ipynb").write_text(notebook)
        result = CliRunner().invoke(main, [*command, "nb.ipynb", "--file-timeout", "20"], catch_exceptions=True)
    _clean(result, result.stdout + result.stderr)
    if result.exit_code == 2:
        assert "nb.ipynb" in result.stderr and "All checks passed" not in result.stdout


toml_keys = st.sampled_from(["select", "ignore", "exclude", "severity", "per-file-ignores", "unique-columns", "x"])
toml_values = st.recursive(
    st.sampled_from(["1", "'SPX1'", "true", "1979-05-27", "[]", "{}", "'\\ud7ff'", '"\\u0000"']),
    lambda inner: (
        st.lists(inner, max_size=3).map(lambda v: "[" + ", ".join(v) + "]")
        | st.lists(inner, max_size=3).map(lambda v: "{" + ", ".join(f"k{i} = {x}" for i, x in enumerate(v)) + "}")
    ),
    max_leaves=10,
) | st.integers(1, 3000).map(lambda n: "{a = " * n + "1" + "}" * n)


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(entries=st.lists(st.tuples(toml_keys, toml_values), max_size=3), command=st.sampled_from(["lint", "fix"]))
def test_hostile_config_toml_is_one_error_or_applies(entries, command):
    with tempfile.TemporaryDirectory() as directory, contextlib.chdir(directory):
        lines = "".join(f"{key} = {value}\n" for key, value in dict(entries).items())
        Path("pyproject.toml").write_text("[tool.sparkpar]\n" + lines)
        Path("anchor.py").write_text(BAD_JOB)
        result = CliRunner().invoke(main, [command, "anchor.py", "--no-cache"][: 3 if command == "lint" else 2])
    _clean(result, result.stdout + result.stderr)
    if result.exit_code == 2 and not result.stdout.strip():
        assert result.stderr.count("sparkpar: error:") == 1 and "pyproject.toml" in result.stderr


finding_fields = st.fixed_dictionaries(
    {},
    optional=dict.fromkeys(
        ("rule", "message", "severity", "path", "line", "column", "end_line", "end_column", "fix", "cell"), json_values
    )
    | {"related": st.lists(st.dictionaries(st.sampled_from(["line", "column", "message", "cell"]), json_values))},
)


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(damage=finding_fields, fmt=st.sampled_from([f for f in FORMATS if f != "github"]))
def test_hostile_cache_entry_is_a_miss_or_a_hit(damage, fmt):
    with tempfile.TemporaryDirectory() as directory, contextlib.chdir(directory):
        Path("anchor.py").write_text(BAD_JOB)
        first = CliRunner().invoke(main, ["lint", "anchor.py", "--format", "concise"])
        (entry,) = Path(".sparkpar_cache").glob("*.json")
        data = json.loads(entry.read_text())
        data["findings"][0].update(damage)
        still_valid = well_formed(data["findings"][0])  # then a hit, its values as damaged
        entry.write_text(json.dumps(data))
        again = CliRunner().invoke(main, ["lint", "anchor.py", "--format", fmt], catch_exceptions=True)
        concise = CliRunner().invoke(main, ["lint", "anchor.py", "--format", "concise"])
    _clean(again, again.stdout + again.stderr)
    assert again.exit_code == 1, again.stderr
    if not still_valid:
        assert concise.stdout == first.stdout  # a bad entry was a miss, and rewritten


# LSP messages: one real server session takes every example, so a message that wedges, kills or
# confuses it fails the examples after it too.
LSP_METHODS = [
    "textDocument/hover",
    "textDocument/codeAction",
    "initialize",
    "textDocument/didOpen",
    "textDocument/didChange",
    "textDocument/didSave",
    "textDocument/didClose",
    "notebookDocument/didChange",
    "$/cancelRequest",
    "workspace/executeCommand",
    "no/such",
]
numbers = st.one_of(st.integers(), st.floats(allow_nan=False), st.text(max_size=3), st.none())
positions = st.fixed_dictionaries({"line": numbers, "character": numbers})
lsp_params = st.one_of(
    json_values,
    st.fixed_dictionaries(
        {},
        optional={
            "textDocument": st.one_of(json_values, st.fixed_dictionaries({"uri": st.text(max_size=30)})),
            "position": positions,
            "range": st.fixed_dictionaries({"start": positions, "end": positions}),
            "context": st.fixed_dictionaries({"diagnostics": st.just([])}),
            "contentChanges": st.lists(st.fixed_dictionaries({"text": st.text(max_size=20)}), max_size=2),
        },
    ),
)
lsp_ids = st.one_of(st.integers(-(2**40), 10**6 - 1), st.text(max_size=6), json_values)


@st.composite
def lsp_messages(draw) -> tuple[bytes, int | None]:
    """(what is written to the server, the id of the request it must answer, if any)."""
    kind = draw(st.sampled_from(["request", "notification", "odd id", "garbage body", "bad framing"]))
    method = draw(st.sampled_from(LSP_METHODS) | st.text(max_size=10))
    if kind == "garbage body":
        return _framed(draw(st.binary(max_size=40) | json_values.map(lambda v: json.dumps(v).encode()))), None
    if kind == "bad framing":
        header = draw(
            st.sampled_from([b"Content-Length: 99999999999999\r\n", b"Content-Length: -1\r\n", b"X-Other: 1\r\n", b""])
        )
        return header + b"\r\n" + draw(st.binary(max_size=40)).replace(b"\n", b" "), None
    message: dict = {"jsonrpc": "2.0", "method": method, "params": draw(lsp_params)}
    if kind == "notification":
        return _framed(json.dumps(message).encode()), None
    if kind == "odd id":
        message["id"] = draw(lsp_ids)
        return _framed(json.dumps(message).encode()), None  # answered, but maybe under id null
    message["id"] = draw(st.integers(10**6, 10**9))
    return _framed(json.dumps(message).encode()), message["id"]


def _framed(body: bytes) -> bytes:
    return b"Content-Length: %d\r\n\r\n%s" % (len(body), body)


@pytest.fixture(scope="module")
def lsp_session(tmp_path_factory):
    root = tmp_path_factory.mktemp("lsp")
    (root / "job.py").write_text(JOB)
    client = RawClient(root)
    client.request(1, "initialize", {"capabilities": {}, "processId": None, "rootUri": root.as_uri()})
    client.send({"method": "initialized", "params": {}})
    yield client, root
    # Still serving as an editor needs it: a document opened now gets its diagnostics.
    document = {"uri": (root / "last.py").as_uri(), "languageId": "python", "version": 1, "text": JOB}
    client.send({"method": "textDocument/didOpen", "params": {"textDocument": document}})
    published = client.wait_for(
        lambda m: m.get("method") == "textDocument/publishDiagnostics" and m["params"]["uri"] == document["uri"]
    )
    assert "SPX101" in {d["code"] for d in published["params"]["diagnostics"]}
    assert client.request(2, "shutdown", None)["result"] is None
    client.send({"method": "exit"})
    assert client.process.wait(TIMEOUT) == 0
    stderr = client.stderr()
    assert "Traceback" not in stderr and 'File "' not in stderr and "Task exception" not in stderr, stderr


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(messages=st.lists(lsp_messages(), min_size=1, max_size=4))
def test_hostile_lsp_messages_are_each_answered_once_and_the_server_keeps_serving(lsp_session, messages):
    client, root = lsp_session
    expected = [msg_id for _, msg_id in messages if msg_id is not None]
    assume(len(set(expected)) == len(expected))
    before = len(client.seen)
    for data, _ in messages:
        client.process.stdin.write(data)
    # A well-formed request after them is read and answered: nothing wedged the stream.
    sentinel = {"textDocument": {"uri": (root / "job.py").as_uri()}, "position": {"line": 0, "character": 0}}
    client.send({"id": "sentinel", "method": "textDocument/hover", "params": sentinel})
    client.wait_for(lambda m: m.get("id") == "sentinel")
    client.send({"id": "sentinel-2", "method": "textDocument/hover", "params": sentinel})
    client.wait_for(lambda m: m.get("id") == "sentinel-2")
    replies = [m for m in client.seen[before:] if "method" not in m]
    for msg_id in expected:
        answers = [m for m in replies if m.get("id") == msg_id]
        assert len(answers) == 1, (msg_id, replies)
        assert "error" not in answers[0] or answers[0]["error"]["code"] in (-32600, -32601, -32602), answers[0]
    for reply in replies:
        assert "Traceback" not in json.dumps(reply) and 'File "' not in json.dumps(reply), reply
    assert not [m for m in client.seen[before:] if m.get("method") == "window/showMessage"]
