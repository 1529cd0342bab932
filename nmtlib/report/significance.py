"""How sure a finding is: sacreBLEU's paired bootstrap over the test sentences, and the seeds' spread.

A finding compares two rows A and B (:mod:`nmtlib.report.findings`). Two sources of noise stand
between our difference and the truth it estimates:

- **the test sentences**: another test set of the same kind would score differently. Koehn
  (2004)'s paired bootstrap resamples the test sentences with replacement and rescores both
  systems on every resample; sacreBLEU implements it (``sacrebleu --paired-bs``,
  :class:`sacrebleu.significance.PairedTest`). We draw the same 1,000 resamples it draws with its
  default seed (:data:`SAMPLES`, :data:`SEED`) and score them with the registered metric's own
  sacreBLEU implementation (:attr:`nmtlib.report.metrics.Metric.statistics`: its per-sentence
  sufficient statistics, summed and scored per resample). With one run per side this is exactly
  sacreBLEU's test (same p-value); where a side has several seeds, each resample scores every seed's
  translation of the *same* sentences and averages them, so the resampled difference is the
  difference of the seed means.
- **the seeds**: another training run scores differently. Where a side has several seeds, the
  standard error of the difference of the seed means is ``sqrt(sd_A²/n_A + sd_B²/n_B)`` (A and
  B the same model decoded or scored two ways, paired by seed: ``sd(A_k − B_k)/sqrt(n)``), with
  Welch–Satterthwaite degrees of freedom. It enters as Student-t noise of that scale added to each
  resampled difference (a Monte Carlo convolution of the two sources, :data:`SEED` + 1). A side of
  one seed has a spread too, which one run cannot show: it takes the seed variance pooled over the
  experiment's variants that have several seeds (:func:`pooled_seed_variance`, their degrees of
  freedom summed), so that a variant trained once is not compared as if retraining it changed
  nothing. Only an experiment of one seed throughout has no seed term.

The **95% interval** is sacreBLEU's percentile interval of the combined resampled differences (the
25th and the 975th of 1,000 sorted, :func:`sacrebleu.significance.estimate_ci`'s indices) and the
**p-value** sacreBLEU's two-sided one (:func:`sacrebleu.significance._compute_p_value`: the
resampled absolute differences, centred, larger than the observed one; 1 where no resample differs at
all, which sacreBLEU would call 1/1001). With 2 seeds the
seed term has one or two degrees of freedom (a 95% t quantile of 12.7 or 4.3): only differences
well beyond the seeds' spread are conclusive, as they should be when two runs are all there is.
Test perplexity resamples each sentence's NLL and token count (``nmtlib evaluate perplexity`` records
them): a resample's perplexity is ``exp(ΣNLL / Σtokens)`` of its sentences, as the test set's is. A
metric without per-sentence statistics gets the seed term alone, and no interval with one seed.

The verdict (:func:`verdict`) reads the interval against the claim's criterion.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from sacrebleu.metrics.base import Metric as SacreMetric
from sacrebleu.significance import _compute_p_value

from nmtlib.files import read_lines
from nmtlib.metrics import check_parallel
from nmtlib.report.metrics import METRICS, RAW, Metric

#: bootstrap resamples (sacreBLEU's default for --paired-bs)
SAMPLES = 1000
#: the resamples' seed: sacreBLEU's default SACREBLEU_SEED, so one run per side is sacreBLEU's own test
SEED = 12345
#: resamples scored at a time (a resample of 1,000 sentences × chrF's 18 statistics is 72 kB)
CHUNK = 100

HOLDS, FAILS, INCONCLUSIVE, UNTESTED = "holds", "does not hold", "inconclusive", "not tested"
#: the verdict of a comparison whose models were stopped by ``train.max_steps`` (a smoke run)
NO_VERDICT = "no verdict: smoke run"
VERDICTS = (HOLDS, FAILS, INCONCLUSIVE, NO_VERDICT, UNTESTED)


def resample_indices(n: int) -> np.ndarray:
    """The sentence indices of every resample, ``(SAMPLES, n)``: what sacreBLEU's paired bootstrap
    draws with its default seed (``rng.choice(n, size=(n_samples, n), replace=True)``)."""
    return np.random.default_rng(SEED).choice(n, size=(SAMPLES, n), replace=True)


class Statistic:
    """A corpus score from per-sentence sufficient statistics: a sacreBLEU metric's; or rows of sums
    given per sentence, scored from their totals by ``of_sums`` (perplexity: ``[NLL, tokens]``,
    ``exp(ΣNLL / Σtokens)``); or, with neither, the mean of one number per sentence (Shu &
    Nakayama's window; RIBES, whose numbers ``sentence_scores`` computes from hypotheses and
    references)."""

    def __init__(self, metric: Callable[[], SacreMetric] | None = None,
                 of_sums: Callable[[np.ndarray], float] | None = None,
                 sentence_scores: Callable[[list[str], list[str]], list[float]] | None = None):
        self.metric = metric() if metric is not None else None
        self.of_sums = of_sums
        self.sentence_scores = sentence_scores

    @classmethod
    def of_text(cls, metric: Metric) -> Statistic | None:
        """The statistic of a registered metric of a translation's text (``Metric.statistics`` or
        ``Metric.sentence_scores``), whose :meth:`sentences` take hypotheses and references; None
        for a metric with neither."""
        if metric.statistics is not None:
            return cls(metric.statistics)
        if metric.sentence_scores is not None:
            return cls(sentence_scores=metric.sentence_scores)
        return None

    def sentences(self, hyps: Sequence[str] | Sequence[float] | Sequence[Sequence[float]],
                  refs: Sequence[str] | None = None) -> np.ndarray:
        """``(n, k)`` statistics: of hypotheses against references (float32, as sacreBLEU keeps
        them; a mean of sentence scores: each one's), the given rows of sums (float64: NLL sums are
        large), or per-sentence numbers (``[value, 1]`` rows, so that a sum over sentences divides)."""
        if self.metric is not None:
            return np.array(self.metric._extract_corpus_statistics(list(hyps), [list(refs or [])]), dtype="float32")
        if self.of_sums is not None:
            return np.array(hyps, dtype="float64").reshape(len(hyps), -1)
        values = hyps if self.sentence_scores is None else self.sentence_scores(list(hyps), list(refs or []))
        return np.array([[float(v), 1.0] for v in values], dtype="float32")

    def score(self, sums: np.ndarray) -> float:
        """The corpus score of summed statistics (0 for an empty sample)."""
        if self.metric is not None:
            return float(self.metric._compute_score_from_stats(sums).score)
        if self.of_sums is not None:
            return float(self.of_sums(sums))
        return float(sums[0] / sums[1]) if sums[1] else 0.0

    def resampled(self, stats: np.ndarray, idx: np.ndarray, keep: np.ndarray | None = None) -> np.ndarray:
        """The score of every resample ``idx`` (rows of sentence indices); ``keep``: a per-sentence
        mask, the score of each resample's kept sentences only (a half of the test set)."""
        weights = np.ones(len(stats), dtype="float32") if keep is None else keep.astype("float32")
        out = np.empty(len(idx))
        for start in range(0, len(idx), CHUNK):
            part = idx[start:start + CHUNK]
            sums = (stats[part] * weights[part][..., None]).sum(1)
            out[start:start + len(part)] = [self.score(s) for s in sums]
        return out

    def full(self, stats: np.ndarray, keep: np.ndarray | None = None) -> float:
        """The score of the whole test set (or of its ``keep`` sentences)."""
        return self.score((stats if keep is None else stats[keep.astype(bool)]).sum(0))


