"""``nmtlib report``: paper tables with the paper's numbers beside ours, and the figures.

A small but complete results tree is written with known numbers in the formats the workflow
produces (scores JSON, translation JSONL, attention npz, train_log.csv, test data), then the
real command runs on it and the tables are checked cell by cell.
"""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path

import matplotlib.image as mpimg
import numpy as np
import pandas as pd
import pytest
import torch
from PIL import Image

from nmtlib.cli import main
from nmtlib.commands.report import FIGURES, TABLES
from nmtlib.config import resolve_variant
from nmtlib.report import collect, paper

SRC = [
    "a b c d e f g h",
    "a b c",
    "a b c d e f g h i j k l m n o p",
    "a b c d e f",
    "a b c d e f g h i j k l",
    "a b",
]
TGT = [
    "A B C D E F G",
    "A B C",
    "A B C D E F G H I J K L M N O",
    "A B C D E",
    "A B C D E F G H I J K",
    "A B",
]
MEAN_SRC = sum(len(s.split()) for s in SRC) / len(SRC)

TRAIN = {"optimizer": "adam", "lr": 0.003, "epochs": 2}
SMALL = {"embedding_size": 8, "hidden_size": 8, "layers": 1}
RAW_VARIANTS = {
    "base": {**SMALL, "attention": "none", "input_feed": False, "paper_row": {"luong_table1": "base"},
             "description": "no attention"},
    "global-feed": {**SMALL, "attention": "global", "score": "general", "train": {"bf16": True},
                    "paper_row": {"luong_table1": "feed", "luong_table4": "global-general",
                                  "luong_table6": "global (location)"}},
    "local-p": {**SMALL, "attention": "local-p", "score": "general",
                "paper_row": {"luong_table1": ["local-p-general-feed", "unk"], "luong_table4": "local-p-general",
                              "luong_table6": "local-p-general"}},
    "rnnsearch": {**SMALL, "arch": "rnnsearch",
                  "paper_row": {"bahdanau_table1": "RNNsearch-50", "shu_table1": "global", "shu_table3": "global"}},
    "flex": {**SMALL, "arch": "shu", "attention": "flexible", "decode": {"taus": [0.8, 1.2]},
             "paper_row": {"shu_table1": "flexible"}},
    "flex-ft": {"finetune_from": "flex", "train": {"beta": 0.1}, "decode": {"taus": [1.2]},
                "paper_row": {"shu_table1": "finetuned", "shu_table3": "flexible"}},
}

# variant → run → setting → (bleu, bleu_unk, avg_window, time_ms, ribes)
TRANSLATION = {
    "base": {"seed1": {"beam5": (10.0, 10.5, 0.0, 20.0, 0.60)}, "seed2": {"beam5": (12.0, 12.5, 0.0, 22.0, 0.62)}},
    "global-feed": {"seed1": {"beam5": (14.0, 15.0, MEAN_SRC, 30.0, 0.70)},
                    "seed2": {"beam5": (16.0, 17.0, MEAN_SRC, 30.0, 0.72)}},
    "local-p": {s: {"beam5": (17.0, 18.5, 7.5, 35.0, 0.74)} for s in ("seed1", "seed2")},
    "ens": {"ensemble": {"beam5": (19.0, 20.0, 7.0, 90.0, 0.76)}},
    "rnnsearch": {s: {"beam5": (13.0, 13.4, 9.0, 40.0, 0.71)} for s in ("seed1", "seed2")},
    "flex": {s: {"beam5": (13.5, 13.9, 9.0, 42.0, 0.72), "beam5.tau0.8": (11.0, 11.2, 5.0, 33.0, 0.68),
                 "beam5.tau1.2": (13.0, 13.3, 7.0, 36.0, 0.71)} for s in ("seed1", "seed2")},
    "flex-ft": {s: {"beam5": (13.6, 14.0, 9.0, 41.0, 0.72), "beam5.tau1.2": (13.2, 13.5, 6.0, 30.0, 0.70)}
                for s in ("seed1", "seed2")},
}
PPL = {"base": (20.0, 22.0), "global-feed": (9.0, 11.0), "local-p": (8.0, 8.0), "rnnsearch": (12.0, 12.0),
       "flex": (11.0, 11.0), "flex-ft": (11.5, 11.5)}
# variant → per seed AER (Luong's footnote 14), and AER of the "predicted" reading
AER = {"global-feed": (0.40, 0.42), "local-p": (0.35, 0.35), "rnnsearch": (0.5, 0.5), "flex": (0.45, 0.45),
       "flex-ft": (0.44, 0.44)}
AER_PREDICTED = 0.2


def _write_json(path: Path, obj: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(obj), encoding="utf-8")


