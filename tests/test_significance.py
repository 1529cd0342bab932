"""How sure a finding is (``nmtlib.report.significance``): sacreBLEU's paired bootstrap, the seeds'
spread, and the verdicts they give.

The expected intervals are computed here another way: with sacreBLEU's public API on the resampled
sentences themselves (``corpus_score`` of every resample, not the summed statistics), its own
``PairedTest`` for the p-value, and Student-t quantiles from tables.
"""

from __future__ import annotations

import random

import numpy as np
import pytest
from sacrebleu.metrics.bleu import BLEU
from sacrebleu.metrics.chrf import CHRF
from sacrebleu.significance import PairedTest

from nmtlib.metrics.bleu import MultiBleuPerl
from nmtlib.report.metrics import METRICS, chrf_statistics
from nmtlib.report.significance import (FAILS, HOLDS, INCONCLUSIVE, SAMPLES, SEED, Criterion, Interval, Sample,
                                        Statistic, compare, resample_indices, verdict)

#: t quantiles (0.975) from a printed table: 2, 4 degrees of freedom
T975 = {2: 4.303, 4: 2.776}


def corpus(seed: int, n: int = 60) -> tuple[list[str], list[str], list[str]]:
    """A reference and two systems: A gets about 80% of the words right, B about 60%."""
    rng = random.Random(seed)
    refs = [" ".join(f"w{rng.randrange(40)}" for _ in range(rng.randrange(4, 14))) for _ in range(n)]

    def system(keep: float) -> list[str]:
        return [" ".join(w if rng.random() < keep else "x" for w in r.split()) for r in refs]

    return refs, system(0.8), system(0.6)


def runs(stat: Statistic, hyps: list[list[str]], refs: list[str]) -> list[Sample]:
    idx = resample_indices(len(refs))
    out = []
    for h in hyps:
        stats = stat.sentences(h, refs)
        out.append(Sample(stat.full(stats), stat.resampled(stats, idx)))
    return out


# on ASCII-spaced text multi-bleu.perl's words are sacreBLEU's: its BLEU without tokenizer or smoothing
@pytest.mark.parametrize("metric, make", [(MultiBleuPerl, lambda: BLEU(tokenize="none", smooth_method="none")),
                                          (chrf_statistics, CHRF)])
def test_one_run_per_side_is_sacrebleus_paired_bootstrap(metric, make):
    refs, a, b = corpus(1)
    got = compare(runs(Statistic(metric), [a], refs), runs(Statistic(metric), [b], refs))
    # the interval: every resample scored from its sentences with sacreBLEU's corpus_score
    idx = np.random.default_rng(SEED).choice(len(refs), size=(SAMPLES, len(refs)), replace=True)
    diffs = sorted(make().corpus_score([a[j] for j in row], [[refs[j] for j in row]]).score
                   - make().corpus_score([b[j] for j in row], [[refs[j] for j in row]]).score for row in idx)
    assert got.low == pytest.approx(diffs[25], abs=1e-3) and got.high == pytest.approx(diffs[974], abs=1e-3)
    observed = make().corpus_score(a, [refs]).score - make().corpus_score(b, [refs]).score
    assert got.observed == pytest.approx(observed) and got.low < observed < got.high
    # the p-value: sacreBLEU's own paired bootstrap test (B the baseline)
    _, scores = PairedTest([("B", b), ("A", a)], {"m": make()}, [refs], test_type="bs", n_samples=SAMPLES)()
    (name,) = [k for k in scores if k != "System"]
    assert got.p_value == pytest.approx(scores[name][1].p_value)
    assert got.sentences and got.seed_df is None


def test_the_findings_bleu_splits_words_as_multi_bleu_perl():
    """A U+3000 joins two words for multi-bleu.perl (the tables' BLEU), where sacreBLEU splits them:
    "e\u3000f" is one word, so the hypothesis has 5 words against the reference's 6: precisions
    4/5, 3/4, 2/3, 1/2 and a brevity penalty exp(1 − 6/5). sacreBLEU's own BLEU would give 100."""
    hyps, refs = ["a b c d e\u3000f"], ["a b c d e f"]
    stat = Statistic.of_text(METRICS["bleu_before_unk_replace"])
    expected = 100 * np.exp(1 - 6 / 5) * (4 / 5 * 3 / 4 * 2 / 3 * 1 / 2) ** 0.25
    assert stat.full(stat.sentences(hyps, refs)) == pytest.approx(expected)
    assert BLEU(tokenize="none", smooth_method="none").corpus_score(hyps, [refs]).score == pytest.approx(100.0)


