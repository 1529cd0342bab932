"""The findings table: each claim's rows, our difference, the criterion and the verdict.

The results tree is test_report's (known numbers per variant and seed); every expected value
below is worked out by hand from those numbers.
"""

from __future__ import annotations

import json

import pandas as pd
import pytest

from nmtlib.report.findings import FAILS, HOLDS, UNTESTED, counts, findings_table
from test_report import make_experiment, run_report


@pytest.fixture(scope="module")
def findings(tmp_path_factory) -> pd.DataFrame:
    spec = make_experiment(tmp_path_factory.mktemp("exp") / "results")
    return findings_table(spec)


def _claim(df: pd.DataFrame, text: str) -> pd.Series:
    rows = df[df["claim"].str.startswith(text)]
    assert len(rows) == 1, (text, df["claim"].tolist())
    return rows.iloc[0]


def test_attention_claim_falls_back_to_the_best_models_with_and_without_attention(findings):
    # no variant maps Luong Table 1's attention rows: the best Luong-architecture attentional model
    # (local-p, 17.0; global-feed has 15.0) against the only one without attention (base: 10, 12 → 11.0)
    r = _claim(findings, "Attention gives a large gain")
    assert r.compared == "A: local-p vs B: base"
    assert (r.paper_a, r.paper_b, r.paper_diff) == (16.8, 14.0, pytest.approx(2.8))
    assert (r.ours_a, r.ours_b, r.ours_diff, r.verdict) == (17.0, 11.0, 6.0, HOLDS)
    # spread: sd(17, 17) + sd(10, 12) = 0 + 1.4142; 6.0 is beyond it
    assert r.spread == pytest.approx(2 ** 0.5, abs=1e-4) and r.within_spread is False


def test_luong_claims(findings):
    r = _claim(findings, "local-p attention (general) is at least as good")
    assert (r.ours_a, r.ours_b, r.ours_diff, r.paper_diff, r.verdict) == (17.0, 15.0, 2.0, pytest.approx(1.7), HOLDS)
    unk = _claim(findings, "Unknown-word replacement")
    assert (unk.ours_a, unk.ours_b, unk.ours_diff, unk.verdict) == (18.5, 17.0, 1.5, HOLDS)
    ens = _claim(findings, "An ensemble beats")
    assert ens.compared == "A: ens vs B: local-p" and (ens.ours_diff, ens.verdict) == (2.0, HOLDS)
    assert pd.isna(ens.spread)  # an ensemble is one run
    for text in ("Reversing the source", "Dropout helps", "Input feeding helps"):
        r = _claim(findings, text)
        assert r.verdict == UNTESTED and "no variant regenerates Luong Table 1" in r.note and pd.isna(r.ours_diff)


def test_table4_rankings_one_row_per_pair(findings):
    t4 = findings[findings["source"].str.startswith("Luong et al. 2015, Table 4")]
    # global: 3 BLEU pairs (location, dot, general) + concat by perplexity; local-m: concat;
    # local-p: 1 BLEU pair + concat; and local-p vs global (general)
    assert len(t4) == 3 + 1 + 1 + 1 + 1 + 1
    dot_general = _claim(findings, "global (dot) scores higher BLEU than global (general)")
    assert dot_general.paper_diff == pytest.approx(1.3) and dot_general.verdict == UNTESTED
    concat = _claim(findings, "global (concat) has a higher perplexity than global (dot)")
    assert concat.paper_diff == pytest.approx(0.6)


def test_shu_claims(findings):
    flat = _claim(findings, "Flexible Attention at τ = ∞")
    # rnnsearch maps Shu's Global row (13.0); flex at τ = ∞: 13.5; the paper's De→En: 21.31 − 20.62
    assert flat.compared == "A: flex vs B: rnnsearch"
    assert (flat.ours_diff, flat.paper_diff, flat.verdict) == (0.5, pytest.approx(0.69), HOLDS)
    half = _claim(findings, "Flexible Attention at τ = 1.2 computes under half")
    # window 7.0 against 9.0: −22.22%, not under half; the paper's De→En: 7.8 against 20.7, −62.32%
    assert (half.ours_a, half.ours_b, half.ours_diff, half.verdict) == (7.0, 9.0, -22.22, FAILS)
    assert half.paper_diff == pytest.approx(-62.32)
    loss = _claim(findings, "… for a small loss of BLEU")
    assert (loss.ours_diff, loss.verdict) == (-0.5, HOLDS)
    ft = _claim(findings, "β fine-tuning shrinks the window")
    assert (ft.ours_a, ft.ours_b, ft.ours_diff, ft.verdict) == (6.0, 7.0, -14.29, HOLDS)  # (6 − 7) / 7
    cost = _claim(findings, "… at a small cost in BLEU")
    assert (cost.ours_diff, cost.verdict) == (0.2, HOLDS)