def _bleu(value: float) -> dict:
    """sacreBLEU's BLEU of a made-up result; its length ratio follows the score (10 → 0.91)."""
    ratio = 0.9 + value / 1000
    return {"bleu": value, "precisions": [60.0, 40.0, 30.0, 20.0], "bp": round(min(1.0, math.exp(1 - 1 / ratio)), 4),
            "ratio": ratio, "hyp_len": round(40 * ratio), "ref_len": 40}


def _spans(setting: str, window: float) -> list[list[float]]:
    """window_per_step per sentence: Flexible Attention narrows after the first step."""
    if ".tau" not in setting:
        return [[float(len(s.split()))] * len(t.split()) for s, t in zip(SRC, TGT)]
    return [[float(len(s.split()))] + [window] * (len(t.split()) - 1) for s, t in zip(SRC, TGT)]


def make_experiment(root: Path, with_results: bool = True) -> collect.ExperimentSpec:
    variants = {}
    for name, raw in RAW_VARIANTS.items():
        variants[name] = resolve_variant(name, raw, TRAIN, {"beam": 5}, RAW_VARIANTS).to_dict()
    settings = {n: ["beam5", *[f"beam5.tau{t:g}" for t in v["decode"]["taus"]]] for n, v in variants.items()}
    settings["ens"] = ["beam5"]
    spec = {
        "experiment": "unit", "results": str(root), "seeds": [1, 2], "variants": variants,
        "ensembles": {"ens": ["global-feed", "local-p"]}, "settings": settings,
        "report": {"heatmap_sentences": [0, 4]}, "data": {"corpus": "synthetic", "src": "src", "tgt": "tgt"},
        "aer": True,
    }
    if not with_results:
        return collect.ExperimentSpec.from_json(json.dumps(spec))
    (root / "data").mkdir(parents=True)
    (root / "data" / "test.src").write_text("".join(s + "\n" for s in SRC), encoding="utf-8")
    (root / "data" / "test.tgt").write_text("".join(t + "\n" for t in TGT), encoding="utf-8")
    for name, runs in TRANSLATION.items():
        for run, by_setting in runs.items():
            for setting, (bleu, bleu_unk, window, ms, ribes) in by_setting.items():
                scores = {
                    "sentences": len(SRC), "bleu": _bleu(bleu), "bleu_unk": _bleu(bleu_unk),
                    "bleu_no_unk": _bleu(bleu + 5), "no_unk_sentences": 4,
                    "sacrebleu": {"bleu": bleu_unk, "signature": "nrefs:1|case:mixed|eff:no|tok:none|smooth:exp|version:2.4.0"},
                    "ribes": ribes, "ribes_unk": round(ribes + 0.01, 4), "unk_tokens": 3, "avg_window": window, "time_ms_per_sentence": ms,
                    "hyp_len_mean": 7.0,
                    "bleu_by_length": [{"bucket": "1-10", "sentences": 4, "bleu": bleu + 2},
                                       {"bucket": "11-20", "sentences": 2, "bleu": bleu - 2}],
                }
                _write_json(root / "scores" / name / run / f"test.{setting}.json", scores)
                details = []
                for i, steps in enumerate(_spans(setting, window)):
                    d = {"id": i, "score": -3.0, "length": len(TGT[i].split()), "time_ms": ms,
                         "scores_computed": int(sum(steps)), "hypothesis_steps": len(steps),
                         "avg_window": sum(steps) / len(steps), "window_per_step": steps}
                    if name == "flex-ft" and setting == "beam5.tau1.2":
                        d["device"] = "cuda (test GPU)"
                    details.append(json.dumps(d))
                path = root / "translations" / name / run / f"test.{setting}.jsonl"
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text("\n".join(details) + "\n", encoding="utf-8")
    rng = np.random.default_rng(0)
    for name in variants:
        for k, seed in enumerate((1, 2)):
            _write_json(root / "scores" / name / f"seed{seed}" / "test.ppl.json",
                        {"ppl": PPL[name][k], "dev_ppl": PPL[name][k] + 1})
            if name in AER:
                _write_json(root / "scores" / name / f"seed{seed}" / "test.aer.json",
                            {"aer": AER[name][k], "precision": 0.6, "recall": 0.55, "convention": "footnote14",
                             "predicted": {"aer": AER_PREDICTED, "precision": 0.8, "recall": 0.8}})
                matrices = {}
                for i, (s, t) in enumerate(zip(SRC, TGT)):
                    # one row per decoder step: T target words and <eos>
                    m = rng.random((len(t.split()) + 1, len(s.split())))
                    matrices[str(i)] = (m / m.sum(axis=1, keepdims=True)).astype(np.float32)
                path = root / "attention" / name / f"seed{seed}" / "test.npz"
                path.parent.mkdir(parents=True, exist_ok=True)
                np.savez_compressed(path, **matrices)
            log = root / "models" / name / f"seed{seed}" / "train_log.csv"
            log.parent.mkdir(parents=True, exist_ok=True)
            log.write_text("epoch,step,lr,train_ppl,dev_ppl\n" + "".join(
                f"{e},{100 * e},0.003,{60 / e + seed},{50 / e + PPL[name][k]}\n" for e in (1, 2, 3)), encoding="utf-8")
            torch.save({}, log.parent / "model.pt")  # training ended (no preprocess record: an older model's)
    return collect.ExperimentSpec.from_json(json.dumps(spec))


