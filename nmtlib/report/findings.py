"""The papers' directional claims, checked on an experiment's own results (``findings.csv``).

A paper table says *how much* one system beats another on the paper's data; a reader of a
reproduction wants to know whether the *direction* holds on theirs, and how sure that is. Each
:class:`Claim` below is one statement of Luong et al. 2015, Bahdanau et al. 2015 or Shu &
Nakayama 2017, with the rows it compares (A and B), the paper's difference A − B, and a
criterion on ours. One row of the findings table per claim (Luong Table 4's score rankings give
one row per pair), the claims the experiment tests first.

Every comparison has the 95% interval of A − B and its p-value (``ci_low``, ``ci_high``,
``p_value``): sacreBLEU's paired bootstrap over the test sentences and, where a side has several
seeds, their spread (:mod:`nmtlib.report.significance`); the window claims are bootstrapped over
sentences the same way. ``ours_a`` and ``ours_b`` are means over seeds with their standard
deviations (``ours_a_sd``, ``ours_b_sd``), over ``runs_a`` and ``runs_b`` runs of the variants
``variant_a`` and ``variant_b`` (each side's runs, values and resamples: :mod:`nmtlib.report.evidence`);
``idle_runs`` names the runs of either side whose attention learned nothing (:mod:`nmtlib.report.idle`),
which stay in its mean. The verdict (``criterion`` states it per row):

- ``holds``: the paper's direction and criterion met, the interval beyond 0 on the paper's side;
- ``does not hold``: no value of the interval meets the criterion;
- ``inconclusive``: within the noise (or no interval, said in ``note``);
- ``no verdict: smoke run``: a side's models were stopped by ``train.max_steps``;
- ``not tested``: the experiment has no variant (or decoding) for one side; ``reason`` says why
  in a few words (the landing page folds untested claims by it), ``note`` in full.

Every BLEU comparison is also made on each other metric family the registry declares for the
findings (chrF: ``chrf_a``, ``chrf_b``, ``chrf_diff``, ``chrf_ci_low``, ``chrf_ci_high``,
``chrf_p_value``; RIBES: ``ribes_a``, ...), on the same texts.

Rows are found the way the paper tables find them: through each variant's ``paper_row``
(:mod:`nmtlib.report.paper`); where no variant names the paper's row, a claim that is about a
property rather than one table row (attention vs none, unknown-word replacement, ensembles,
RNNsearch vs RNNencdec, Flexible Attention vs global attention of the same architecture) falls
back to the variants that have that property, named in ``compared``. How many seeds a claim's
sides want, and how far the seeds spread: :mod:`nmtlib.report.seeds`.

Metrics (the ``metric`` column names each, from :data:`nmtlib.report.metrics.METRICS`): BLEU is
tokenized BLEU on the test set before unknown-word replacement (the unknown-word claim compares
after with before), as in Luong's tables; Shu's claims use the Shu protocol of
:mod:`nmtlib.report.tables` (raw output, per-sentence window).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import pandas as pd

from nmtlib.report.collect import (Done, ExperimentSpec, Ours, attention_label, data_description, gated,
                                   runs_description, test_sentences)
from nmtlib.report.evidence import BLEU, BLEU_UNK, PPL, WINDOW, Evidence, Side, pct
from nmtlib.report.idle import IdleRun, idle_sentence
from nmtlib.report.metrics import METRICS, companion, metrics_in, over_sentences
from nmtlib.report.paper import BAHDANAU_TABLE1, LUONG_TABLE1, LUONG_TABLE4, SHU_TABLE1, PaperRow, PaperTable
from nmtlib.report.seeds import Spread, close_gap, seed_spread, seeds_advice, seeds_wanted
from nmtlib.report.significance import (FAILS, HOLDS, INCONCLUSIVE, METHOD, NO_VERDICT, UNTESTED, VERDICTS,
                                        Criterion, Interval, Sample, compare, verdict)
from nmtlib.report.tables import TableHtml, smoke_header, write_table

#: what unknown-word replacement had to work with (:mod:`nmtlib.metrics.unknowns`), in the unk claim's note
UNK_WORDS, UNK_HITS = "unk_words", "unk_replaced_in_reference"

#: "A ≫ B" claims hold when A gains at least this many BLEU points
LARGE_GAIN = 2.0
#: "A ≈ B" / "small loss" claims hold when A loses at most this many BLEU points
SMALL_LOSS = 1.0
BETTER = Criterion(0.0, True, "A − B > 0")
NOT_WORSE = Criterion(0.0, False, "A − B ≥ 0")
LARGE = Criterion(LARGE_GAIN, False, f"A − B ≥ {LARGE_GAIN:g} BLEU")
SMALL = Criterion(-SMALL_LOSS, False, f"A − B ≥ −{SMALL_LOSS:g} BLEU", beyond=-SMALL_LOSS)
#: window claims compare A's window with B's in percent (the paper's −56% / −64%)
HALF_WINDOW = Criterion(-50.0, False, "window change ≤ −50%", below=True)
SMALLER_WINDOW = Criterion(0.0, True, "window change < 0%", below=True)

#: Shu's τ = 1.2 window claim, worded by what the paper shows in the experiment's direction: under half
#: the scores in De→En (7.8 of 20.7 words), fewer in En→Ja (16.4 of 24.4)
TAU12_WINDOW = "Flexible Attention at τ = 1.2 computes {} attention scores"
#: a claim worded per direction → the one name it goes by beside other experiments' findings (a page's
#: ``--beside`` section, the index of pages), where each experiment's row keeps its own paper number
SAME_CLAIM = {TAU12_WINDOW.format("under half the"): TAU12_WINDOW.format("fewer")}


def claim_name(claim: str) -> str:
    """The name a findings row's ``claim`` goes by across experiments (:data:`SAME_CLAIM`)."""
    return SAME_CLAIM.get(claim, claim)


