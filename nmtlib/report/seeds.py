"""How many seeds a finding rests on, how far the seeds spread, and which variants want more.

A BLEU claim whose two variants come out close rests on the runs' luck as much as on the test
set: a side of one seed takes the spread pooled over other variants in the findings' intervals
(:mod:`nmtlib.report.significance`), which may not be its own. Close is under :data:`CLOSE_GAP`
points, or under :data:`ONE_SEED_REACH` times the experiment's own seed spread where that is wider
(:func:`close_gap`): one seed a side cannot tell a smaller difference from the luck of the runs.
The reference runs give both variants of such a claim :data:`FIRM_SEEDS` seeds; the findings'
header and ``nmtlib report`` name the variants whose config still gives them fewer
(:func:`seeds_wanted`, :func:`seeds_advice`). The spread itself (:func:`pooled_spread`, from the
summary) is said in the findings' header and a page's findings section (:func:`seed_spread`).
"""

from __future__ import annotations

import math
from typing import NamedTuple

import pandas as pd

from nmtlib.report.collect import SD, ExperimentSpec
from nmtlib.report.evidence import BLEU
from nmtlib.report.metrics import METRICS
from nmtlib.report.significance import pool
from nmtlib.report.tables import MISSING
from nmtlib.words import counted

#: a BLEU claim whose two variants come out closer than this many points is close: its verdict wants
#: FIRM_SEEDS seeds on both sides (:func:`seeds_wanted`)
CLOSE_GAP = 2.0
FIRM_SEEDS = 3
#: how many seed standard deviations s apart two sides of one seed each must be before a 95% interval
#: can leave out zero: their difference varies by s√2 from seed to seed, and the interval reaches about
#: twice that (:func:`close_gap`)
ONE_SEED_REACH = 2 * math.sqrt(2)


class Spread(NamedTuple):
    """How far one model's metric moves from seed to seed in an experiment (:func:`pooled_spread`)."""

    sd: float  #: the standard deviation pooled over the variants with several runs
    df: float  #: its degrees of freedom
    variants: int  #: how many variants it is pooled over


def pooled_spread(summary: pd.DataFrame, metric: str = BLEU) -> Spread | None:
    """The seeds' standard deviation of ``metric``, pooled over the summary's variants with several
    runs (:func:`pool`): the spread a side of one seed is given in the findings; None where no
    variant has two."""
    sd = f"{metric}{SD}"
    if sd not in summary.columns:
        return None
    rows = summary[(summary["runs"] > 1) & summary[sd].notna()]
    pooled = pool((int(r["runs"]), float(r[sd]) ** 2) for _, r in rows.iterrows())
    return None if pooled is None else Spread(math.sqrt(pooled[0]), pooled[1], len(rows))


def seed_spread(spread: Spread | None, metric: str = BLEU) -> str:
    """:func:`pooled_spread` of ``metric`` in a sentence (empty where there is none)."""
    if spread is None:
        return ""
    return (f"Seed to seed, one model's {METRICS[metric].label} has a standard deviation of {spread.sd:.2f} "
            f"here, pooled over the {counted(spread.variants, 'variant')} with several seeds scored ({spread.df:g} "
            "degrees of freedom): the spread a side of one seed is given.")


def close_gap(spread: Spread | None) -> float:
    """Under how many BLEU points two variants are close (:func:`seeds_wanted`): :data:`CLOSE_GAP`, or
    :data:`ONE_SEED_REACH` times the experiment's seed spread of BLEU (:func:`pooled_spread`) where
    that is wider, to one decimal."""
    return max(CLOSE_GAP, round(ONE_SEED_REACH * spread.sd, 1)) if spread is not None else CLOSE_GAP


def seeds_wanted(df: pd.DataFrame, spec: ExperimentSpec, gap: float = CLOSE_GAP,
                 seeds: int = FIRM_SEEDS) -> dict[str, list[str]]:
    """The variants that want more seeds, each with the claims that want them: the BLEU claims
    (tokenized BLEU on both sides) between two variants whose difference (of the means over the
    runs scored so far) is under ``gap`` points, where a variant's config gives it fewer than
    ``seeds`` seeds. An ensemble is not a variant to seed
    (its members are); a side compared with itself (another decoding, unknown-word replacement)
    is paired seed by seed, so its spread is already its own."""
    bleu = {m.label for m in METRICS.values() if m.family == "bleu"}
    wanted: dict[str, list[str]] = {}
    for r in df.itertuples(index=False):
        if (r.metric not in bleu or r.ours_diff is None or pd.isna(r.ours_diff) or abs(r.ours_diff) >= gap
                or r.variant_a == r.variant_b):
            continue
        for name in (r.variant_a, r.variant_b):
            if name in spec.variants and len(spec.seeds_of(name)) < seeds:
                wanted.setdefault(name, []).append(r.claim)
    return wanted


def seeds_cell(row: pd.Series) -> str:
    """How many models each side of a findings row is the mean of, ``"A / B"`` (``runs_a`` /
    ``runs_b``; an ensemble is one), with how many of them learned nothing with their attention
    (``idle_runs``, :mod:`nmtlib.report.idle`): ``"3 / 3 (1 idle)"``; a dash where the row does not
    say (an older report's)."""
    a, b = row.get("runs_a"), row.get("runs_b")
    if a is None or b is None or pd.isna(a) or pd.isna(b):
        return MISSING
    idle = row.get("idle_runs")
    idle = f" ({len(idle.split('; '))} idle)" if isinstance(idle, str) and idle else ""
    return f"{int(a)} / {int(b)}{idle}"


def seeds_advice(wanted: dict[str, list[str]], gap: float = CLOSE_GAP, seeds: int = FIRM_SEEDS) -> str:
    """:func:`seeds_wanted` in one sentence ("" where no variant wants seeds)."""
    if not wanted:
        return ""
    claims = len({c for cs in wanted.values() for c in cs})
    names = ", ".join(f"`{n}`" for n in wanted)
    why = (f" ({ONE_SEED_REACH:.1f} times the seeds' standard deviation here: one seed a side cannot tell a smaller "
           "difference from the luck of the runs)" if gap > CLOSE_GAP else "")
    return (f"{claims} BLEU {('claim compares', 'claims compare')[claims != 1]} variants under {gap:g} BLEU "
            f"apart{why}, with fewer than {seeds} seeds on a side: to firm up {('its', 'their')[claims != 1]} "
            f"{('verdict', 'verdicts')[claims != 1]}, give {names} `seeds: "
            f"[{', '.join(str(k + 1) for k in range(seeds))}]` in the experiment's config.")