def _spec_json(spec: collect.ExperimentSpec) -> str:
    return json.dumps({**spec.__dict__, "results": str(spec.results)})


def run_report(spec: collect.ExperimentSpec, out: Path) -> tuple[Path, Path]:
    tables, figures = out / "tables", out / "figures"
    assert main(["report", "--spec", _spec_json(spec), "--out", str(out)]) == 0
    return tables, figures


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> tuple[collect.ExperimentSpec, Path, Path]:
    root = tmp_path_factory.mktemp("exp")
    spec = make_experiment(root / "results")
    tables, figures = run_report(spec, root / "out")
    return spec, tables, figures


def _table(tables: Path, name: str) -> pd.DataFrame:
    return pd.read_csv(tables / f"{name}.csv", keep_default_na=True)


def _row(df: pd.DataFrame, key: str) -> pd.Series:
    rows = df[df["row"] == key]
    assert len(rows) == 1, (key, df["row"].tolist())
    return rows.iloc[0]


def _empty(value) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


#: paper tables of which no variant or ensemble of the fixture experiment regenerates a row
UNMAPPED_TABLES = {"luong_table3"}


def test_every_table_has_csv_and_markdown(report) -> None:
    spec, tables, _ = report
    for name in TABLES:
        if name in UNMAPPED_TABLES:  # written only when a row is regenerated (issue #29)
            assert not any((tables / f"{name}.{ext}").exists() for ext in ("csv", "md", "html")), name
            continue
        assert (tables / f"{name}.csv").stat().st_size > 0
        md = (tables / f"{name}.md").read_text(encoding="utf-8")
        assert md.startswith("# ")
        assert (tables / f"{name}.html").read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
        assert "`unit`" in md, name
        assert "synthetic src→tgt, test set of 6 sentences" in md, name
    for name in set(paper.TABLES) - UNMAPPED_TABLES:
        df = _table(tables, name)
        # every row of the paper is there, in the paper's order, with the paper's citation
        keys = [r.key for r in paper.TABLES[name].rows]
        assert [k for k in df["row"] if k in keys] == keys
        assert set(df["experiment"]) == {"unit"}
        assert all(str(s).startswith(paper.TABLES[name].citation) for s in df["paper_source"])


def test_luong_table1_paper_beside_ours_and_deltas(report) -> None:
    _, tables, _ = report
    df = _table(tables, "luong_table1")
    base, feed, local_p, unk, ens = (_row(df, k) for k in ("base", "feed", "local-p-general-feed", "unk", "ensemble"))
    # test perplexity: base's seeds have 20 and 22 → 21
    assert (base.paper_test_ppl, base.paper_bleu, base.ours_test_ppl, base.ours_bleu) == (10.6, 11.3, 21.0, 11.0)
    assert _empty(base.ours_delta) and _empty(base.paper_delta) and _empty(base.note)
    assert (feed.paper_bleu, feed.paper_delta, feed.ours_bleu) == (18.1, 1.3, 15.0)
    # the paper's +1.3 is against "global attention (location)", which the experiment skips: no gain
    # across the skipped rows (15.0 − 11.0 against base would not be the paper's comparison)
    assert _empty(feed.ours_delta) and _empty(feed.ours_delta_vs)
    assert feed.note == ("ours: no gain, since the paper's gain is against the row above, 'global-location', "
                         "which is not regenerated by any variant of this experiment")
    # local-p (17.0, before replacement) against feed (global-feed, 15.0, before replacement)
    assert (local_p.ours_bleu, local_p.ours_delta, local_p.ours_delta_vs) == (17.0, 2.0, "feed")
    # "+ unk replace" is the same model scored after unknown-word replacement: 18.5 − 17.0
    assert (unk.paper_bleu, unk.ours_bleu, unk.ours_delta, unk.ours_delta_vs) == (20.9, 18.5, 1.5, "local-p-general-feed")
    assert bool(unk.unk_replaced) and not bool(local_p.unk_replaced)
    # the ensemble after replacement (20.0) against the row above, a single model after replacement (18.5)
    assert (ens.paper_bleu, ens.paper_delta, ens.ours_bleu, ens.ours_delta, ens.ours_delta_vs) == (
        23.0, 2.1, 20.0, 1.5, "unk")
    assert ens.ours_from == "ens (ensemble, beam5)" and _empty(ens.ours_test_ppl)
    assert local_p.ours_from == "local-p (2 seeds, beam5)"
    for key, ppl, bleu in (("reverse", 9.9, 12.6), ("dropout", 8.1, 14.0), ("global-location", 7.3, 16.8)):
        r = _row(df, key)
        assert (r.paper_test_ppl, r.paper_bleu) == (ppl, bleu)
        assert _empty(r.ours_bleu) and _empty(r.ours_test_ppl) and _empty(r.ours_delta)
    assert _row(df, "wmt14-winner").paper_bleu == 20.7
    md = (tables / "luong_table1.md").read_text(encoding="utf-8")
    assert "| reverse" in md and "—" in md  # missing ours shown as a dash