#: why a claim is not tested, in a few words (``reason``; the landing page folds untested claims by it)
NO_ROWS = "no variant regenerates the paper's rows"
NO_VARIANT = "the experiment has no variant of the kind the claim needs"
NOT_DECODED = "not decoded at the paper's τ"
NO_RESULTS = "no results yet"
ONE_LENGTH = "the test sentences have one length"
NO_UNK_REPLACE = "decoded without unknown-word replacement"
NO_UNKNOWN_WORDS = "no unknown word in the output to replace"


class Missing(NamedTuple):
    """Why a side of a comparison is absent: ``reason`` (one of the constants above) and the detail."""

    reason: str
    detail: str


BASE_COLUMNS = ["claim", "source", "compared", "metric", "paper_a", "paper_b", "paper_diff", "ours_a", "ours_a_sd",
                "ours_b", "ours_b_sd", "ours_diff", "ci_low", "ci_high", "p_value", "criterion", "verdict", "reason",
                "note", "variant_a", "runs_a", "variant_b", "runs_b", "idle_runs"]
#: the columns of each further metric family a comparison is also made on (``<family>_<part>``)
FAMILY_PARTS = ("a", "b", "diff", "ci_low", "ci_high", "p_value")


def families() -> list[str]:
    """The metric families the registry declares for the findings, beside the claims' own metric (chrF, RIBES)."""
    return list(dict.fromkeys(m.family for m in metrics_in("findings") if m.family))


def columns() -> list[str]:
    return [*BASE_COLUMNS, *(f"{family}_{part}" for family in families() for part in FAMILY_PARTS)]


def metric_label(a: Side | None, b: Side | None, metric: str | None = None) -> str:
    """The ``metric`` column: the metric of both sides in words, or of each side where they differ."""
    def words(name: str) -> str:
        return METRICS[name].label if name in METRICS else name

    if metric is not None:
        return words(metric)
    if a is not None and b is not None and a.metric != b.metric:
        return f"A: {words(a.metric)}; B: {words(b.metric)}"
    side = a or b
    return words(side.metric if side else BLEU)


@dataclass(frozen=True)
class Claim:
    claim: str
    source: str
    rows: Callable[[Evidence], Iterator[dict[str, Any]]]


def _rows(table: PaperTable, *keys: str) -> list[PaperRow]:
    """The paper's rows of ``table`` with these keys, in that order."""
    by_key = {r.key: r for r in table.rows}
    return [by_key[k] for k in keys]


def _unmapped(table: PaperTable, *pairs: tuple[PaperRow, str | None]) -> Missing:
    """Why a comparison is not tested: the paper rows (of ``(row, variant)`` pairs) no variant maps."""
    return Missing(NO_ROWS, " and ".join(f"no variant regenerates {table.paper.split()[0]} {table.table} "
                                         f"{r.label!r} (paper_row: {{{table.name}: {r.key}}})"
                                         for r, name in pairs if name is None))


def _interval_cells(interval: Interval | None, prefix: str = "") -> dict[str, Any]:
    if interval is None:
        return {f"{prefix}ci_low": None, f"{prefix}ci_high": None, f"{prefix}p_value": None}
    return {f"{prefix}ci_low": round(interval.low, 4), f"{prefix}ci_high": round(interval.high, 4),
            f"{prefix}p_value": round(interval.p_value, 4)}


#: the note of a paired comparison of one run a side in an experiment whose findings otherwise take in
#: the seeds' spread: nothing says how the difference itself varies from seed to seed
ONE_PAIR = ("one seed, paired: the interval covers the test sentences, not how this difference varies from seed "
            "to seed")


def _paired_note(runs: list[str]) -> str:
    """Why a difference is not that of the two sides' values: it pairs only the seeds both have."""
    if not runs:
        return "no seed scored on both sides yet: no difference seed for seed"
    return (f"A − B over {', '.join(runs)} only, the runs scored on both sides (paired by seed); each side's value "
            "is the mean of its own runs")


def _no_interval(a: Side) -> str:
    """Why a comparison has no interval (one run per side and nothing to resample)."""
    m = METRICS[a.metric]
    if not over_sentences(m):
        return f"no interval: {m.label} has no per-sentence scores to resample, and the seeds' spread needs two runs"
    what = "the translations" if m.sums is None else f"the per-sentence scores of {m.label}"
    return f"no interval: {what} to resample are missing, and the seeds' spread needs two runs"


