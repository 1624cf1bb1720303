"""The process's surroundings checked before any command runs: standard output that is closed or
cannot encode what we print, and a working directory that was deleted under us."""

from __future__ import annotations

import io
import os
import sys

from sparkpar_lint.model import ExitStatus


def prepare() -> None:
    """Exit 2 with one line on stderr when there is nowhere to report or nowhere to stand; make
    an output encoding that lacks a character (latin-1, ascii) write an escape, not abort."""
    for stream in (sys.stdout, sys.stderr):
        if isinstance(stream, io.TextIOWrapper):
            stream.reconfigure(errors="backslashreplace")
    if sys.stdout is None or sys.stdout.closed:  # `sparkpar lint . >&-`: Python gives None
        _refuse("standard output is closed, so nothing could be reported")
    try:
        os.getcwd()
    except FileNotFoundError:
        _refuse("the working directory no longer exists; cd to an existing directory and run again")


def _refuse(message: str) -> None:
    if sys.stderr is not None and not sys.stderr.closed:
        sys.stderr.write(f"sparkpar: error: {message}\n")
    sys.exit(ExitStatus.ERROR)
