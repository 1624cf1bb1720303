"""`sparkpar server` on notebooks and on files that take too long, end to end over stdio: a real
pygls client syncs a notebook (LSP 3.17 notebookDocument) and applies a fix to a cell, opens (and fixes) an `.ipynb` as JSON text, a
Databricks export and a `.sql` file, and a file past the time budget."""

from __future__ import annotations

import asyncio
import json

from lsprotocol import types as lsp
from test_lsp_server import BAD_JOB, TIMEOUT, Session, _apply, _run

IMPORTS = "from pyspark.sql import functions as F\ndf = spark.read.parquet('x')\n"
FIRST_AFTER_SORT = 'out = df.orderBy("ts").groupBy("k").agg(F.first("v").alias("v"))'
SPX101_COLUMN = FIRST_AFTER_SORT.index('F.first("v")')


def _cell_uri(notebook: str, number: int) -> str:
    return f"vscode-notebook-cell:{notebook.split(':', 1)[1]}#cell{number}"


async def _until(session: Session, uris: set[str]) -> dict[str, list[lsp.Diagnostic]]:
    """The next diagnostics published for each of `uris`."""
    seen: dict[str, list[lsp.Diagnostic]] = {}
    while not uris <= set(seen):
        params = await asyncio.wait_for(session.published.get(), TIMEOUT)
        if params.uri in uris:
            seen[params.uri] = params.diagnostics
    return seen


def test_a_synced_notebook_gets_diagnostics_on_its_cells(tmp_path):
    notebook_uri = (tmp_path / "report.ipynb").as_uri()
    texts = {1: "# Report", 2: "%pip install tabulate\n" + IMPORTS, 3: f"%%time\n{FIRST_AFTER_SORT}\nout.show()"}
    kinds = {1: lsp.NotebookCellKind.Markup, 2: lsp.NotebookCellKind.Code, 3: lsp.NotebookCellKind.Code}
    code = {_cell_uri(notebook_uri, n) for n in (2, 3)}

    async def scenario():
        async with Session(tmp_path) as session:
            session.client.notebook_document_did_open(
                lsp.DidOpenNotebookDocumentParams(
                    notebook_document=lsp.NotebookDocument(
                        uri=notebook_uri,
                        notebook_type="jupyter-notebook",
                        version=1,
                        cells=[lsp.NotebookCell(kind=kinds[n], document=_cell_uri(notebook_uri, n)) for n in texts],
                    ),
                    cell_text_documents=[
                        lsp.TextDocumentItem(
                            uri=_cell_uri(notebook_uri, n),
                            language_id="python" if n > 1 else "markdown",
                            version=1,
                            text=texts[n],
                        )
                        for n in texts
                    ],
                )
            )
            first = await _until(session, code)
            third = _cell_uri(notebook_uri, 3)
            (found,) = [d for d in first[third] if d.code == "SPX101"]
            hover = await asyncio.wait_for(
                session.client.text_document_hover_async(
                    lsp.HoverParams(text_document=lsp.TextDocumentIdentifier(uri=third), position=found.range.start)
                ),
                TIMEOUT,
            )
            actions = await session.code_actions(third, found)
            (quick,) = [a for a in actions if a.kind == lsp.CodeActionKind.QuickFix]
            assert quick.title == "Fix SPX101 in this notebook" and quick.is_preferred
            assert set(quick.edit.changes) == {third}  # only the cell that changes
            fixed = _apply(texts[3], quick.edit.changes[third])
            session.client.notebook_document_did_change(
                lsp.DidChangeNotebookDocumentParams(
                    notebook_document=lsp.VersionedNotebookDocumentIdentifier(uri=notebook_uri, version=2),
                    change=lsp.NotebookDocumentChangeEvent(
                        cells=lsp.NotebookDocumentCellChanges(
                            text_content=[
                                lsp.NotebookDocumentCellContentChanges(
                                    document=lsp.VersionedTextDocumentIdentifier(uri=third, version=2),
                                    changes=[lsp.TextDocumentContentChangeWholeDocument(text=fixed)],
                                )
                            ]
                        )
                    ),
                )
            )
            after = await _until(session, code)
            return first, found, hover, after, fixed

    first, found, hover, after, fixed = _run(scenario())
    assert list(first[_cell_uri(notebook_uri, 2)]) == []  # magics are masked, never SPX901
    # Line 2 of cell 3 (0-based 1), at the call: the cell's own coordinates.
    assert (found.range.start.line, found.range.start.character) == (1, SPX101_COLUMN)
    assert hover is not None and hover.contents.value.startswith("**SPX101**")
    assert not [d for d in after[_cell_uri(notebook_uri, 3)] if d.code == "SPX101"]
    assert fixed == texts[3].replace('F.first("v")', 'F.min(F.struct("ts", "v")).getField("v")').replace(
        'df.orderBy("ts").groupBy', "df.groupBy"
    )