def test_paper_deltas_are_the_differences_of_the_paper_rows() -> None:
    """Guards the transcription: the printed gains equal the differences of printed BLEU."""
    for name in ("luong_table1", "luong_table3"):
        chain = [r for r in paper.TABLES[name].rows if r.progressive]
        for prev, row in zip(chain, chain[1:]):
            assert row.delta == pytest.approx(row.values["bleu"] - prev.values["bleu"]), row.key
    for row in paper.TABLES["luong_table4"].rows:
        if row.delta is not None and row.key != "local-p-dot":
            assert row.delta == pytest.approx(row.values["bleu_unk"] - row.values["bleu"]), row.key
    # the one gain the paper misprints is kept as printed, and flagged
    dot = next(r for r in paper.TABLES["luong_table4"].rows if r.key == "local-p-dot")
    assert (dot.values["bleu"], dot.values["bleu_unk"], dot.delta) == (18.0, 19.6, 1.9) and "1.6" in dot.note


def test_luong_tables_4_6(report) -> None:
    _, tables, _ = report
    t4 = _table(tables, "luong_table4")
    g = _row(t4, "global-general")
    assert (g.paper_test_ppl, g.paper_bleu_before_unk_replace, g.paper_bleu_after_unk_replace,
            g.paper_unk_gain) == (6.1, 17.3, 19.1, 1.8)
    # global-feed: test ppl 9 and 11 → 10; BLEU 14, 16 → 15 before and 15, 17 → 16 after replacement
    assert (g.ours_test_ppl, g.ours_bleu_before_unk_replace, g.ours_bleu_after_unk_replace,
            g.ours_unk_gain) == (10.0, 15.0, 16.0, 1.0)
    m_dot = _row(t4, "local-m-dot")
    assert _empty(m_dot.paper_test_ppl) and ">7.0" in m_dot.note
    assert _row(t4, "global-concat").paper_test_ppl == 6.7
    t6 = _table(tables, "luong_table6")
    # global-feed's AER (footnote 14) over its seeds: (0.40 + 0.42) / 2
    loc = _row(t6, "global-location")
    assert (loc.paper_aer_fn14, loc.ours_aer_fn14, loc.ours_aer_fn14_precision, loc.ours_aer_fn14_recall) == (
        0.39, 0.41, 0.6, 0.55)
    assert loc.ours_aer_predicted_word == AER_PREDICTED
    assert _row(t6, "local-p-general").ours_aer_fn14 == 0.35
    ens = _row(t6, "ensemble")
    assert ens.paper_aer_fn14 == 0.34 and _empty(ens.ours_aer_fn14) and "per model" in ens.note
    assert _row(t6, "berkeley").paper_aer_fn14 == 0.32 and _empty(_row(t6, "berkeley").ours_aer_fn14)


def test_bahdanau_table1(report) -> None:
    _, tables, _ = report
    df = _table(tables, "bahdanau_table1")
    r = _row(df, "rnnsearch-50")
    assert (r.paper_bleu_all, r.paper_bleu_no_unk, r.ours_bleu_all, r.ours_bleu_no_unk) == (26.75, 34.16, 13.0, 18.0)
    assert r.ours_no_unk_sentences == 4
    enc = _row(df, "rnnencdec-50")
    assert enc.paper_bleu_all == 17.82 and _empty(enc.ours_bleu_all)


def test_shu_table1_per_model_and_tau(report) -> None:
    _, tables, _ = report
    df = _table(tables, "shu_table1")
    g = _row(df, "global")
    assert (g.paper_en_ja_window, g.paper_de_en_bleu, g.ours_window, g.ours_ribes_before_unk_replace) == (
        24.4, 20.62, 9.0, 0.71)
    inf, tau = _row(df, "flexible-inf"), _row(df, "flexible-1.2")
    # Shu & Nakayama replace no unknown word: BLEU (13.5, not 13.9) and RIBES of the raw output
    assert (inf.tau, inf.ours_window, inf.ours_bleu_before_unk_replace, inf.ours_ribes_before_unk_replace) == (
        "∞", 9.0, 13.5, 0.72)
    assert (tau.tau, tau.paper_de_en_window, tau.ours_window, tau.ours_bleu_before_unk_replace) == (
        "1.2", 7.8, 7.0, 13.0)
    ft = _row(df, "finetuned-1.2")
    assert (ft.paper_en_ja_window, ft.ours_window) == (10.7, 6.0)
    assert ft.ours_window_change_pct == pytest.approx(100 * (6.0 - 9.0) / 9.0, abs=0.01)
    assert _empty(_row(df, "local").ours_window) and _row(df, "local").paper_en_ja_window == 18.4
    # the τ settings the paper has no row for follow as rows of ours only
    extra = _row(df, "flex@tau0.8")
    assert (extra.ours_window, extra.ours_bleu_before_unk_replace) == (5.0, 11.0) and _empty(extra.paper_en_ja_window)
    assert _row(df, "flex-ft@tau∞").ours_window == 9.0


