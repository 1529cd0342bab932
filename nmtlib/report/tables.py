"""The papers' tables regenerated with our numbers beside the paper's, as CSV and Markdown.

Each table has the paper's shape: every row of the paper (from :mod:`nmtlib.report.paper`) is
listed with the paper's numbers, and ``ours_*`` columns beside them are filled from the variant
(or ensemble) that regenerates the row — the variant's ``paper_row`` config names it. A row that
no variant of the experiment regenerates keeps an empty "ours". Only the tables of which a
variant or an ensemble regenerates a row are written (:func:`write_paper_tables`); one whose
rows all lack a number of ours (no results yet) is written empty, its page saying why. Our
numbers are on the experiment's own data (said in every table), the paper's on the paper's; the
papers are cited by authors, year, title and table.

Our numbers are means over the variant's seeds. Every metric column names its variant: test
perplexity (``*_test_ppl``), BLEU before or after unknown-word replacement
(``*_before_unk_replace`` / ``*_after_unk_replace``; in Luong's Tables 1 and 3 the row's flag
``unk_replaced`` says which, as the paper's "+ unk replace" rows do), the AER
convention (``*_aer_fn14``, ``*_aer_predicted_word``: :data:`AER_CONVENTIONS`). BLEU is tokenized
BLEU (multi-bleu.perl). Shu & Nakayama's protocol: BLEU and RIBES of the raw output (that paper
replaces nothing) from the same decoding as the window beside them, and the window is the mean
over sentences of each sentence's window (:mod:`nmtlib.metrics.window`).
"""

from __future__ import annotations

import html
import math
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from nmtlib.atomic import atomic_write
from nmtlib.layout import Layout
from nmtlib.report.collect import (BF16_NOTE, SD, ExperimentSpec, Ours, data_description, ensemble_assignments, gated,
                                   parse_tau, runs_description, smoke_run, summary_columns)
from nmtlib.report.metrics import METRICS, metrics_in
from nmtlib.report.significance import FAILS, HOLDS, INCONCLUSIVE, NO_VERDICT, UNTESTED
from nmtlib.report.paper import TABLES, PaperRow, PaperTable, resolve_paper_row, tables_with_rows

MISSING = "—"
#: the files of a table: every column (CSV), and its Markdown and HTML renderings (:func:`write_table`)
RENDERINGS = ("csv", "md", "html")

#: the two ways of reading forced-decoding attention as word alignments, said under every table
#: with an AER column (the summary's ``aer_fn14`` / ``aer_predicted_word``, Luong Table 6's ``ours_*``)
AER_CONVENTIONS = (
    "AER conventions: forced decoding of the reference gives one attention vector a_t per decoder step t, the step "
    "that reads target word y_{t−1} and predicts y_t; each target word is linked to the source word its vector "
    "weighs most, and the links are scored against gold alignments (AER: lower is better). *aer_fn14* is Luong et "
    "al. 2015's protocol (footnote 14, the one behind their Table 6's 0.34–0.39): for content-based scores (dot, "
    "general, concat, additive) a_t is taken as the alignment of the input word y_{t−1}, for location-based ones "
    "of the predicted word y_t. *aer_predicted_word* takes every a_t as the alignment of the word it predicts, "
    "y_t. The two differ by one target position for content-based scores: a model that attends to the source of "
    "the word it is about to emit scores a high aer_fn14 (near 0.9 on the synthetic demo) beside a low "
    "aer_predicted_word. That is the bookkeeping, not broken attention: compare aer_fn14 with the paper's numbers, "
    "and aer_predicted_word for how well the attention aligns."
)

#: column → explanation appended under any table that has the column (once per text)
COLUMN_NOTES = {
    c: AER_CONVENTIONS for c in ("aer_fn14", "aer_predicted_word", "ours_aer_fn14", "ours_aer_predicted_word")
}


#: columns that count things: shown as integers (a count read back from a CSV is a float when the
#: column has empty cells)
COUNTS = {"runs", "sentences", "epochs", "best_epoch", "seeds"}


