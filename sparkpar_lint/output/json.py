"""A JSON list of `Finding.to_dict()`: spans as stored (1-based lines, 0-based columns)."""

from __future__ import annotations

import json
from collections.abc import Sequence

from sparkpar_lint.model import Finding


def render(findings: Sequence[Finding], **_context) -> str:
    return json.dumps([f.to_dict() for f in findings], indent=2) + "\n"
