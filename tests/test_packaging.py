"""What a user installs: the wheel's contents, the console script, the hook file, the README's
newcomer commands."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest
import yaml
from wheels import build_wheel

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> zipfile.ZipFile:
    return zipfile.ZipFile(build_wheel(tmp_path_factory.mktemp("wheel")))


def test_wheel_ships_rule_docs_output_formats_and_the_console_script(wheel):
    names = set(wheel.namelist())
    docs = list((REPO / "rules" / "docs").glob("*.md"))
    modules = list((REPO / "sparkpar_lint" / "output").glob("*.py"))
    assert docs and modules  # strict: an empty glob would check nothing
    for doc in docs:
        assert f"sparkpar_lint/ruledata/docs/{doc.name}" in names
    for module in modules:
        assert f"sparkpar_lint/output/{module.name}" in names
    # The star-import names the resolver reads (sparkpar_lint/graph/imports.py).
    assert "sparkpar_lint/ruledata/exports.toml" in names
    # Library calls the builder follows as handing their frame back (sparkpar_lint/graph/passthrough.py).
    assert "sparkpar_lint/ruledata/passthrough.toml" in names
    entry_points = next(n for n in names if n.endswith(".dist-info/entry_points.txt"))
    text = wheel.read(entry_points).decode()
    assert "sparkpar = sparkpar_lint.cli:main" in text
    assert "sparkpar = pytest_sparkpar.plugin" in text


def test_wheel_metadata_lists_the_pytest_framework(wheel):
    # PyPI's "Framework :: Pytest" listing is how pytest users find plugins.
    metadata = next(n for n in wheel.namelist() if n.endswith(".dist-info/METADATA"))
    assert "Classifier: Framework :: Pytest" in wheel.read(metadata).decode().splitlines()


def test_wheel_ships_every_package_of_the_tree(wheel):
    # setuptools is given an explicit package list: a new subpackage missing from it would work
    # in an editable install and vanish from the wheel.
    names = set(wheel.namelist())
    inits = [init for top in ("sparkpar_lint", "pytest_sparkpar") for init in (REPO / top).rglob("__init__.py")]
    assert len(inits) > 5
    missing = [i.relative_to(REPO).as_posix() for i in inits if i.relative_to(REPO).as_posix() not in names]
    assert missing == [], "not in the wheel: add these packages to pyproject.toml"


def test_pre_commit_hook_declaration():
    lint, fix = yaml.safe_load((REPO / ".pre-commit-hooks.yaml").read_text())
    assert (lint["id"], lint["entry"]) == ("sparkpar", "sparkpar lint")
    assert (fix["id"], fix["entry"]) == ("sparkpar-fix", "sparkpar fix")
    for hook in (lint, fix):
        # Notebooks and .sql files are not `python` to pre-commit's file identification.
        assert hook["language"] == "python" and hook["types_or"] == ["python", "jupyter", "sql"]
        assert "types" not in hook
        # One run over all files: sparkpar parallelises itself and shares its cache and summaries.
        assert hook["require_serial"] is True


def test_readme_gives_the_two_newcomer_commands_exactly():
    readme = (REPO / "README.md").read_text()
    assert "python -m venv .venv && . .venv/bin/activate && pip install . && sparkpar lint fixtures/" in readme
    test_command = "python -m venv .venv-test && . .venv-test/bin/activate && pip install '.[dev]' && pytest -n 2"
    assert f'{test_command} -m "not slow"\n' in readme
    for section in (
        "## CLI",
        "## Output formats",
        "## Configuration",
        "## Suppressions",
        "## pre-commit",
        "## Cache",
        "## In the editor",
        "## Install",
        "## The pytest plugin",
        "## sparkpar fix",
        "## sparkpar plan",
    ):
        assert f"\n{section}\n" in readme, section


def test_ci_script_installs_like_the_readme_and_runs_pytest():
    script = (REPO / ".ci" / "run").read_text()
    assert "set -euo pipefail" in script
    # The checks CONTRIBUTING asks of every change come first, in this order, then the tests.
    steps = [
        "\npython -m pip install --quiet '.[dev]'",
        "\nruff check .",
        "\nruff format --check .",
        "\nmypy",
        # The README's test command, then the tests it leaves out: CI runs every test.
        '\npytest -n 2 -p no:cacheprovider -m "not slow"\n',
        "\npytest -n 2 -p no:cacheprovider -m slow\n",
    ]
    positions = [script.find(step) for step in steps]
    assert -1 not in positions and positions == sorted(positions), dict(zip(steps, positions))
