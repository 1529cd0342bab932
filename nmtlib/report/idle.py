"""Runs whose attention learned nothing: attentional models that trained to the end no better than
models without attention.

A training run can fail without an error. An attentional model whose attention never learns where to
look ends where a model without attention ends: its decoder reads an average of the source that tells
it little (in our small-jaen runs, one seed of local-p attention did so, where its two other seeds
came close to global attention). Such a run stays a seed of its variant, in every mean and interval:
leaving it out after seeing how it scored would be choosing runs. But a verdict that rests on it says
so, and the report names it.

The test reads the dev set only, the criterion every model was kept by: an attentional run is *idle*
when its dev perplexity is no lower than the lowest dev perplexity of the experiment's models without
attention (of any architecture; models stopped by ``train.max_steps`` take no part). An experiment
without a model without attention has nothing to hold its runs against.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from nmtlib.report.collect import ExperimentSpec, Ours, smoke_models

#: the registered metric both the idle test and a claim's choice among variants read (never a test score)
DEV_PPL = "dev_ppl"


@dataclass(frozen=True)
class IdleRun:
    """An attentional run whose dev perplexity ``dev_ppl`` is no lower than ``bar``, the lowest of the
    runs without attention (``bar_run``'s)."""

    variant: str
    run: str
    dev_ppl: float
    bar: float
    bar_run: str  #: "<variant> <run>" of the run without attention the bar is

    def __str__(self) -> str:
        # no semicolon: a findings row's idle_runs joins its runs with "; "
        return (f"{self.variant} {self.run} (dev perplexity {self.dev_ppl:.2f}, no lower than {self.bar:.2f} of "
                f"{self.bar_run} without attention)")


def idle(runs: Iterable[tuple[str, str, float, bool]]) -> list[IdleRun]:
    """The idle runs among ``runs``, each ``(variant, run, dev perplexity, has attention)``, in the
    order given (none where no run is without attention)."""
    runs = list(runs)
    without = [(ppl, f"{variant} {run}") for variant, run, ppl, attends in runs if not attends]
    if not without:
        return []
    bar, bar_run = min(without)
    return [IdleRun(variant, run, ppl, bar, bar_run) for variant, run, ppl, attends in runs if attends and ppl >= bar]


def idle_attention(spec: ExperimentSpec, ours: Ours) -> list[IdleRun]:
    """The experiment's idle runs among the models scored so far (:func:`idle`), in config order."""
    stopped = smoke_models(spec)
    return idle((name, run, ppl, v["model"]["attention"] != "none")
                for name, v in spec.variants.items() if name not in stopped
                for run, ppl in ours.per_run(name, DEV_PPL).items())


def idle_sentence(runs: list[IdleRun]) -> str:
    """The idle runs in a sentence for a report's or a page's reader (empty where there are none)."""
    if not runs:
        return ""
    which = "; ".join(map(str, runs))
    one = len(runs) == 1
    return (f"Attention learned nothing in {'this run' if one else 'these runs'}: {which}. A model whose dev "
            "perplexity is no lower than that of a model without attention has attention that does not help it; "
            f"{'it stays' if one else 'they stay'} in {'its' if one else 'their'} variant's means and intervals, "
            "as every seed does (leaving a run out after seeing its scores would be choosing), and the claims "
            "that rest on " + ("it" if one else "them") + " say so (findings: idle_runs).")