#: the note of a comparison with a side whose runs include one whose attention learned nothing
IDLE_NOTE = ("rests on a run whose attention learned nothing (idle_runs: its dev perplexity no lower than a model "
             "without attention's), kept in its side's mean as every seed is")


def _row(ctx: Evidence, claim: str, source: str, a: Side | None, b: Side | None, paper_a: float | None,
         paper_b: float | None, criterion: Criterion, missing: Missing | None = None, note: str = "",
         paper_diff: float | None = None, metric: str | None = None, relative: bool = False) -> dict[str, Any]:
    """One findings row comparing A with B (``missing``: why a side is absent; ``relative``: A's
    change against B in percent, as the window claims have it)."""
    out: dict[str, Any] = {c: None for c in columns()}
    out.update(claim=claim, source=source, metric=metric_label(a, b, metric), paper_a=paper_a, paper_b=paper_b,
               criterion=criterion.rule())
    if paper_diff is None and paper_a is not None and paper_b is not None:
        paper_diff = pct(paper_a, paper_b) if relative else round(paper_a - paper_b, 4)
    out["paper_diff"] = paper_diff
    notes = [note] if note else []
    if a is None or b is None:
        missing = missing or Missing(NO_VARIANT, "")
        out.update(compared="", verdict=UNTESTED, reason=missing.reason, note="; ".join([missing.detail, *notes]))
        return out
    out["compared"] = f"A: {a.label()} vs B: {b.label()}"
    va, vb = ctx.value(a), ctx.value(b)
    out.update(ours_a=va, ours_a_sd=ctx.sd(a), ours_b=vb, ours_b_sd=ctx.sd(b), variant_a=a.name,
               runs_a=ctx.ours.runs(a.name, a.setting), variant_b=b.name, runs_b=ctx.ours.runs(b.name, b.setting))
    if va is None or vb is None:
        absent = a.label() if va is None else b.label()
        out.update(verdict=UNTESTED, reason=NO_RESULTS, note="; ".join([f"no result for {absent} yet", *notes]))
        return out
    diff, interval, paired = ctx.difference(a, b, a.metric, b.metric, relative)
    if paired is not None:
        notes.append(_paired_note(paired))
    if diff is None:
        out.update(ours_diff=None, verdict=UNTESTED, reason=NO_RESULTS, note="; ".join(notes))
        return out
    out.update(ours_diff=diff, **_interval_cells(interval), verdict=verdict(criterion, diff, interval))
    if interval is None:
        notes.append(_no_interval(a))
    elif len(ctx.paired_runs(a, b, a.metric, b.metric) or []) == 1 and ctx.spec.several_seeds():
        notes.append(ONE_PAIR)
    if ctx.is_smoke(a.name) or ctx.is_smoke(b.name):
        out["verdict"] = NO_VERDICT
    sides = [("A and B", a)] if a.name == b.name else [("A", a), ("B", b)]  # one model two ways: its runs once
    used = set(paired) if paired is not None else None  # the seeds a paired comparison keeps, where fewer
    if idle := [f"{label}: {r}" for label, side in sides for r in ctx.idle_in(side.name)
                if used is None or side.name in ctx.spec.ensembles or r.run in used]:
        out["idle_runs"] = "; ".join(idle)
        notes.append(IDLE_NOTE)
    for family in families():
        ma, mb = companion(a.metric, family), companion(b.metric, family)
        if ma is None or mb is None:
            continue
        fa, fb = ctx.ours.value(a.name, ma.name, a.setting), ctx.ours.value(b.name, mb.name, b.setting)
        if fa is None or fb is None:
            continue
        fdiff, finterval, _ = ctx.difference(a, b, ma.name, mb.name)
        out.update({f"{family}_a": fa, f"{family}_b": fb, f"{family}_diff": fdiff,
                    **_interval_cells(finterval, f"{family}_")})
    out["note"] = "; ".join(notes)
    return out


def _luong_chain(a_key: str, b_key: str, claim: str) -> Claim:
    """A step of Luong Table 1's chain: row ``a_key`` adds one thing to row ``b_key``."""
    table = LUONG_TABLE1

    def rows(ctx: Evidence) -> Iterator[dict[str, Any]]:
        pa, pb = _rows(table, a_key, b_key)
        na, nb = ctx.mapped_to(table, a_key), ctx.mapped_to(table, b_key)
        yield _row(ctx, claim, f"{table.citation}", Side(na) if na else None, Side(nb) if nb else None,
                   pa.values.get("bleu"), pb.values.get("bleu"), BETTER, _unmapped(table, (pa, na), (pb, nb)))

    return Claim(claim, table.citation, rows)


