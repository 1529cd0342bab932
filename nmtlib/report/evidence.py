"""A claim's two sides and what stands behind each: our numbers per run and the test sentences' resamples.

A findings row (:mod:`nmtlib.report.findings`) compares side A with side B (:class:`Side`: a variant
or ensemble, a decoding setting, a metric). :class:`Evidence` holds what every claim reads to do so,
gathered once per report: the experiment's spec and numbers, which variant regenerates which paper
row, the models stopped by ``train.max_steps``, and each run's per-sentence statistics and bootstrap
resamples (read once per run and metric, whatever sentences a claim keeps).
:meth:`Evidence.difference` is A − B with its 95% interval (:mod:`nmtlib.report.significance`):
seed for seed where the two sides are one model or a fine-tuning and its parent, on the runs both
have scored; otherwise each side's mean over its runs, a side of one seed taking the seed variance
pooled over the experiment's variants that have several.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from nmtlib.report.collect import ExperimentSpec, Ours, smoke_models
from nmtlib.report.idle import DEV_PPL, IdleRun, idle_attention
from nmtlib.report.metrics import METRICS, Metric, RunFiles, reference_lines
from nmtlib.report.paper import PaperTable
from nmtlib.report.significance import (Interval, Pooled, Sample, Statistic, compare, pooled_seed_variance,
                                        resample_indices)
from nmtlib.report.tables import assignments

#: the registered metrics the claims compare (:data:`nmtlib.report.metrics.METRICS`)
BLEU, BLEU_UNK, PPL, WINDOW = "bleu_before_unk_replace", "bleu_after_unk_replace", "test_ppl", "avg_window"


@dataclass(frozen=True)
class Side:
    """One side of a comparison: a variant (or ensemble) decoded with one setting, and a metric."""

    name: str
    setting: str | None = None  #: decoding setting (None: the name's first, τ = ∞)
    metric: str = BLEU  #: a registered metric

    def label(self) -> str:
        return self.name if self.setting is None else f"{self.name} ({self.setting})"


class Evidence:
    """What every claim reads: the spec, our numbers, the paper-row mapping, the smoke-run models
    and the bootstrap's resamples of each run (computed once per run and metric)."""

    def __init__(self, spec: ExperimentSpec, ours: Ours):
        self.spec, self.ours = spec, ours
        self.mapped = assignments(spec)
        self.smoke = smoke_models(spec)
        self.refs = reference_lines(spec.layout)
        self.idx = resample_indices(len(self.refs)) if self.refs else None
        self._samples: dict[tuple, Sample | None] = {}
        self._stats: dict[tuple, tuple[Statistic, np.ndarray] | None] = {}
        self._pooled: dict[str, Pooled | None] = {}
        self.idle = idle_attention(spec, ours)

    def mapped_to(self, table: PaperTable, key: str) -> str | None:
        names = self.mapped.get(table.name, {}).get(key) or []
        return names[0] if names else None

    def value(self, side: Side) -> float | None:
        return self.ours.value(side.name, side.metric, side.setting)

    def sd(self, side: Side) -> float | None:
        return self.ours.sd(side.name, side.metric, side.setting)

    def idle_in(self, name: str) -> list[IdleRun]:
        """The idle runs (:mod:`nmtlib.report.idle`) among ``name``'s runs (an ensemble's members')."""
        members = self.spec.ensembles.get(name, [name])
        return [r for r in self.idle if r.variant in members]

    def is_smoke(self, name: str) -> bool:
        """Whether ``name``'s models (an ensemble's members') were stopped by ``train.max_steps``."""
        return any(n in self.smoke for n in self.spec.ensembles.get(name, [name]))

    def variants_where(self, test: Callable[[dict[str, Any]], bool]) -> list[str]:
        return [n for n, v in self.spec.variants.items() if test(v)]

    def best(self, names: list[str]) -> str | None:
        """The one of ``names`` with the lowest dev perplexity (mean over its runs), the criterion
        each model's epoch was kept by; never a test score, so no side of a claim is chosen on the
        set that judges it. None where none has a dev perplexity (an ensemble has none)."""
        scored = [(self.ours.value(n, DEV_PPL), n) for n in names]
        scored = [(v, n) for v, n in scored if v is not None]
        return min(scored)[1] if scored else None

    def setting(self, name: str, tau: float | None) -> str | None:
        return self.ours.setting(name, tau)

    def _sample(self, name: str, run: str, setting: str, metric: str, keep: np.ndarray | None) -> Sample | None:
        """One run's score and resampled scores on ``metric`` (None: its texts are missing)."""
        key = (name, run, setting, metric, None if keep is None else keep.tobytes())
        if key not in self._samples:
            rows = self._statistics(name, run, setting, metric)
            self._samples[key] = None if rows is None else Sample(rows[0].full(rows[1], keep),
                                                                  rows[0].resampled(rows[1], self.idx, keep))
        return self._samples[key]

    def _statistics(self, name: str, run: str, setting: str, metric: str) -> tuple[Statistic, np.ndarray] | None:
        """One run's per-sentence statistics on ``metric``, read once whatever sentences a claim
        keeps (None: its files are missing, or not one row per test sentence)."""
        key = (name, run, setting, metric)
        if key not in self._stats:
            self._stats[key] = self._read_rows(METRICS[metric], RunFiles(self.spec.layout, name, run, setting))
        return self._stats[key]

    def _read_rows(self, m: Metric, files: RunFiles) -> tuple[Statistic, np.ndarray] | None:
        if self.refs is None:
            return None
        text = Statistic.of_text(m) if m.text else None
        values: Any
        if text is not None:  # the same rows as `nmtlib compare` takes of two files
            stat, values = text, files.hypotheses(m.text)
        elif m.sentences is not None:
            stat, values = Statistic(), m.sentences(files)
        elif m.sums is not None:
            stat, values = Statistic(of_sums=m.of_sums), m.sums(files)
        else:
            return None
        if values is None or len(values) != len(self.refs):
            return None
        return stat, stat.sentences(values, self.refs)

    def samples(self, side: Side, metric: str | None = None, keep: np.ndarray | None = None,
                runs: Sequence[str] | None = None) -> list[Sample]:
        """Every run of ``side`` on ``metric`` (default: the side's), resampled over the test
        sentences where its texts are there (``keep``: those sentences only), else its value alone
        (``runs``: these runs only, the seeds it is paired on)."""
        metric = metric or side.metric
        setting = side.setting or self.spec.settings[side.name][0]
        runs = list(runs) if runs is not None else self.spec.runs(side.name)
        resampled = dict(zip(runs, (self._sample(side.name, r, setting, metric, keep) for r in runs)))
        if keep is not None or all(s is not None for s in resampled.values()):
            return [s for s in resampled.values() if s is not None]
        per_run = self.ours.per_run(side.name, metric, side.setting)
        scored = [r for r in runs if r in per_run]  # the runs the side's value is the mean of
        if scored and all(resampled[r] is not None for r in scored):
            # a run still going: the seeds scored so far have their texts, the others are not there yet
            return [s for r in scored if (s := resampled[r]) is not None]
        return [Sample(per_run[r], np.empty(0)) for r in scored]

    def pairs(self, a: Side, b: Side) -> bool:
        """Whether A's and B's runs pair seed for seed: one model (two decoding settings, or before
        and after unknown-word replacement), or a fine-tuned stage and the model it started from."""
        return a.name == b.name or self.spec.variants.get(a.name, {}).get("finetune_from") == b.name

    def paired_runs(self, a: Side, b: Side, metric_a: str, metric_b: str) -> list[str] | None:
        """The runs A and B are compared on seed for seed (None: they do not pair): those both have
        scored, so that a run still going, or a spec that gives one side fewer seeds, pairs the same
        seeds on both sides and the seed term is of their differences."""
        if not self.pairs(a, b):
            return None
        scored_a = self.ours.per_run(a.name, metric_a, a.setting)
        scored_b = self.ours.per_run(b.name, metric_b, b.setting)
        return [r for r in self.spec.runs(a.name) if r in scored_a and r in scored_b]

    def pooled(self, name: str, metric: str) -> Pooled | None:
        """The seed variance a one-seed side ``name`` takes on ``metric``: pooled over the
        experiment's variants with several seeds (their scored runs at τ = ∞); None for an ensemble,
        whose spread is not a single model's."""
        if name in self.spec.ensembles:
            return None
        if metric not in self._pooled:
            groups = [list(self.ours.per_run(n, metric).values()) for n in self.spec.several_seeds()]
            self._pooled[metric] = pooled_seed_variance(groups)
        return self._pooled[metric]

    def difference(self, a: Side, b: Side, metric_a: str, metric_b: str,
                   relative: bool = False) -> tuple[float | None, Interval | None, list[str] | None]:
        """Our A − B on these metrics (``relative``: A's change against B, in percent), its 95%
        interval, and the runs it pairs where they are fewer than a side has scored (else None).
        Paired sides are compared on the seeds both have scored, the difference as well as its
        interval, so the two always describe the same models; each side's own value stays the mean
        of all its scored runs."""
        runs = self.paired_runs(a, b, metric_a, metric_b)
        if runs is None:
            va, vb = self.ours.value(a.name, metric_a, a.setting), self.ours.value(b.name, metric_b, b.setting)
            pooled = (None, None) if relative else (self.pooled(a.name, metric_a), self.pooled(b.name, metric_b))
            return change(va, vb, relative), compare(self.samples(a, metric_a), self.samples(b, metric_b),
                                                      False, relative, pooled), None
        per_run = (self.ours.per_run(a.name, metric_a, a.setting), self.ours.per_run(b.name, metric_b, b.setting))
        va, vb = (round(float(np.mean([p[r] for r in runs])), 4) if runs else None for p in per_run)
        interval = compare(self.samples(a, metric_a, runs=runs), self.samples(b, metric_b, runs=runs), True,
                           relative) if runs else None
        fewer = any(len(runs) < len(p) for p in per_run)
        return change(va, vb, relative), interval, runs if fewer else None


def change(a: float | None, b: float | None, relative: bool) -> float | None:
    """A − B (``relative``: in percent of B), as the findings give it; None without both."""
    if a is None or b is None:
        return None
    return pct(a, b) if relative else round(a - b, 4)


def pct(x: float | None, y: float | None) -> float | None:
    """100 (x − y) / y, rounded as the findings give a relative change; None without both (or y = 0)."""
    return None if x is None or y is None or not y else round(100 * (x - y) / y, 2)
