"""Numbers that say what they are (issue #29, item 3).

Every column and axis names its metric and variant (dev or test; before or after unknown-word
replacement; which AER convention); Luong's progressive gains compare only the rows the paper
compares; a paper table without a number of ours says so in one line; a fine-tuning stage's
learning curve continues from its parent; the tables cite the papers, not a file. The results
tree is test_report's (known numbers per variant and seed): every expected value below is worked
out by hand from those numbers.
"""

from __future__ import annotations

import csv
import fnmatch
import json
import re
import shutil
from pathlib import Path

import matplotlib.pyplot as plt
import pandas as pd
import pytest

from conftest import ROOT
from nmtlib.commands.report import PAPER_TABLES as PAPER
from nmtlib.commands.report import TABLES
from nmtlib.report import collect, figures, tables
from test_report import AER_PREDICTED, make_experiment, run_report

LUONG_REFERENCE = ('Luong, Pham & Manning 2015, "Effective Approaches to Attention-based Neural Machine '
                   'Translation" (EMNLP 2015)')


@pytest.fixture(scope="module")
def report(tmp_path_factory) -> tuple[collect.ExperimentSpec, Path, Path]:
    root = tmp_path_factory.mktemp("labels")
    spec = make_experiment(root / "results")
    out_tables, out_figures = run_report(spec, root / "out")
    return spec, out_tables, out_figures


def _row(df: pd.DataFrame, key: str) -> pd.Series:
    rows = df[df["row"] == key]
    assert len(rows) == 1, (key, df["row"].tolist())
    return rows.iloc[0]


def _empty(value) -> bool:
    return value is None or pd.isna(value)


# --- the AER convention -------------------------------------------------------------------------

def test_summary_names_the_aer_convention_and_explains_both(report) -> None:
    _, out, _ = report
    summary = pd.read_csv(out / "summary.csv")
    assert "aer" not in summary.columns and "aer_predicted" not in summary.columns
    g = summary.set_index("variant").loc["global-feed"]
    # global-feed's seeds: 0.40 and 0.42 by footnote 14, 0.2 by the predicted word
    assert (g.aer_fn14, g.aer_predicted_word) == (0.41, AER_PREDICTED)
    md = (out / "summary.md").read_text(encoding="utf-8")
    assert md.count(tables.AER_CONVENTIONS) == 1
    assert "footnote 14" in tables.AER_CONVENTIONS and "0.34–0.39" in tables.AER_CONVENTIONS
    assert "*aer_predicted_word* takes every a_t as the alignment of the word it predicts" in tables.AER_CONVENTIONS
    assert tables.AER_CONVENTIONS in (out / "summary.html").read_text(encoding="utf-8").replace("&#x27;", "'")


def test_luong_table6_explains_both_conventions_once(report) -> None:
    _, out, _ = report
    md = (out / "luong_table6.md").read_text(encoding="utf-8")
    assert md.count(tables.AER_CONVENTIONS) == 1
    assert "paper_aer_fn14" in md and "ours_aer_predicted_word" in md
    # a table without an AER column carries no AER note
    assert "AER conventions" not in (out / "luong_table4.md").read_text(encoding="utf-8")


def test_write_summary_explains_every_metric_column(report, tmp_path: Path) -> None:
    spec, _, _ = report
    summary = collect.summary_table(spec)
    tables.write_summary(summary, spec, tmp_path / "summary.csv", collect.Ours(spec))
    md = (tmp_path / "summary.md").read_text(encoding="utf-8")
    for column in ("dev_ppl", "test_ppl", "bleu_before_unk_replace", "bleu_after_unk_replace", "aer_fn14",
                   "aer_predicted_word", "sacrebleu_after_unk_replace", "ribes_before_unk_replace"):
        assert f"{column}: " in md, column
    assert "dev_ppl: dev perplexity of the model kept" in md and "test_ppl: test perplexity" in md
    assert "tok:none" in md and md.count(tables.AER_CONVENTIONS) == 1
    assert pd.read_csv(tmp_path / "summary.csv").columns.tolist() == summary.columns.tolist()