def test_identical_seeds_add_no_seed_noise():
    """Two seeds with the same translations: their mean is that translation, their spread 0."""
    refs, a, b = corpus(2)
    stat = Statistic(MultiBleuPerl)
    one = compare(runs(stat, [a], refs), runs(stat, [b], refs))
    two = compare(runs(stat, [a, a], refs), runs(stat, [b, b], refs))
    assert (two.low, two.high, two.p_value, two.seed_df) == (one.low, one.high, one.p_value, None)


def test_seed_spread_alone_is_a_t_interval():
    """No sentences to resample (perplexity): the interval is the difference ± t(df) × standard
    error, Welch's. Three seeds a side with sd 1 each: se = sqrt(1/3 + 1/3), df = 4."""
    a = [Sample(v, np.empty(0)) for v in (10.0, 11.0, 12.0)]
    b = [Sample(v, np.empty(0)) for v in (7.0, 8.0, 9.0)]
    got = compare(a, b)
    half = T975[4] * (2 / 3) ** 0.5
    assert got.seed_df == pytest.approx(4.0) and not got.sentences
    # 1,000 draws: the 2.5% and 97.5% quantiles within a few percent of the exact ones
    assert got.low == pytest.approx(3 - half, abs=0.25) and got.high == pytest.approx(3 + half, abs=0.25)
    assert compare(a[:1], b[:1]) is None  # one run a side and nothing to resample: no interval


def test_paired_seeds_use_the_spread_of_their_differences():
    """One model scored two ways, seed by seed: the differences 1, 2, 3 (sd 1) give se = 1/sqrt(3)
    and 2 degrees of freedom, though each side alone varies far more."""
    a = [Sample(v, np.empty(0)) for v in (11.0, 22.0, 33.0)]
    b = [Sample(v, np.empty(0)) for v in (10.0, 20.0, 30.0)]
    got = compare(a, b, paired=True)
    half = T975[2] / 3 ** 0.5
    assert got.seed_df == 2.0
    assert got.low == pytest.approx(2 - half, abs=0.4) and got.high == pytest.approx(2 + half, abs=0.4)
    assert compare(a, b).high - compare(a, b).low > 5 * (got.high - got.low)  # unpaired: the models' spread


def test_paired_sides_of_unequal_runs_are_refused():
    """Pairing three runs with two would drop one without a word (and pair whatever came in order)."""
    a = [Sample(v, np.empty(0)) for v in (11.0, 22.0, 33.0)]
    b = [Sample(v, np.empty(0)) for v in (10.0, 20.0)]
    with pytest.raises(ValueError, match="A has 3, B 2"):
        compare(a, b, paired=True)


def test_relative_change_of_a_mean_over_sentences():
    """Shu's window: a mean over sentences, compared in percent. A scores half of B's positions on
    every sentence: −50% on the whole test set and on every resample."""
    windows_b = [float(n) for n in range(2, 42)]
    stat = Statistic()
    idx = resample_indices(len(windows_b))
    a = [Sample(stat.full(s := stat.sentences([w / 2 for w in windows_b])), stat.resampled(s, idx))]
    b = [Sample(stat.full(s := stat.sentences(windows_b)), stat.resampled(s, idx))]
    got = compare(a, b, paired=True, relative=True)
    assert got.observed == pytest.approx(-50.0) and got.low == pytest.approx(-50.0) and got.high == pytest.approx(-50.0)
    assert stat.full(stat.sentences(windows_b)) == pytest.approx(sum(windows_b) / len(windows_b))


def test_no_difference_at_all_has_p_one():
    refs, a, _ = corpus(3)
    stat = Statistic(MultiBleuPerl)
    got = compare(runs(stat, [a], refs), runs(stat, [a], refs))
    assert (got.low, got.high, got.p_value) == (0.0, 0.0, 1.0)


def _interval(low: float, high: float) -> Interval:
    return Interval(low, high, 0.5, (low + high) / 2, True, None)


BETTER = Criterion(0.0, True, "A − B > 0")
LARGE = Criterion(2.0, False, "A − B ≥ 2 BLEU")
SMALL = Criterion(-1.0, False, "A − B ≥ −1 BLEU", beyond=-1.0)
HALF = Criterion(-50.0, False, "window change ≤ −50%", below=True)


