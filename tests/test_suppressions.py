"""`# noqa` and `# sparkpar: ignore[...]`, found with tokenize: comments count, strings do not."""

from __future__ import annotations

from samples import BAD_JOB
from sparkpar_lint.model import Finding, Severity, Span
from sparkpar_lint.suppressions import ALL, apply_suppressions, suppressed_codes


def finding(rule_id: str, line: int) -> Finding:
    return Finding(rule_id, "m", Severity.ERROR, "a.py", Span(line, 0, line, 1))


def test_codes_per_line():
    source = (
        "a = 1  # noqa: SPX101\n"
        "b = 2  # noqa:SPX101,spx102\n"
        "c = 3  # noqa\n"
        "d = 4  # sparkpar: ignore[SPX101, SPX402]\n"
        "e = 5  # why: it's keyed # noqa: SPX301\n"
        "f = 6  # noqa: E501\n"
    )
    assert suppressed_codes(source) == {
        1: {"SPX101"},
        2: {"SPX101", "SPX102"},
        3: ALL,
        4: {"SPX101", "SPX402"},
        5: {"SPX301"},
        6: {"E501"},
    }


def test_text_in_strings_does_not_count():
    source = 's = "# noqa: SPX101"\nt = """\n# sparkpar: ignore[SPX101]\n"""\n'
    assert suppressed_codes(source) == {}
    findings = [finding("SPX101", 1), finding("SPX101", 3)]
    assert apply_suppressions(findings, source) == findings


def test_only_the_named_rules_on_the_reported_line_are_dropped():
    source = "x = 1  # noqa: SPX101\ny = 2\nz = 3  # noqa\n"
    kept = apply_suppressions(
        [finding("SPX101", 1), finding("SPX102", 1), finding("SPX101", 2), finding("SPX402", 3)],
        source,
    )
    assert kept == [finding("SPX102", 1), finding("SPX101", 2)]


def test_comments_before_a_tokenize_error_still_count():
    source = "x = 1  # noqa: SPX901\ny = (\n"
    assert suppressed_codes(source) == {1: {"SPX901"}}


def _suppress_bad_line(comment: str) -> str:
    lines = BAD_JOB.splitlines()
    lines[4] += comment
    return "\n".join(lines) + "\n"


def test_end_to_end_both_syntaxes(pinned_cli, tmp_path):
    (tmp_path / "noqa.py").write_text(_suppress_bad_line("  # noqa: SPX101"))
    (tmp_path / "ignore.py").write_text(_suppress_bad_line("  # sparkpar: ignore[SPX101]"))
    (tmp_path / "other.py").write_text(_suppress_bad_line("  # noqa: SPX102"))
    (tmp_path / "string.py").write_text(_suppress_bad_line('; note = "# noqa: SPX101"'))
    result = pinned_cli("lint", ".", "--format", "concise")
    assert sorted(line.split(":")[0] for line in result.stdout.splitlines()) == [
        "other.py",
        "string.py",
    ]