def _attention_vs_none(ctx: Evidence) -> Iterator[dict[str, Any]]:
    claim = "Attention gives a large gain over the same kind of model without attention"
    pa, pb = _rows(LUONG_TABLE1, "global-location", "dropout")
    a, b = ctx.mapped_to(LUONG_TABLE1, "global-location"), ctx.mapped_to(LUONG_TABLE1, "dropout")
    note = ""
    if a is None or b is None:
        luong = lambda v: v["model"]["arch"] == "luong"  # noqa: E731
        a = ctx.best(ctx.variants_where(lambda v: luong(v) and v["model"]["attention"] != "none"))
        b = ctx.best(ctx.variants_where(lambda v: luong(v) and v["model"]["attention"] == "none"))
        note = ("rows not in this experiment: compares its Luong-architecture models with and without attention, "
                "each the one of lowest dev perplexity of its kind")
    yield _row(ctx, claim, LUONG_TABLE1.citation, Side(a) if a else None, Side(b) if b else None,
               pa.values["bleu"], pb.values["bleu"], LARGE,
               Missing(NO_VARIANT, "needs a Luong-architecture variant with attention and one without"), note)


def _table4_pairs(ctx: Evidence) -> Iterator[dict[str, Any]]:
    """Luong Table 4: within each mechanism, every pair of scores the paper has BLEU for (the
    paper's better one as A), and concat against the others by perplexity (footnote 15)."""
    groups: dict[str, list[PaperRow]] = {}
    for r in LUONG_TABLE4.rows:  # keys are <mechanism>-<score>: global-dot, local-p-general, …
        groups.setdefault(r.key.rsplit("-", 1)[0], []).append(r)
    for rows in groups.values():
        with_bleu = [r for r in rows if r.values.get("bleu") is not None]
        for i, r1 in enumerate(with_bleu):
            for r2 in with_bleu[i + 1:]:
                a, b = (r1, r2) if r1.values["bleu"] >= r2.values["bleu"] else (r2, r1)
                yield _scored_pair(ctx, a, b, BLEU)
        ppl_only = [r for r in rows if r.values.get("bleu") is None and r.values.get("ppl") is not None]
        best = min((r for r in with_bleu if r.values.get("ppl") is not None), key=lambda r: r.values["ppl"],
                   default=None)
        for r in ppl_only:
            if best is not None:
                yield _scored_pair(ctx, best, r, PPL)
    # local-p against global with the same (general) score: the paper's best against its baseline
    pa, pb = _rows(LUONG_TABLE4, "local-p-general", "global-general")
    a, b = ctx.mapped_to(LUONG_TABLE4, pa.key), ctx.mapped_to(LUONG_TABLE4, pb.key)
    yield _row(ctx, "local-p attention (general) is at least as good as global attention (general)",
               LUONG_TABLE4.citation, Side(a) if a else None, Side(b) if b else None, pa.values["bleu"],
               pb.values["bleu"], NOT_WORSE, _unmapped(LUONG_TABLE4, (pa, a), (pb, b)))


def _scored_pair(ctx: Evidence, a: PaperRow, b: PaperRow, metric: str) -> dict[str, Any]:
    na, nb = ctx.mapped_to(LUONG_TABLE4, a.key), ctx.mapped_to(LUONG_TABLE4, b.key)
    missing = _unmapped(LUONG_TABLE4, (a, na), (b, nb))
    if metric == BLEU:
        claim = f"{a.label} scores higher BLEU than {b.label}"
        return _row(ctx, claim, LUONG_TABLE4.citation, Side(na) if na else None, Side(nb) if nb else None,
                    a.values["bleu"], b.values["bleu"], BETTER if a.values["bleu"] > b.values["bleu"] else NOT_WORSE,
                    missing)
    claim = f"{b.label} has a higher perplexity than {a.label}"
    return _row(ctx, claim, f"{LUONG_TABLE4.citation}, footnote 15", Side(nb, metric=PPL) if nb else None,
                Side(na, metric=PPL) if na else None, b.values["ppl"], a.values["ppl"],
                Criterion(0.0, True, "A − B > 0 (B's perplexity is lower)"), missing, metric=PPL)


def _unk_replacement(ctx: Evidence) -> Iterator[dict[str, Any]]:
    claim = "Unknown-word replacement raises BLEU"
    pa, pb = _rows(LUONG_TABLE1, "unk", "local-p-general-feed")
    name = ctx.mapped_to(LUONG_TABLE1, "unk")
    note = ""
    if name is None:
        name = ctx.best(ctx.variants_where(lambda v: v["model"]["attention"] != "none"))
        note = ("no variant regenerates Luong Table 1 '+ unk replace': compares the attentional model of lowest dev "
                "perplexity")
    if name is not None and not ctx.spec.variants[name]["decode"].get("unk_replace", True):
        yield _row(ctx, claim, LUONG_TABLE1.citation, None, None, pa.values["bleu"], pb.values["bleu"], BETTER,
                   Missing(NO_UNK_REPLACE, f"{name} is decoded with decode.unk_replace: false"))
        return
    if name is not None and ctx.ours.value(name, UNK_WORDS) == 0:  # in every run: the claim has nothing to act on
        yield _row(ctx, claim, LUONG_TABLE1.citation, None, None, pa.values["bleu"], pb.values["bleu"], BETTER,
                   Missing(NO_UNKNOWN_WORDS, f"{name}'s test translations have no unknown word"), note)
        return
    a = Side(name, metric=BLEU_UNK) if name else None
    note = "; ".join(x for x in ("A: after replacement, B: before, the same translation", _unknowns(ctx, name), note)
                     if x)
    yield _row(ctx, claim, LUONG_TABLE1.citation, a, Side(name) if name else None, pa.values["bleu"],
               pb.values["bleu"], BETTER, Missing(NO_VARIANT, "needs an attentional variant"), note)


