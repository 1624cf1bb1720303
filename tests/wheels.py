"""Build sparkpar's wheel for a test from a copy of the checkout: setuptools writes `build/` into
the source tree, so two builds of the checkout at once (two xdist workers) trip over each other,
and one interrupted build breaks every later one ("File exists: ...dist-info")."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
_NOT_SOURCE = shutil.ignore_patterns(
    ".git", "build", "dist", "*.egg-info", ".venv*", "__pycache__", ".*_cache", ".hypothesis", ".sparkpar*"
)


def build_wheel(out: Path) -> Path:
    """The wheel built from a private copy of the checkout, written into `out`."""
    source = out / "source"
    shutil.copytree(REPO, source, ignore=_NOT_SOURCE)
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet", "-w", str(out), str(source)],
        check=True,
        capture_output=True,
        timeout=600,
    )
    (wheel,) = out.glob("sparkpar-*.whl")
    return wheel