@dataclass(frozen=True)
class Sample:
    """One run's score on the whole test set and on every resample (empty: no sentence statistics)."""

    full: float
    resampled: np.ndarray


@dataclass(frozen=True)
class Interval:
    """The 95% interval of A − B (or of A's change relative to B, in percent) and its p-value."""

    low: float
    high: float
    p_value: float
    observed: float  #: the difference the resamples are of (sacreBLEU's own scores of the runs)
    sentences: bool  #: whether the test sentences were resampled
    seed_df: float | None  #: degrees of freedom of the seed term (None: no seed term)


def _diff(a: float | np.ndarray, b: float | np.ndarray, relative: bool) -> float | np.ndarray:
    return 100 * (a - b) / b if relative else a - b


#: a seed variance and its degrees of freedom (:func:`pooled_seed_variance`)
Pooled = tuple[float, float]


def pool(groups: Iterable[tuple[int, float]]) -> Pooled | None:
    """A variance pooled over groups given as (runs n_g, sample variance s_g²), each weighted by its
    degrees of freedom: ``Σ (n_g − 1) s_g² / Σ (n_g − 1)`` and ``Σ (n_g − 1)``; None where no group
    has two runs."""
    parts = [(n - 1, v) for n, v in groups if n > 1]
    df = sum(k for k, _ in parts)
    return (sum(k * v for k, v in parts) / df, float(df)) if df else None


def pooled_seed_variance(groups: Iterable[Sequence[float]]) -> Pooled | None:
    """The seeds' variance pooled over groups of runs (one group: the seeds of one variant,
    :func:`pool`); None where no group has two runs."""
    return pool((len(g), float(np.var(g, ddof=1))) for g in map(list, groups) if len(g) > 1)


