"""A finding's fingerprint: stable across edits elsewhere in its file, so code scanning (SARIF
`partialFingerprints`) and the plugin's verdicts file (pytest --sparkpar-confirm) can follow a
finding from commit to commit."""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Mapping, Sequence

from sparkpar_lint.fixes.text_edits import lines
from sparkpar_lint.model import Finding, Span
from sparkpar_lint.sources.notebook import cell_key

FINGERPRINT = "sparkparFindingHash/v1"


def finding_fingerprints(findings: Sequence[Finding], sources: Mapping[str, str]) -> dict[int, str]:
    """A hash of the rule, the path and the flagged code (whitespace-insensitive) plus its
    occurrence number among identical ones: edits elsewhere in the file, which move line
    numbers, leave it unchanged."""
    seen: Counter[tuple[str, ...]] = Counter()
    fingerprints = {}
    for finding in sorted(findings, key=Finding.sort_key):
        code = span_text(sources.get(cell_key(finding.path, finding.cell)), finding.span) or finding.message
        identity = (finding.rule_id, finding.path, str(finding.cell or ""), " ".join(code.split()))
        seen[identity] += 1
        text = "\0".join((*identity, str(seen[identity])))
        fingerprints[id(finding)] = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:32]
    return fingerprints


def span_text(source: str | None, span: Span) -> str | None:
    if source is None:
        return None
    text = lines(source)[span.line - 1 : span.end_line]
    if not text:
        return None
    if len(text) == 1:
        return text[0][span.column : span.end_column]
    return "".join([text[0][span.column :], *text[1:-1], text[-1][: span.end_column]])
