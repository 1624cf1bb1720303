"""SARIF 2.1.0 for code-scanning services, with each rule's doc page as its help text."""

from __future__ import annotations

import json
from importlib import metadata
from collections.abc import Sequence
from pathlib import PurePath

from sparkpar_lint.model import Finding, Severity, Span
from sparkpar_lint.ruledocs import MissingDoc, doc_summary, load_doc
from sparkpar_lint.rules import all_rules

SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
_LEVEL = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "note"}


def render(findings: Sequence[Finding], **_context) -> str:
    rules = all_rules()
    index = {rule.id: i for i, rule in enumerate(rules)}
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
                "results": [_result(f, index) for f in findings],
            }
        ],
    }
    return json.dumps(log, indent=2) + "\n"


def _descriptor(rule) -> dict:
    descriptor = {
        "id": rule.id,
        "name": rule.name,
        "shortDescription": {"text": rule.summary},
        "fullDescription": {"text": doc_summary(rule.id) or rule.summary},
        "defaultConfiguration": {"level": _LEVEL[rule.severity]},
        "properties": {"fix_safety": rule.fix_safety},
    }
    try:
        doc = load_doc(rule.id)
    except MissingDoc:
        return descriptor
    descriptor["help"] = {"text": doc, "markdown": doc}
    return descriptor


def _result(finding: Finding, index: dict[str, int]) -> dict:
    result = {
        "ruleId": finding.rule_id,
        "level": _LEVEL[finding.severity],
        "message": {"text": finding.message},
        "locations": [_location(finding.path, finding.span, finding.cell)],
    }
    if finding.rule_id in index:
        result["ruleIndex"] = index[finding.rule_id]
    if finding.related:
        result["relatedLocations"] = [
            {**_location(finding.path, r.span, r.cell), "id": i, "message": {"text": r.message}}
            for i, r in enumerate(finding.related)
        ]
    return result


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
    return pure.as_uri() if pure.is_absolute() else pure.as_posix()