# --- Luong Table 1's gains ----------------------------------------------------------------------

def _without_luong_table1(spec: collect.ExperimentSpec, *names: str) -> None:
    for name in names:
        spec.variants[name]["paper_row"] = {t: k for t, k in spec.variants[name]["paper_row"].items()
                                            if t != "luong_table1"}


def test_ensemble_gain_is_not_taken_against_base(tmp_path: Path) -> None:
    """The demo's case: only Base and the ensemble row are ours. The paper's +2.1 is the 8-model
    ensemble after replacement against the single model after replacement right above it; ours
    would have been 20.0 (the ensemble after replacement) − 11.0 (base before it) = 9.0: empty."""
    spec = make_experiment(tmp_path / "results")
    _without_luong_table1(spec, "global-feed", "local-p")
    out, _ = run_report(spec, tmp_path / "out")
    df = pd.read_csv(out / "luong_table1.csv")
    ens = _row(df, "ensemble")
    assert (ens.paper_delta, ens.ours_bleu) == (2.1, 20.0)
    assert _empty(ens.ours_delta) and _empty(ens.ours_delta_vs)
    assert ens.note == ("ours: no gain, since the paper's gain is against the row above, 'unk', which is not "
                        "regenerated by any variant of this experiment")
    base = _row(df, "base")
    assert base.ours_bleu == 11.0 and _empty(base.ours_delta) and _empty(base.note)
    assert df["ours_delta"].isna().all()


def test_gain_against_a_row_without_results_is_empty(tmp_path: Path) -> None:
    """local-p regenerates the "unk" row but has no score files: the ensemble's gain waits for it."""
    spec = make_experiment(tmp_path / "results")
    shutil.rmtree(tmp_path / "results" / "scores" / "local-p")
    out, _ = run_report(spec, tmp_path / "out")
    df = pd.read_csv(out / "luong_table1.csv")
    ens = _row(df, "ensemble")
    assert ens.ours_bleu == 20.0 and _empty(ens.ours_delta)
    assert ens.note == ("ours: no gain, since the paper's gain is against the row above, 'unk', which has no "
                        "result of ours yet")
    assert _empty(_row(df, "unk").ours_bleu) and _empty(_row(df, "unk").note)


# --- paper tables without a number of ours -------------------------------------------------------

def test_a_paper_table_no_variant_regenerates_is_not_written(tmp_path: Path) -> None:
    """No variant of the fixture maps to Luong Table 3: no file of it, and the files an earlier
    config left (Table 3 was mapped then) are removed, since their numbers of ours would be stale."""
    spec = make_experiment(tmp_path / "results")
    spec.variants["base"]["paper_row"]["luong_table3"] = "base-reverse"
    out, _ = run_report(spec, tmp_path / "out")
    assert pd.read_csv(out / "luong_table3.csv")["ours_from"].notna().any()
    del spec.variants["base"]["paper_row"]["luong_table3"]
    out, _ = run_report(spec, tmp_path / "out")
    assert sorted(p.name for p in out.glob("luong_table3.*")) == []
    assert (out / "luong_table1.csv").exists()


def test_a_table_whose_only_mapped_row_cannot_have_ours_says_why(tmp_path: Path) -> None:
    """Luong Table 6 with only the ensemble mapped (the demo): AER is per model, so no number."""
    spec = make_experiment(tmp_path / "results")
    for name in spec.variants:
        spec.variants[name]["paper_row"].pop("luong_table6", None)
    out, _ = run_report(spec, tmp_path / "out")
    assert pd.read_csv(out / "luong_table6.csv").empty
    md = (out / "luong_table6.md").read_text(encoding="utf-8")
    assert ("No row of Luong et al. 2015, Table 6 has a number of ours in experiment `unit`, so this table is left "
            "empty: ens (ensemble, beam5) regenerates row 'ensemble' (ours: AER is scored per model (forced "
            "decoding of one model); not for ensembles).") in md
    assert len(md.strip().splitlines()) == 3  # title, blank line, the reason


