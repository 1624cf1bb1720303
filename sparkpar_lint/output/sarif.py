"""SARIF 2.1.0 for code-scanning services, with each rule's doc page as its help text.

Each result carries a `partialFingerprints` entry that survives edits elsewhere in the file (so
code scanning tracks a finding across commits), and the fix `sparkpar fix` would make as `fixes`.
Findings silenced by a comment are left out unless the caller passes them (`--include-suppressed`):
code scanning shows a result with a `suppressions` entry as an open alert. When passed, each has an
in-source `suppressions` entry whose justification is the comment's reason.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from importlib import metadata
from pathlib import PurePath
from urllib.parse import quote

from sparkpar_lint.confidence import rule_confidence
from sparkpar_lint.fingerprints import FINGERPRINT, finding_fingerprints
from sparkpar_lint.fixes.text_edits import FindingFix, finding_fixes, lines
from sparkpar_lint.model import Confidence, Finding, Severity, Span
from sparkpar_lint.ruledocs import MissingDoc, doc_summary, load_doc
from sparkpar_lint.rules import all_rules
from sparkpar_lint.sources.notebook import cell_key
from sparkpar_lint.suppressions import suppression_reason
from sparkpar_lint.verdicts import CONFIRMED

SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
_LEVEL = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "note"}
# Code scanning sorts by `precision` and SARIF's `rank` (0-100); both follow the finding's confidence.
PRECISION = {Confidence.HIGH: "high", Confidence.MEDIUM: "medium", Confidence.LOW: "low"}
RANK = {Confidence.HIGH: 90.0, Confidence.MEDIUM: 60.0, Confidence.LOW: 30.0}


# Code scanning keeps one analysis per category (the id up to its last `/`): the linter's results
# stay apart from any other upload, such as the pytest plugin's.
AUTOMATION_ID = "sparkpar/lint/"


def render(
    findings: Sequence[Finding],
    *,
    sources: Mapping[str, str] | None = None,
    suppressed: Sequence[Finding] = (),
    settings=None,
    **_context,
) -> str:
    """`settings` (settings.AnalysisSettings): the configuration's, so each fix is `sparkpar fix`'s."""
    rules = all_rules()
    index = {rule.id: i for i, rule in enumerate(rules)}
    sources = sources or {}
    fixes = _fixes(findings, sources, settings)
    fingerprints = finding_fingerprints([*findings, *suppressed], sources)
    results = []
    for finding in findings:
        result = _result(finding, index)
        result["partialFingerprints"] = {FINGERPRINT: fingerprints[id(finding)]}
        fix = fixes.get((finding.path, finding.rule_id, finding.span))
        if fix is not None:
            result["fixes"] = [_fix(finding.path, fix, sources[finding.path])]
        results.append(result)
    for finding in suppressed:
        result = _result(finding, index)
        result["partialFingerprints"] = {FINGERPRINT: fingerprints[id(finding)]}
        result["suppressions"] = [_suppression(finding, sources)]
        results.append(result)
    log = {
        "$schema": SCHEMA,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "sparkpar",
                        "version": metadata.version("sparkpar"),
                        "rules": [_descriptor(rule) for rule in rules],
                    }
                },
                "automationDetails": {"id": AUTOMATION_ID},
                # LibCST counts columns in code points, and so does every region here.
                "columnKind": "unicodeCodePoints",
                "results": results,
            }
        ],
    }
    return json.dumps(log, indent=2) + "\n"


def _suppression(finding: Finding, sources: Mapping[str, str]) -> dict:
    suppression = {"kind": "inSource"}
    source = sources.get(cell_key(finding.path, finding.cell))
    reason = suppression_reason(source, finding.span.line) if source is not None else None
    if reason:
        suppression["justification"] = reason
    return suppression


def _descriptor(rule) -> dict:
    descriptor = {
        "id": rule.id,
        "name": rule.name,
        "shortDescription": {"text": rule.summary},
        "fullDescription": {"text": doc_summary(rule.id) or rule.summary},
        "defaultConfiguration": {"level": _LEVEL[rule.severity]},
        "properties": {"fix_safety": rule.fix_safety, "precision": PRECISION[rule_confidence(rule.id)]},
    }
    try:
        doc = load_doc(rule.id)
    except MissingDoc:
        return descriptor
    descriptor["help"] = {"text": doc, "markdown": doc}
    return descriptor


def _result(finding: Finding, index: dict[str, int]) -> dict:
    result: dict = {
        "ruleId": finding.rule_id,
        "level": _LEVEL[finding.severity],
        "message": {"text": finding.message},
        "locations": [_location(finding.path, finding.span, finding.cell)],
        "rank": RANK[finding.confidence],
        "properties": {
            "precision": PRECISION[finding.confidence],
            "confidence": finding.confidence.value,
            "links": finding.links.to_dict(),
        },
    }
    if finding.verdict is not None:
        result["properties"]["verdict"] = finding.verdict
        if finding.verdict == CONFIRMED:  # a test of the team's showed the answer change
            result["rank"], result["properties"]["precision"] = 100.0, "very-high"
    if finding.rule_id in index:
        result["ruleIndex"] = index[finding.rule_id]
    if finding.related:
        result["relatedLocations"] = [
            {**_location(r.path or finding.path, r.span, r.cell), "id": i, "message": {"text": r.message}}
            for i, r in enumerate(finding.related)
        ]
    return result


def _fixes(findings: Sequence[Finding], sources: Mapping[str, str], settings) -> dict[tuple, FindingFix]:
    """(path, rule id, span) -> fix, from one re-analysis of each file that has a fixable finding."""
    wanted: dict[str, set[str]] = {}
    for finding in findings:
        if finding.fix_safety is not None and finding.cell is None and finding.path in sources:
            wanted.setdefault(finding.path, set()).add(finding.rule_id)
    fixes = {}
    for path, rule_ids in wanted.items():
        for (rule_id, span), fix in finding_fixes(path, sources[path], rule_ids, settings).items():
            fixes[(path, rule_id, span)] = fix
    return fixes


def _fix(path: str, fix: FindingFix, source: str) -> dict:
    # Regions as character offsets: an edit may end past the last line (an import added at the
    # end, a last line without a newline), which no line/column pair can name.
    starts = [0]
    for line in lines(source):
        starts.append(starts[-1] + len(line))
    description = (
        fix.description
        if fix.safety == "safe"
        else (f"{fix.description} (unsafe: it makes a choice; `sparkpar fix --unsafe-fixes` applies it)")
    )
    return {
        "description": {"text": description},
        "artifactChanges": [
            {
                "artifactLocation": {"uri": _uri(path)},
                "replacements": [
                    {
                        "deletedRegion": {
                            "charOffset": starts[edit.start_line - 1],
                            "charLength": starts[edit.end_line - 1] - starts[edit.start_line - 1],
                        },
                        "insertedContent": {"text": edit.text},
                    }
                    for edit in fix.edits
                ],
            }
        ],
        "properties": {"safety": fix.safety},
    }


def _location(path: str, span: Span, cell: int | None = None) -> dict:
    # SARIF columns are 1-based and endColumn points just past the span, as ours does 0-based.
    # In a Jupyter notebook the region is within cell `cell` (1-based over all cells), the same
    # coordinates as the text and JSON formats; the property bag names the cell.
    location = _physical(path, span)
    if cell is not None:
        location["properties"] = {"cell": cell}
    return location


def _physical(path: str, span: Span) -> dict:
    return {
        "physicalLocation": {
            "artifactLocation": {"uri": _uri(path)},
            "region": {
                "startLine": span.line,
                "startColumn": span.column + 1,
                "endLine": span.end_line,
                "endColumn": span.end_column + 1,
            },
        }
    }


def _uri(path: str) -> str:
    pure = PurePath(path)
    # Relative URIs resolve against the checkout root, which is what code-scanning uploads expect.
    # A relative reference is percent-encoded too: `pct%20name.py` must not name `pct name.py`.
    return pure.as_uri() if pure.is_absolute() else quote(pure.as_posix(), safe="/")
