"""SPX901 unparsable-file: a file that does not parse is reported, and the others still checked."""

from __future__ import annotations

import ast
from collections.abc import Iterator

import libcst as cst

from sparkpar_lint.model import Finding, Severity, Span
from sparkpar_lint.parsing import TooDeeplyNested
from sparkpar_lint.rules.base import Invalid, Rule, RuleContext, Valid


class UnparsableFile(Rule):
    id = "SPX901"
    name = "unparsable-file"
    severity = Severity.ERROR
    summary = "The file cannot be parsed, so nothing in it was checked."
    VALID = [Valid("x = 1\n")]
    INVALID = [
        Invalid("def f(:\n    pass\n", line=1, column=6),
        Invalid("x = (1,\n", line=1, column=4),
    ]

    def check(self, ctx: RuleContext) -> Iterator[Finding]:
        # The analysis emits SPX901 itself when parsing fails; a parsed file has nothing to add.
        return iter(())


def unparsable_finding(path: str, source: str, error: cst.ParserSyntaxError) -> Finding:
    # CPython's own parser names the problem and its place more precisely than LibCST's; LibCST's
    # message stays for code CPython accepts but LibCST cannot represent.
    try:
        ast.parse(source)
    except (RecursionError, MemoryError, ValueError):
        line, column = error.editor_line, error.editor_column - 1
        message = f"cannot parse: {error.message}"
    except SyntaxError as syntax_error:
        line, column = syntax_error.lineno or 1, max((syntax_error.offset or 1) - 1, 0)
        message = f"cannot parse: {syntax_error.msg}"
    else:
        line, column = error.editor_line, error.editor_column - 1
        message = f"cannot parse: {error.message}"
    return _finding(path, message, line, column)


def too_deep_finding(path: str, error: TooDeeplyNested) -> Finding:
    return _finding(path, str(error), error.line, error.column - 1)


def _finding(path: str, message: str, line: int, column: int) -> Finding:
    return Finding(
        rule_id=UnparsableFile.id,
        message=message,
        severity=UnparsableFile.severity,
        path=path,
        span=Span(line, column, line, column),
    )