def _seed_term(a: Sequence[float], b: Sequence[float], paired: bool, relative: bool,
               pooled: tuple[Pooled | None, Pooled | None] = (None, None)) -> tuple[float, float] | None:
    """(standard error, degrees of freedom) of the difference of the seed means; None without spread.
    A side of one run (unpaired) takes its seed variance from ``pooled`` (A's, B's) where given; two
    such sides that take the same pooled variance rest on one estimate, with its degrees of freedom
    (Welch–Satterthwaite would count them twice, as if the two were estimated apart)."""
    if paired:
        d = [_diff(x, y, relative) for x, y in zip(a, b)]
        if len(d) < 2:
            return None
        se = float(np.std(d, ddof=1)) / math.sqrt(len(d))
        return (se, len(d) - 1.0) if se > 0 else None
    if relative:
        raise ValueError("a relative comparison needs runs paired by seed")
    parts = [(float(np.var(x, ddof=1)) / len(x), len(x) - 1.0) if len(x) > 1 else spread
             for x, spread in zip((a, b), pooled) if len(x) > 1 or (len(x) == 1 and spread is not None)]
    if len(parts) == 2 and len(a) == len(b) == 1 and pooled[0] == pooled[1]:
        parts = [(parts[0][0] + parts[1][0], parts[0][1])]
    var = sum(v for v, _ in parts)
    if var <= 0:
        return None
    df = var ** 2 / sum(v ** 2 / k for v, k in parts if v > 0)  # Welch–Satterthwaite
    return math.sqrt(var), df