def metric_of(column: str) -> str:
    """The registered metric a column shows: ``ours_<name>``, ``paper_<name>``, ``<name>_sd`` or the name."""
    name = column.removesuffix(SD) if column.endswith(SD) else column
    for prefix in ("ours_", "paper_"):
        name = name.removeprefix(prefix)
    return name


def _decimals(column: str) -> int:
    metric = METRICS.get(metric_of(column))
    if metric is not None:
        return metric.decimals
    if column in COUNTS or column.endswith("_sentences"):
        return 0
    if "ribes" in column or "aer" in column or "precision" in column or "recall" in column:
        return 3
    if column.endswith("_pct") or column.endswith("_ms"):
        return 1
    return 2


def format_cell(value: Any, column: str) -> str:
    """A value as Markdown and HTML show it: a number with its column's digits (a count as an
    integer), a missing one as an em dash, text as it is."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return MISSING
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, float):
        decimals = _decimals(column)
        return f"{round(value):d}" if decimals == 0 else f"{value:.{decimals}f}"
    return str(value)


def rendered_cells(df: pd.DataFrame) -> pd.DataFrame:
    """``df``'s cells as text (:func:`format_cell`); a column ``x`` with a standard deviation column
    ``x_sd`` beside it becomes one column of "mean ± sd" cells (the CSV keeps both)."""
    cells = {}
    for c in df.columns:
        if c.endswith(SD) and c.removesuffix(SD) in df.columns:
            continue
        shown = [format_cell(v, c) for v in df[c]]
        if c + SD in df.columns:
            shown = [x if x == MISSING or format_cell(sd, c) == MISSING else f"{x} ± {format_cell(sd, c)}"
                     for x, sd in zip(shown, df[c + SD])]
        cells[c] = shown
    return pd.DataFrame(cells, columns=list(cells))


@dataclass(frozen=True)
class TableHtml:
    """A table's HTML rendering in parts, escaped: its title, the paragraphs above the table
    (``header``), the ``<table>`` (empty when the table has no row, and ``empty`` says why) and
    the paragraphs under it (``notes``). :meth:`page` is the standalone page
    (``tables/<name>.html``); the report's landing page (:mod:`nmtlib.report.page`) lays out the
    same parts its own way."""

    title: str
    header: str
    table: str
    notes: str
    empty: str

    def page(self) -> str:
        body = self.table or self.empty
        return (f"<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>{self.title}</title>"
                f"<style>{_STYLE}</style></head><body><h2>{self.title}</h2>{self.header}{body}"
                f"{self.notes}</body></html>\n")


def write_table(
    df: pd.DataFrame, path_csv: Path, title: str, notes: str = "", header: str = "", md_drop: tuple[str, ...] = (),
    empty: str = "(no rows)",
) -> TableHtml:
    """``path_csv`` with every column, and a Markdown and an HTML rendering beside it (``.md``,
    ``.html``: the one ``snakemake --report`` shows on screen); returns the HTML rendering's parts.

    The renderings leave out ``md_drop`` columns (constant provenance columns said in ``header``),
    print numbers with the papers' precision (counts as integers), a mean beside its standard
    deviation over seeds as "mean ± sd" (:func:`rendered_cells`), missing numbers as an em dash, show ``empty``
    when there is no row, and end with ``notes`` and the :data:`COLUMN_NOTES` of the columns shown.
    """
    with atomic_write(path_csv) as f:
        df.to_csv(f, index=False)
    shown = df.drop(columns=[c for c in md_drop if c in df.columns])
    column_notes = [] if shown.empty else list(dict.fromkeys(COLUMN_NOTES[c] for c in shown.columns
                                                             if c in COLUMN_NOTES))
    notes = "  \n".join(x for x in (notes, *column_notes) if x)
    cells = rendered_cells(shown)
    body = empty if shown.empty else cells.to_markdown(index=False, disable_numparse=True)
    md = f"# {title}\n\n" + (f"{header}\n\n" if header else "") + body + "\n"
    if notes:
        md += f"\n{notes}\n"
    with atomic_write(path_csv.with_suffix(".md")) as f:
        f.write(md)
    rendered = table_html(title, header, cells, notes, empty)
    with atomic_write(path_csv.with_suffix(".html")) as f:
        f.write(rendered.page())
    return rendered


#: the HTML class of a verdict cell (its colour)
VERDICT_CLASS = {HOLDS: "holds", FAILS: "fails", INCONCLUSIVE: "inconclusive", UNTESTED: "untested",
                  NO_VERDICT: "untested"}
_STYLE = """body{font-family:system-ui,sans-serif;font-size:14px;margin:1em;color:#222}
table{border-collapse:collapse}th,td{border:1px solid #ccc;padding:3px 6px;text-align:left;vertical-align:top}
th{background:#f3f3f3;position:sticky;top:0}tr:nth-child(even) td{background:#fafafa}
td.holds{background:#d9f2d9!important}td.fails{background:#f8d7d7!important}td.untested{color:#888}
td.inconclusive{background:#fdf6dc!important}
p{max-width:75em}"""
#: a cell with more characters than this is marked ``long`` (text, not numbers): the landing page
#: lets it wrap and keeps shorter ones on one line
LONG_CELL = 30


def table_html(title: str, header: str, cells: pd.DataFrame, notes: str = "", empty: str = "(no rows)") -> TableHtml:
    """The HTML parts of a table of formatted cells: verdict cells coloured, long cells marked."""
    def para(text: str) -> str:
        return "".join(f"<p>{html.escape(line.strip())}</p>" for line in text.split("  \n") if line.strip())

    table = ""
    if not cells.empty:
        head = "".join(f"<th>{html.escape(str(c))}</th>" for c in cells.columns)
        rows = []
        for _, row in cells.iterrows():
            tds = []
            for c in cells.columns:
                value = str(row[c])
                classes = " ".join(x for x in (VERDICT_CLASS.get(value) if c == "verdict" else None,
                                               "long" if len(value) > LONG_CELL else None) if x)
                tds.append((f"<td class=\"{classes}\">" if classes else "<td>") + html.escape(value) + "</td>")
            rows.append("<tr>" + "".join(tds) + "</tr>")
        table = f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"
    return TableHtml(html.escape(title), para(header), table, para(notes), para(empty))


def assignments(spec: ExperimentSpec) -> dict[str, dict[str, list[str]]]:
    """Table → row key → variants (and ensembles) regenerating that row, in config order."""
    out: dict[str, dict[str, list[str]]] = {name: {} for name in TABLES}
    for name, v in spec.variants.items():
        for table, keys in resolve_paper_row(name, v.get("paper_row") or {}).items():
            for key in keys:
                out[table].setdefault(key, []).append(name)
    for table, ensembles in ensemble_assignments(spec).items():
        if table in out:
            for e in ensembles:
                out[table].setdefault("ensemble", []).append(e)
    return out


class Builder:
    """Shared pieces of every paper table's builder (:attr:`nmtlib.report.paper.PaperTable.build`):
    the variants regenerating each row, our numbers' provenance (``ours_from``), the columns every
    table ends with, and the writing."""

    def __init__(self, spec: ExperimentSpec, ours: Ours, table: PaperTable):
        self.spec, self.ours, self.table = spec, ours, table
        self.mapped = assignments(spec)[table.name]
        self.data = data_description(spec)

    def names(self, row: PaperRow) -> list[str | None]:
        return list(self.mapped.get(row.key, [])) or [None]

    def each(self) -> Iterator[tuple[PaperRow, str | None]]:
        """Every row of the paper's table with each variant that regenerates it, in the table's
        order; a row no variant regenerates once, with None (it is shown with the paper's numbers)."""
        for row in self.table.rows:
            for name in self.names(row):
                yield row, name

    def ours_from(self, name: str | None, setting: str | None = None) -> str:
        if name is None:
            return ""
        setting = setting or self.spec.settings[name][0]
        n = self.ours.runs(name, setting)
        if name in self.spec.ensembles:
            runs = "ensemble" if n else "no results"
        else:
            runs = f"{n} seed{'s' if n != 1 else ''}" if n else "no results"
        return f"{name} ({runs}, {setting})"

    def finish(self, row: PaperRow, out: dict[str, Any], name: str | None = None,
               setting: str | None = None) -> dict[str, Any]:
        """The row with the registered metrics declared for this table (:func:`metrics_in`) that the
        builder has no column for, as ``ours_<name>`` of ``name`` decoded with ``setting`` (before
        ``ours_from``), and the provenance columns."""
        extra = {f"ours_{m.name}": self.ours.value(name, m.name, setting) for m in metrics_in(self.table.name)
                 if f"ours_{m.name}" not in out}
        at = list(out).index("ours_from") if "ours_from" in out else len(out)
        items = list(out.items())
        out = dict([*items[:at], *extra.items(), *items[at:]])
        out["note"] = "; ".join(x for x in (row.note, out.pop("_note", "")) if x)
        out["paper_source"] = f"{self.table.citation}" + (f" ({row.source})" if row.source else "")
        out["experiment"] = self.spec.experiment
        out["ours_data"] = self.data
        return out

    def header(self) -> str:
        t = self.table
        return (
            smoke_header(self.spec) +
            f"Ours: experiment `{self.spec.experiment}` ({self.spec.results}), {self.data}, "
            f"{runs_description(self.spec, self.ours.progress())}.  \nPaper: {t.reference}; {t.setting}.  \n"
            "Our numbers are on our data, the paper's on the paper's: compare trends (deltas, ratios), "
            "not values. An empty *ours* means no variant of this experiment regenerates that row "
            "(a variant names its rows with `paper_row`)."
        )

    def why_empty(self, df: pd.DataFrame) -> str:
        """One line on why no row of ``df`` has a number of ours, though variants map to its rows."""
        t = self.table
        mapped = [f"{r['ours_from']} regenerates row {r['row']!r}" + (f" ({r['note']})" if r.get("note") else "")
                  for _, r in df.iterrows() if r.get("ours_from")]
        return (f"No row of {t.citation} has a number of ours in experiment `{self.spec.experiment}`, so this "
                f"table is left empty: {'; '.join(mapped)}. Paper: {t.reference}.")

    def write(self, df: pd.DataFrame, out: Layout[Path]) -> pd.DataFrame:
        t = self.table
        title = f"{t.citation}: {t.title}"
        if not has_ours(df):
            write_table(df.iloc[0:0], out.table(t.name), title, empty=self.why_empty(df))
            return df
        # the header says the experiment, the data and the paper; a row's own source stays visible
        same_source = "paper_source" in df and (df["paper_source"] == t.citation).all()
        write_table(df, out.table(t.name), title, t.notes, self.header(),
                    md_drop=("experiment", "ours_data", *(("paper_source",) if same_source else ())))
        return df


#: ``ours_*`` columns that hold text, not numbers of ours
_OURS_TEXT = ("ours_from", "ours_data", "ours_device", "ours_delta_vs")


def has_ours(df: pd.DataFrame) -> bool:
    """Whether any row of a paper table has a number of ours (an ``ours_*`` column other than
    :data:`_OURS_TEXT` with a value)."""
    columns = [c for c in df.columns if c.startswith("ours_") and c not in _OURS_TEXT]
    return bool(columns) and bool(df[columns].notna().to_numpy().any())


def smoke_header(spec: ExperimentSpec) -> str:
    """The line that opens every table of a smoke run (:func:`nmtlib.report.collect.smoke_run`), else ""."""
    why = smoke_run(spec)
    return f"{NO_VERDICT.capitalize()}: {why}.  \n" if why else ""


def _delta(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None else round(a - b, 4)


def progressive_table(spec: ExperimentSpec, ours: Ours, table: PaperTable) -> pd.DataFrame:
    """Luong Tables 1 and 3: test perplexity and BLEU per system, with the gain over the previous system.

    The paper's gains are progressive: each row of its own systems against the row right above it
    (:attr:`PaperRow.delta`), each scored as its row says (after unknown-word replacement for the
    "+ unk replace" rows, before it otherwise). Our gain compares the same two rows, scored the
    same way, and names the row it is against in ``ours_delta_vs``. Where this experiment has no
    number of ours for the row above, our gain stays empty and ``note`` says so: a gain across
    skipped rows (say a 2-model ensemble after replacement against the base model before it) is not
    the paper's comparison.
    """
    b = Builder(spec, ours, table)
    chain = [r for r in table.rows if r.progressive]
    above = {r.key: prev for prev, r in zip(chain, chain[1:])}  # row key → the chain's row above it
    got: dict[str, float] = {}  # row key → our BLEU of its first variant with a result
    rows = []
    for prow, name in b.each():
        bleu = ours.value(name, "bleu_after_unk_replace" if prow.unk_replace else "bleu_before_unk_replace")
        out = {
            "row": prow.key, "section": prow.section, "system": prow.label,
            "paper_test_ppl": prow.values.get("ppl"), "ours_test_ppl": ours.value(name, "test_ppl"),
            "paper_bleu": prow.values.get("bleu"), "ours_bleu": bleu,
            "unk_replaced": prow.unk_replace,  # a flag: which BLEU the row's two numbers are
            "paper_delta": prow.delta, "ours_delta": None, "ours_delta_vs": "",
            "ours_from": b.ours_from(name),
        }
        prev = above.get(prow.key)
        if prev is not None and bleu is not None:
            if prev.key in got:
                out["ours_delta"] = _delta(bleu, got[prev.key])
                out["ours_delta_vs"] = prev.key
            else:
                why = ("has no result of ours yet" if prev.key in b.mapped
                       else "is not regenerated by any variant of this experiment")
                out["_note"] = (f"ours: no gain, since the paper's gain is against the row above, "
                                f"{prev.key!r}, which {why}")
        if bleu is not None:
            got.setdefault(prow.key, bleu)
        rows.append(b.finish(prow, out, name))
    return pd.DataFrame(rows)


def luong_table4(spec: ExperimentSpec, ours: Ours, table: PaperTable) -> pd.DataFrame:
    """Attentional architectures: test perplexity, BLEU before and after unknown-word replacement."""
    b = Builder(spec, ours, table)
    rows = []
    for prow, name in b.each():
        before, after = ours.value(name, "bleu_before_unk_replace"), ours.value(name, "bleu_after_unk_replace")
        rows.append(b.finish(prow, {
            "row": prow.key, "system": prow.label,
            "paper_test_ppl": prow.values.get("ppl"), "ours_test_ppl": ours.value(name, "test_ppl"),
            "paper_bleu_before_unk_replace": prow.values.get("bleu"), "ours_bleu_before_unk_replace": before,
            "paper_bleu_after_unk_replace": prow.values.get("bleu_unk"), "ours_bleu_after_unk_replace": after,
            "paper_unk_gain": prow.delta, "ours_unk_gain": _delta(after, before),
            "ours_from": b.ours_from(name),
        }, name))
    return pd.DataFrame(rows)


def luong_table6(spec: ExperimentSpec, ours: Ours, table: PaperTable) -> pd.DataFrame:
    b = Builder(spec, ours, table)
    rows = []
    for prow, name in b.each():
        out = {
            "row": prow.key, "method": prow.label,
            "paper_aer_fn14": prow.values.get("aer"), "ours_aer_fn14": ours.value(name, "aer_fn14"),
            "ours_from": b.ours_from(name),
        }
        if name in spec.ensembles:
            out["_note"] = "ours: AER is scored per model (forced decoding of one model); not for ensembles"
        elif name is not None and not spec.aer:
            out["_note"] = "ours: the experiment has no gold alignments"
        rows.append(b.finish(prow, out, name))
    return pd.DataFrame(rows)


def bahdanau_table1(spec: ExperimentSpec, ours: Ours, table: PaperTable) -> pd.DataFrame:
    b = Builder(spec, ours, table)
    rows = []
    for prow, name in b.each():
        rows.append(b.finish(prow, {
            "row": prow.key, "model": prow.label,
            "paper_bleu_all": prow.values.get("bleu_all"),
            "ours_bleu_all": ours.value(name, "bleu_before_unk_replace"),
            "paper_bleu_no_unk": prow.values.get("bleu_no_unk"),
            "ours_bleu_no_unk": ours.value(name, "bleu_no_unk_sentences"),
            "ours_from": b.ours_from(name),
        }, name))
    return pd.DataFrame(rows)


def _tau_text(tau: float | None) -> str:
    return "∞" if tau is None else f"{tau:g}"


def shu_table1(spec: ExperimentSpec, ours: Ours, table: PaperTable) -> pd.DataFrame:
    """Window, BLEU and RIBES per model and τ; our other τ settings follow as rows of their own."""
    b = Builder(spec, ours, table)
    rows: list[dict[str, Any]] = []
    shown: set[tuple[str, str]] = set()
    flexible: list[str] = []  # mapped variants of a gated mechanism (Flexible Attention), for the extra τ rows

    def ours_cells(name: str | None, setting: str | None) -> dict[str, Any]:
        if name is None or setting is None:
            return {"ours_window": None, "ours_bleu_before_unk_replace": None, "ours_ribes_before_unk_replace": None}
        # Shu & Nakayama replace no unknown word: BLEU and RIBES of the raw output
        return {"ours_window": ours.value(name, "avg_window", setting),
                "ours_bleu_before_unk_replace": ours.value(name, "bleu_before_unk_replace", setting),
                "ours_ribes_before_unk_replace": ours.value(name, "ribes_before_unk_replace", setting)}

    for prow, name in b.each():
        setting = ours.setting(name, prow.tau) if name else None
        out = {"row": prow.key, "model": prow.label, "tau": _tau_text(prow.tau)}
        out.update({f"paper_{k}": prow.values.get(k) for k in
                    ("en_ja_window", "en_ja_bleu", "en_ja_ribes", "de_en_window", "de_en_bleu")})
        out.update(ours_cells(name, setting))
        out["ours_from"] = b.ours_from(name, setting) if setting else ""
        if name is not None and setting is None:
            out["_note"] = f"ours: {name} was not decoded with τ={_tau_text(prow.tau)}"
        if name is not None and setting is not None:
            shown.add((name, setting))
            if name in spec.variants and gated(spec.variants[name]) and name not in flexible:
                flexible.append(name)
        rows.append(b.finish(prow, out, name, setting))
    for name in flexible:
        for setting in spec.settings[name]:
            if (name, setting) in shown:
                continue
            tau = parse_tau(setting)
            out = {"row": f"{name}@tau{_tau_text(tau)}", "model": f"{name} (τ={_tau_text(tau)}), not in the paper",
                   "tau": _tau_text(tau)}
            out.update(ours_cells(name, setting))
            out["ours_from"] = b.ours_from(name, setting)
            rows.append(b.finish(PaperRow(out["row"], out["model"], {}), out, name, setting))
    df = pd.DataFrame(rows)
    global_window = next((r["ours_window"] for r in rows if r["row"] == "global" and r["ours_window"]), None)
    df.insert(df.columns.get_loc("ours_ribes_before_unk_replace") + 1, "ours_window_change_pct", [
        None if global_window is None or w is None else round(100 * (w - global_window) / global_window, 2)
        for w in df["ours_window"]])
    return df


def _nearest_setting(ours: Ours, name: str, tau: float | None) -> str | None:
    """The setting with the paper's τ, else the nearest finite τ decoded, else τ = ∞."""
    exact = ours.setting(name, tau)
    if exact or tau is None:
        return exact
    finite = [t for t in ours.taus(name) if t is not None]
    return ours.setting(name, min(finite, key=lambda t: abs(t - tau))) if finite else ours.setting(name, None)


def shu_table3(spec: ExperimentSpec, ours: Ours, table: PaperTable) -> pd.DataFrame:
    """Decode time per sentence; ratios to Global compare across hardware."""
    b = Builder(spec, ours, table)
    rows = []
    for prow, name in b.each():
        setting = _nearest_setting(ours, name, prow.tau) if name else None
        device = ours.devices(name, setting) if setting else None
        rows.append(b.finish(prow, {
            "row": prow.key, "model": prow.label,
            "paper_gpu_ms": prow.values.get("gpu_ms"), "paper_cpu_ms": prow.values.get("cpu_ms"),
            "ours_ms": ours.value(name, "time_ms", setting) if setting else None,
            "ours_device": device or ("not recorded" if setting and ours.runs(name, setting) else ""),
            "ours_from": b.ours_from(name, setting) if setting else "",
        }, name, setting))
    known = {r["ours_device"] for r in rows if r["ours_ms"] is not None}
    if len(known) > 1:
        for r in rows:
            if r["ours_ms"] is not None:
                r["note"] = "; ".join(x for x in (r["note"], "ours: timed on different or unrecorded devices, "
                                                  "so the ratio to Global is not comparable") if x)
    df = pd.DataFrame(rows)
    ref = df[df.row == "global"].iloc[0]
    for col, out in (("paper_gpu_ms", "paper_gpu_vs_global"), ("paper_cpu_ms", "paper_cpu_vs_global"),
                     ("ours_ms", "ours_vs_global")):
        base = ref[col]
        df.insert(df.columns.get_loc("ours_from"), out,
                  [None if base is None or v is None or pd.isna(base) or pd.isna(v) else round(v / base, 3)
                   for v in df[col]])
    return df


def write_paper_tables(spec: ExperimentSpec, out: Layout[Path], ours: Ours | None = None) -> dict[str, pd.DataFrame]:
    """The paper tables of which the experiment regenerates a row (:func:`paper_tables`) in the
    results folder ``out`` (CSV, Markdown, HTML), and the tables built. The files of the other paper tables,
    left by an earlier config, are removed: a table no variant regenerates any more would show
    stale numbers of ours. A table whose mapped rows have no number yet (:func:`has_ours`) is
    written empty, saying why in one line. ``ours``: the reading of the run the report is made from."""
    ours = ours or Ours(spec)
    written = paper_tables(spec)
    built = {}
    for name, table in TABLES.items():
        if name in written:
            built[name] = table.builder()(spec, ours, table)
            Builder(spec, ours, table).write(built[name], out)
        else:
            for ext in RENDERINGS:
                out.table(name, ext).unlink(missing_ok=True)
    return built


def paper_tables(spec: ExperimentSpec) -> list[str]:
    """The paper tables of which a variant or an ensemble of ``spec`` regenerates a row."""
    return tables_with_rows({name: v.get("paper_row") for name, v in spec.variants.items()}, spec.ensembles,
                            spec.report)


def summary_notes(spec: ExperimentSpec, ours: Ours) -> str:
    """What the summary's columns are (:func:`nmtlib.report.collect.summary_columns`) and how its
    rows are made (the sacreBLEU signatures of ``ours``, the reading the summary is made from); the
    AER conventions follow from :data:`COLUMN_NOTES`."""
    tr = ours.tr
    signatures = ("no translation scored" if tr.empty
                  else "; ".join(sorted(set(tr["sacrebleu_signature"].dropna().astype(str)))))
    columns = "; ".join(f"{c}: {text}" for c, text in summary_columns(spec).items() if not c.endswith(SD))
    if any(c.endswith(SD) for c in summary_columns(spec)):
        columns += "; <column>_sd (shown as mean ± sd): the standard deviation of <column> over the seeds"
    return ("One row per variant and per ensemble (config order); numbers are means over the variant's seeds "
            "(`runs`: score files averaged), decoded at τ = ∞ (`setting`), on the test set but for dev_ppl. "
            f"Ensembles have no perplexity or AER (those are per model). {columns}; sacreBLEU signature: "
            f"{signatures}; precision: what the variant trained in ({BF16_NOTE}); paper_rows: the paper table rows "
            "the variant regenerates.")


def write_summary(summary: pd.DataFrame, spec: ExperimentSpec, path_csv: Path, ours: Ours) -> TableHtml:
    """``summary.csv`` (:func:`nmtlib.report.collect.summary_table` of ``ours``, the reading of the run
    it is made from) and its renderings, with :func:`summary_notes` under them."""
    return write_table(summary, path_csv, f"Summary of experiment {spec.experiment}", summary_notes(spec, ours),
                       header=smoke_header(spec) + f"Experiment `{spec.experiment}` ({spec.results}), "
                                                   f"{data_description(spec)}, {runs_description(spec, ours.progress())}.")
