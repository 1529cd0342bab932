"""One metric registry (``nmtlib.report.metrics``): a metric declared once reaches the summary, the
paper tables, their captions and the findings; chrF is one such declaration; the report's special
cases for Flexible Attention key on the mechanism's declared capability, not on its name.

Expected values are counted or scored here independently (sacreBLEU's public API on the files).
"""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd
import pytest
from sacrebleu.metrics.chrf import CHRF

from nmtlib.report.metrics import RAW, Metric, RunFiles, registered
from test_report import TGT, make_experiment, run_report

ROOT = Path(__file__).resolve().parent.parent


def hypothesis_words(files: RunFiles) -> float | None:
    """A toy metric: words in the translation as decoded."""
    hyps = files.hypotheses(RAW)
    return None if hyps is None else float(sum(len(h.split()) for h in hyps))


TOY = Metric("hyp_words", "words in the test translation", "words of the test translation as decoded",
             hypothesis_words, tables=("summary", "luong_table4"), decimals=0)


def write_translation(root: Path, name: str, run: str, lines: list[str], replaced: list[str] | None = None) -> None:
    prefix = root / "translations" / name / run / "test.beam5"
    Path(f"{prefix}.txt").write_text("".join(f"{line}\n" for line in lines), encoding="utf-8")
    Path(f"{prefix}.unk.txt").write_text("".join(f"{line}\n" for line in replaced or lines), encoding="utf-8")


def test_a_registered_metric_reaches_the_summary_and_its_paper_table(tmp_path: Path) -> None:
    spec = make_experiment(tmp_path / "results")
    # base's two seeds: 2 words per sentence, then 3: 12 and 18 words (mean 15, sd 4.2426)
    write_translation(tmp_path / "results", "base", "seed1", ["a b"] * 6)
    write_translation(tmp_path / "results", "base", "seed2", ["a b c"] * 6)
    # global-feed (Luong Table 4's global (general) row): the references, 7 + 3 + 15 + 5 + 11 + 2 = 43
    # words on each seed
    for seed in ("seed1", "seed2"):
        write_translation(tmp_path / "results", "global-feed", seed, TGT)
    with registered(TOY):
        tables, _ = run_report(spec, tmp_path / "out")
    summary = pd.read_csv(tables / "summary.csv").set_index("variant")
    assert summary.loc["base", "hyp_words"] == 15.0
    assert summary.loc["base", "hyp_words_sd"] == pytest.approx(18 ** 0.5, abs=1e-4)
    assert summary.loc["global-feed", "hyp_words"] == 43.0
    assert pd.isna(summary.loc["local-p", "hyp_words"])  # no translation file: no value
    # a count, shown as an integer (± its sd in the same decimals)
    assert re.search(r"\| base .*\| 15 ± 4 ", (tables / "summary.md").read_text(encoding="utf-8"))
    t4 = pd.read_csv(tables / "luong_table4.csv").set_index("row")
    assert t4.loc["global-general", "ours_hyp_words"] == 43.0
    assert "ours_hyp_words" not in pd.read_csv(tables / "luong_table1.csv").columns  # not declared for it
    # the caption of each table it is in says what it is
    assert "``hyp_words``: words of the test translation as decoded." in (
        tmp_path / "out" / "report" / "columns" / "summary.rst").read_text(encoding="utf-8")
    # declared for the duration of the block only
    tables, _ = run_report(spec, tmp_path / "again")
    assert "hyp_words" not in pd.read_csv(tables / "summary.csv").columns


def test_a_name_is_declared_once() -> None:
    with registered(TOY), pytest.raises(ValueError, match="already declared"):
        with registered(TOY):
            pass