def compare(a: Sequence[Sample], b: Sequence[Sample], paired: bool = False, relative: bool = False,
            pooled: tuple[Pooled | None, Pooled | None] = (None, None)) -> Interval | None:
    """The interval of mean(A) − mean(B) over the runs of each side (``relative``: 100 (A − B) / B),
    from the resampled test sentences and the seeds' spread (see the module docstring).

    ``paired``: A's and B's runs are the same seeds of one model (or of a model and its fine-tuned
    stage), in the same order. ``pooled``: (A's, B's) seed variance where that side has one run
    (:func:`pooled_seed_variance` over the experiment's variants that have several): one run says
    nothing of its own spread, but it has one. Runs without resamples (perplexity) give the seed
    term alone; None when there is neither (one run per side, no resamples, nothing pooled).
    """
    if not a or not b:
        return None
    if paired and len(a) != len(b):  # zip would drop the unpaired runs without a word
        raise ValueError(f"paired sides need the same runs, seed for seed: A has {len(a)}, B {len(b)}")
    observed = float(_diff(np.mean([s.full for s in a]), np.mean([s.full for s in b]), relative))
    sentences = all(len(s.resampled) for s in (*a, *b))
    if sentences:
        samples = _diff(np.mean([s.resampled for s in a], axis=0), np.mean([s.resampled for s in b], axis=0),
                        relative)
    else:
        samples = np.full(SAMPLES, observed)
    seed = _seed_term([s.full for s in a], [s.full for s in b], paired, relative, pooled)
    if seed is not None:
        se, df = seed
        samples = samples + se * np.random.default_rng(SEED + 1).standard_t(df, SAMPLES)
    elif not sentences:
        return None
    ordered = np.sort(samples)
    low = ordered[len(ordered) // 40]  # sacreBLEU's estimate_ci: the 2.5th percentile …
    high = ordered[len(ordered) - len(ordered) // 40 - 1]  # … and the 97.5th
    spread = np.abs(samples)
    # sacreBLEU's p-value; where no resample differs at all (two identical outputs) it would say 1/1001,
    # "significant", of a difference that is not there: p = 1 instead
    p = 1.0 if observed == 0 and not spread.any() else _compute_p_value(spread - spread.mean(), abs(observed))
    return Interval(float(low), float(high), float(p), observed, sentences, None if seed is None else seed[1])


@dataclass(frozen=True)
class Criterion:
    """What a claim needs of our difference A − B: ``≥ bound`` (``> bound`` when ``strict``), or
    ``≤`` (``<``) when ``below``; and, for *holds*, a 95% interval wholly beyond ``beyond`` on the
    paper's side (0 for a direction; for an "as good as" claim its allowed loss)."""

    bound: float
    strict: bool
    text: str
    below: bool = False
    beyond: float = 0.0

    def met(self, diff: float) -> bool:
        if self.below:
            return diff < self.bound if self.strict else diff <= self.bound
        return diff > self.bound if self.strict else diff >= self.bound

    def rule(self) -> str:
        """The criterion and the verdicts it gives, in words (the findings' ``criterion`` column)."""
        side, other = ("below", "above") if self.below else ("above", "below")
        beyond, bound = (f"{x:g}".replace("-", "−") for x in (self.beyond, self.bound))
        other = f"at or {other}" if self.strict else other  # a strict bound itself misses the criterion
        return (f"{self.text}, interval {side} {beyond} → holds; interval {other} {bound} → does not hold; "
                "else inconclusive")


def verdict(criterion: Criterion, diff: float, interval: Interval | None) -> str:
    """*holds*: the criterion met and the interval beyond ``criterion.beyond`` on the paper's side;
    *does not hold*: no value of the interval meets the criterion (the opposite direction,
    significantly, for a claim of direction; for a strict one, an interval of exactly 0 as well: a
    change that no resample shows is no gain); *inconclusive*: neither, or no interval."""
    if interval is None:
        return INCONCLUSIVE
    # the interval's end nearest the paper's side: if even it misses the criterion, every value does
    if criterion.below:
        if criterion.met(diff) and interval.high < criterion.beyond:
            return HOLDS
        return INCONCLUSIVE if criterion.met(interval.low) else FAILS
    if criterion.met(diff) and interval.low > criterion.beyond:
        return HOLDS
    return INCONCLUSIVE if criterion.met(interval.high) else FAILS


#: how the interval and the verdict are made, in one paragraph (table notes, docs)
METHOD = (
    f"95% interval and p: sacreBLEU's paired bootstrap ({SAMPLES:,} resamples of the test sentences, seed {SEED}, "
    "each rescored from the metric's per-sentence statistics in sacreBLEU: BLEU on the tokenized text with "
    "multi-bleu.perl's words and formula; chrF; the window as a mean over sentences); where a side has several seeds, each resample "
    "averages its seeds, and the seeds' spread enters as Student-t noise with the standard error of the difference "
    "of the seed means (Welch; paired by seed, on the seeds both sides have scored, for one model scored two ways or a fine-tuned model and its parent); a side of one seed takes the seed "
    "variance pooled over the experiment's variants that have several, where there are any. A verdict holds when the criterion is "
    "met and the interval lies beyond 0 on the paper's side (for 'as good as', above the allowed loss); it does not "
    "hold when no value of the interval meets the criterion; otherwise it is inconclusive. Each interval is its own "
    "claim's, with no correction for the number of claims: of twenty, about one can miss by chance. "
    f"Models stopped by train.max_steps give '{NO_VERDICT}'."
)


@dataclass(frozen=True)
class Comparison:
    """Two systems' translations of one test set compared (:func:`compare_translations`)."""

    metric: Metric  #: the registered metric compared
    a: float  #: A's score, the mean over its runs
    b: float
    sentences: int  #: test sentences resampled
    interval: Interval  #: every run has its resampled sentences, so there is always one


def compare_translations(family: str, ref: Path, a: Sequence[Path], b: Sequence[Path],
                         paired: bool = False) -> Comparison:
    """The difference A − B of the report's metric of ``family`` (one of
    :func:`nmtlib.report.metrics.text_families`: scored on the text as given,
    :data:`nmtlib.report.metrics.RAW`) between the runs ``a`` and ``b`` (one tokenized translation
    file each) of ``ref``, as the findings compute it (:func:`compare`, the same per-sentence rows
    by :meth:`Statistic.of_text`); where one side has a single run and the other several, the
    single run takes the seed variance pooled over both (:func:`pooled_seed_variance`).

    :raises MetricInputError: a file whose line count differs from the reference's, naming both."""
    metric = next(m for m in METRICS.values() if m.family == family and m.text == RAW)
    stat = Statistic.of_text(metric)
    if stat is None:
        raise ValueError(f"metric {metric.name!r} has no per-sentence statistics to compare translations by")
    refs = read_lines(ref)
    if not refs:
        raise ValueError(f"reference file {ref} is empty")
    idx = resample_indices(len(refs))
    sides = []
    for files in (a, b):
        samples = []
        for path in files:
            hyps = read_lines(path)
            check_parallel(f"hypothesis file {path}", hyps, f"reference file {ref}", refs)
            rows = stat.sentences(hyps, refs)
            samples.append(Sample(stat.full(rows), stat.resampled(rows, idx)))
        sides.append(samples)
    fulls = [[s.full for s in side] for side in sides]
    pooled = pooled_seed_variance(fulls) if not paired and min(map(len, fulls)) == 1 else None
    interval = compare(sides[0], sides[1], paired, pooled=(pooled, pooled))
    assert interval is not None  # every run of both sides has resampled sentences
    return Comparison(metric, float(np.mean(fulls[0])), float(np.mean(fulls[1])), len(refs), interval)

