"""Text from the checked tree (file names, code, string literals) made safe to print.

A newline in a file name or a column-name literal would start a line that GitHub Actions runs as
a workflow command (`::error ...`, `::add-mask::`), and ESC sequences would drive the terminal.
Control characters are shown as their Unicode "control pictures" (one character each, so code
frames stay aligned), and a path that would put `::` at the start of a line is written `./::...`.
"""

from __future__ import annotations

_TABLE = {c: 0x2400 + c for c in range(0x20)}
_TABLE[0x7F] = 0x2421
_TABLE.update(dict.fromkeys(range(0x80, 0xA0), 0xFFFD))  # C1 controls, CSI among them
# Bidirectional overrides reorder what a reader sees ("Trojan Source").
_TABLE.update(dict.fromkeys((*range(0x202A, 0x202F), *range(0x2066, 0x206A), 0x200E, 0x200F, 0x061C), 0xFFFD))
# A lone surrogate (`'\\ud800'` is valid Python) cannot be encoded in UTF-8: printing one would
# abort the whole report.
_TABLE.update(dict.fromkeys(range(0xD800, 0xE000), 0xFFFD))
_WITH_TABS = dict(_TABLE)
del _WITH_TABS[0x09]


def visible(text: str, *, keep_tabs: bool = False) -> str:
    """`text` with every control character replaced by a visible stand-in."""
    return text.translate(_WITH_TABS if keep_tabs else _TABLE)


def path_text(path: str) -> str:
    """A path for the start of an output line: visible, and never starting with `::`."""
    path = visible(path)
    return f"./{path}" if path.startswith(":") else path
