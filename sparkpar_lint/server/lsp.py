"""The language server (pygls): the lint run's analysis on the editor's buffer, as it is typed.

Diagnostics are published on open and save at once, and after a pause in typing on change
(debounced, so a burst of keystrokes costs one analysis). They come from `runner.check_text`, the
same path, cache, suppressions and `[tool.sparkpar]` settings (nearest pyproject.toml upward from
the file) as `sparkpar lint`. Each finding's fix is a quick-fix code action (safe ones preferred,
unsafe ones labelled), `source.fixAll.sparkpar` applies every safe fix, and hovering a finding
shows its rule's documentation page.
"""

from __future__ import annotations

import asyncio
from importlib import metadata
from pathlib import Path

from lsprotocol import types as lsp
from pygls.lsp.server import LanguageServer
from pygls.workspace import ServerTextPosition, ServerTextRange, TextDocument

from sparkpar_lint.cache import CACHE_DIR_NAME, Cache
from sparkpar_lint.config import Config, ConfigError, find_config, load_config, matches
from sparkpar_lint.fixes.engine import fix_source
from sparkpar_lint.fixes.text_edits import LineEdit, finding_fixes, line_edits
from sparkpar_lint.model import Finding, Severity, Span
from sparkpar_lint.ruledocs import MissingDoc, load_doc
from sparkpar_lint.rules import all_rules
from sparkpar_lint.runner import check_text, effective_rules

DEBOUNCE_SECONDS = 0.3
FIX_ALL = f"{lsp.CodeActionKind.SourceFixAll.value}.sparkpar"
_SEVERITY = {
    Severity.ERROR: lsp.DiagnosticSeverity.Error,
    Severity.WARNING: lsp.DiagnosticSeverity.Warning,
    Severity.INFO: lsp.DiagnosticSeverity.Information,
}


class SparkparServer(LanguageServer):
    def __init__(self) -> None:
        super().__init__("sparkpar", metadata.version("sparkpar"))
        # uri -> the findings last published for it (hover and code actions read them).
        self.findings: dict[str, list[Finding]] = {}
        self.pending: dict[str, asyncio.TimerHandle] = {}
        self.rule_ids = [rule.id for rule in all_rules()]
        self.reported_errors: set[str] = set()

    def settings(self, path: Path) -> tuple[Config, Cache | None]:
        """The file's `[tool.sparkpar]` settings and the cache beside them (ConfigError if bad)."""
        source = find_config(path.parent)
        config = load_config(source, self.rule_ids)
        root = source.parent if source is not None else self._workspace_root()
        return config, Cache(root / CACHE_DIR_NAME) if root is not None else None

    def _workspace_root(self) -> Path | None:
        root = self.workspace.root_path
        return Path(root) if root else None

    def lint(self, uri: str) -> None:
        self.pending.pop(uri, None)
        document = self.workspace.get_text_document(uri)
        findings = self._findings(document)
        self.findings[uri] = findings
        diagnostics = [diagnostic(document, finding) for finding in findings]
        self.text_document_publish_diagnostics(
            lsp.PublishDiagnosticsParams(uri=uri, version=document.version, diagnostics=diagnostics))

    def _findings(self, document: TextDocument) -> list[Finding]:
        if not document.path or not document.path.endswith(".py"):
            return []
        path = Path(document.path)
        try:
            config, cache = self.settings(path)
        except ConfigError as error:
            self.report(str(error))
            return []
        if matches(path, config.exclude, config.root):
            return []
        result = check_text(str(path), document.source.encode("utf-8"), config,
                            effective_rules(config, self.rule_ids), cache)
        if result.error:
            self.report(result.error)
        return result.findings

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


def diagnostic(document: TextDocument, finding: Finding) -> lsp.Diagnostic:
    return lsp.Diagnostic(
        range=client_range(document, finding.span),
        severity=_SEVERITY[finding.severity],
        code=finding.rule_id,
        source="sparkpar",
        message=finding.message + ("" if finding.fix_safety is None else f" [fix: {finding.fix_safety}]"),
        related_information=[
            lsp.DiagnosticRelatedInformation(location=_related_location(document, related), message=related.message)
            for related in finding.related
        ] or None,
        data={"fix": finding.fix_safety},
    )


