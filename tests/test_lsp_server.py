"""`sparkpar server` end to end: a real LSP client (pygls) spawns the server over stdio, opens a bad
job, gets SPX diagnostics, asks for a code action, applies it, and sees the diagnostic go."""

from __future__ import annotations

import asyncio
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from lsprotocol import types as lsp
from pygls.lsp.client import LanguageClient

BAD_JOB = """\
from pyspark.sql import functions as F


def latest(df):
    return df.orderBy("ts").groupBy("k").agg(F.first("v"))
"""
TIMEOUT = 60


def _server_command() -> list[str]:
    beside = Path(sys.executable).with_name("sparkpar")
    return [str(beside) if beside.exists() else shutil.which("sparkpar") or "sparkpar", "server"]


class Session:
    """A client connected to a `sparkpar server` subprocess, collecting published diagnostics."""

    def __init__(self, root: Path, options: dict | None = None) -> None:
        self.root = root
        self.options = options
        self.client = LanguageClient("sparkpar-tests", "1")
        self.published: asyncio.Queue[lsp.PublishDiagnosticsParams] = asyncio.Queue()
        self.client.feature(lsp.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)(lambda params: self.published.put_nowait(params))

    async def __aenter__(self) -> Session:
        await self.client.start_io(*_server_command(), cwd=str(self.root))
        await asyncio.wait_for(
            self.client.initialize_async(
                lsp.InitializeParams(
                    capabilities=lsp.ClientCapabilities(),
                    root_uri=self.root.as_uri(),
                    process_id=None,
                    initialization_options=self.options,
                )
            ),
            TIMEOUT,
        )
        self.client.initialized(lsp.InitializedParams())
        return self

    async def __aexit__(self, *exc) -> None:
        await asyncio.wait_for(self.client.shutdown_async(None), TIMEOUT)
        self.client.exit(None)
        await self.client.stop()

    def open(self, path: Path, text: str) -> str:
        path.write_text(text)
        uri = path.as_uri()
        self.client.text_document_did_open(
            lsp.DidOpenTextDocumentParams(
                text_document=lsp.TextDocumentItem(uri=uri, language_id="python", version=1, text=text)
            )
        )
        return uri

    def change(self, uri: str, version: int, text: str) -> None:
        self.client.text_document_did_change(
            lsp.DidChangeTextDocumentParams(
                text_document=lsp.VersionedTextDocumentIdentifier(uri=uri, version=version),
                content_changes=[lsp.TextDocumentContentChangeWholeDocument(text=text)],
            )
        )

    async def code_actions(self, uri: str, found: lsp.Diagnostic, only=None) -> list[lsp.CodeAction]:
        """The code actions offered on the range of the diagnostic `found` (of the kinds `only`)."""
        return await asyncio.wait_for(
            self.client.text_document_code_action_async(
                lsp.CodeActionParams(
                    text_document=lsp.TextDocumentIdentifier(uri=uri),
                    range=found.range,
                    context=lsp.CodeActionContext(diagnostics=[found], only=only),
                )
            ),
            TIMEOUT,
        )

    async def diagnostics(self, uri: str, version: int | None = None) -> list[lsp.Diagnostic]:
        while True:
            params = await asyncio.wait_for(self.published.get(), TIMEOUT)
            if params.uri == uri and (version is None or params.version == version):
                return params.diagnostics


def _apply(text: str, edits: list[lsp.TextEdit]) -> str:
    lines = text.splitlines(keepends=True)
    offsets = [0]
    for line in lines:
        offsets.append(offsets[-1] + len(line))

    def offset(position: lsp.Position) -> int:
        return offsets[min(position.line, len(lines))] + position.character

    for edit in sorted(edits, key=lambda e: (e.range.start.line, e.range.start.character), reverse=True):
        text = text[: offset(edit.range.start)] + edit.new_text + text[offset(edit.range.end) :]
    return text


def _run(coroutine):
    return asyncio.run(asyncio.wait_for(coroutine, 4 * TIMEOUT))


def test_open_diagnose_fix_and_the_diagnostic_goes(tmp_path):
    async def scenario():
        async with Session(tmp_path) as session:
            uri = session.open(tmp_path / "job.py", BAD_JOB)
            diagnostics = await session.diagnostics(uri)
            spx101 = [d for d in diagnostics if d.code == "SPX101"]
            assert len(spx101) == 1, diagnostics
            (found,) = spx101
            assert found.source == "sparkpar" and found.severity == lsp.DiagnosticSeverity.Error
            assert (found.range.start.line, found.range.start.character) == (4, 45)
            assert [r.message for r in found.related_information][-1] == "... but `groupBy` shuffles them"

            actions = await session.code_actions(uri, found)
            quick = [a for a in actions if a.kind == lsp.CodeActionKind.QuickFix and a.title.startswith("Fix SPX101")]
            assert quick and quick[0].is_preferred, [a.title for a in actions]
            fixed = _apply(BAD_JOB, quick[0].edit.changes[uri])
            assert 'F.min(F.struct("ts", "v")).getField("v")' in fixed

            session.change(uri, 2, fixed)
            after = await session.diagnostics(uri, version=2)
            assert not [d for d in after if d.code == "SPX101"], after
            return fixed

    fixed = _run(scenario())
    assert "orderBy" not in fixed


