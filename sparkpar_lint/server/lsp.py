"""The language server (pygls): the lint run's analysis on the editor's buffer, as it is typed.

Diagnostics are published on open and save at once, and after a pause in typing on change
(debounced, so a burst of keystrokes costs one analysis). They come from `runner.check_text`, the
same path, cache, suppressions and `[tool.sparkpar]` settings (nearest pyproject.toml upward from
the file) as `sparkpar lint`. Each finding's fix is a quick-fix code action (safe ones preferred,
unsafe ones labelled), `source.fixAll.sparkpar` applies every safe fix, and hovering a finding
shows its rule's documentation page.

Notebooks: a client that syncs notebooks (LSP 3.17 `notebookDocument/*`) gets each cell's
diagnostics on that cell; an `.ipynb` file opened as plain JSON text gets them where the cell's
source line is written in the JSON; Databricks/Fabric `.py` exports and `.sql` files are checked
as `sparkpar lint` checks them, in file lines. Those files opened as text get `sparkpar fix`'s
rewrite of the whole file as line edits of the document.

Each analysis runs in a worker process with a time budget (`--file-timeout`, or the client's
`initializationOptions.fileTimeout`): a file that takes longer, crashes the parser or exhausts
memory gets one diagnostic saying so, and the server goes on serving.
"""

from __future__ import annotations

import asyncio
import bisect
import dataclasses
import json
import logging
import os
import sys
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from urllib.parse import unquote

from lsprotocol import types as lsp
from pygls.exceptions import FeatureRequestError, JsonRpcException
from pygls.lsp.server import LanguageServer
from pygls.workspace import ServerTextPosition, ServerTextRange, TextDocument

from sparkpar_lint import verdicts
from sparkpar_lint.cache import CACHE_DIR_NAME, Cache
from sparkpar_lint.config import Config, ConfigError, find_config, load_config
from sparkpar_lint.discovery import matches
from sparkpar_lint.fixes.engine import fix_source
from sparkpar_lint.fixes.text_edits import LineEdit, finding_fixes, line_edits
from sparkpar_lint.isolation import Failure, StandingWorker
from sparkpar_lint.model import (
    DEFAULT_MIN_CONFIDENCE,
    MIN_CONFIDENCE_ENVIRONMENT,
    Confidence,
    FileResult,
    Finding,
    Severity,
    Span,
)
from sparkpar_lint.ruledocs import MissingDoc, load_doc
from sparkpar_lint.rules import all_rules
from sparkpar_lint.runner import analysis_settings, check_text, effective_rules
from sparkpar_lint.server.guard import (
    UNREADABLE,
    FramedInput,
    GuardedProtocol,
    answer_unframed,
    answer_unreadable,
    one_line_logs,
)
from sparkpar_lint.settings import AnalysisSettings
from sparkpar_lint.sources.ipynb import cell_positions

DEBOUNCE_SECONDS = 0.3
# Seconds one analysis may take before the file gets a "not checked" diagnostic instead: well
# above any real module we have seen (a few seconds), well below "the editor seems hung".
DEFAULT_FILE_TIMEOUT = 20.0
CHECKED_SUFFIXES = (".py", ".ipynb", ".sql")
FIX_ALL = f"{lsp.CodeActionKind.SourceFixAll.value}.sparkpar"
_SEVERITY = {
    Severity.ERROR: lsp.DiagnosticSeverity.Error,
    Severity.WARNING: lsp.DiagnosticSeverity.Warning,
    Severity.INFO: lsp.DiagnosticSeverity.Information,
}


_WORKER_STDOUT_CLOSED: list[bool] = []  # set once in the worker process
_WARM_UP = 0


@dataclass(frozen=True)
class _Job:
    """One analysis, sent to a worker process."""

    path: str
    data: bytes
    config: Config
    rule_ids: tuple[str, ...]
    cache_dir: Path | None


def _check(job: _Job | int) -> FileResult | None:
    """In the worker: `check_text`, with stdout (the server's LSP stream, inherited) closed off.
    A number is the warm-up item, answered once the worker has imported what analysis needs."""
    if not _WORKER_STDOUT_CLOSED:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 1)
        os.close(devnull)
        _WORKER_STDOUT_CLOSED.append(True)
    if not isinstance(job, _Job):
        return None
    cache = Cache(job.cache_dir) if job.cache_dir is not None else None
    return check_text(job.path, job.data, job.config, job.rule_ids, cache)