def test_tables_with_ours_are_written_in_full(report) -> None:
    _, out, _ = report
    for name, rows in (("luong_table1", 12), ("luong_table4", 10), ("luong_table6", 5), ("bahdanau_table1", 6)):
        assert len(pd.read_csv(out / f"{name}.csv")) == rows, name


# --- citations -----------------------------------------------------------------------------------

def test_tables_cite_papers_not_files(report) -> None:
    _, out, _ = report
    for path in out.iterdir():
        assert "papers/" not in path.read_text(encoding="utf-8"), path.name
    md = (out / "luong_table1.md").read_text(encoding="utf-8")
    assert f"Paper: {LUONG_REFERENCE}, Table 1; WMT'14 En→De, newstest2014" in md
    bahdanau = pd.read_csv(out / "bahdanau_table1.csv")
    assert set(bahdanau["paper_source"]) == {"Bahdanau et al. 2015, Table 1"}
    assert ('Bahdanau, Cho & Bengio 2015, "Neural Machine Translation by Jointly Learning to Align and Translate" '
            "(ICLR 2015, arXiv:1409.0473), Table 1") in (out / "bahdanau_table1.md").read_text(encoding="utf-8")


# --- learning curves of fine-tuning stages --------------------------------------------------------

def test_fine_tuning_curve_continues_from_its_parents_model(tmp_path: Path) -> None:
    """Every fixture log has steps 100, 200, 300 with dev ppl 50/epoch + the seed's test ppl, lowest
    at step 300. flex-ft starts from flex's model.pt: step 300 (no step recorded in flex's
    ppl.json, so the log's lowest dev ppl), so its updates are 400, 500, 600."""
    spec = make_experiment(tmp_path / "results")
    curves = collect.learning_curves(spec)
    ft = curves[curves.variant == "flex-ft"]
    assert ft["step"].tolist() == [100, 200, 300] * 2
    assert ft["updates"].tolist() == [400, 500, 600] * 2
    assert set(ft["finetune_from"]) == {"flex"}
    flex = curves[curves.variant == "flex"]
    assert flex["updates"].tolist() == flex["step"].tolist() and set(flex["finetune_from"]) == {""}
    # the step ppl.json records (the model.pt the stage was initialised from) wins over the log
    path = tmp_path / "results" / "scores" / "flex" / "seed1" / "test.ppl.json"
    path.write_text(json.dumps({**json.loads(path.read_text()), "step": 200}))
    curves = collect.learning_curves(spec)
    ft = curves[curves.variant == "flex-ft"]
    assert ft[ft.run == "seed1"]["updates"].tolist() == [300, 400, 500]
    assert ft[ft.run == "seed2"]["updates"].tolist() == [400, 500, 600]


def test_chained_fine_tuning_stages_add_up(tmp_path: Path) -> None:
    spec = make_experiment(tmp_path / "results")
    spec.variants["flex-ft2"] = {**spec.variants["flex-ft"], "finetune_from": "flex-ft"}
    spec.settings["flex-ft2"] = ["beam5"]
    for seed in (1, 2):
        log = tmp_path / "results" / "models" / "flex-ft2" / f"seed{seed}" / "train_log.csv"
        log.parent.mkdir(parents=True)
        log.write_text("epoch,step,lr,train_ppl,dev_ppl\n1,50,0.001,3.0,20.0\n2,100,0.001,2.5,19.0\n")
    curves = collect.learning_curves(spec)
    # flex: 300 updates to its model; flex-ft: 300 more (its lowest dev ppl, 28.17, at its step 300)
    assert curves[curves.variant == "flex-ft2"]["updates"].tolist() == [650, 700] * 2