def _unknowns(ctx: Evidence, name: str | None) -> str:
    """What replacement had to work with in ``name``'s output (means over its runs), or ""."""
    unknown = ctx.ours.value(name, UNK_WORDS) if name else None
    if unknown is None:
        return ""
    hits = ctx.ours.value(name, UNK_HITS)
    replaced = "" if hits is None else f", {hits:.0f}% of them replaced by a word of the sentence's reference"
    return f"{unknown:.2f}% of the output words are unknown{replaced}"


def _ensembles(ctx: Evidence) -> Iterator[dict[str, Any]]:
    claim = "An ensemble beats its best member"
    pa, pb = _rows(LUONG_TABLE1, "ensemble", "unk")
    note = ("B: the member of lowest dev perplexity; both sides before unknown-word replacement (the paper's rows "
            "are after it)")
    if not ctx.spec.ensembles:
        yield _row(ctx, claim, LUONG_TABLE1.citation, None, None, pa.values["bleu"], pb.values["bleu"], BETTER,
                   Missing(NO_VARIANT, "the experiment has no ensemble"))
        return
    for name, members in ctx.spec.ensembles.items():
        best = ctx.best(list(members))
        yield _row(ctx, claim, LUONG_TABLE1.citation, Side(name), Side(best) if best else None, pa.values["bleu"],
                   pb.values["bleu"], BETTER, Missing(NO_RESULTS, f"no result for any member of {name} yet"), note)


def _rnnsearch_sides(ctx: Evidence) -> tuple[str | None, str | None, str]:
    a, b = ctx.mapped_to(BAHDANAU_TABLE1, "rnnsearch-50"), ctx.mapped_to(BAHDANAU_TABLE1, "rnnencdec-50")
    if a is not None and b is not None:
        return a, b, ""
    rnn = lambda v: v["model"]["arch"] == "rnnsearch"  # noqa: E731
    a = a or ctx.best(ctx.variants_where(lambda v: rnn(v) and attention_label(v) == "rnnsearch"))
    b = b or ctx.best(ctx.variants_where(lambda v: rnn(v) and v["model"]["attention"] == "none"))
    return a, b, ("compares the experiment's RNNsearch-architecture models with and without attention (of lowest dev "
                  "perplexity where there are several)")


def _rnnsearch(ctx: Evidence) -> Iterator[dict[str, Any]]:
    pa, pb = _rows(BAHDANAU_TABLE1, "rnnsearch-50", "rnnencdec-50")
    a, b, note = _rnnsearch_sides(ctx)
    missing = Missing(NO_VARIANT, "needs an RNNsearch variant and an RNNencdec variant (arch: rnnsearch, "
                                  "attention: none)")
    yield _row(ctx, "RNNsearch is much better than RNNencdec", BAHDANAU_TABLE1.citation, Side(a) if a else None,
               Side(b) if b else None, pa.values["bleu_all"], pb.values["bleu_all"], LARGE, missing, note)
    yield _length_gain(ctx, a, b, missing)


def _halves(ctx: Evidence, a: str, b: str, metric: str,
            long_: np.ndarray) -> tuple[float, float, Interval | None, tuple[int, int]]:
    """(A − B on the long sentences, A − B on the rest, the interval of their difference, the runs of
    A and of B it takes): every run of each side scored on each half of the test set, resampled over
    the whole test set."""
    sides = {}
    for name in (a, b):
        halves = [ctx.samples(Side(name), metric, keep) for keep in (long_, ~long_)]
        if not all(halves) or len(halves[0]) != len(halves[1]):
            return math.nan, math.nan, None, (0, 0)
        sides[name] = halves
    gain = [float(np.mean([s.full for s in sides[a][k]]) - np.mean([s.full for s in sides[b][k]])) for k in (0, 1)]
    # per run, the score on the long half minus that on the short one: A's minus B's is the claim's difference
    per_run = {n: [Sample(lo.full - sh.full, lo.resampled - sh.resampled) for lo, sh in zip(*sides[n])]
               for n in (a, b)}
    return gain[0], gain[1], compare(per_run[a], per_run[b]), (len(per_run[a]), len(per_run[b]))


