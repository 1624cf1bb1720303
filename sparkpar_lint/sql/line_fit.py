"""Text a SQL fix inserts, broken over lines so no line of the file passes 100 characters.

SQL takes a line break wherever it takes a space, so an insertion into a triple-quoted string is
split between its pieces, each new line aligned under a column of the query (the first item of
the window spec). A one-line string cannot take a break: `rewrite` then refuses the edit.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from sparkpar_lint.sql.site import SqlSite

LIMIT = 100  # the limit; a file whose lines are longer already is not read from here


def fitted(site: SqlSite, at: int, pieces: list[str], align: int) -> str:
    """`pieces` joined for insertion at SQL offset `at`: a piece that would take its line past the
    limit starts a new line at the source column of SQL offset `align` (its leading space dropped).
    The rest of the line it is inserted into follows the last piece, or starts a line too."""
    sql = site.parsed.text
    line_end = sql.find("\n", at)
    tail = len(sql) - at if line_end < 0 else line_end - at
    width, indent = _column(site, at), _column(site, align)
    if indent + max(len(p.strip()) for p in pieces) > LIMIT:
        # Too deep to hold the longest piece: one step in from the line's own indentation.
        line = sql[sql.rfind("\n", 0, at) + 1 : at]
        indent = _column(site, at) - len(line) + len(line) - len(line.lstrip()) + 4
    text = ""
    for number, piece in enumerate(pieces):
        need = len(piece) + (tail if number == len(pieces) - 1 else 0)
        if width + need > LIMIT and width > indent + len(piece) - len(piece.lstrip()):
            piece = piece.lstrip()
            text += "\n" + " " * indent
            width = indent
        text += piece
        width += len(piece)
    if width + tail > LIMIT and width > indent and tail:
        text += "\n" + " " * indent  # the rest of the line (`) AS rn`) follows on a line of its own
    return text


def _column(site: SqlSite, offset: int) -> int:
    """Source column of SQL offset `offset` (from the start of its SQL line when the source
    positions are not known)."""
    if site.text is not None:
        return site.text.resolve(offset, offset).column
    return offset - site.parsed.text.rfind("\n", 0, offset) - 1
