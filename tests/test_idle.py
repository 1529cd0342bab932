"""Runs whose attention learned nothing (``nmtlib.report.idle``): found on the dev set, named in the
findings, the report's header and stderr, and on a published page; kept in every mean.

The results tree is test_report's: base (no attention) has dev perplexities 21 and 23 on its two
seeds, the attentional variants 9 to 13.5. Here global-feed's seed 2 is given 21.0, base seed 1's.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from nmtlib.report.findings import findings_table
from nmtlib.report.idle import IdleRun, idle
from nmtlib.report.publish import findings_section
from nmtlib.report.seeds import seeds_cell
from test_report import make_experiment, run_report


def test_an_attentional_run_no_better_than_the_best_run_without_attention_is_idle() -> None:
    runs = [("base", "seed1", 6.69, False), ("base", "seed2", 6.83, False), ("lp", "seed1", 5.0, True),
            ("lp", "seed2", 6.77, True), ("g", "seed1", 6.69, True), ("rnnencdec", "seed1", 7.5, False)]
    # the bar is the lowest without attention, base seed1's 6.69; "no lower" takes in a tie
    assert idle(runs) == [IdleRun("lp", "seed2", 6.77, 6.69, "base seed1"), IdleRun("g", "seed1", 6.69, 6.69,
                                                                                    "base seed1")]
    assert idle([r for r in runs if r[3]]) == []  # nothing without attention to hold them against


def _idle_experiment(root: Path):
    spec = make_experiment(root / "results")
    path = root / "results" / "scores" / "global-feed" / "seed2" / "test.ppl.json"
    path.write_text(json.dumps({**json.loads(path.read_text()), "dev_ppl": 21.0}))
    return spec


IDLE = "global-feed seed2 (dev perplexity 21.00, no lower than 21.00 of base seed1 without attention)"


def attention_row(rows: pd.DataFrame) -> pd.Series:
    return rows.loc[[c for c in rows.index if c.startswith("Attention gives a large gain")][0]]


def test_the_claims_that_rest_on_it_say_so_and_keep_it_in_the_mean(tmp_path: Path) -> None:
    df = findings_table(_idle_experiment(tmp_path))
    rows = df.set_index("claim")
    # the ensemble holds global-feed's runs; the attention claim compares local-p with base
    ensemble = rows.loc[[c for c in rows.index if c.startswith("An ensemble beats")][0]]
    assert ensemble.idle_runs == f"A: {IDLE}" and "attention learned nothing" in ensemble.note
    # the claims tables' seeds cell counts it: the ensemble is one model, global-feed's seeds are 2 (test_report)
    assert seeds_cell(ensemble) == f"{int(ensemble.runs_a)} / {int(ensemble.runs_b)} (1 idle)"
    assert seeds_cell(attention_row(rows)) == f"{int(attention_row(rows).runs_a)} / {int(attention_row(rows).runs_b)}"
    attention = attention_row(rows)
    assert pd.isna(attention.idle_runs) and "attention learned nothing" not in attention.note
    # kept in its side's mean: global-feed's BLEU is still the mean of its seeds 15 and 15 (test_report)
    feed = df[(df.variant_a == "global-feed") | (df.variant_b == "global-feed")]
    assert len(feed) and feed.idle_runs.notna().all()


def test_a_paired_comparison_names_only_the_seeds_it_keeps(tmp_path: Path) -> None:
    """flex's seed 2 learned nothing; flex-ft (fine-tuned from flex, paired with it seed by seed) has
    only seed 1 scored, so the claims between the two compare seed 1 alone and rest on no idle run,
    while a claim with flex unpaired takes in both its seeds and says so."""
    spec = make_experiment(tmp_path / "results")
    root = tmp_path / "results"
    path = root / "scores" / "flex" / "seed2" / "test.ppl.json"
    path.write_text(json.dumps({**json.loads(path.read_text()), "dev_ppl": 21.0}))
    for f in (root / "scores" / "flex-ft" / "seed2").glob("*.json"):
        f.unlink()
    df = findings_table(spec)
    paired = df[(df.variant_a == "flex-ft") & (df.variant_b == "flex")]
    unpaired = df[((df.variant_a == "flex") | (df.variant_b == "flex")) & (df.variant_a != "flex-ft")]
    assert len(paired) and paired.idle_runs.isna().all()
    assert len(unpaired) and unpaired.idle_runs.str.contains("flex seed2").all()


def test_the_report_names_it_in_the_findings_header_and_on_stderr(tmp_path: Path, capsys) -> None:
    spec = _idle_experiment(tmp_path)
    tables, _ = run_report(spec, tmp_path / "out")
    captured = capsys.readouterr()
    assert f"Attention learned nothing in this run: {IDLE}." in (tables / "findings.md").read_text(encoding="utf-8")
    assert f"unit: Attention learned nothing in this run: {IDLE}." in captured.err
    assert json.loads(captured.out.strip().splitlines()[-1])["idle_runs"] == ["global-feed seed2"]


def test_a_page_lists_the_claims_that_rest_on_it(tmp_path: Path) -> None:
    df = findings_table(_idle_experiment(tmp_path))
    lines = findings_section(df, pd.DataFrame({"variant": [], "runs": []}))
    at = lines.index(next(line for line in lines if line.startswith("Claims that rest on a run whose attention")))
    listed = [line for line in lines[at + 2:] if line.startswith("- ")]
    expected = sorted(f"- {r.claim}: {r.idle_runs}." for r in df.itertuples()
                      if isinstance(r.idle_runs, str) and r.verdict != "not tested")
    assert sorted(listed[:len(expected)]) == expected and expected
    # without an idle run, no such list
    plain = findings_table(make_experiment(tmp_path / "plain"))
    assert not any(line.startswith("Claims that rest on") for line in findings_section(plain, pd.DataFrame()))
