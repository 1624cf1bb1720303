"""What a lint run produces: findings, their spans and severities, and the exit status."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any


class Severity(str, enum.Enum):
    ERROR = "error"
    WARNING = "warning"
    INFO = "info"


class Confidence(str, enum.Enum):
    """How much of a finding the analysis established rather than assumed (docs/confidence.md)."""

    HIGH = "high"
    MEDIUM = "medium"
    LOW = "low"

    @property
    def rank(self) -> int:
        return {"high": 3, "medium": 2, "low": 1}[self.value]

    @classmethod
    def parse(cls, text: str) -> Confidence:
        """ValueError naming the choices when `text` is none of them."""
        try:
            return cls(text.strip().lower())
        except ValueError:
            raise ValueError(f"expected high, medium or low, got {text!r}") from None


# What a run shows when nobody chose (docs/confidence.md): the lowest level whose findings were at
# least 90% true on judged code the rules were not tuned on; `high` is the only one near it.
DEFAULT_MIN_CONFIDENCE = Confidence.HIGH
# Chooses the level for a CI job or a shell without editing the project's configuration; the
# command line still wins over it, and it wins over `[tool.sparkpar] min-confidence`.
MIN_CONFIDENCE_ENVIRONMENT = "SPARKPAR_MIN_CONFIDENCE"


@dataclass(frozen=True)
class Links:
    """The three links a finding stands on, each established by the analysis (True) or assumed:
    `choice` an operation whose result depends on order, partitioning, micro-batch split or retry;
    `outcomes` the competing rows or runs can differ; `observed` the difference reaches a write, a
    collected or returned value, a key, a join or a filter. `assumed` holds, for each assumed link,
    the condition the finding needs, as the reader would check it ("`event_id` is not unique").
    `erased`: the analysis saw the result reach only a preview (`PREVIEW`: a person may see other
    rows, nothing computed from them changes) or nothing at all (`UNUSED`); `observed` is then
    false, and the finding is at the lowest confidence whatever else holds. `cost`: the finding
    is about speed only (a serial window, a serial region): the result is the same however the
    rows are split, so none of the links exists and the finding is at the lowest confidence."""

    choice: bool = True
    outcomes: bool = True
    observed: bool = True
    assumed: tuple[str, ...] = ()
    erased: str | None = None
    cost: bool = False

    @property
    def confidence(self) -> Confidence:
        if self.erased is not None or self.cost:
            return Confidence.LOW
        missing = 3 - sum((self.choice, self.outcomes, self.observed))
        return (Confidence.HIGH, Confidence.MEDIUM, Confidence.LOW, Confidence.LOW)[missing]

    def to_dict(self) -> dict[str, Any]:
        if self.cost:
            return {"choice": "none", "outcomes": "none", "observed": "none", "assumed": [], "cost": True}
        state = {True: "established", False: "assumed"}
        data = {
            "choice": state[self.choice],
            "outcomes": state[self.outcomes],
            "observed": "erased" if self.erased is not None else state[self.observed],
            "assumed": list(self.assumed),
        }
        if self.erased is not None:
            data["erased_by"] = self.erased
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Links:
        return cls(
            choice=data["choice"] == "established",
            outcomes=data["outcomes"] == "established",
            observed=data["observed"] == "established",
            assumed=tuple(data["assumed"]),
            erased=data.get("erased_by"),
            cost=data.get("cost", False),
        )


# How a finding's result is erased (`Links.erased`): it only reaches previews, or nothing; or only
# counts its choice cannot change, and then no outcome can show at all: the run drops the finding.
PREVIEW = "preview"
UNUSED = "unused"
COUNTED = "count"


class ExitStatus(enum.IntEnum):
    CLEAN = 0
    FINDINGS = 1
    ERROR = 2


@dataclass(frozen=True, order=True)
class Span:
    """1-based lines, 0-based columns, like LibCST's PositionProvider and most editors' APIs."""

    line: int
    column: int
    end_line: int
    end_column: int


@dataclass(frozen=True)
class RelatedLocation:
    span: Span
    message: str
    cell: int | None = None  # notebooks: the 1-based cell the span is in
    path: str | None = None  # another file (a helper in another module); None: the finding's file


@dataclass(frozen=True)
class NoFix:
    """Why a finding carries no fix, in words that complete "no automatic fix here: ..."
    (`sparkpar fix --show-unfixed` prints them): said by the rule's fix builder where it gives up,
    else by the rule for all its findings (`Rule.fix_needs`), or by the analysis (a stage in
    another module's helper)."""

    reason: str


@dataclass(frozen=True)
class Finding:
    rule_id: str
    message: str
    severity: Severity
    path: str
    span: Span
    related: tuple[RelatedLocation, ...] = ()
    # "safe", "unsafe" or None when the rule has no automatic fix for this finding.
    fix_safety: str | None = None
    # The rewrite itself (sparkpar_lint.edits.model.Fix); only in-process, never cached or rendered.
    fix: object = field(default=None, compare=False, repr=False)
    # Jupyter notebooks: the 1-based index over all cells; `span` is then within that cell.
    cell: int | None = None
    # Why the finding has no fix, when it can be said (`sparkpar fix --show-unfixed`).
    no_fix: NoFix | None = field(default=None, compare=False, repr=False)
    # What the team's tests said of it (sparkpar_lint.verdicts); put on after the cache, never cached.
    verdict: str | None = field(default=None, compare=False)
    # Which links the analysis established and which it assumed; `confidence` follows from them.
    links: Links = Links()

    @property
    def confidence(self) -> Confidence:
        return self.links.confidence

    def sort_key(self) -> tuple[str, int, Span, str]:
        return (self.path, self.cell or 0, self.span, self.rule_id)

    def to_dict(self) -> dict[str, Any]:
        data = {
            "rule": self.rule_id,
            "message": self.message,
            "severity": self.severity.value,
            "path": self.path,
            "line": self.span.line,
            "column": self.span.column,
            "end_line": self.span.end_line,
            "end_column": self.span.end_column,
            "related": [
                {
                    "message": r.message,
                    "line": r.span.line,
                    "column": r.span.column,
                    "end_line": r.span.end_line,
                    "end_column": r.span.end_column,
                    **({"cell": r.cell} if r.cell is not None else {}),
                    **({"path": r.path} if r.path is not None else {}),
                }
                for r in self.related
            ],
            "fix": self.fix_safety,
            "confidence": self.confidence.value,
            "links": self.links.to_dict(),
        }
        if self.cell is not None:
            data["cell"] = self.cell
        if self.verdict is not None:
            data["verdict"] = self.verdict
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Finding:
        def span(d: dict[str, Any]) -> Span:
            return Span(d["line"], d["column"], d["end_line"], d["end_column"])

        return cls(
            rule_id=data["rule"],
            message=data["message"],
            severity=Severity(data["severity"]),
            path=data["path"],
            span=span(data),
            related=tuple(
                RelatedLocation(span(r), r["message"], r.get("cell"), r.get("path")) for r in data["related"]
            ),
            fix_safety=data["fix"],
            cell=data.get("cell"),
            links=Links.from_dict(data["links"]) if "links" in data else Links(),
        )


@dataclass
class FileResult:
    """Everything one file contributed to a run; `error` is set when it could not be checked."""

    path: str
    findings: list[Finding] = field(default_factory=list)
    error: str | None = None
    # Findings a `noqa` / `sparkpar: ignore` comment silenced (SARIF reports them as suppressed).
    suppressed: list[Finding] = field(default_factory=list)