def test_fine_tuning_with_an_unknown_parent_step_keeps_its_own_steps(tmp_path: Path) -> None:
    spec = make_experiment(tmp_path / "results")
    (tmp_path / "results" / "models" / "flex" / "seed1" / "train_log.csv").unlink()
    curves = collect.learning_curves(spec)
    ft = curves[curves.variant == "flex-ft"]
    assert ft[ft.run == "seed1"]["updates"].isna().all()
    assert ft[ft.run == "seed2"]["updates"].tolist() == [400, 500, 600]


@pytest.fixture
def drawn(monkeypatch: pytest.MonkeyPatch) -> dict[str, plt.Axes]:
    """The axes each figure function draws, by file name (instead of saving the PNG)."""
    axes: dict[str, plt.Axes] = {}

    def keep(fig: plt.Figure, path: Path, tight: bool = True) -> None:
        axes[path.stem] = fig.axes[0]

    monkeypatch.setattr(figures, "_save", keep)
    return axes


def test_learning_curve_figure_joins_the_stage_to_its_parent(tmp_path: Path, drawn) -> None:
    spec = make_experiment(tmp_path / "results")
    figures.learning_curves(collect.learning_curves(spec), tmp_path / "learning_curves.png")
    ax = drawn["learning_curves"]
    lines = {line.get_label(): line for line in ax.get_lines()}
    ft = lines["flex-ft (seed1), fine-tuned from flex"]
    # starts at flex's model (update 300, dev ppl 50/3 + 11.0), then flex-ft's own points (50/e + 11.5)
    assert list(ft.get_xdata()) == [300, 400, 500, 600]
    assert list(ft.get_ydata()) == pytest.approx([50 / 3 + 11.0, 61.5, 36.5, 50 / 3 + 11.5])
    assert list(lines["flex (seed1)"].get_xdata()) == [100, 200, 300]
    assert ax.get_xlabel() == "training updates (mini-batches; fine-tuning continues from its parent's model)"
    assert ax.get_ylabel() == "dev perplexity (log scale)"


def test_a_seed_has_one_line_style_whichever_seeds_have_logs_yet(tmp_path: Path, drawn) -> None:
    """A run still going: a's seeds 1 and 3 have logs, b's seed 2. Seed 1 solid, seed 2 dashed,
    seed 3 dotted, as when every seed is in (the style followed the order the runs turned up in:
    a's seed 3 was drawn dashed, b's seed 2 dotted)."""
    curves = pd.DataFrame([{"variant": v, "run": r, "step": step, "dev_ppl": 10.0 / step, "finetune_from": ""}
                           for v, r in (("a", "seed1"), ("a", "seed3"), ("b", "seed2")) for step in (1, 2)])
    figures.learning_curves(curves, tmp_path / "learning_curves.png")
    styles = {line.get_label(): line.get_linestyle() for line in drawn["learning_curves"].get_lines()}
    assert styles == {"a (seed1)": "-", "a (seed3)": ":", "b (seed2)": "--"}


# --- axes ----------------------------------------------------------------------------------------

def test_bleu_axes_say_before_or_after_replacement(tmp_path: Path, drawn) -> None:
    spec = make_experiment(tmp_path / "results")
    figures.window_tradeoff(collect.window_points(spec), collect.mean_source_length(spec), tmp_path / "w.png")
    figures.bleu_by_length(collect.length_buckets(spec), tmp_path / "b.png")
    # the window figure plots the raw output (flex at τ = 0.8: 11.0 before replacement, 11.2 after)
    assert drawn["w"].get_ylabel() == "test BLEU before unk replacement (tokenized, %)"
    flex = next(line for line in drawn["w"].get_lines() if line.get_label().startswith("flex (flexible"))
    assert sorted(flex.get_ydata()) == [11.0, 13.0, 13.5]
    # nmtlib evaluate scores the length buckets on the replaced output
    assert drawn["b"].get_ylabel() == "test BLEU after unk replacement (tokenized, %)"


