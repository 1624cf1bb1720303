"""`# noqa: SPX101` and `# sparkpar: ignore[SPX101]` comments on a finding's start line.

Text after ` -- ` in such a comment is the reason (`# sparkpar: ignore[SPX101] -- one row per key`);
SARIF carries it as the suppression's justification.

Comments are found with `tokenize`, so text like "# noqa" inside a string literal never counts.
"""

from __future__ import annotations

import io
import re
import tokenize
from collections.abc import Iterable

from sparkpar_lint.model import Finding

# Every rule on the line; stands in for the code set of a bare noqa comment.
ALL = frozenset({"*"})
UNSUPPRESSIBLE = frozenset({"SPX901"})

_NOQA = re.compile(r"#\s*noqa(?::\s*(?P<codes>[A-Z]+\d+(?:[\s,]+[A-Z]+\d+)*))?", re.IGNORECASE)
_IGNORE = re.compile(r"#\s*sparkpar:\s*ignore\[(?P<codes>[^\]]*)\]", re.IGNORECASE)
_REASON = re.compile(r"\s--\s+(?P<reason>\S.*?)\s*$")


def suppressed_codes(source: str) -> dict[int, frozenset[str]]:
    """Line number -> rule ids suppressed there (`ALL` for a bare `# noqa`)."""
    by_line: dict[int, frozenset[str]] = {}
    for line, comment in _comments(source):
        codes = _codes_in(comment)
        if codes:
            previous = by_line.get(line, frozenset())
            by_line[line] = ALL if ALL in (codes, previous) else previous | codes
    return by_line


def suppression_reason(source: str, line: int) -> str | None:
    """The reason after ` -- ` in the suppressing comment on `line`, or None."""
    for number, comment in _comments(source):
        if number > line:
            return None
        directive = _IGNORE.search(comment) or _NOQA.search(comment)
        if number == line and directive:
            reason = _REASON.search(comment, directive.end())
            if reason:
                return reason["reason"]
    return None


def apply_suppressions(findings: list[Finding], source: str) -> list[Finding]:
    return split_suppressions(findings, source)[0]


def split_suppressions(findings: list[Finding], source: str) -> tuple[list[Finding], list[Finding]]:
    """(reported, suppressed): SARIF still lists the suppressed ones, marked as such."""
    # Tokenizing costs a noticeable share of a parse, so skip it when no comment could match.
    if not findings or ("noqa" not in source.lower() and "sparkpar:" not in source.lower()):
        return findings, []
    by_line = suppressed_codes(source)
    kept: list[Finding] = []
    suppressed: list[Finding] = []
    for finding in findings:
        (suppressed if _is_suppressed(finding, by_line.get(finding.span.line)) else kept).append(finding)
    return kept, suppressed


def _is_suppressed(finding: Finding, codes: frozenset[str] | None) -> bool:
    # A file that does not parse was not checked at all; no comment may hide that.
    if finding.rule_id in UNSUPPRESSIBLE:
        return False
    return codes is not None and (codes is ALL or finding.rule_id in codes)


def _codes_in(comment: str) -> frozenset[str]:
    codes: set[str] = set()
    for match in _NOQA.finditer(comment):
        if match["codes"] is None:
            return ALL
        codes.update(_split(match["codes"]))
    for match in _IGNORE.finditer(comment):
        codes.update(_split(match["codes"]))
    return frozenset(codes)


def _split(codes: str) -> Iterable[str]:
    return (code.upper() for code in re.split(r"[\s,]+", codes) if code)


def _comments(source: str) -> Iterable[tuple[int, str]]:
    tokens = tokenize.generate_tokens(io.StringIO(source).readline)
    try:
        for token in tokens:
            if token.type == tokenize.COMMENT:
                yield token.start[0], token.string
    except (tokenize.TokenError, SyntaxError):
        # An unparsable file still honours the comments before the point where tokenizing failed.
        return