class SparkparServer(LanguageServer):
    def __init__(self, file_timeout: float | None = DEFAULT_FILE_TIMEOUT) -> None:
        super().__init__(
            "sparkpar",
            metadata.version("sparkpar"),
            notebook_document_sync=lsp.NotebookDocumentSyncOptions(
                notebook_selector=[
                    lsp.NotebookDocumentFilterWithCells(
                        notebook="*",
                        cells=[lsp.NotebookCellLanguage(language="python"), lsp.NotebookCellLanguage(language="sql")],
                    )
                ],
                save=True,
            ),
            protocol_cls=GuardedProtocol,
        )
        # uri (a cell's, for notebooks) -> the findings last published for it (hover and code
        # actions read them).
        self.findings: dict[str, list[Finding]] = {}
        self.pending: dict[str, asyncio.TimerHandle] = {}
        # uri -> the number of the latest analysis asked for; an older one finishing later is dropped.
        self.generation: dict[str, int] = {}
        self.rule_ids = [rule.id for rule in all_rules()]
        self.reported_errors: set[str] = set()
        self.file_timeout = file_timeout
        self.worker = StandingWorker(_check, warm_up=_WARM_UP)

    def report_server_error(self, error: Exception, source) -> None:
        """A message that could not be read is answered (guard.py); no error is shown to the user
        (pygls pops "Error in server" up for any): requests carry theirs in the response, and the
        rest is the client's garbage or our bug, for the log (one line)."""
        if source is FeatureRequestError or source is JsonRpcException and answer_unreadable(self.protocol, error):
            return  # answered (pygls has logged a failed request already)
        logging.getLogger(__name__).warning("%s: %s", source.__name__, _one_line(error))

    def settings(self, path: Path) -> tuple[Config, Cache | None]:
        """The file's `[tool.sparkpar]` settings and the cache beside them (ConfigError if bad)."""
        source = find_config(path.parent)
        config = load_config(source, self.rule_ids)
        root = source.parent if source is not None else self._workspace_root()
        return config, Cache(root / CACHE_DIR_NAME) if root is not None else None

    def min_confidence(self, path: str | None) -> Confidence:
        """The file's `min-confidence` setting, or the environment's as `sparkpar lint` reads it:
        findings below it are shown as hints."""
        try:
            return Confidence.parse(os.environ[MIN_CONFIDENCE_ENVIRONMENT])
        except (KeyError, ValueError):
            pass  # unset, or a value `sparkpar lint` would reject: the file's setting decides
        try:
            return self.settings(Path(path))[0].min_confidence if path else DEFAULT_MIN_CONFIDENCE
        except ConfigError:
            return DEFAULT_MIN_CONFIDENCE

    def analysis_settings(self, path: str) -> AnalysisSettings | None:
        """What the file's configuration tells the rules, for its fixes (None if the config is bad:
        its diagnostics already say so)."""
        try:
            config, cache = self.settings(Path(path))
        except ConfigError:
            return None
        return analysis_settings(config, cache.directory if cache is not None else None)

    def _workspace_root(self) -> Path | None:
        root = self.workspace.root_path
        return Path(root) if root else None

    def lint(self, uri: str) -> None:
        """Analyse the document (or notebook) at `uri` and publish, without blocking the server.
        One the client never opened is left alone (pygls would read it from disk, or fail)."""
        self.pending.pop(uri, None)
        if self.workspace.get_notebook_document(notebook_uri=uri) is None and not _is_open(self, uri):
            return
        self.generation[uri] = self.generation.get(uri, 0) + 1
        asyncio.ensure_future(self._lint(uri, self.generation[uri]))

    async def _lint(self, uri: str, generation: int) -> None:
        notebook = self.workspace.get_notebook_document(notebook_uri=uri)
        if notebook is not None:
            path, data = _notebook_path(notebook.uri), _notebook_json(self, notebook)
        else:
            document = self.workspace.get_text_document(uri)
            path, data, version = document.path, document.source.encode("utf-8"), document.version
        result = await self._analyse(path, data)
        if self.generation.get(uri) != generation:
            return  # the text changed while it was analysed; a newer analysis will publish
        if notebook is not None:
            self._publish_cells(notebook, result)
            return
        findings = result.findings if result is not None else []
        self.findings[uri] = findings
        threshold = self.min_confidence(path)
        diagnostics = [diagnostic(document, f, _locator(document), threshold) for f in findings]
        if result is not None and result.error:
            diagnostics.append(_not_checked(result.error))
        self.text_document_publish_diagnostics(
            lsp.PublishDiagnosticsParams(uri=uri, version=version, diagnostics=diagnostics)
        )

    async def _analyse(self, path: str | None, data: bytes) -> FileResult | None:
        """The file's result, or None when it is not one sparkpar checks (or the config is bad)."""
        if not path or not path.endswith(CHECKED_SUFFIXES):
            return None
        try:
            config, cache = self.settings(Path(path))
        except ConfigError as error:
            self.report(str(error))
            return None
        if matches(Path(path), config.exclude, config.root):
            return None
        job = _Job(
            path,
            data,
            config,
            tuple(effective_rules(config, self.rule_ids)),
            cache.directory if cache is not None else None,
        )
        outcome = await asyncio.get_running_loop().run_in_executor(None, self.worker.run, job, self.file_timeout)
        if isinstance(outcome, Failure):
            return FileResult(path, error=f"{path}: {outcome}")
        if config.verdicts is not None and not path.endswith(".ipynb"):
            try:
                known = verdicts.load(config.verdicts)
            except verdicts.VerdictsError as error:
                self.report(str(error))
            else:
                sources = {path: data.decode("utf-8", "surrogateescape")}
                outcome.findings = verdicts.apply(outcome.findings, sources, known, config.root)
        return outcome

    def _publish_cells(self, notebook: lsp.NotebookDocument, result: FileResult | None) -> None:
        """Each code cell's findings on that cell (an empty list clears what it had)."""
        by_cell: dict[str, list[Finding]] = {cell.document: [] for cell in notebook.cells}
        for finding in result.findings if result is not None else []:
            if finding.cell is not None and 0 < finding.cell <= len(notebook.cells):
                cell = notebook.cells[finding.cell - 1]
                by_cell[cell.document].append(_without_header(finding) if _sql_header(self, cell) else finding)
        first_code = next((c.document for c in notebook.cells if c.kind == lsp.NotebookCellKind.Code), None)
        for cell in notebook.cells:
            if cell.kind != lsp.NotebookCellKind.Code:
                continue
            document = self.workspace.get_text_document(cell.document)
            self.findings[cell.document] = by_cell[cell.document]
            threshold = self.min_confidence(_notebook_path(notebook.uri))
            diagnostics = [diagnostic(document, f, None, threshold) for f in by_cell[cell.document]]
            if result is not None and result.error and cell.document == first_code:
                diagnostics.append(_not_checked(result.error))
            self.text_document_publish_diagnostics(
                lsp.PublishDiagnosticsParams(uri=cell.document, version=document.version, diagnostics=diagnostics)
            )

    def report(self, message: str) -> None:
        """Show a problem once (a bad config would otherwise pop up on every keystroke)."""
        if message not in self.reported_errors:
            self.reported_errors.add(message)
            self.window_show_message(lsp.ShowMessageParams(type=lsp.MessageType.Error, message=f"sparkpar: {message}"))

    def schedule(self, uri: str, delay: float) -> None:
        previous = self.pending.pop(uri, None)
        if previous is not None:
            previous.cancel()
        self.pending[uri] = asyncio.get_running_loop().call_later(delay, self.lint, uri)