def test_shu_table3_decode_time(report) -> None:
    _, tables, _ = report
    df = _table(tables, "shu_table3")
    g, f = _row(df, "global"), _row(df, "flexible")
    assert (g.paper_gpu_ms, g.paper_cpu_ms, g.ours_ms, g.ours_device) == (123.0, 751.0, 40.0, "not recorded")
    # the paper's τ = 1.0 was not decoded: the nearest τ, and the device the translation recorded
    assert (f.ours_ms, f.ours_device, f.ours_from) == (30.0, "cuda (test GPU)", "flex-ft (2 seeds, beam5.tau1.2)")
    assert f.paper_gpu_vs_global == pytest.approx(136 / 123, abs=1e-3)
    assert f.paper_cpu_vs_global == pytest.approx(677 / 751, abs=1e-3)
    assert f.ours_vs_global == pytest.approx(0.75)


def test_a_seed_not_trained_yet_leaves_the_others_spread(tmp_path) -> None:
    """A third seed planned and not trained: base's test perplexity is the mean and the spread of the
    two seeds scored (20 and 22: mean 21, sd √2), as its BLEU is (10 and 12), not a mean without a spread."""
    spec = make_experiment(tmp_path / "results")
    going = dataclasses.replace(spec, seeds=[1, 2, 3])
    ours = collect.Ours(going)
    assert ours.value("base", "test_ppl") == 21.0
    assert ours.sd("base", "test_ppl") == pytest.approx(math.sqrt(2), abs=1e-4)
    assert ours.sd("base", "bleu_before_unk_replace") == pytest.approx(math.sqrt(2), abs=1e-4)
    assert ours.per_run("base", "test_ppl") == {"seed1": 20.0, "seed2": 22.0}


def test_summary_rule(report) -> None:
    _, tables, _ = report
    df = _table(tables, "summary")
    assert list(df["variant"]) == [*RAW_VARIANTS, "ens"]
    # every metric column names its data (dev/test) and its variant (before/after replacement, AER convention);
    # with two seeds each is followed by its standard deviation over them
    metrics = ["dev_ppl", "test_ppl", "bleu_before_unk_replace", "length_ratio", "bleu_after_unk_replace", "chrf_before_unk_replace",
               "chrf_after_unk_replace", "bleu_no_unk_sentences", "unk_words", "unk_replaced_in_reference",
               "sacrebleu_after_unk_replace",
               "ribes_before_unk_replace", "ribes_after_unk_replace", "aer_fn14", "aer_predicted_word", "avg_window",
               "time_ms"]
    assert list(df.columns) == ["variant", "attention", "score", "input_feed", "arch", "precision", "setting", "runs",
                                *(c for m in metrics for c in (m, f"{m}_sd")), "paper_rows", "description"]
    base = df[df.variant == "base"].iloc[0]
    # base: dev ppl 21 and 23 (the fixture's test ppl + 1) → 22; test ppl 20, 22 → 21; BLEU 10, 12 → 11
    # before and 10.5, 12.5 → 11.5 after replacement
    assert (base.dev_ppl, base.test_ppl, base.bleu_before_unk_replace, base.bleu_after_unk_replace, base.runs) == (
        22.0, 21.0, 11.0, 11.5, 2)
    # the length ratio BLEU's brevity penalty read, as decoded: 0.910 and 0.912 (BLEU 10, 12) → 0.911
    assert base.length_ratio == pytest.approx(0.911)
    assert base.bleu_before_unk_replace_sd == pytest.approx(np.std([10.0, 12.0], ddof=1), abs=1e-4)
    # ribes 0.60, 0.62 → 0.61 before; +0.01 after; sacreBLEU is the fixture's bleu_unk
    assert (base.ribes_before_unk_replace, base.ribes_after_unk_replace, base.sacrebleu_after_unk_replace) == (
        0.61, 0.62, 11.5)
    g = df[df.variant == "global-feed"].iloc[0]
    assert (g.aer_fn14, g.aer_predicted_word) == (0.41, AER_PREDICTED)
    flex = df[df.variant == "flex"].iloc[0]
    assert (flex.setting, flex.bleu_before_unk_replace, flex.avg_window) == ("beam5", 13.5, 9.0)  # τ = ∞
    assert df[df.variant == "rnnsearch"].iloc[0].attention == "rnnsearch"
    assert df[df.variant == "local-p"].iloc[0].paper_rows.startswith("luong_table1: local-p-general-feed, unk")
    assert "tok:none" in (tables / "summary.md").read_text(encoding="utf-8")
    # what each variant trained in: global-feed alone in bf16, which the ensemble of it and local-p mixes;
    # every table's header says so, as a deviation from the papers' float32
    assert dict(zip(df.variant, df.precision)) == {"base": "float32", "global-feed": "bf16", "local-p": "float32",
                                                   "rnnsearch": "float32", "flex": "float32", "flex-ft": "float32",
                                                   "ens": "bf16+float32"}
    said = "seeds [1, 2], trained in float32; in bf16 autocast (the papers: float32): global-feed"
    for name in ("summary", "findings", "luong_table1"):
        assert said in (tables / f"{name}.md").read_text(encoding="utf-8"), name