def _notebook_json(*sources: str) -> str:
    cells = [
        {
            "cell_type": "code",
            "execution_count": None,
            "metadata": {},
            "outputs": [],
            "source": source.splitlines(keepends=True),
        }
        for source in sources
    ]
    return json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}, indent=1) + "\n"


def test_files_opened_as_text_ipynb_json_databricks_export_and_sql(tmp_path):
    notebook = _notebook_json(IMPORTS, 'x = "tab\\there"\n' + FIRST_AFTER_SORT)
    databricks = (
        f"# Databricks notebook source\n{IMPORTS}\n# COMMAND ----------\n\n%pip install x\n{FIRST_AFTER_SORT}\n"
    )
    sql = "-- report\nCREATE TABLE top AS SELECT page, count(*) AS n FROM events GROUP BY page LIMIT 5\n"

    async def scenario():
        async with Session(tmp_path) as session:
            uris = [
                session.open(tmp_path / name, text)
                for name, text in (("job.ipynb", notebook), ("export.py", databricks), ("report.sql", sql))
            ]
            return [await session.diagnostics(uri) for uri in uris]

    on_json, on_export, on_sql = _run(scenario())
    (found,) = [d for d in on_json if d.code == "SPX101"]
    # Underlined where the cell's line is written in the JSON text.
    written = f"    {json.dumps(FIRST_AFTER_SORT)}"  # quotes escaped as \"
    call = json.dumps('F.first("v")')[1:-1]
    json_line, start = notebook.splitlines().index(written), written.index(call)
    assert (found.range.start.line, found.range.start.character) == (json_line, start)
    assert found.range.end == lsp.Position(line=json_line, character=start + len(call))
    (found,) = [d for d in on_export if d.code == "SPX101"]
    assert (found.range.start.line, found.range.start.character) == (7, SPX101_COLUMN)  # file line 8
    assert [d.code for d in on_sql] == ["SPX106"] and on_sql[0].range.start == lsp.Position(line=1, character=73)


def test_a_file_past_the_time_budget_gets_one_diagnostic_and_the_server_goes_on(tmp_path):
    # 5,000 nested conditional expressions: LibCST's parser takes minutes (long call chains no longer
    # stall it: they are parsed in segments). The client allows four seconds, which an ordinary file
    # needs a small part of even on a busy machine.
    stalling = "x = " + "a if b else " * 5000 + "c\n"

    async def scenario():
        async with Session(tmp_path, options={"fileTimeout": 4}) as session:
            slow = await session.diagnostics(session.open(tmp_path / "slow.py", IMPORTS + stalling))
            after = await session.diagnostics(session.open(tmp_path / "job.py", BAD_JOB))
            return slow, after

    slow, after = _run(scenario())
    (only,) = slow
    assert only.severity == lsp.DiagnosticSeverity.Warning and only.range.start == lsp.Position(line=0, character=0)
    assert "slow.py: analysis stopped after 4 s (--file-timeout); the file was not checked" in only.message
    assert [d.code for d in after if d.code == "SPX101"] == ["SPX101"]


