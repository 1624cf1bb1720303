"""`sparkpar fix --diff`: a unified diff that is safe to print and still applies as a patch.

The checked code is printed, so it must not drive a terminal or a CI log: control characters in
it (ESC sequences, form feeds) are shown as Unicode control pictures, and the diff then says it
will not apply. Ordinary code, tabs and CRLF line endings are printed byte for byte. GitHub Actions
runs any output line that starts with `::` after leading spaces, which a context line of code can
do (` ::error::...`); there the diff is wrapped in `::stop-commands::`, which prints the lines
verbatim without running them.
"""

from __future__ import annotations

import difflib
import os
import re
import secrets

from sparkpar_lint.output.escape import visible

_DIFF_ESCAPES = {"\\": "\\\\", '"': '\\"', "\t": "\\t", "\n": "\\n", "\r": "\\r"}
# Controls other than tab; CR too, except as part of a CRLF line ending.
_CONTROL = re.compile(r"[\x00-\x08\x0a-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")
_NO_NEWLINE = "\\ No newline at end of file\n"


def unified_diff(original: str, fixed: str, path: str) -> tuple[str, bool]:
    """The diff of one file, and whether code in it had to be escaped (then it will not apply)."""
    out, escaped = [], False
    for line in difflib.unified_diff(
        _lines(original), _lines(fixed), fromfile=diff_name("a/", path), tofile=diff_name("b/", path)
    ):
        if line.startswith(("--- ", "+++ ")):
            out.append(line)  # the names are quoted by diff_name
            continue
        body, ending = _split_ending(line)
        if _CONTROL.search(body):
            body, escaped = visible(body, keep_tabs=True), True
        out.append(body + (ending or "\n" + _NO_NEWLINE))
    return "".join(out), escaped


def guard_workflow_commands(text: str) -> str:
    """`text` wrapped so GitHub Actions does not run a line of it as a workflow command."""
    if os.environ.get("GITHUB_ACTIONS") != "true" or not any(
        line.lstrip().startswith("::") for line in text.splitlines()
    ):
        return text
    token = secrets.token_hex(16)  # unguessable: the printed code cannot end the guard itself
    return f"::stop-commands::{token}\n{text}::{token}::\n"


def diff_name(prefix: str, path: str) -> str:
    """A diff header name as git writes it: C-quoted when it holds quotes, backslashes or control
    characters, so a newline in a file name cannot end the header and start a line of the patch."""
    name = prefix + path
    if not any(c in name for c in '"\\') and name.isprintable():
        return name
    quoted = "".join(_DIFF_ESCAPES.get(c) or (c if c.isprintable() else _octal(c)) for c in name)
    return f'"{quoted}"'


def _lines(text: str) -> list[str]:
    # Lines end at "\n" only, as for git and patch: str.splitlines would also end them at form
    # feeds and other separators, which cut a diff line in two.
    lines = text.split("\n")
    return [line + "\n" for line in lines[:-1]] + ([lines[-1]] if lines[-1] else [])


def _split_ending(line: str) -> tuple[str, str]:
    for ending in ("\r\n", "\n"):
        if line.endswith(ending):
            return line[: -len(ending)], ending
    return line, ""


def _octal(character: str) -> str:
    return "".join(f"\\{byte:03o}" for byte in character.encode("utf-8", "surrogateescape"))