def _assert_figure(path: Path) -> None:
    assert path.stat().st_size > 10_000, path
    image = mpimg.imread(path)
    assert image.shape[0] > 200 and image.shape[1] > 300
    assert image[..., :3].std() > 0.02, f"{path} is blank"
    with Image.open(path) as png:  # a palette of at most 256 colours, as the pages commit them
        assert png.mode == "P" and 2 < len(png.getcolors(256) or []) <= 256, (path, png.mode)


def test_every_figure_is_drawn(report) -> None:
    _, _, figures = report
    for name in FIGURES:
        _assert_figure(figures / f"{name}.png")
        # with its caption beside it, for Snakemake's report (written from the declaration)
        caption = (figures.parent / "report" / "captions" / f"{name}.rst").read_text(encoding="utf-8")
        assert caption == paper.FIGURES[name].caption_rst(), name


def test_heatmaps_pick_one_variant_per_attention_type(report) -> None:
    spec, _, _ = report
    # global-feed and rnnsearch (its own additive attention), local-p, and the fine-tuned Flexible model
    assert collect.attention_selection(spec) == ["global-feed", "rnnsearch", "local-p", "flex-ft"]


def test_vision_spans_longest_sentences_global_and_flexible(report) -> None:
    spec, _, _ = report
    spans = collect.vision_spans(spec)
    assert spans["missing"] is None
    assert [i for i, _ in spans["sentences"]] == [2, 4, 0, 3]  # longest source first
    labels = [s["label"] for s in spans["series"]]
    assert labels == ["global-feed (global, τ=∞)", "flex (flexible, τ=1.2)", "flex-ft (flexible, τ=1.2)"]
    flex = spans["series"][1]["spans"][2]
    assert flex[0] == 16 and set(flex[1:]) == {7.0}


def test_window_points(report) -> None:
    spec, _, _ = report
    pts = collect.window_points(spec)
    flex = pts[pts.variant == "flex"].set_index("setting")
    # BLEU before replacement (11.0; after it the fixture has 11.2)
    assert flex.loc["beam5.tau0.8", ["avg_window", "bleu_before_unk_replace"]].tolist() == [5.0, 11.0]
    assert math.isnan(flex.loc["beam5", "tau"]) and flex.loc["beam5.tau1.2", "tau"] == 1.2
    assert collect.mean_source_length(spec) == pytest.approx(MEAN_SRC)


def test_experiment_without_results_writes_every_file_and_says_why_tables_are_empty(tmp_path: Path) -> None:
    """Nothing run yet: every table the workflow declares is written, a paper table that a variant
    maps to but has no number of ours as a header-only CSV and one line saying why, a paper table
    no variant maps to not at all; every figure says what is missing."""
    spec = make_experiment(tmp_path / "results", with_results=False)
    spec.variants = {"base": spec.variants["base"]}
    spec.ensembles = {}
    spec.settings = {"base": ["beam5"]}
    tables, figures = run_report(spec, tmp_path / "out")
    assert sorted(p.stem for p in tables.glob("*.csv")) == ["findings", "luong_table1", "summary"]
    df = _table(tables, "luong_table1")
    assert df.empty and "row" in df.columns
    # base maps Luong Table 1's "Base" row but has no result yet
    md = (tables / "luong_table1.md").read_text(encoding="utf-8")
    assert md == ("# Luong et al. 2015, Table 1: WMT'14 English-German results (progressive improvements)\n\n"
                  "No row of Luong et al. 2015, Table 1 has a number of ours in experiment `unit`, so this table is "
                  "left empty: base (no results, beam5) regenerates row 'base'. Paper: Luong, Pham & Manning 2015, "
                  "\"Effective Approaches to Attention-based Neural Machine Translation\" (EMNLP 2015), Table 1.\n")
    for name in FIGURES:
        assert (figures / f"{name}.png").stat().st_size > 5_000


def test_unknown_paper_row_is_an_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    spec = make_experiment(tmp_path / "results", with_results=False)
    spec.variants["base"]["paper_row"] = {"luong_table1": "base + reversed"}
    code = main(["report", "--spec", _spec_json(spec), "--out", str(tmp_path / "out")])
    assert code == 2
    err = capsys.readouterr().err
    assert "variants.base.paper_row.luong_table1: no row 'base + reversed'" in err and "reverse" in err


