"""The README's plugin example works as written: copied into a real pytest run on real Spark."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

pytest_plugins = ["pytester"]
README = Path(__file__).resolve().parent.parent / "README.md"


def _plugin_example() -> str:
    section = README.read_text("utf-8").split("## The pytest plugin\n", 1)[1].split("\n## ", 1)[0]
    return re.search(r"```python\n(.*?)```", section, re.S).group(1)


@pytest.mark.spark
def test_readme_plugin_example_passes(pytester):
    pytester.makepyfile(test_latest=_plugin_example())
    result = pytester.runpytest_subprocess("-q", "-p", "no:cacheprovider", timeout=600)
    result.assert_outcomes(passed=2)