def test_a_cell_in_the_sql_language_is_analysed_and_fixed_as_sql(tmp_path):
    notebook_uri = (tmp_path / "sales.ipynb").as_uri()
    query = "SELECT store, last(amount) AS amount\nFROM (SELECT * FROM sales ORDER BY sold_at) GROUP BY store"
    texts = {1: "spark.table('s').createOrReplaceTempView('sales')", 2: query}
    languages = {1: "python", 2: "sql"}
    sql_cell = _cell_uri(notebook_uri, 2)

    async def scenario():
        async with Session(tmp_path) as session:
            session.client.notebook_document_did_open(
                lsp.DidOpenNotebookDocumentParams(
                    notebook_document=lsp.NotebookDocument(
                        uri=notebook_uri,
                        notebook_type="jupyter-notebook",
                        version=1,
                        cells=[
                            lsp.NotebookCell(kind=lsp.NotebookCellKind.Code, document=_cell_uri(notebook_uri, n))
                            for n in texts
                        ],
                    ),
                    cell_text_documents=[
                        lsp.TextDocumentItem(
                            uri=_cell_uri(notebook_uri, n), language_id=languages[n], version=1, text=texts[n]
                        )
                        for n in texts
                    ],
                )
            )
            published = await _until(session, {sql_cell})
            (found,) = [d for d in published[sql_cell] if d.code == "SPX101"]
            actions = await session.code_actions(sql_cell, found)
            return found, actions

    found, actions = _run(scenario())
    # The cell's own first line (no `%%sql` header in the editor), at `last(`.
    assert (found.range.start.line, found.range.start.character) == (0, query.index("last("))
    (quick,) = [a for a in actions if a.title == "Fix SPX101 in this notebook"]
    fixed = _apply(texts[2], quick.edit.changes[sql_cell])
    assert fixed == query.replace("last(amount)", "max(struct(sold_at, amount)).amount")


def test_code_actions_fix_an_ipynb_opened_as_json_and_a_sql_file(tmp_path):
    notebook = _notebook_json(IMPORTS, 'x = "tab\\there"\n' + FIRST_AFTER_SORT)
    sql = (
        "-- last sale of each store\n"
        "CREATE TABLE last_sale AS\n"
        "SELECT store, last(amount) AS amount\n"
        "FROM (SELECT * FROM sales ORDER BY sold_at) GROUP BY store\n"
    )

    async def scenario():
        async with Session(tmp_path) as session:
            results = {}
            for name, text in (("job.ipynb", notebook), ("report.sql", sql)):
                uri = session.open(tmp_path / name, text)
                (found,) = [d for d in await session.diagnostics(uri) if d.code == "SPX101"]
                quick = [a for a in await session.code_actions(uri, found) if a.kind == lsp.CodeActionKind.QuickFix]
                fix_all = await session.code_actions(uri, found, only=[lsp.CodeActionKind.SourceFixAll])
                fixed = _apply(text, quick[0].edit.changes[uri])
                session.change(uri, 2, fixed)
                after = await session.diagnostics(uri, version=2)
                results[name] = (quick, fix_all, fixed, after)
            return results

    results = _run(scenario())
    quick, fix_all, fixed, after = results["job.ipynb"]
    assert [a.title for a in quick] == ["Fix SPX101 in this notebook"] and quick[0].is_preferred
    assert [a.kind for a in fix_all] == ["source.fixAll.sparkpar"]
    cells = json.loads(fixed)["cells"]
    assert "".join(cells[1]["source"]) == 'x = "tab\\there"\n' + FIRST_AFTER_SORT.replace(
        'F.first("v")', 'F.min(F.struct("ts", "v")).getField("v")'
    ).replace('df.orderBy("ts").groupBy', "df.groupBy")
    # The JSON is edited where the cell's line is written; every other line is as it was.
    changed = [(a, b) for a, b in zip(notebook.splitlines(), fixed.splitlines()) if a != b]
    assert len(fixed.splitlines()) == len(notebook.splitlines()) and len(changed) == 1
    assert not [d for d in after if d.code == "SPX101"]

    quick, fix_all, fixed, after = results["report.sql"]
    assert [a.title for a in quick] == ["Fix SPX101 in this file"]
    assert [a.kind for a in fix_all] == ["source.fixAll.sparkpar"]
    assert fixed == sql.replace("last(amount)", "max(struct(sold_at, amount)).amount")
    assert not [d for d in after if d.code == "SPX101"]