# --- captions ------------------------------------------------------------------------------------

#: columns of text, not numbers (provenance; the table header says most of them)
TEXT_COLUMNS = {"ours_from", "ours_data", "paper_source", "ours_device", "ours_delta_vs"}


@pytest.fixture(scope="module")
def every_table(tmp_path_factory) -> Path:
    """The fixture experiment's tables, with a variant mapped to Luong Table 3 too: every table."""
    root = tmp_path_factory.mktemp("captions")
    spec = make_experiment(root / "results")
    spec.variants["base"]["paper_row"]["luong_table3"] = "base-reverse"
    out, _ = run_report(spec, root / "out")
    return out


def _number(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


@pytest.mark.parametrize("table", TABLES)
def test_captions_say_what_each_number_is(every_table, table):
    """A table's caption (the entry's description in the report: a paper table's as ``nmtlib report``
    writes it from the declaration, the others' workflow/report/<table>.rst with the registered metric
    columns the report writes for it, which it includes) names every column of numbers the table has
    (``name``, or a ``*`` pattern), and no column it lacks."""
    columns = (every_table.parent / "report" / "columns" / f"{table}.rst").read_text(encoding="utf-8")
    if table in PAPER:
        caption = (every_table.parent / "report" / "captions" / f"{table}.rst").read_text(encoding="utf-8")
        assert caption.endswith(columns)  # the metric columns, written in
    else:
        caption = (ROOT / "workflow" / "report" / f"{table}.rst").read_text(encoding="utf-8")
        assert f"columns/{table}.rst" in caption  # the include
        caption += columns
    with open(every_table / f"{table}.csv", newline="", encoding="utf-8") as f:
        header, *lines = list(csv.reader(f))
    rows = [dict(zip(header, line)) for line in lines]
    assert rows, table
    named = re.findall(r"``([a-z*][a-z0-9_*]*)``", caption)

    def numbers(column: str) -> bool:
        if column in TEXT_COLUMNS:
            return False
        if column.startswith(("paper_", "ours_")):
            return True
        values = [r[column] for r in rows if r[column] and r[column] not in ("True", "False")]
        return bool(values) and all(_number(v) is not None for v in values)

    assert [n for n in named if not fnmatch.filter(header, n)] == [], "the caption names columns the table lacks"
    assert [c for c in header if numbers(c) and not any(fnmatch.fnmatch(c, n) for n in named)] == []



def test_the_window_figure_sets_flexible_attention_beside_its_own_architectures_baselines(tmp_path: Path,
                                                                                          drawn) -> None:
    """Shu's Fig. 3 compares Flexible Attention with his own global and local baselines; a complete
    experiment has a dozen of Luong's variants too. With a Shu-architecture baseline decoded, only
    it is marked; without one, every attentional variant is (the unit experiment's global-feed,
    rnnsearch and local-p)."""
    import dataclasses

    spec = make_experiment(tmp_path / "results")

    def marked(s) -> list[str]:
        figures.window_tradeoff(collect.window_points(s), collect.mean_source_length(s), tmp_path / "w.png")
        return [line.get_label() for line in drawn["w"].get_lines() if line.get_linestyle() == "None"]

    assert sorted(marked(spec)) == ["global-feed (global)", "local-p (local-p)", "rnnsearch (rnnsearch)"]
    shu_global = {**spec.variants["global-feed"], "model": {**spec.variants["global-feed"]["model"], "arch": "shu"}}
    wider = dataclasses.replace(spec, variants={**spec.variants, "shu-global": shu_global},
                                settings={**spec.settings, "shu-global": spec.settings["global-feed"]})
    layout = spec.layout
    shutil.copytree(layout.translations_dir() / "global-feed", layout.translations_dir() / "shu-global")
    scores = layout.scores("global-feed", "seed1", "x").parent.parent
    shutil.copytree(scores, scores.parent / "shu-global")
    assert marked(wider) == ["shu-global (global)"]