def _length_gain(ctx: Evidence, a: str | None, b: str | None, missing: Missing) -> dict[str, Any]:
    """Bahdanau Fig. 2: RNNsearch's advantage grows with sentence length. Ours: the test set split
    at its median source length; A − B on the longer half minus A − B on the rest, each half
    scored with tokenized BLEU (sacreBLEU's, as multi-bleu.perl), the mean over each side's runs.
    A split with no free parameter: BLEU of the extreme length buckets rests on a handful of
    sentences (Multi30k: 7 and 1). The interval resamples the whole test set, each resample split
    by the same rule, and adds the seeds' spread of each side's long − short difference."""
    claim = "RNNsearch's gain over RNNencdec is largest on long sentences"
    out = _row(ctx, claim, f"{BAHDANAU_TABLE1.paper}, Fig. 2", None, None, None, None, BETTER, missing)
    out["metric"] = "gain in test BLEU before unk replacement, long half − short half"
    if a is None or b is None:
        return out
    out.update(compared=f"A: {a} vs B: {b}; the gain on the sentences longer than the median vs the rest",
               reason=None, note="")
    sentences = test_sentences(ctx.spec, "src")
    src = None if sentences is None else np.array([len(s) for s in sentences])
    if src is None or not len(src):
        out.update(verdict=UNTESTED, reason=NO_RESULTS, note="no test source yet")
        return out
    median = statistics.median(src)
    long_ = src > median
    if long_.all() or not long_.any():
        out.update(verdict=UNTESTED, reason=ONE_LENGTH, note="every test sentence has the same length")
        return out
    gain_long, gain_short, interval, (runs_a, runs_b) = _halves(ctx, a, b, BLEU, long_)
    if math.isnan(gain_long):
        out.update(verdict=UNTESTED, reason=NO_RESULTS, note="no translations of both models yet")
        return out
    diff = round(gain_long - gain_short, 4)
    # the seeds are those of the two models (A and B of `compared`), each half's gain the mean over them
    out.update(ours_a=round(gain_long, 4), ours_b=round(gain_short, 4), ours_diff=diff, **_interval_cells(interval),
               variant_a=a, runs_a=runs_a, variant_b=b, runs_b=runs_b,
               verdict=NO_VERDICT if ctx.is_smoke(a) or ctx.is_smoke(b) else verdict(BETTER, diff, interval),
               note=f"A: BLEU gain on the {int(long_.sum())} sentences of more than {median:g} source words; B: on "
                    f"the other {int((~long_).sum())}; the paper shows this as a figure (no number)")
    for family in families():
        m = companion(BLEU, family)
        if m is not None:
            fl, fs, fi, _ = _halves(ctx, a, b, m.name, long_)
            if not math.isnan(fl):
                out.update({f"{family}_a": round(fl, 4), f"{family}_b": round(fs, 4),
                            f"{family}_diff": round(fl - fs, 4), **_interval_cells(fi, f"{family}_")})
    return out


def _shu_direction(spec: ExperimentSpec) -> tuple[str, str]:
    """Which of Shu & Nakayama's two directions (Table 1: En→Ja, De→En) an experiment's claims are
    held to: the column prefix and the words the source cites. Japanese on either side takes En→Ja:
    the paper has no Ja→En, and the same language pair, with its long-distance reordering, is the
    nearer reference for how many source words attention needs than De→En."""
    src, tgt = spec.data.get("src") or "", spec.data.get("tgt") or ""
    if tgt == "ja":
        return "en_ja_", "En→Ja"
    if src == "ja":
        return "en_ja_", "En→Ja, the reverse of this experiment's direction: the paper has no Ja→En"
    return "de_en_", "De→En"


def _shu_value(row_key: str, ctx: Evidence, metric: str) -> float | None:
    (row,) = _rows(SHU_TABLE1, row_key)
    return row.values.get(_shu_direction(ctx.spec)[0] + metric)


def _shu_sides(ctx: Evidence) -> tuple[str | None, str | None, str | None, str]:
    """(global baseline, Flexible Attention, fine-tuned) of Shu's architecture, through paper_row
    or the variants' properties (Flexible Attention: a gated mechanism); and a note on how they were found."""
    g = ctx.mapped_to(SHU_TABLE1, "global")
    f = ctx.mapped_to(SHU_TABLE1, "flexible-inf") or ctx.mapped_to(SHU_TABLE1, "flexible-1.2")
    ft = ctx.mapped_to(SHU_TABLE1, "finetuned-1.2")
    note = ""
    variants = ctx.spec.variants
    if f is None:
        flex = ctx.variants_where(lambda v: gated(v) and not v.get("finetune_from"))
        f = flex[0] if flex else None
    if ft is None and f is not None:
        children = [n for n, v in variants.items() if v.get("finetune_from") == f]
        ft = children[0] if children else None
    if g is None and f is not None:
        same = {k: v for k, v in variants[f]["model"].items() if k not in ("attention", "sigma", "score", "window")}
        g = next((n for n, v in variants.items() if attention_label(v) == "global" and not v.get("finetune_from")
                  and {k: x for k, x in v["model"].items() if k in same} == same), None)
        if g is not None:
            note = f"{g}: global attention on {f}'s architecture"
    return g, f, ft, note


