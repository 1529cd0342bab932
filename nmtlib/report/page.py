"""What the HTML report (``snakemake --report``) shows: the labels of its entries and its landing page.

Snakemake's report lists every registered result under a category, labelled by
:data:`ENTRIES` (``workflow/rules/report.smk`` passes them to ``report(...)``), and opens an
``.html`` result in its main panel. Its landing page is the workflow description,
``workflow/report/workflow.rst``, which embeds the fragment :func:`write_landing` writes: the
papers' claims first, as a table that reads first (:func:`claims_table`: the claim, the paper's
difference, ours with its 95% interval and the verdict in the first columns, headers in words,
the tested claims first and the untested ones folded into one line per reason; every column of
``findings.csv`` is one click away), then the summary table, from the same rendering as its page
(``tables/summary.html``), so that the first screen of the report already carries the verdicts
and the experiment's numbers.
"""

from __future__ import annotations

import html
import math
from pathlib import Path

import pandas as pd

from nmtlib.atomic import atomic_write
from nmtlib.report.seeds import seeds_cell
from nmtlib.report.paper import FIGURES as PAPER_FIGURES
from nmtlib.report.paper import TABLES
from nmtlib.report.significance import UNTESTED
from nmtlib.report.tables import VERDICT_CLASS, TableHtml
from nmtlib.words import counted

#: categories of the report's menu, listed in this order (Snakemake sorts them by name)
OVERVIEW, PAPER_TABLES, FIGURES = "1. Overview", "2. Paper tables", "3. Figures"

#: table or figure name → category and labels of its report entry (each with its caption,
#: ``workflow/report/<name>.rst``); a paper table's and a figure's, caption included, come from
#: their declarations (:data:`nmtlib.report.paper.TABLES`, :data:`nmtlib.report.paper.FIGURES`).
#: Snakemake lists a category's entries as a table with one
#: column per label, sorted by the first label; a label other than the first whose two values each
#: cover half of a category's entries would become a toggle, hence one label in the two-entry
#: overview (and "Experiment summary" sorts before "Findings").
ENTRIES: dict[str, dict] = {
    "summary": {"category": OVERVIEW, "labels": {"table": "Experiment summary"}},
    "findings": {"category": OVERVIEW, "labels": {"table": "Findings: the papers' claims"}},
    **{name: {"category": PAPER_TABLES, "labels": {"paper": t.paper, "table": t.table, "shows": t.shows}}
       for name, t in TABLES.items()},
    **{name: {"category": FIGURES, "labels": {"paper": f.paper, "figure": f.figure, "shows": f.shows}}
       for name, f in PAPER_FIGURES.items()},
}

#: tables shown on the landing page, in this order
LANDING_TABLES = ("findings", "summary")

#: the claims table's columns: header (in words) → how a findings row fills it; the verdict is in the
#: first five, so that it is on screen without scrolling
CLAIM_HEADERS = ("Claim", "Paper: A − B", "Ours: A − B [95% interval]", "Seeds (A / B)", "Verdict",
                 "Rows compared (A vs B)", "p-value", "Criterion", "Source")

# Scoped to the fragment, so the report's own page keeps its look. The `:has` rules lay out the
# page that holds it: from the top left instead of centred (a centred page taller or wider than
# the window is cut off), and the column Snakemake gives the workflow description (32rem, beside
# the rule graph) widened to the whole width, the rule graph below it; a wide table scrolls
# sideways.
_STYLE = """<style>
div.h-screen:has(.nmt-landing){align-items:flex-start;justify-content:flex-start}
div.h-screen>div:has(.nmt-landing){min-width:0;width:100%;flex-wrap:wrap}
div.py-2:has(.nmt-landing){flex:1 1 100%;min-width:0}
div.max-w-lg:has(.nmt-landing){max-width:none}
.nmt-landing{font-size:13px;line-height:1.35;color:#1e293b}
.nmt-landing h3{font-size:15px;font-weight:600;margin:1.1em 0 .3em}
.nmt-landing p{margin:.3em 0;max-width:75em}
.nmt-landing .nmt-scroll{overflow-x:auto;max-width:100%;margin:.4em 0}
.nmt-landing table{border-collapse:collapse;width:auto;margin:0;font-size:12px}
.nmt-landing th,.nmt-landing td{border:1px solid #cbd5e1;padding:2px 6px;text-align:left;vertical-align:top}
.nmt-landing th{background:#f1f5f9;white-space:nowrap;font-weight:600}
.nmt-landing td{white-space:nowrap}
.nmt-landing td.long{white-space:normal;min-width:22em;max-width:36em}
.nmt-landing tbody tr:nth-child(even) td{background:#f8fafc}
.nmt-landing td.holds{background:#d9f2d9!important}
.nmt-landing td.fails{background:#f8d7d7!important}
.nmt-landing td.untested,.nmt-landing td.inconclusive{color:#64748b}
.nmt-landing td.inconclusive{background:#fdf6dc!important}
.nmt-landing table.nmt-claims td.long{min-width:16em;max-width:30em}
.nmt-landing tr.folded td{color:#64748b}
.nmt-landing details{margin:.3em 0}.nmt-landing summary{cursor:pointer;color:#047857}
</style>"""


