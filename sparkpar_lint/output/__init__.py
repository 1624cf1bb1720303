"""Output formats, one module each, every one a pure `render(findings, ...) -> str`."""

from __future__ import annotations

import importlib
from collections.abc import Callable

FORMATS = ("rich", "concise", "json", "sarif", "github")
# Formats read by programs: no banners, colours or progress, whatever the terminal.
MACHINE_FORMATS = frozenset({"json", "sarif", "github"})


def renderer(name: str) -> Callable[..., str]:
    if name not in FORMATS:
        raise ValueError(f"unknown output format {name!r}")
    return importlib.import_module(f"{__name__}.{name}").render
