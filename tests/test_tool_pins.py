"""The ruff that pre-commit runs is one the dev extra allows: the formatter's style changes between
ruff's minor versions, so a hook outside the range would reformat what CI's ruff accepts."""

from __future__ import annotations

import tomllib
from pathlib import Path

import yaml
from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parent.parent


def _dev_requirement(name: str) -> Requirement:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    found = [Requirement(text) for text in project["optional-dependencies"]["dev"]]
    return next(requirement for requirement in found if requirement.name == name)


def test_pre_commit_ruff_rev_is_in_the_dev_extras_range():
    config = yaml.safe_load((ROOT / ".pre-commit-config.yaml").read_text(encoding="utf-8"))
    (hook_repo,) = [repo for repo in config["repos"] if repo["repo"].endswith("/ruff-pre-commit")]
    rev = hook_repo["rev"].removeprefix("v")
    requirement = _dev_requirement("ruff")
    assert requirement.specifier.contains(rev), (rev, str(requirement.specifier))
    assert {"ruff", "ruff-format"} <= {hook["id"] for hook in hook_repo["hooks"]}