def test_rnnsearch_claims_untested_without_rnnencdec(findings):
    for text in ("RNNsearch is much better", "RNNsearch's gain over RNNencdec"):
        r = _claim(findings, text)
        assert r.verdict == UNTESTED and "RNNencdec" in r.note


def test_a_difference_within_the_seed_spread_is_flagged(tmp_path):
    spec = make_experiment(tmp_path / "results")
    # global-feed's second seed scores 19 instead of 16: mean 16.5, sd 3.5355; local-p (17.0) beats
    # it by 0.5, well inside the spread
    path = tmp_path / "results" / "scores" / "global-feed" / "seed2" / "test.beam5.json"
    scores = json.loads(path.read_text())
    scores["bleu"]["bleu"] = 19.0
    path.write_text(json.dumps(scores))
    r = _claim(findings_table(spec), "local-p attention (general) is at least as good")
    assert (r.ours_b, r.ours_diff, r.verdict) == (16.5, 0.5, HOLDS)
    assert r.spread == pytest.approx(3.5355, abs=1e-4) and r.within_spread is True
    assert "within the run-to-run spread" in r.note


def test_findings_are_written_with_counts(tmp_path):
    spec = make_experiment(tmp_path / "results")
    tables, _ = run_report(spec, tmp_path / "out")
    df = pd.read_csv(tables / "findings.csv")
    c = counts(df)
    assert c[HOLDS] + c[FAILS] + c[UNTESTED] == len(df)
    md = (tables / "findings.md").read_text(encoding="utf-8")
    fails = f"{c[FAILS]} {'does' if c[FAILS] == 1 else 'do'} not hold"
    assert f"of the papers' claims, {c[HOLDS]} hold, {fails} and {c[UNTESTED]} are not tested" in md
    # the HTML rendering the report shows: one row per claim, verdicts coloured
    page = (tables / "findings.html").read_text(encoding="utf-8")
    assert page.count("<tr>") == len(df) + 1
    assert page.count('<td class="holds">holds</td>') == c[HOLDS]
    assert page.count('<td class="fails">does not hold</td>') == c[FAILS]


def test_an_experiment_without_results_tests_nothing(tmp_path):
    spec = make_experiment(tmp_path / "results", with_results=False)
    df = findings_table(spec)
    assert set(df["verdict"]) == {UNTESTED}


def test_rnnsearch_gain_by_length_splits_the_test_set_at_its_median(tmp_path):
    """Six test sentences of 8, 3, 16, 6, 12, 2 words (test_report's): median 7, so 3 long (8, 16,
    12) and 3 short. RNNsearch translates all six perfectly (BLEU 100 on each half); RNNencdec is
    perfect on the short half and shares no word with the reference on the long one (BLEU 0). Gain:
    100 on the long half, 0 on the short one; the difference is 100."""
    from nmtlib.config import resolve_variant
    from test_report import SRC, TGT

    spec = make_experiment(tmp_path / "results")
    enc = resolve_variant("enc", {"embedding_size": 8, "hidden_size": 8, "arch": "rnnsearch", "attention": "none",
                                  "output": "attentional", "paper_row": {"bahdanau_table1": "rnnencdec-50"}})
    spec.variants["enc"] = enc.to_dict()
    spec.settings["enc"] = ["beam5"]
    long_ = {i for i, s in enumerate(SRC) if len(s.split()) > 7}
    assert long_ == {0, 2, 4}
    for name, lines in (("rnnsearch", TGT), ("enc", [t if i not in long_ else "x y" for i, t in enumerate(TGT)])):
        for seed in ("seed1", "seed2"):
            path = tmp_path / "results" / "translations" / name / seed / "test.beam5.txt"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text("".join(f"{line}\n" for line in lines))
    r = _claim(findings_table(spec), "RNNsearch's gain over RNNencdec")
    assert (r.ours_a, r.ours_b, r.ours_diff, r.verdict) == (100.0, 0.0, 100.0, HOLDS)
    assert "3 sentences of more than 7 source words" in r.note


def test_metric_column_names_the_bleu_variant(findings):
    """The metric says before or after unknown-word replacement (and test perplexity), per side
    where the two sides differ."""
    unk = _claim(findings, "Unknown-word replacement")
    assert unk.metric == "A: test BLEU after unk replacement; B: test BLEU before unk replacement"
    assert _claim(findings, "Attention gives a large gain").metric == "test BLEU before unk replacement"
    assert _claim(findings, "global (concat) has a higher perplexity").metric == "test perplexity"
    assert _claim(findings, "RNNsearch's gain over RNNencdec").metric == (
        "gain in test BLEU before unk replacement, long half − short half")
    assert _claim(findings, "Flexible Attention at τ = 1.2 computes").metric == "window (A vs B: change %)"