def _shu(ctx: Evidence) -> Iterator[dict[str, Any]]:
    src = f"{SHU_TABLE1.citation} ({_shu_direction(ctx.spec)[1]})"
    g, f, ft, note = _shu_sides(ctx)
    no_flex = Missing(NO_VARIANT, "needs a Flexible Attention variant (a gated mechanism: attention: flexible)")
    # τ = ∞: Flexible Attention only adds a penalty term, so it should not lose to its baseline
    yield _row(ctx, "Flexible Attention at τ = ∞ is as good as global attention of the same architecture", src,
               Side(f) if f else None, Side(g) if g else None, _shu_value("flexible-inf", ctx, "bleu"),
               _shu_value("global", ctx, "bleu"), SMALL,
               no_flex if f is None else Missing(NO_VARIANT, f"needs Shu's global-attention baseline beside {f} "
                                                             f"(paper_row: {{shu_table1: global}})"), note)
    s12 = ctx.setting(f, 1.2) if f else None
    missing12 = no_flex if f is None else Missing(NOT_DECODED, f"{f} is not decoded at τ = 1.2 (decode.taus)")
    # τ = 1.2: fewer scores computed, for little BLEU. Under half of them in the paper's De→En (7.8 of
    # 20.7 words) but not its En→Ja (16.4 of 24.4): each direction is held to what the paper shows there
    paper_12, paper_inf = _shu_value("flexible-1.2", ctx, "window"), _shu_value("flexible-inf", ctx, "window")
    half = bool(paper_12 is not None and paper_inf and paper_12 <= paper_inf / 2)
    yield _window_row(ctx, TAU12_WINDOW.format("under half the" if half else "fewer"), src,
                      Side(f, s12, WINDOW) if s12 else None, Side(f, None, WINDOW) if f else None,
                      paper_12, paper_inf, HALF_WINDOW if half else SMALLER_WINDOW, missing12)
    yield _row(ctx, "… for a small loss of BLEU", src, Side(f, s12) if s12 else None, Side(f) if f else None,
               _shu_value("flexible-1.2", ctx, "bleu"), _shu_value("flexible-inf", ctx, "bleu"), SMALL, missing12)
    sft = ctx.setting(ft, 1.2) if ft else None
    missing_ft = (Missing(NO_VARIANT, "needs a fine-tuned Flexible Attention variant (finetune_from, train.beta)")
                  if ft is None else Missing(NOT_DECODED, f"{ft} is not decoded at τ = 1.2") if sft is None
                  else missing12)
    ok = sft is not None and s12 is not None
    yield _window_row(ctx, "β fine-tuning shrinks the window further (τ = 1.2)", src,
                      Side(ft, sft, WINDOW) if ok else None, Side(f, s12, WINDOW) if ok else None,
                      _shu_value("finetuned-1.2", ctx, "window"), paper_12, SMALLER_WINDOW, missing_ft)
    yield _row(ctx, "… at a small cost in BLEU (τ = 1.2)", src, Side(ft, sft) if ok else None,
               Side(f, s12) if ok else None, _shu_value("finetuned-1.2", ctx, "bleu"),
               _shu_value("flexible-1.2", ctx, "bleu"), SMALL, missing_ft)
    # the paper's headline (abstract; §5.2): fine-tuned, τ = 1.2 computes 56% (En→Ja) and 64% (De→En)
    # fewer scores than attending to every source word (τ = ∞)
    yield _window_row(ctx, "With β fine-tuning, τ = 1.2 computes under half the attention scores of τ = ∞", src,
                      Side(ft, sft, WINDOW) if sft is not None else None, Side(f, None, WINDOW) if f else None,
                      _shu_value("finetuned-1.2", ctx, "window"), paper_inf, HALF_WINDOW,
                      no_flex if f is None else missing_ft)


def _window_row(ctx: Evidence, claim: str, source: str, a: Side | None, b: Side | None, paper_a: float | None,
                paper_b: float | None, criterion: Criterion, missing: Missing) -> dict[str, Any]:
    """A window comparison: ``ours_diff`` is A's window relative to B's, in percent, and the
    criterion applies to that; the interval resamples the sentences' windows and pairs the seeds."""
    out = _row(ctx, claim, source, a, b, paper_a, paper_b, criterion, missing, relative=True)
    out["metric"] = "window (A vs B: change %)"
    return out


CLAIMS: tuple[Claim, ...] = (
    _luong_chain("reverse", "base", "Reversing the source helps the base model"),
    _luong_chain("dropout", "reverse", "Dropout helps"),
    Claim("Attention ≫ no attention", LUONG_TABLE1.citation, _attention_vs_none),
    _luong_chain("feed", "global-location", "Input feeding helps global attention (location)"),
    Claim("Score rankings of Luong Table 4", LUONG_TABLE4.citation, _table4_pairs),
    Claim("Unknown-word replacement helps", LUONG_TABLE1.citation, _unk_replacement),
    Claim("Ensembles beat their best member", LUONG_TABLE1.citation, _ensembles),
    Claim("RNNsearch ≫ RNNencdec", BAHDANAU_TABLE1.citation, _rnnsearch),
    Claim("Flexible Attention", SHU_TABLE1.citation, _shu),
)


