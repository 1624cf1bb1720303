"""`[tool.sparkpar]`: every key read, every mistake a config error (exit 2) naming file and key."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from samples import BAD_JOB
from sparkpar_lint.config import ConfigError, find_config, load_config
from sparkpar_lint.model import Severity

RULES = ["SPX101", "SPX102", "SPX901"]


def write_pyproject(directory: Path, body: str) -> Path:
    path = directory / "pyproject.toml"
    path.write_text("[project]\nname = 'x'\n\n[tool.sparkpar]\n" + body)
    return path


def test_every_key_is_read(tmp_path):
    path = write_pyproject(
        tmp_path,
        """
select = ["SPX1"]
ignore = ["SPX102"]
exclude = ["legacy/*"]
per-file-ignores = {"tests/*" = ["SPX101"]}
severity = {SPX101 = "warning"}
""",
    )
    config = load_config(path, RULES)
    assert config.select == ("SPX1",) and config.ignore == ("SPX102",)
    assert config.exclude == ("legacy/*",)
    assert config.per_file_ignores == {"tests/*": ("SPX101",)}
    assert config.severity == {"SPX101": Severity.WARNING}
    assert config.root == tmp_path.resolve()


@pytest.mark.parametrize(
    ("body", "key", "problem"),
    [
        ('selct = ["SPX1"]\n', "selct", "unknown key"),
        ('select = "SPX101"\n', "select", "expected a list of strings"),
        ('ignore = ["SPX777"]\n', "ignore", "unknown rule id or prefix 'SPX777'"),
        ('select = ["XYZ"]\n', "select", "unknown rule id or prefix 'XYZ'"),
        ('severity = {SPX101 = "fatal"}\n', "severity.SPX101", "expected error, warning or info"),
        ('severity = {SPX555 = "info"}\n', "severity.SPX555", "unknown rule id"),
        ('per-file-ignores = {"a/*" = ["NOPE1"]}\n', "per-file-ignores.a/*", "unknown rule id"),
        ("exclude = [1]\n", "exclude", "expected a list of strings"),
        # Keys that were documented once but changed nothing are gone, and say so by failing.
        ('order-columns = ["ts"]\n', "order-columns", "unknown key"),
        ('[[tool.sparkpar.extra-operators]]\nname = "a.b"\n', "extra-operators", "unknown key"),
    ],
)
def test_bad_config_names_file_key_and_problem(tmp_path, body, key, problem):
    path = write_pyproject(tmp_path, body)
    with pytest.raises(ConfigError) as raised:
        load_config(path, RULES)
    message = str(raised.value)
    assert str(path) in message and f" {key}: " in message and problem in message


def test_invalid_toml_is_a_config_error(tmp_path):
    path = tmp_path / "pyproject.toml"
    path.write_text("[tool.sparkpar\n")
    with pytest.raises(ConfigError, match="not valid TOML"):
        find_config(tmp_path)


def test_nearest_pyproject_with_a_sparkpar_table_wins(tmp_path):
    outer = write_pyproject(tmp_path, "")
    inner = tmp_path / "pkg" / "sub"
    inner.mkdir(parents=True)
    (tmp_path / "pkg" / "pyproject.toml").write_text("[project]\nname = 'no-sparkpar-here'\n")
    assert find_config(inner) == outer
    nearer = write_pyproject(tmp_path / "pkg", "")
    assert find_config(inner) == nearer


def test_cli_config_error_exits_2_with_the_key(pinned_cli, tmp_path):
    write_pyproject(tmp_path, 'select = ["SPX1"]\nbogus = 1\n')
    (tmp_path / "job.py").write_text(BAD_JOB)
    result = pinned_cli("lint", "job.py")
    assert result.exit_code == 2
    assert "pyproject.toml: [tool.sparkpar] bogus: unknown key" in result.stderr
    assert "Traceback" not in result.output


def test_cli_missing_config_file_exits_2(pinned_cli, tmp_path):
    (tmp_path / "job.py").write_text(BAD_JOB)
    result = pinned_cli("lint", "job.py", "--config", "nope.toml")
    assert result.exit_code == 2 and "nope.toml" in result.stderr


def test_per_file_ignores_severity_and_exclude_apply(pinned_cli, tmp_path):
    for name in ("jobs/a.py", "tests/test_a.py", "legacy/old.py"):
        (tmp_path / name).parent.mkdir(exist_ok=True)
        (tmp_path / name).write_text(BAD_JOB)
    write_pyproject(
        tmp_path,
        """
exclude = ["legacy"]
per-file-ignores = {"tests/*" = ["SPX1"]}
severity = {SPX101 = "info"}
""",
    )
    data = json.loads(pinned_cli("lint", ".", "--format", "json").stdout)
    assert [(d["path"], d["severity"]) for d in data] == [("jobs/a.py", "info")]


def test_explicit_config_file_may_hold_the_keys_at_top_level(pinned_cli, tmp_path):
    (tmp_path / "job.py").write_text(BAD_JOB)
    (tmp_path / "sparkpar.toml").write_text('ignore = ["SPX101"]\n')
    assert pinned_cli("lint", "job.py", "--config", "sparkpar.toml").exit_code == 0
    assert pinned_cli("lint", "job.py").exit_code == 1