def _one_line(error: Exception) -> str:
    return (f"{type(error).__name__}: {error}".splitlines() or [""])[0]


def _notebook_path(uri: str) -> str:
    """The notebook's file path, as `.ipynb` so it is read as one (an unsaved notebook has none)."""
    from pygls.uris import to_fs_path

    path = to_fs_path(uri) or "untitled"
    return path if path.endswith(".ipynb") else path + ".ipynb"


def _notebook_json(ls: SparkparServer, notebook: lsp.NotebookDocument) -> bytes:
    """The synced cells as notebook JSON, cell for cell, so findings come back numbered by cell."""
    cells: list[dict] = []
    for cell in notebook.cells:
        code = cell.kind == lsp.NotebookCellKind.Code
        source = _sql_header(ls, cell) + ls.workspace.get_text_document(cell.document).source if code else ""
        cells.append({"cell_type": "code" if code else "markdown", "metadata": {}, "source": source})
    document = {"cells": cells, "metadata": {"kernelspec": {"language": "python"}}, "nbformat": 4, "nbformat_minor": 5}
    return json.dumps(document).encode("utf-8")


def _sql_header(ls: SparkparServer, cell: lsp.NotebookCell) -> str:
    """A cell in the SQL language is a `%%sql` cell: the header it is analysed (and fixed) with,
    one line that findings and edits in that cell are moved back over."""
    document = ls.workspace.get_text_document(cell.document)
    return "%%sql\n" if (document.language_id or "").lower() == "sql" else ""