@pytest.mark.parametrize("criterion, diff, low, high, expected", [
    (BETTER, 0.8, 0.2, 1.4, HOLDS),  # the paper's direction, interval above 0
    (BETTER, 0.01, -0.02, 0.04, INCONCLUSIVE),  # +0.01 BLEU inside the noise
    (BETTER, -1.1, -1.8, -0.4, FAILS),  # the opposite direction, significantly
    (BETTER, -0.3, -0.9, 0.3, INCONCLUSIVE),
    (LARGE, 3.0, 1.0, 5.0, HOLDS),  # ≥ 2 and the interval above 0
    (LARGE, 1.0, 0.4, 1.6, FAILS),  # a real gain, but certainly below 2
    (LARGE, 1.5, 0.5, 2.5, INCONCLUSIVE),
    (SMALL, -0.2, -0.8, 0.4, HOLDS),  # no loss beyond 1 BLEU
    (SMALL, -0.2, -1.3, 0.9, INCONCLUSIVE),
    (SMALL, -2.0, -2.6, -1.4, FAILS),
    (HALF, -55.0, -58.0, -52.0, HOLDS),
    (HALF, -49.77, -50.5, -49.0, INCONCLUSIVE),  # the reference page's "−49.77% against −50%"
    (HALF, -30.0, -33.0, -27.0, FAILS),
    # no resample changed anything: a strict "> 0" is missed by every value of [0, 0], a "≥ 0" met
    (BETTER, 0.0, 0.0, 0.0, FAILS),
    (Criterion(0.0, False, "A − B ≥ 0"), 0.0, 0.0, 0.0, INCONCLUSIVE),
    (Criterion(0.0, True, "window change < 0%", below=True), 0.0, 0.0, 0.0, FAILS),
    (HALF, -50.0, -50.0, -50.0, HOLDS),  # −50% itself meets "≤ −50%", and [−50, −50] lies below 0
])
def test_verdicts(criterion, diff, low, high, expected):
    assert verdict(criterion, diff, _interval(low, high)) == expected


def test_no_interval_is_inconclusive():
    assert verdict(BETTER, 5.0, None) == INCONCLUSIVE


def test_a_one_seed_side_takes_the_pooled_seed_variance():
    """Variants of seeds (10, 12) and (20, 21, 22): variances 2 and 1 on 1 and 2 degrees of freedom,
    pooled (1·2 + 2·1) / 3 = 4/3 on 3. One run a side, nothing to resample: before, no interval at
    all; now 30 − 28 ± t(df) × se with se = sqrt(4/3 + 4/3). Both sides' variance is the one pooled
    estimate, a scaled χ² of 3 degrees of freedom, so (A − B − δ) / se is Student's t of df = 3
    exactly (not Welch–Satterthwaite's 6, which would treat the two as estimated apart)."""
    from nmtlib.report.significance import pooled_seed_variance

    assert pooled_seed_variance([[10.0, 12.0], [20.0, 21.0, 22.0], [5.0]]) == (pytest.approx(4 / 3), 3.0)
    assert pooled_seed_variance([[5.0], [6.0]]) is None
    pooled = (4 / 3, 3.0)
    got = compare([Sample(30.0, np.empty(0))], [Sample(28.0, np.empty(0))], pooled=(pooled, pooled))
    half = 3.1824 * (8 / 3) ** 0.5  # t(0.975, 3)
    assert got.seed_df == pytest.approx(3.0)
    # an ensemble against one seed: the seed's side alone has a spread, 4/3 on the same 3
    single = compare([Sample(30.0, np.empty(0))], [Sample(28.0, np.empty(0))], pooled=(pooled, None))
    assert single.seed_df == pytest.approx(3.0)
    # two pools (two metrics' spreads) are two estimates: Welch–Satterthwaite, (4/3 + 1)² / ((4/3)²/3 + 1²/5)
    other = compare([Sample(30.0, np.empty(0))], [Sample(28.0, np.empty(0))], pooled=(pooled, (1.0, 5.0)))
    assert other.seed_df == pytest.approx((7 / 3) ** 2 / ((4 / 3) ** 2 / 3 + 1 / 5))
    # 1,000 draws of t(3), whose tails are heavy: its 2.5% quantile is within about 0.3 of the exact
    # one (sd of a sample quantile: sqrt(p (1 − p) / n) / density), 0.5 once scaled by se = 1.63
    assert got.low == pytest.approx(2 - half, abs=1.0) and got.high == pytest.approx(2 + half, abs=1.0)
    # a side of three seeds keeps its own spread; only the one-run side borrows
    three = [Sample(v, np.empty(0)) for v in (27.0, 28.0, 29.0)]
    mixed = compare([Sample(30.0, np.empty(0))], three, pooled=(pooled, pooled))
    assert mixed.seed_df == pytest.approx((4 / 3 + 1 / 3) ** 2 / ((4 / 3) ** 2 / 3 + (1 / 3) ** 2 / 2))