def _related_location(document: TextDocument, related) -> lsp.Location:
    if related.path is None:
        return lsp.Location(uri=document.uri, range=client_range(document, related.span))
    # A helper in another module: its `def` line (names are ASCII, so code points are UTF-16 units).
    span = related.span
    return lsp.Location(
        uri=Path(related.path).resolve().as_uri(),
        range=lsp.Range(lsp.Position(span.line - 1, span.column), lsp.Position(span.end_line - 1, span.end_column)),
    )


def client_range(document: TextDocument, span: Span) -> lsp.Range:
    """Our code-point columns in the units the client negotiated (UTF-16 by default)."""
    return document.range_to_client_units(ServerTextRange(
        ServerTextPosition(span.line - 1, span.column), ServerTextPosition(span.end_line - 1, span.end_column)))


def text_edits(edits: tuple[LineEdit, ...]) -> list[lsp.TextEdit]:
    # Whole lines: character 0 means the same in every position encoding.
    return [
        lsp.TextEdit(range=lsp.Range(start=lsp.Position(line=e.start_line - 1, character=0),
                                     end=lsp.Position(line=e.end_line - 1, character=0)), new_text=e.text)
        for e in edits
    ]


def _touches(span: Span, start: ServerTextPosition, end: ServerTextPosition) -> bool:
    first, last = (span.line - 1, span.column), (span.end_line - 1, span.end_column)
    return first <= (end.line, end.character) and (start.line, start.character) <= last


def build() -> SparkparServer:
    server = SparkparServer()

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
        ls.findings.pop(uri, None)
        ls.text_document_publish_diagnostics(lsp.PublishDiagnosticsParams(uri=uri, diagnostics=[]))

    @server.feature(lsp.TEXT_DOCUMENT_CODE_ACTION, lsp.CodeActionOptions(
        code_action_kinds=[lsp.CodeActionKind.QuickFix, FIX_ALL]))
    def code_action(ls: SparkparServer, params: lsp.CodeActionParams) -> list[lsp.CodeAction]:
        uri = params.text_document.uri
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
        document = ls.workspace.get_text_document(params.text_document.uri)
        at = document.position_from_client_units(params.position)
        for finding in ls.findings.get(document.uri, []):
            if _touches(finding.span, at, at):
                try:
                    page = load_doc(finding.rule_id)
                except MissingDoc:
                    page = ""
                text = f"**{finding.rule_id}** {finding.message}\n\n---\n\n{page}".rstrip()
                return lsp.Hover(contents=lsp.MarkupContent(kind=lsp.MarkupKind.Markdown, value=text),
                                 range=client_range(document, finding.span))
        return None

    return server


def _quick_fixes(ls: SparkparServer, document: TextDocument, selection: lsp.Range) -> list[lsp.CodeAction]:
    chosen = document.range_from_client_units(selection)
    hit = [f for f in ls.findings.get(document.uri, [])
           if f.fix_safety is not None and _touches(f.span, chosen.start, chosen.end)]
    if not hit or not document.path:
        return []
    # Fixes are recomputed from the buffer as it is now; a finding whose span moved since it was
    # published no longer matches, and waits for the next diagnostics.
    fixes = finding_fixes(document.path, document.source, {f.rule_id for f in hit})
    actions = []
    for finding in hit:
        fix = fixes.get((finding.rule_id, finding.span))
        if fix is None:
            continue
        safe = fix.safety == "safe"
        title = f"Fix {finding.rule_id}: {fix.description}" + ("" if safe else " (unsafe: review the choice it makes)")
        actions.append(lsp.CodeAction(
            title=title, kind=lsp.CodeActionKind.QuickFix, is_preferred=safe,
            diagnostics=[diagnostic(document, finding)],
            edit=lsp.WorkspaceEdit(changes={document.uri: text_edits(fix.edits)})))
    return sorted(actions, key=lambda action: not action.is_preferred)


def _fix_all(ls: SparkparServer, document: TextDocument) -> list[lsp.CodeAction]:
    findings = ls.findings.get(document.uri, [])
    rule_ids = {f.rule_id for f in findings if f.fix_safety == "safe"}
    if not rule_ids or not document.path:
        return []
    outcome = fix_source(document.path, document.source, rule_ids)
    if not outcome.changed:
        return []
    return [lsp.CodeAction(
        title="Fix all safe sparkpar findings", kind=FIX_ALL,
        edit=lsp.WorkspaceEdit(changes={document.uri: text_edits(line_edits(outcome.original, outcome.fixed))}))]


def serve() -> None:
    build().start_io()