def findings_table(spec: ExperimentSpec, ours: Ours | None = None, evidence: Evidence | None = None) -> pd.DataFrame:
    """One row per claim (per pair for Luong Table 4's rankings); see the module docstring. ``evidence``:
    the run's, where the caller reads it too (its idle runs), else gathered here from ``ours``."""
    ctx = evidence or Evidence(spec, ours or Ours(spec))
    rows = [row for claim in CLAIMS for row in claim.rows(ctx)]
    rows.sort(key=lambda r: r["verdict"] == UNTESTED)  # what the experiment tests first, in claim order
    df = pd.DataFrame(rows, columns=columns())
    numeric = [c for c in df.columns if c not in ("claim", "source", "compared", "metric", "criterion", "verdict",
                                                  "reason", "note", "variant_a", "variant_b")]
    for column in numeric:
        df[column] = [None if v is None or (isinstance(v, float) and math.isnan(v)) else v for v in df[column]]
    return df


def counts(df: pd.DataFrame) -> dict[str, int]:
    """Verdicts counted: ``{verdict: n}`` for every verdict of :data:`nmtlib.report.significance.VERDICTS`."""
    return {v: int((df["verdict"] == v).sum()) for v in VERDICTS}


def verdict_summary(df: pd.DataFrame) -> str:
    """The verdicts counted in words: "3 hold, 1 does not hold, 2 are inconclusive and 13 are not tested".
    Of a run still going, the claims that wait for a model not yet scored are counted apart from
    those the experiment's variants do not test: "…, 9 wait for results and 4 are not tested"."""
    c = counts(df)
    waiting = int(((df["verdict"] == UNTESTED) & (df["reason"] == NO_RESULTS)).sum())
    c[UNTESTED] -= waiting
    words = {HOLDS: ("holds", "hold"), FAILS: ("does not hold", "do not hold"),
             INCONCLUSIVE: ("is inconclusive", "are inconclusive"), NO_VERDICT: ("gets no verdict (smoke run)",
                                                                                 "get no verdict (smoke run)"),
             UNTESTED: ("is not tested", "are not tested")}
    parts = [f"{c[v]} {words[v][c[v] != 1]}" for v in VERDICTS
             if v in (HOLDS, FAILS) or (c[v] and v != UNTESTED)]
    if waiting:
        parts.append(f"{waiting} {('waits', 'wait')[waiting != 1]} for results")
    parts.append(f"{c[UNTESTED]} {words[UNTESTED][c[UNTESTED] != 1]}")
    return f"{', '.join(parts[:-1])} and {parts[-1]}"


#: what the findings' criteria mean, under the table (and in the HTML report's caption)
CRITERIA = (
    "BLEU: tokenized BLEU on the test set, before unknown-word replacement unless metric says after. Shu & "
    "Nakayama's claims use their protocol: the raw output and the per-sentence window. Criteria: 'helps' and "
    "'beats' need a positive difference, '≫' at least "
    f"{LARGE_GAIN:g} BLEU, 'as good as' and 'small loss' a loss of at most {SMALL_LOSS:g} BLEU. " + METHOD +
    " Rows are found through each variant's paper_row, else by the variants' properties (said in note)."
)


def write_findings(df: pd.DataFrame, spec: ExperimentSpec, path_csv: Path, spread: Spread | None,
                   done: Done, idle: list[IdleRun] | None = None) -> TableHtml:
    """``findings.csv`` and its renderings, with the verdicts counted in the header, the runs found
    scored (``done``, :meth:`~nmtlib.report.collect.Ours.progress` of the reading the findings are made
    from), the seeds' ``spread`` of BLEU (:func:`pooled_spread`), the seeds it advises and the runs
    whose attention learned nothing (``idle``, :func:`nmtlib.report.idle.idle_attention`); returns the
    HTML rendering's parts."""
    seeds = ("ours_a and ours_b are means over seeds (± their standard deviation)" if spec.several_seeds() else
             "one seed: the interval covers the test sentences, not the run-to-run spread")
    header = (smoke_header(spec) +
              f"Experiment `{spec.experiment}` ({spec.results}), {data_description(spec)}, "
              f"{runs_description(spec, done)}: "
              f"of the papers' claims, {verdict_summary(df)} by this experiment's variants. A and B are the two rows "
              f"compared; paper_diff and ours_diff are A − B (the paper's on the paper's data), ci_low and ci_high "
              f"the 95% interval of ours_diff and p_value its p-value; {seeds}.")
    if sentence := seed_spread(spread):
        header += " " + sentence
    gap = close_gap(spread)
    advice = seeds_advice(seeds_wanted(df, spec, gap), gap)
    if advice:
        header += " " + advice
    if sentence := idle_sentence(idle or []):
        header += " " + sentence
    return write_table(df, path_csv, f"The papers' claims on experiment {spec.experiment}", CRITERIA, header)