def _without_header(finding: Finding) -> Finding:
    def up(span: Span) -> Span:
        return Span(max(1, span.line - 1), span.column, max(1, span.end_line - 1), span.end_column)

    related = tuple(dataclasses.replace(r, span=up(r.span)) for r in finding.related)
    return dataclasses.replace(finding, span=up(finding.span), related=related)


def _not_checked(error: str) -> lsp.Diagnostic:
    """The file's one diagnostic when it could not be analysed (time budget, crash, memory)."""
    return lsp.Diagnostic(
        range=lsp.Range(start=lsp.Position(line=0, character=0), end=lsp.Position(line=0, character=0)),
        severity=lsp.DiagnosticSeverity.Warning,
        source="sparkpar",
        message=f"sparkpar: {error}",
    )


def _locator(document: TextDocument):
    """For an `.ipynb` opened as JSON text: a finding's in-cell span -> its place in the JSON."""
    if not (document.path or "").endswith(".ipynb"):
        return None
    positions = cell_positions(document.source)
    json_lines = [0]
    for line in document.source.splitlines(keepends=True):
        json_lines.append(json_lines[-1] + len(line))

    def locate(cell: int | None, span: Span) -> Span:
        text, offsets = positions.get(cell or 0, ("", []))
        if not offsets:
            return Span(1, 0, 1, 0)
        cell_lines = [0, *(i + 1 for i, char in enumerate(text) if char == "\n")]

        def at(line: int, column: int) -> tuple[int, int]:
            offset = offsets[min(cell_lines[min(line, len(cell_lines)) - 1] + column, len(offsets) - 1)]
            json_line = bisect.bisect_right(json_lines, offset) - 1
            return json_line + 1, offset - json_lines[json_line]

        return Span(*at(span.line, span.column), *at(span.end_line, span.end_column))

    return locate


def diagnostic(
    document: TextDocument, finding: Finding, locate=None, min_confidence: Confidence = DEFAULT_MIN_CONFIDENCE
) -> lsp.Diagnostic:
    """A finding below `min_confidence` (one `sparkpar lint` would not show) is a hint: there,
    unobtrusive, never dropped; the message says what it assumed either way."""

    def where(span: Span, cell: int | None) -> lsp.Range:
        return client_range(document, locate(cell, span) if locate is not None else span)

    return lsp.Diagnostic(
        range=where(finding.span, finding.cell),
        severity=(
            _SEVERITY[finding.severity]
            if finding.confidence.rank >= min_confidence.rank
            else lsp.DiagnosticSeverity.Hint
        ),
        code=finding.rule_id,
        source="sparkpar",
        message=finding.message + ("" if finding.fix_safety is None else f" [fix: {finding.fix_safety}]"),
        related_information=[
            lsp.DiagnosticRelatedInformation(
                location=_related_location(document, related, where), message=related.message
            )
            for related in finding.related
        ]
        or None,
        data={"fix": finding.fix_safety, "confidence": finding.confidence.value},
    )


def _related_location(document: TextDocument, related, where) -> lsp.Location:
    if related.path is None:
        return lsp.Location(uri=document.uri, range=where(related.span, related.cell))
    # A helper in another module: its `def` line (names are ASCII, so code points are UTF-16 units).
    span = related.span
    return lsp.Location(
        uri=Path(related.path).resolve().as_uri(),
        range=lsp.Range(lsp.Position(span.line - 1, span.column), lsp.Position(span.end_line - 1, span.end_column)),
    )


def client_range(document: TextDocument, span: Span) -> lsp.Range:
    """Our code-point columns in the units the client negotiated (UTF-16 by default)."""
    return document.range_to_client_units(
        ServerTextRange(
            ServerTextPosition(span.line - 1, span.column), ServerTextPosition(span.end_line - 1, span.end_column)
        )
    )


