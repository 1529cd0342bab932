"""What the HTML report (``snakemake --report``) shows: the labels of its entries and its landing page.

Snakemake's report lists every registered result under a category, labelled by
:data:`ENTRIES` (``workflow/rules/report.smk`` passes them to ``report(...)``), and opens an
``.html`` result in its main panel. Its landing page is the workflow description,
``workflow/report/workflow.rst``, which embeds the fragment :func:`write_landing` writes: the
summary table and the findings, from the same rendering as their pages (``tables/<name>.html``),
so that the first screen of the report already carries the experiment's numbers.
"""

from __future__ import annotations

from pathlib import Path

from nmtlib.atomic import atomic_write
from nmtlib.report.tables import TableHtml

#: categories of the report's menu, listed in this order (Snakemake sorts them by name)
OVERVIEW, PAPER_TABLES, FIGURES = "1. Overview", "2. Paper tables", "3. Figures"

#: table or figure name → category and labels of its report entry. Snakemake lists a category's
#: entries as a table with one column per label, sorted by the first label; a label other than the
#: first whose two values each cover half of a category's entries would become a toggle, hence one
#: label in the two-entry overview (and "Experiment summary" sorts before "Findings").
ENTRIES: dict[str, dict] = {
    "summary": {"category": OVERVIEW, "labels": {"table": "Experiment summary"}},
    "findings": {"category": OVERVIEW, "labels": {"table": "Findings: the papers' claims"}},
    "luong_table1": {"category": PAPER_TABLES, "labels": {
        "paper": "Luong et al. 2015", "table": "Table 1", "shows": "ppl, BLEU by system, En→De"}},
    "luong_table3": {"category": PAPER_TABLES, "labels": {
        "paper": "Luong et al. 2015", "table": "Table 3", "shows": "ppl, BLEU by system, De→En"}},
    "luong_table4": {"category": PAPER_TABLES, "labels": {
        "paper": "Luong et al. 2015", "table": "Table 4", "shows": "attention types × scores"}},
    "luong_table6": {"category": PAPER_TABLES, "labels": {
        "paper": "Luong et al. 2015", "table": "Table 6", "shows": "alignment error rate"}},
    "bahdanau_table1": {"category": PAPER_TABLES, "labels": {
        "paper": "Bahdanau et al. 2015", "table": "Table 1", "shows": "BLEU, all and no-UNK"}},
    "shu_table1": {"category": PAPER_TABLES, "labels": {
        "paper": "Shu & Nakayama 2017", "table": "Table 1", "shows": "window, BLEU, RIBES by τ"}},
    "shu_table3": {"category": PAPER_TABLES, "labels": {
        "paper": "Shu & Nakayama 2017", "table": "Table 3", "shows": "decoding time"}},
    "learning_curves": {"category": FIGURES, "labels": {
        "paper": "Luong et al. 2015", "figure": "Fig. 5", "shows": "dev ppl during training"}},
    "bleu_by_length": {"category": FIGURES, "labels": {
        "paper": "Luong et al. 2015", "figure": "Fig. 6", "shows": "BLEU by sentence length"}},
    "attention_heatmaps": {"category": FIGURES, "labels": {
        "paper": "Bahdanau et al. 2015", "figure": "Fig. 3", "shows": "attention weights"}},
    "window_tradeoff": {"category": FIGURES, "labels": {
        "paper": "Shu & Nakayama 2017", "figure": "Fig. 3", "shows": "window vs BLEU over τ"}},
    "vision_span": {"category": FIGURES, "labels": {
        "paper": "Shu & Nakayama 2017", "figure": "Fig. 4", "shows": "vision span per step"}},
}

#: tables shown on the landing page, in this order
LANDING_TABLES = ("summary", "findings")

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
.nmt-landing td.untested{color:#64748b}
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


def landing_fragment(tables: dict[str, TableHtml]) -> str:
    """The landing page's HTML (a fragment, styles scoped to ``.nmt-landing``): the
    :data:`LANDING_TABLES` of ``tables``, as :func:`nmtlib.report.tables.write_table` rendered them."""
    sections = [_section(name, tables[name]) for name in LANDING_TABLES]
    return f'{_STYLE}\n<div class="nmt-landing">\n' + "\n".join(sections) + "\n</div>\n"


def write_landing(tables: dict[str, TableHtml], path: Path) -> None:
    """:func:`landing_fragment` of ``tables``, written to ``path``."""
    with atomic_write(path) as f:
        f.write(landing_fragment(tables))