def test_hover_shows_the_rule_doc_and_unsafe_fixes_are_labelled(tmp_path):
    job = BAD_JOB.replace('df.orderBy("ts").groupBy', 'spark.read.parquet("events").groupBy')
    job = job.replace("def latest(df):", "def latest(spark):")

    async def scenario():
        async with Session(tmp_path) as session:
            uri = session.open(tmp_path / "job.py", job)
            (found,) = [d for d in await session.diagnostics(uri) if d.code == "SPX101"]
            hover = await asyncio.wait_for(
                session.client.text_document_hover_async(
                    lsp.HoverParams(text_document=lsp.TextDocumentIdentifier(uri=uri), position=found.range.start)
                ),
                TIMEOUT,
            )
            assert hover is not None and "## Why is this bad?" in hover.contents.value
            assert hover.contents.value.startswith("**SPX101**")
            nothing = await asyncio.wait_for(
                session.client.text_document_hover_async(
                    lsp.HoverParams(
                        text_document=lsp.TextDocumentIdentifier(uri=uri), position=lsp.Position(line=0, character=0)
                    )
                ),
                TIMEOUT,
            )
            assert nothing is None
            actions = await session.code_actions(uri, found)
            return found, actions

    found, actions = _run(scenario())
    assert found.data == {"fix": "unsafe", "confidence": "medium"}
    (unsafe,) = [a for a in actions if a.title.startswith("Fix SPX101")]
    assert unsafe.title.endswith("(unsafe: review the choice it makes)") and not unsafe.is_preferred


def test_project_configuration_is_honoured_and_changes_are_debounced(tmp_path):
    (tmp_path / "pyproject.toml").write_text(
        '[tool.sparkpar]\nseverity = { SPX101 = "info" }\nper-file-ignores = { "quiet_*.py" = ["SPX1"] }\n'
    )

    async def scenario():
        async with Session(tmp_path) as session:
            loud = session.open(tmp_path / "job.py", BAD_JOB)
            (found,) = [d for d in await session.diagnostics(loud) if d.code == "SPX101"]
            quiet = session.open(tmp_path / "quiet_job.py", BAD_JOB)
            ignored = await session.diagnostics(quiet)
            for version in range(2, 6):  # a burst of keystrokes
                session.change(loud, version, BAD_JOB + "#" * version + "\n")
            seen = []
            while not seen or seen[-1].version != 5:
                seen.append(await asyncio.wait_for(session.published.get(), TIMEOUT))
            await asyncio.sleep(1.5)
            while not session.published.empty():
                seen.append(session.published.get_nowait())
            return found, ignored, seen[-1].diagnostics if len(seen) == 1 else seen, [p.version for p in seen]

    found, ignored, burst, versions = _run(scenario())
    assert found.severity == lsp.DiagnosticSeverity.Information
    assert not [d for d in ignored if d.code.startswith("SPX1")]
    assert versions == [5]  # four changes, one analysis, of the last text
    assert [d.code for d in burst if d.code == "SPX101"] == ["SPX101"]


def test_code_actions_fix_with_the_projects_settings(tmp_path):
    # The editor's fix is the one `sparkpar fix` writes: the configured watermark delay, not the
    # default, in the quick fix and in "fix all".
    (tmp_path / "pyproject.toml").write_text('[tool.sparkpar]\nwatermark-delay = "2 hours"\n')
    job = (
        "from pyspark.sql import SparkSession\n"
        "from pyspark.sql.functions import window\n\n"
        "spark = SparkSession.builder.getOrCreate()\n"
        'counts = spark.readStream.format("rate").load().groupBy(window("timestamp", "1 minute")).count()\n'
        'counts.writeStream.outputMode("complete").format("console").start()\n'
    )

    async def scenario():
        async with Session(tmp_path) as session:
            uri = session.open(tmp_path / "job.py", job)
            (found,) = [d for d in await session.diagnostics(uri) if d.code == "SPX204"]
            actions = await session.code_actions(uri, found)
            return uri, actions

    uri, actions = _run(scenario())
    (quick,) = [a for a in actions if a.title.startswith("Fix SPX204")]
    assert 'withWatermark("timestamp", "2 hours")' in _apply(job, quick.edit.changes[uri])


def test_a_bad_configuration_is_shown_not_crashed_on(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[tool.sparkpar]\nselect = ["NOPE"]\n')

    async def scenario():
        messages: asyncio.Queue[lsp.ShowMessageParams] = asyncio.Queue()
        async with Session(tmp_path) as session:
            session.client.feature(lsp.WINDOW_SHOW_MESSAGE)(lambda params: messages.put_nowait(params))
            uri = session.open(tmp_path / "job.py", BAD_JOB)
            diagnostics = await session.diagnostics(uri)
            shown = await asyncio.wait_for(messages.get(), TIMEOUT)
            return diagnostics, shown

    diagnostics, shown = _run(scenario())
    assert list(diagnostics) == []
    assert shown.type == lsp.MessageType.Error
    assert "pyproject.toml: [tool.sparkpar] select: unknown rule id or prefix 'NOPE'" in shown.message


@pytest.mark.parametrize("missing", ["pygls", "lsprotocol"])
def test_server_without_the_lsp_extra_says_what_to_install(missing, tmp_path):
    blocker = tmp_path / "block"
    blocker.mkdir()
    (blocker / "sitecustomize.py").write_text(
        "import sys\nclass _Block:\n    def find_spec(self, name, path=None, target=None):\n"
        f"        if name.split('.')[0] == {missing!r}:\n            raise ModuleNotFoundError(name, name=name)\n"
        "sys.meta_path.insert(0, _Block())\n"
    )
    env = {"PYTHONPATH": str(blocker), "PATH": str(Path(sys.executable).parent)}
    out = subprocess.run(
        [sys.executable, "-c", "from sparkpar_lint.cli import main; main()", "server"],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=TIMEOUT,
    )
    assert out.returncode == 2
    assert out.stderr.strip() == f"sparkpar: error: sparkpar server needs {missing}: pip install 'sparkpar[lsp]'"