def test_chrf_is_sacrebleus_on_the_translations(tmp_path: Path) -> None:
    """chrF before and after replacement: sacreBLEU's CHRF() of the .txt and .unk.txt files against
    the tokenized reference, in the summary and the paper tables declared for it."""
    spec = make_experiment(tmp_path / "results")
    raw = [" ".join(t.split()[:-1]) for t in TGT]  # every sentence's last word missing
    for seed in ("seed1", "seed2"):
        write_translation(tmp_path / "results", "local-p", seed, raw, TGT)
    tables, _ = run_report(spec, tmp_path / "out")
    before, after = CHRF().corpus_score(raw, [TGT]).score, CHRF().corpus_score(TGT, [TGT]).score
    summary = pd.read_csv(tables / "summary.csv").set_index("variant")
    assert summary.loc["local-p", "chrf_before_unk_replace"] == pytest.approx(before, abs=1e-4)
    assert summary.loc["local-p", "chrf_after_unk_replace"] == pytest.approx(after, abs=1e-4) == 100.0
    t1 = pd.read_csv(tables / "luong_table1.csv").set_index("row")
    assert t1.loc["local-p-general-feed", "ours_chrf_before_unk_replace"] == pytest.approx(before, abs=1e-4)
    assert t1.loc["unk", "ours_chrf_after_unk_replace"] == pytest.approx(after, abs=1e-4)
    assert pd.read_csv(tables / "luong_table4.csv").set_index("row").loc[
        "local-p-general", "ours_chrf_before_unk_replace"] == pytest.approx(before, abs=1e-4)


def test_unknown_words_reach_the_summary_and_the_unk_claim(tmp_path: Path) -> None:
    """What unknown-word replacement had to work with: the share of unknown words in the output and
    of those replaced by a reference word, in the summary and in the unk claim's note."""
    spec = make_experiment(tmp_path / "results")
    words = [t.split() for t in TGT]  # 43 words in 6 sentences
    # local-p (the unk claim's model): the first word of every sentence unknown; replacement gives
    # it back in sentences 1-3 and puts "zz", no reference word, in 4-6
    raw = [" ".join(["<unk>", *w[1:]]) for w in words]
    replaced = [" ".join([w[0] if k < 3 else "zz", *w[1:]]) for k, w in enumerate(words)]
    for seed in ("seed1", "seed2"):
        write_translation(tmp_path / "results", "local-p", seed, raw, replaced)
    tables, _ = run_report(spec, tmp_path / "out")
    summary = pd.read_csv(tables / "summary.csv").set_index("variant")
    assert summary.loc["local-p", "unk_words"] == pytest.approx(100 * 6 / 43, abs=1e-4)
    assert summary.loc["local-p", "unk_replaced_in_reference"] == 50.0
    assert pd.isna(summary.loc["base", "unk_words"])  # no translation: no value
    findings = pd.read_csv(tables / "findings.csv")
    note = findings.loc[findings["claim"].str.startswith("Unknown-word replacement"), "note"].iloc[0]
    assert "13.95% of the output words are unknown, 50% of them replaced by a word of the sentence's reference" in note


def test_no_mechanism_name_in_the_report() -> None:
    """The report's special cases for Flexible Attention key on the gated capability it declares."""
    for path in (ROOT / "nmtlib" / "report").glob("*.py"):
        text = path.read_text(encoding="utf-8")
        assert not re.search(r"""["']flexible["']""", text), path.name


def test_the_gated_flag_is_the_model_classes() -> None:
    from nmtlib.registry import MECHANISMS

    assert {m.name: m.gated for m in MECHANISMS} == {m.name: bool(m.load().gated) for m in MECHANISMS}
    assert [m.name for m in MECHANISMS if m.gated] == ["flexible"]


def test_a_new_gated_mechanism_gets_the_flexible_attention_tables(tmp_path: Path, monkeypatch) -> None:
    """A second gated mechanism, declared under another name, is treated as Flexible Attention: its
    τ settings become rows of Shu Table 1."""
    import dataclasses

    from nmtlib import registry

    flexible = registry.mechanism("flexible")
    monkeypatch.setattr(registry, "MECHANISMS", (*registry.MECHANISMS, dataclasses.replace(flexible, name="gated2")))
    spec = make_experiment(tmp_path / "results")
    spec.variants["flex"]["model"]["attention"] = "gated2"
    tables, _ = run_report(spec, tmp_path / "out")
    rows = pd.read_csv(tables / "shu_table1.csv")["row"].tolist()
    assert "flex@tau0.8" in rows