def test_paper_row_handles() -> None:
    t = paper.SHU_TABLE1
    assert [r.key for r in t.find("Flexible Attention (τ=1.2)")] == ["flexible-1.2"]
    assert [r.key for r in t.find("flexible attention (tau=1.2)")] == ["flexible-1.2"]
    assert [r.key for r in t.find("flexible")] == ["flexible-inf", "flexible-1.2"]
    with pytest.raises(paper.PaperRowError, match="unknown table 'luong_table2'"):
        paper.resolve_paper_row("v", {"luong_table2": "base"})


def test_every_output_has_a_caption() -> None:
    """``snakemake --report`` needs a caption per table and figure the rule declares: a paper
    table's and a figure's are their declarations', the overview tables' a file of workflow/report/."""
    repo = Path(__file__).resolve().parents[1]
    assert FIGURES == list(paper.FIGURES)
    for name in [*TABLES, *FIGURES]:
        if name in paper.TABLES:
            caption = paper.TABLES[name].caption_rst("Metric columns: none.\n")
            assert f"paper_row: {{{name}: <row>}}" in caption and caption.endswith("Metric columns: none.\n")
        elif name in paper.FIGURES:
            caption = paper.FIGURES[name].caption_rst()
            assert caption.startswith(f"**{paper.FIGURES[name].title}** (as ") and "``" not in \
                paper.FIGURES[name].caption_markdown()
        else:
            caption = (repo / "workflow" / "report" / f"{name}.rst").read_text(encoding="utf-8")
        assert len(caption) > 100, name
    assert set(TABLES) == {"summary", "findings", *paper.TABLES}


def test_a_paper_table_is_one_declaration() -> None:
    """A paper table's builder, report entry and caption come from its :class:`PaperTable` alone
    (issue #43): every declared builder imports, every caption file belongs to an entry that is not
    a paper table (the overview's tables, a figure, or the landing page's ``workflow.rst``), and a
    declaration without a builder or a caption fails."""
    from nmtlib.report.page import ENTRIES, PAPER_TABLES

    for name, table in paper.TABLES.items():
        assert callable(table.builder()), name
        assert ENTRIES[name] == {"category": PAPER_TABLES, "labels": {"paper": table.paper, "table": table.table,
                                                                      "shows": table.shows}}
    captions = {p.stem for p in (Path(__file__).resolve().parents[1] / "workflow" / "report").glob("*.rst")}
    assert captions == {*ENTRIES, "workflow"} - set(paper.TABLES) - set(paper.FIGURES)
    with pytest.raises(ValueError, match="build is 'module:function'"):
        paper.PaperTable("luong_table9", paper.LUONG, "Table 9", "title", "setting", (), build="tables", shows="x",
                         caption="A table.")
    with pytest.raises(ValueError, match="caption its reStructuredText"):
        paper.PaperTable("luong_table9", paper.LUONG, "Table 9", "title", "setting", (), build="m:f", shows="x",
                         caption=" ")
    # the ensemble rows are the rows keyed ``ensemble``, wherever a table has one
    assert paper.ensemble_tables(["e", "f"], None) == {"luong_table1": ["e"], "luong_table6": ["e"]}


def test_a_variant_is_drawn_with_the_first_paper_table_it_regenerates_a_row_of() -> None:
    rows = {"feed": {"luong_table4": "global-location", "luong_table1": "feed"},  # Table 1 comes first in TABLES
            "dot": {"luong_table4": "global-dot"}, "rnnsearch": {"bahdanau_table1": "rnnsearch-50"}, "mine": None}
    groups = paper.figure_groups(rows, {"ens": ["dot", "feed"], "ens2": ["rnnsearch"]},
                                 {"paper_rows": {"ens": {"luong_table1": "ensemble"}}})
    assert groups == {"feed": "Luong et al. 2015, Table 1", "dot": "Luong et al. 2015, Table 4",
                      "rnnsearch": "Bahdanau et al. 2015, Table 1", "mine": paper.OTHER_GROUP,
                      "ens": "Luong et al. 2015, Table 1",  # the table its report option names
                      "ens2": "Bahdanau et al. 2015, Table 1"}  # no row of its own: its first member's