def text_edits(edits: tuple[LineEdit, ...]) -> list[lsp.TextEdit]:
    # Whole lines: character 0 means the same in every position encoding.
    return [
        lsp.TextEdit(
            range=lsp.Range(
                start=lsp.Position(line=e.start_line - 1, character=0),
                end=lsp.Position(line=e.end_line - 1, character=0),
            ),
            new_text=e.text,
        )
        for e in edits
    ]


def _touches(span: Span, start: ServerTextPosition, end: ServerTextPosition) -> bool:
    first, last = (span.line - 1, span.column), (span.end_line - 1, span.end_column)
    return first <= (end.line, end.character) and (start.line, start.character) <= last


def build(file_timeout: float | None = DEFAULT_FILE_TIMEOUT) -> SparkparServer:
    server = SparkparServer(file_timeout)

    @server.feature(lsp.INITIALIZE)
    def initialize(ls: SparkparServer, params: lsp.InitializeParams) -> None:
        # `{"fileTimeout": seconds}` (0: no limit) overrides --file-timeout for this client.
        options = params.initialization_options
        timeout = options.get("fileTimeout") if isinstance(options, dict) else None
        if isinstance(timeout, (int, float)) and not isinstance(timeout, bool) and timeout >= 0:
            ls.file_timeout = float(timeout) or None

    @server.feature(UNREADABLE)
    def unreadable(ls: SparkparServer, params) -> None:
        # FramedInput's stand-in for a header block it could not frame.
        answer_unframed(ls.protocol, str(getattr(params, "reason", "unreadable headers")))

    @server.feature(lsp.NOTEBOOK_DOCUMENT_DID_OPEN)
    def notebook_open(ls: SparkparServer, params: lsp.DidOpenNotebookDocumentParams) -> None:
        ls.lint(params.notebook_document.uri)

    @server.feature(lsp.NOTEBOOK_DOCUMENT_DID_CHANGE)
    def notebook_change(ls: SparkparServer, params: lsp.DidChangeNotebookDocumentParams) -> None:
        ls.schedule(params.notebook_document.uri, DEBOUNCE_SECONDS)

    @server.feature(lsp.NOTEBOOK_DOCUMENT_DID_SAVE)
    def notebook_save(ls: SparkparServer, params: lsp.DidSaveNotebookDocumentParams) -> None:
        ls.lint(params.notebook_document.uri)

    @server.feature(lsp.NOTEBOOK_DOCUMENT_DID_CLOSE)
    def notebook_close(ls: SparkparServer, params: lsp.DidCloseNotebookDocumentParams) -> None:
        ls.generation.pop(params.notebook_document.uri, None)
        for cell in params.cell_text_documents:
            ls.findings.pop(cell.uri, None)
            ls.text_document_publish_diagnostics(lsp.PublishDiagnosticsParams(uri=cell.uri, diagnostics=[]))

    @server.feature(lsp.TEXT_DOCUMENT_DID_OPEN)
    def did_open(ls: SparkparServer, params: lsp.DidOpenTextDocumentParams) -> None:
        ls.lint(params.text_document.uri)

    @server.feature(lsp.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(ls: SparkparServer, params: lsp.DidChangeTextDocumentParams) -> None:
        ls.schedule(params.text_document.uri, DEBOUNCE_SECONDS)

    @server.feature(lsp.TEXT_DOCUMENT_DID_SAVE)
    def did_save(ls: SparkparServer, params: lsp.DidSaveTextDocumentParams) -> None:
        ls.lint(params.text_document.uri)

    @server.feature(lsp.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls: SparkparServer, params: lsp.DidCloseTextDocumentParams) -> None:
        uri = params.text_document.uri
        pending = ls.pending.pop(uri, None)
        if pending is not None:
            pending.cancel()
        ls.generation.pop(uri, None)
        ls.findings.pop(uri, None)
        ls.text_document_publish_diagnostics(lsp.PublishDiagnosticsParams(uri=uri, diagnostics=[]))

    @server.feature(
        lsp.TEXT_DOCUMENT_CODE_ACTION, lsp.CodeActionOptions(code_action_kinds=[lsp.CodeActionKind.QuickFix, FIX_ALL])
    )
    def code_action(ls: SparkparServer, params: lsp.CodeActionParams) -> list[lsp.CodeAction]:
        uri = params.text_document.uri
        if not _is_open(ls, uri):  # pygls would read it from disk, or fail if it is not there
            return []
        document = ls.workspace.get_text_document(uri)
        wanted = params.context.only
        actions = []
        if wanted is None or lsp.CodeActionKind.QuickFix in wanted:
            actions += _quick_fixes(ls, document, params.range)
        if wanted is None or any(FIX_ALL.startswith(kind) for kind in wanted):
            actions += _fix_all(ls, document)
        return actions

    @server.feature(lsp.TEXT_DOCUMENT_HOVER)
    def hover(ls: SparkparServer, params: lsp.HoverParams) -> lsp.Hover | None:
        if not _is_open(ls, params.text_document.uri):
            return None
        document = ls.workspace.get_text_document(params.text_document.uri)
        at = document.position_from_client_units(params.position)
        for finding in ls.findings.get(document.uri, []):
            if _touches(finding.span, at, at):
                try:
                    page = load_doc(finding.rule_id)
                except MissingDoc:
                    page = ""
                text = f"**{finding.rule_id}** {finding.message}\n\n---\n\n{page}".rstrip()
                return lsp.Hover(
                    contents=lsp.MarkupContent(kind=lsp.MarkupKind.Markdown, value=text),
                    range=client_range(document, finding.span),
                )
        return None

    return server


def _is_open(ls: SparkparServer, uri: str) -> bool:
    return unquote(uri) in ls.workspace.text_documents


def _quick_fixes(ls: SparkparServer, document: TextDocument, selection: lsp.Range) -> list[lsp.CodeAction]:
    chosen = document.range_from_client_units(selection)
    notebook = ls.workspace.get_notebook_document(cell_uri=document.uri)
    # An .ipynb opened as JSON: findings are in cell lines, the selection in the JSON's.
    locate = _locator(document) if notebook is None else None
    hit = [
        f
        for f in ls.findings.get(document.uri, [])
        if f.fix_safety is not None
        and _touches(locate(f.cell, f.span) if locate is not None else f.span, chosen.start, chosen.end)
    ]
    if not hit or not document.path:
        return []
    if notebook is not None:
        return _notebook_fixes(ls, notebook, hit)
    if not _plain_python(document):
        return _file_fixes(ls, document, hit)
    # Fixes are recomputed from the buffer as it is now; a finding whose span moved since it was
    # published no longer matches, and waits for the next diagnostics.
    settings = ls.analysis_settings(document.path)
    fixes = finding_fixes(document.path, document.source, {f.rule_id for f in hit}, settings)
    actions = []
    for finding in hit:
        fix = fixes.get((finding.rule_id, finding.span))
        if fix is None:
            continue
        safe = fix.safety == "safe"
        title = f"Fix {finding.rule_id}: {fix.description}" + ("" if safe else " (unsafe: review the choice it makes)")
        actions.append(
            lsp.CodeAction(
                title=title,
                kind=lsp.CodeActionKind.QuickFix,
                is_preferred=safe,
                diagnostics=[diagnostic(document, finding)],
                edit=lsp.WorkspaceEdit(changes={document.uri: text_edits(fix.edits)}),
            )
        )
    return sorted(actions, key=lambda action: not action.is_preferred)


def _fix_all(ls: SparkparServer, document: TextDocument) -> list[lsp.CodeAction]:
    findings = ls.findings.get(document.uri, [])
    rule_ids = {f.rule_id for f in findings if f.fix_safety == "safe"}
    if not rule_ids or not document.path:
        return []
    notebook = ls.workspace.get_notebook_document(cell_uri=document.uri)
    if notebook is not None:
        return _notebook_fixes(ls, notebook, [f for f in findings if f.fix_safety == "safe"], fix_all=True)
    if not _plain_python(document):
        return _file_fixes(ls, document, [f for f in findings if f.fix_safety == "safe"], fix_all=True)
    outcome = fix_source(document.path, document.source, rule_ids, settings=ls.analysis_settings(document.path))
    if not outcome.changed:
        return []
    return [
        lsp.CodeAction(
            title="Fix all safe sparkpar findings",
            kind=FIX_ALL,
            edit=lsp.WorkspaceEdit(changes={document.uri: text_edits(line_edits(outcome.original, outcome.fixed))}),
        )
    ]


def _plain_python(document: TextDocument) -> bool:
    from sparkpar_lint.sources import is_notebook

    return bool(document.path) and document.path.endswith(".py") and not is_notebook(document.path, document.source)


def _notebook_fixes(
    ls: SparkparServer, notebook: lsp.NotebookDocument, hit: list[Finding], fix_all: bool = False
) -> list[lsp.CodeAction]:
    """Fixes in a synced notebook: the notebook is fixed whole (`sparkpar fix`'s way, imports into
    the first code cell) and each changed cell gets its edits. One action per rule (all of that
    rule's findings in the notebook), or one for every safe fix."""
    from sparkpar_lint.fixes.notebook import fix_notebook
    from sparkpar_lint.sources.ipynb import source_text

    data = _notebook_json(ls, notebook).decode("utf-8")
    path = _notebook_path(notebook.uri)
    settings = ls.analysis_settings(path)
    actions = []
    for rule_ids, unsafe in _fix_groups(hit, fix_all):
        outcome = fix_notebook(path, data, rule_ids, unsafe=unsafe, settings=settings)
        if not outcome.changed:
            continue
        changes = {}
        for cell, fixed in zip(notebook.cells, json.loads(outcome.fixed)["cells"]):
            before = ls.workspace.get_text_document(cell.document).source
            after = source_text(fixed)
            header = _sql_header(ls, cell) if cell.kind == lsp.NotebookCellKind.Code else ""
            if header and after.startswith(header):
                after = after[len(header) :]
            if cell.kind == lsp.NotebookCellKind.Code and after != before:
                changes[cell.document] = text_edits(line_edits(before, after))
        actions.append(_whole_file_action(rule_ids, unsafe, fix_all, changes, "notebook"))
    return actions


def _file_fixes(
    ls: SparkparServer, document: TextDocument, hit: list[Finding], fix_all: bool = False
) -> list[lsp.CodeAction]:
    """Fixes in a file read through cells but opened as one text document (an `.ipynb` as JSON, a
    `.sql` file, a Databricks export): `sparkpar fix`'s rewrite of the whole file, as line edits
    of the document, one action per rule (or one for every safe fix)."""
    from sparkpar_lint.fixes.notebook import fix_notebook
    from sparkpar_lint.sources.notebook import NotebookError

    kind_of_file = "notebook" if (document.path or "").endswith(".ipynb") else "file"
    settings = ls.analysis_settings(document.path)
    actions = []
    for rule_ids, unsafe in _fix_groups(hit, fix_all):
        try:
            outcome = fix_notebook(document.path, document.source, rule_ids, unsafe=unsafe, settings=settings)
        except NotebookError:
            return []  # not valid notebook JSON while being typed: its diagnostics say so
        if outcome.changed:
            changes = {document.uri: text_edits(line_edits(outcome.original, outcome.fixed))}
            actions.append(_whole_file_action(rule_ids, unsafe, fix_all, changes, kind_of_file))
    return actions


def _fix_groups(hit: list[Finding], fix_all: bool) -> list[tuple[set[str], bool]]:
    """(rules, unsafe?) per action: every rule at once for fix-all, else one rule each, safe first."""
    if fix_all:
        return [({f.rule_id for f in hit}, False)]
    pairs = sorted({(f.rule_id, f.fix_safety == "unsafe") for f in hit}, key=lambda g: (g[1], g[0]))
    return [({rule_id}, unsafe) for rule_id, unsafe in pairs]


def _whole_file_action(rule_ids: set[str], unsafe: bool, fix_all: bool, changes: dict, what: str) -> lsp.CodeAction:
    if fix_all:
        title, kind = "Fix all safe sparkpar findings", FIX_ALL
    else:
        title = f"Fix {min(rule_ids)} in this {what}" + (" (unsafe: review the choice it makes)" if unsafe else "")
        kind = lsp.CodeActionKind.QuickFix
    return lsp.CodeAction(
        title=title, kind=kind, is_preferred=not unsafe and not fix_all, edit=lsp.WorkspaceEdit(changes=changes)
    )


def serve(file_timeout: float | None = DEFAULT_FILE_TIMEOUT) -> None:
    one_line_logs()
    server = build(file_timeout)
    try:
        server.start_io(stdin=FramedInput(sys.stdin.buffer))  # type: ignore[arg-type]
    finally:
        server.worker.close()