def _section(name: str, table: TableHtml) -> str:
    """One table as a section of the landing page: its title, the paragraphs above the table, the
    table (scrolling sideways when wide), and the paragraphs under it folded away."""
    if not table.table:  # no rows: the rendering says why
        return f'<section id="nmt-{name}"><h3>{table.title}</h3>{table.header}{table.empty}</section>'
    notes = f"<details><summary>What the columns are</summary>{table.notes}</details>" if table.notes else ""
    return (f'<section id="nmt-{name}"><h3>{table.title}</h3>{table.header}'
            f'<div class="nmt-scroll">{table.table}</div>{notes}</section>')


def _number(value: object, percent: bool) -> str:
    """A signed difference with two decimals (a window change in percent), or an em dash."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "—"
    return f"{float(value):+.2f}" + ("%" if percent else "")


def _cells(row: pd.Series) -> list[tuple[str, str]]:
    """One tested claim's cells (text, class) in :data:`CLAIM_HEADERS` order."""
    percent = "%" in str(row["metric"])
    ours = _number(row["ours_diff"], percent)
    if ours != "—" and not pd.isna(row["ci_low"]):
        ours += f" [{_number(row['ci_low'], percent)}, {_number(row['ci_high'], percent)}]"
    p = "—" if pd.isna(row["p_value"]) else f"{float(row['p_value']):.3f}"
    return [(str(row["claim"]), "long"), (_number(row["paper_diff"], percent), ""), (ours, ""), (seeds_cell(row), ""),
            (str(row["verdict"]), VERDICT_CLASS.get(str(row["verdict"]), "")),
            (str(row["compared"] or ""), "long"), (p, ""), (str(row["criterion"]), "long"), (str(row["source"]), "")]


def claims_table(findings: pd.DataFrame) -> str:
    """The findings as the landing page shows them: one row per tested claim (in
    :data:`CLAIM_HEADERS`, the verdict fifth at the latest), then one folded row per reason the
    other claims are not tested (the claims it covers listed inside it, each with its note)."""
    tested = findings[findings["verdict"] != UNTESTED]
    rows = []
    for _, row in tested.iterrows():
        tds = "".join((f'<td class="{c}">' if c else "<td>") + html.escape(text) + "</td>" for text, c in _cells(row))
        rows.append(f"<tr>{tds}</tr>")
    untested = findings[findings["verdict"] == UNTESTED]
    for reason, group in untested.groupby(untested["reason"].fillna(""), sort=False):
        items = "".join(f"<li>{html.escape(str(r['claim']))}" + (f": {html.escape(str(r['note']))}"
                                                                  if isinstance(r["note"], str) and r["note"] else "")
                        + "</li>" for _, r in group.iterrows())
        count = counted(len(group), "claim")
        claims = f"<details><summary>{count}</summary><ul>{items}</ul></details>"
        rows.append(f'<tr class="folded"><td class="long">{claims}</td><td>—</td><td>—</td><td>—</td>'
                    f'<td class="untested">{UNTESTED}</td><td class="long">{html.escape(str(reason))}</td>'
                    f"<td></td><td></td><td></td></tr>")
    head = "".join(f"<th>{html.escape(h)}</th>" for h in CLAIM_HEADERS)
    return f'<table class="nmt-claims"><thead><tr>{head}</tr></thead><tbody>{"".join(rows)}</tbody></table>'


def landing_fragment(tables: dict[str, TableHtml]) -> str:
    """The landing page's HTML (a fragment, styles scoped to ``.nmt-landing``): the
    :data:`LANDING_TABLES` of ``tables``, as :func:`nmtlib.report.tables.write_table` rendered them."""
    sections = [_section(name, tables[name]) for name in LANDING_TABLES]
    return f'{_STYLE}\n<div class="nmt-landing">\n' + "\n".join(sections) + "\n</div>\n"


def write_landing(tables: dict[str, TableHtml], path: Path) -> None:
    """:func:`landing_fragment` of ``tables``, written to ``path``."""
    with atomic_write(path) as f:
        f.write(landing_fragment(tables))