def test_a_line_figure_of_more_lines_than_colours_draws_a_panel_per_paper_table(tmp_path: Path) -> None:
    """Eleven variants in two tables: two panels side by side (12 inches at 120 dpi), so no colour
    repeats within a panel; ten variants: one plain panel (7.5 inches), as before."""
    from PIL import Image

    from nmtlib.report import figures

    names = [f"v{i}" for i in range(11)]
    groups = {n: "Luong et al. 2015, Table 1" if i < 6 else "Luong et al. 2015, Table 4" for i, n in enumerate(names)}
    curves = pd.DataFrame([{"variant": n, "run": "seed1", "step": s, "updates": s, "dev_ppl": 50 / s, "finetune_from": ""}
                           for n in names for s in (1, 2)])
    buckets = pd.DataFrame([{"variant": n, "bucket": b, "bleu": 30.0, "sentences": 5} for n in names for b in ("1-5", "6-10")])
    for draw, frame in ((figures.learning_curves, curves), (figures.bleu_by_length, buckets)):
        draw(frame, tmp_path / "eleven.png", groups=groups)
        draw(frame[frame["variant"] != "v10"], tmp_path / "ten.png", groups=groups)
        with Image.open(tmp_path / "eleven.png") as eleven, Image.open(tmp_path / "ten.png") as ten:
            assert (eleven.width, ten.width) == (1440, 900), draw.__name__


def test_the_heatmaps_title_is_not_cut_at_the_figures_edges(tmp_path: Path) -> None:
    """Two narrow panels under the long default title (the published page's figure lost both ends
    of it): no ink in the outermost pixel columns of the title band."""
    from PIL import Image

    from nmtlib.report import figures

    rng = np.random.default_rng(0)
    src, tgt = [["Ein", "Mann", "läuft", "."]] * 2, [["A", "man", "runs", "."]] * 2
    matrices = {"global-feed": {i: rng.dirichlet(np.ones(4), size=5) for i in (0, 1)}}
    path = tmp_path / "heatmaps.png"
    figures.attention_heatmaps(matrices, src, tgt, [0, 1], path)
    with Image.open(path) as im:
        grey = np.asarray(im.convert("L"), dtype=float)
    band = grey[: grey.shape[0] // 6]  # the title sits above the panels
    assert band[:, :3].min() > 200 and band[:, -3:].min() > 200


def test_the_heatmaps_panel_titles_are_no_wider_than_their_panels(tmp_path: Path, monkeypatch) -> None:
    """Two panels of a 7-word sentence under a long variant name (the small Japanese pair's figure:
    "local-m: local-m-general-feed, sentence 0" ran on into the title of sentence 1 as one line):
    each title, as drawn, lies within the width of the panel it is over."""
    from nmtlib.report import figures

    drawn: list[tuple] = []  # (panel, its title) boxes in pixels, as drawn
    save = figures._save

    def record(fig, path, tight=True):
        fig.canvas.draw()
        renderer = fig.canvas.get_renderer()
        drawn.extend((ax.get_window_extent(renderer), ax.title.get_window_extent(renderer))
                     for ax in fig.axes if ax.get_title())
        save(fig, path, tight)

    monkeypatch.setattr(figures, "_save", record)
    rng = np.random.default_rng(0)
    src = [["they", "finally", "acknowledged", "it", "as", "true", "."]] * 2
    tgt = [["彼", "ら", "は", "つい", "に", "それ", "を", "認め", "た", "。"]] * 2
    matrices = {name: {i: rng.dirichlet(np.ones(7), size=11) for i in (0, 1)}
                for name in ("local-m-general-feed", "shu-flexible-ft")}
    figures.attention_heatmaps(matrices, src, tgt, [0, 1], tmp_path / "heatmaps.png",
                               labels={"local-m-general-feed": "local-m", "shu-flexible-ft": "flexible"})
    assert len(drawn) == 4
    for panel, title in drawn:
        assert panel.x0 - 2 <= title.x0 and title.x1 <= panel.x1 + 2, (panel, title)


def test_vision_spans_draw_one_global_line_of_the_flexible_variants_architecture(report, tmp_path: Path) -> None:
    """Every global variant's window is the source length: one line of them, Shu's own baseline
    (the Flexible variants' architecture) before Luong's, and only one that has translations."""
    import dataclasses
    import shutil

    spec, _, _ = report
    layout = spec.layout
    variants = {"luong-global-2": spec.variants["global-feed"],
                "shu-global": {**spec.variants["global-feed"], "model": {**spec.variants["global-feed"]["model"], "arch": "shu"}},
                **spec.variants}
    settings = {"luong-global-2": spec.settings["global-feed"], "shu-global": spec.settings["global-feed"],
                **spec.settings}
    wider = dataclasses.replace(spec, variants=variants, settings=settings)
    labels = lambda: [s["label"] for s in collect.vision_spans(wider)["series"]]  # noqa: E731
    # shu-global has no translations yet: the first global variant that has them
    shutil.copytree(layout.translations_dir() / "global-feed", layout.translations_dir() / "luong-global-2")
    assert labels() == ["luong-global-2 (global, τ=∞)", "flex (flexible, τ=1.2)", "flex-ft (flexible, τ=1.2)"]
    shutil.copytree(layout.translations_dir() / "global-feed", layout.translations_dir() / "shu-global")
    assert labels()[0] == "shu-global (global, τ=∞)" and len(labels()) == 3
