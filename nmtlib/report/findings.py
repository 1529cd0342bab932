"""The papers' directional claims, checked on an experiment's own results (``findings.csv``).

A paper table says *how much* one system beats another on the paper's data; a reader of a
reproduction wants to know whether the *direction* holds on theirs. Each :class:`Claim` below is
one such statement of Luong et al. 2015, Bahdanau et al. 2015 or Shu & Nakayama 2017, with the
rows it compares (A and B), the paper's difference A − B, and a criterion on ours. One row of the
findings table per claim (Luong Table 4's score rankings give one row per pair), the claims the
experiment tests first:

- ``holds`` / ``does not hold``: the criterion on our difference, stated in ``criterion``;
- ``not tested``: the experiment has no variant (or decoding) for one side, said in ``note``.

Rows are found the way the paper tables find them: through each variant's ``paper_row``
(:mod:`nmtlib.report.paper`); where no variant names the paper's row, a claim that is about a
property rather than one table row (attention vs none, unknown-word replacement, ensembles,
RNNsearch vs RNNencdec, Flexible Attention vs global attention of the same architecture) falls
back to the variants that have that property, named in ``compared``.

Numbers are means over seeds. Where the experiment has several seeds, ``spread`` is the sum of
both sides' standard deviations over seeds, and a difference no larger than it is flagged
``within_spread`` (the claim's verdict stands, but the run-to-run noise could reverse it). With
one seed the spread is unknown (empty).

Metrics (the ``metric`` column names each, :data:`METRIC_LABELS`): BLEU is tokenized BLEU on the
test set before unknown-word replacement (the unknown-word claim compares after with before), as
in Luong's tables; Shu's claims use the Shu protocol of :mod:`nmtlib.report.tables` (raw output,
per-sentence window).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pandas as pd

from nmtlib.files import read_lines
from nmtlib.metrics.bleu import tokenized_bleu
from nmtlib.report.collect import (ExperimentSpec, Ours, attention_label, data_description, test_sentences,
                                   translation_path)
from nmtlib.report.paper import BAHDANAU_TABLE1, LUONG_TABLE1, LUONG_TABLE4, SHU_TABLE1, PaperRow, PaperTable
from nmtlib.report.tables import TableHtml, assignments, write_table

HOLDS, FAILS, UNTESTED = "holds", "does not hold", "not tested"

COLUMNS = ["claim", "source", "compared", "metric", "paper_a", "paper_b", "paper_diff", "ours_a", "ours_b",
           "ours_diff", "criterion", "verdict", "spread", "within_spread", "note"]

#: "A ≫ B" claims hold when A gains at least this many BLEU points
LARGE_GAIN = 2.0
#: "A ≈ B" / "small loss" claims hold when A loses at most this many BLEU points
SMALL_LOSS = 1.0


@dataclass(frozen=True)
class Side:
    """One side of a comparison: a variant (or ensemble) decoded with one setting."""

    name: str
    setting: str | None = None  #: decoding setting (None: the name's first, τ = ∞)
    metric: str = "bleu"

    def label(self) -> str:
        return self.name if self.setting is None else f"{self.name} ({self.setting})"


@dataclass(frozen=True)
class Criterion:
    """``ours_diff`` (A − B) must be ≥ ``bound`` (> when ``strict``), or ≤ (<) it when ``below``."""

    bound: float
    strict: bool
    text: str
    below: bool = False

    def holds(self, diff: float) -> bool:
        if self.below:
            return diff < self.bound if self.strict else diff <= self.bound
        return diff > self.bound if self.strict else diff >= self.bound


BETTER = Criterion(0.0, True, "A − B > 0")
NOT_WORSE = Criterion(0.0, False, "A − B ≥ 0")
LARGE = Criterion(LARGE_GAIN, False, f"A − B ≥ {LARGE_GAIN:g} BLEU")
SMALL = Criterion(-SMALL_LOSS, False, f"A − B ≥ −{SMALL_LOSS:g} BLEU")
#: window claims compare A's window with B's in percent (the paper's −56% / −64%)
HALF_WINDOW = Criterion(-50.0, False, "window change ≤ −50%", below=True)
SMALLER_WINDOW = Criterion(0.0, True, "window change < 0%", below=True)

#: what the ``metric`` column says for a side's metric (:meth:`Ours.value` names)
METRIC_LABELS = {
    "bleu": "test BLEU before unk replacement",
    "bleu_unk": "test BLEU after unk replacement",
    "ppl": "test perplexity",
    "dev_ppl": "dev perplexity",
    "avg_window": "test window (source words scored per step)",
}


def metric_label(a: Side | None, b: Side | None, metric: str | None = None) -> str:
    """The ``metric`` column: the metric of both sides, or of each side where they differ."""
    if metric is not None:
        return METRIC_LABELS.get(metric, metric)
    if a is not None and b is not None and a.metric != b.metric:
        return f"A: {METRIC_LABELS.get(a.metric, a.metric)}; B: {METRIC_LABELS.get(b.metric, b.metric)}"
    side = a or b
    return METRIC_LABELS.get(side.metric if side else "bleu", side.metric if side else "bleu")


class _Context:
    """What every claim needs: the spec, our numbers and the paper-row mapping."""

    def __init__(self, spec: ExperimentSpec, ours: Ours):
        self.spec, self.ours = spec, ours
        self.mapped = assignments(spec)
        self.ja = (spec.data.get("tgt") or "") == "ja"

    def mapped_to(self, table: PaperTable, key: str) -> str | None:
        names = self.mapped.get(table.name, {}).get(key) or []
        return names[0] if names else None

    def value(self, side: Side) -> float | None:
        return self.ours.value(side.name, side.metric, side.setting)

    def sd(self, side: Side) -> float | None:
        """Standard deviation of ``side``'s metric over seeds (None with fewer than 2)."""
        if side.metric in ("ppl", "dev_ppl"):
            df = self.ours.models[self.ours.models.variant == side.name] if not self.ours.models.empty else None
        else:
            df = self.ours.translation(side.name, side.setting or self.spec.settings[side.name][0])
        if df is None or len(df) < 2 or side.metric not in df or df[side.metric].isna().any():
            return None
        return float(df[side.metric].astype(float).std())

    def variants_where(self, test: Callable[[dict[str, Any]], bool]) -> list[str]:
        return [n for n, v in self.spec.variants.items() if test(v)]

    def best(self, names: list[str], metric: str = "bleu") -> str | None:
        scored = [(self.ours.value(n, metric), n) for n in names]
        scored = [(v, n) for v, n in scored if v is not None]
        return max(scored)[1] if scored else None

    def setting(self, name: str, tau: float | None) -> str | None:
        return self.ours.setting(name, tau)


@dataclass(frozen=True)
class Claim:
    claim: str
    source: str
    rows: Callable[[_Context], Iterator[dict[str, Any]]]


def _rows(table: PaperTable, *keys: str) -> list[PaperRow]:
    """The paper's rows of ``table`` with these keys, in that order."""
    by_key = {r.key: r for r in table.rows}
    return [by_key[k] for k in keys]


def _unmapped(table: PaperTable, *pairs: tuple[PaperRow, str | None]) -> str:
    """Why a comparison is not tested: the paper rows (of ``(row, variant)`` pairs) no variant maps."""
    return " and ".join(f"no variant regenerates {table.paper.split()[0]} {table.table} {r.label!r} "
                        f"(paper_row: {{{table.name}: {r.key}}})" for r, name in pairs if name is None)


def _row(ctx: _Context, claim: str, source: str, a: Side | None, b: Side | None, paper_a: float | None,
         paper_b: float | None, criterion: Criterion, missing: str = "", note: str = "",
         paper_diff: float | None = None, metric: str | None = None) -> dict[str, Any]:
    """One findings row comparing A with B (``missing``: why a side is absent)."""
    out: dict[str, Any] = {c: None for c in COLUMNS}
    out.update(claim=claim, source=source, metric=metric_label(a, b, metric),
               paper_a=paper_a, paper_b=paper_b, criterion=criterion.text, within_spread=None)
    if paper_diff is None and paper_a is not None and paper_b is not None:
        paper_diff = round(paper_a - paper_b, 4)
    out["paper_diff"] = paper_diff
    notes = [note] if note else []
    if a is None or b is None:
        out.update(compared="", verdict=UNTESTED, note="; ".join([missing, *notes]))
        return out
    out["compared"] = f"A: {a.label()} vs B: {b.label()}"
    va, vb = ctx.value(a), ctx.value(b)
    out.update(ours_a=va, ours_b=vb)
    if va is None or vb is None:
        absent = a.label() if va is None else b.label()
        out.update(verdict=UNTESTED, note="; ".join([f"no result for {absent} yet", *notes]))
        return out
    diff = round(va - vb, 4)
    out["ours_diff"] = diff
    out["verdict"] = HOLDS if criterion.holds(diff) else FAILS
    sda, sdb = ctx.sd(a), ctx.sd(b)
    if sda is not None and sdb is not None:
        spread = round(sda + sdb, 4)
        out["spread"] = spread
        out["within_spread"] = abs(diff) <= spread
        if out["within_spread"]:
            notes.append(f"the difference is within the run-to-run spread (±{spread:g} over seeds)")
    out["note"] = "; ".join(notes)
    return out


def _luong_chain(a_key: str, b_key: str, claim: str) -> Claim:
    """A step of Luong Table 1's chain: row ``a_key`` adds one thing to row ``b_key``."""
    table = LUONG_TABLE1

    def rows(ctx: _Context) -> Iterator[dict[str, Any]]:
        pa, pb = _rows(table, a_key, b_key)
        na, nb = ctx.mapped_to(table, a_key), ctx.mapped_to(table, b_key)
        missing = _unmapped(table, (pa, na), (pb, nb))
        yield _row(ctx, claim, f"{table.citation}", Side(na) if na else None, Side(nb) if nb else None,
                   pa.values.get("bleu"), pb.values.get("bleu"), BETTER, missing)

    return Claim(claim, table.citation, rows)


def _attention_vs_none(ctx: _Context) -> Iterator[dict[str, Any]]:
    claim = "Attention gives a large gain over the same kind of model without attention"
    pa, pb = _rows(LUONG_TABLE1, "global-location", "dropout")
    a, b = ctx.mapped_to(LUONG_TABLE1, "global-location"), ctx.mapped_to(LUONG_TABLE1, "dropout")
    note = ""
    if a is None or b is None:
        luong = lambda v: v["model"]["arch"] == "luong"  # noqa: E731
        a = ctx.best(ctx.variants_where(lambda v: luong(v) and v["model"]["attention"] != "none"))
        b = ctx.best(ctx.variants_where(lambda v: luong(v) and v["model"]["attention"] == "none"))
        note = "rows not in this experiment: compares its best Luong-architecture models with and without attention"
    yield _row(ctx, claim, LUONG_TABLE1.citation, Side(a) if a else None, Side(b) if b else None,
               pa.values["bleu"], pb.values["bleu"], LARGE,
               "needs a Luong-architecture variant with attention and one without", note)


def _table4_pairs(ctx: _Context) -> Iterator[dict[str, Any]]:
    """Luong Table 4: within each mechanism, every pair of scores the paper has BLEU for (the
    paper's better one as A), and concat against the others by perplexity (footnote 15)."""
    groups: dict[str, list[PaperRow]] = {}
    for r in LUONG_TABLE4.rows:  # keys are <mechanism>-<score>: global-dot, local-p-general, …
        groups.setdefault(r.key.rsplit("-", 1)[0], []).append(r)
    for mechanism, rows in groups.items():
        with_bleu = [r for r in rows if r.values.get("bleu") is not None]
        for i, r1 in enumerate(with_bleu):
            for r2 in with_bleu[i + 1:]:
                a, b = (r1, r2) if r1.values["bleu"] >= r2.values["bleu"] else (r2, r1)
                yield _scored_pair(ctx, a, b, "bleu")
        ppl_only = [r for r in rows if r.values.get("bleu") is None and r.values.get("ppl") is not None]
        best = min((r for r in with_bleu if r.values.get("ppl") is not None), key=lambda r: r.values["ppl"],
                   default=None)
        for r in ppl_only:
            if best is not None:
                yield _scored_pair(ctx, best, r, "ppl")
    # local-p against global with the same (general) score: the paper's best against its baseline
    pa, pb = _rows(LUONG_TABLE4, "local-p-general", "global-general")
    a, b = ctx.mapped_to(LUONG_TABLE4, pa.key), ctx.mapped_to(LUONG_TABLE4, pb.key)
    missing = _unmapped(LUONG_TABLE4, (pa, a), (pb, b))
    yield _row(ctx, "local-p attention (general) is at least as good as global attention (general)",
               LUONG_TABLE4.citation, Side(a) if a else None, Side(b) if b else None, pa.values["bleu"],
               pb.values["bleu"], NOT_WORSE, missing)


def _scored_pair(ctx: _Context, a: PaperRow, b: PaperRow, metric: str) -> dict[str, Any]:
    na, nb = ctx.mapped_to(LUONG_TABLE4, a.key), ctx.mapped_to(LUONG_TABLE4, b.key)
    missing = _unmapped(LUONG_TABLE4, (a, na), (b, nb))
    if metric == "bleu":
        claim = f"{a.label} scores higher BLEU than {b.label}"
        return _row(ctx, claim, LUONG_TABLE4.citation, Side(na) if na else None, Side(nb) if nb else None,
                    a.values["bleu"], b.values["bleu"], BETTER if a.values["bleu"] > b.values["bleu"] else NOT_WORSE,
                    missing)
    claim = f"{b.label} has a higher perplexity than {a.label}"
    return _row(ctx, claim, f"{LUONG_TABLE4.citation}, footnote 15", Side(nb, metric="ppl") if nb else None,
                Side(na, metric="ppl") if na else None, b.values["ppl"], a.values["ppl"],
                Criterion(0.0, True, "A − B > 0 (B's perplexity is lower)"), missing, metric="ppl")


def _unk_replacement(ctx: _Context) -> Iterator[dict[str, Any]]:
    claim = "Unknown-word replacement raises BLEU"
    pa, pb = _rows(LUONG_TABLE1, "unk", "local-p-general-feed")
    name = ctx.mapped_to(LUONG_TABLE1, "unk")
    note = ""
    if name is None:
        name = ctx.best(ctx.variants_where(lambda v: v["model"]["attention"] != "none"))
        note = "no variant regenerates Luong Table 1 '+ unk replace': compares the best attentional model"
    if name is not None and not ctx.spec.variants[name]["decode"].get("unk_replace", True):
        yield _row(ctx, claim, LUONG_TABLE1.citation, None, None, pa.values["bleu"], pb.values["bleu"], BETTER,
                   f"{name} is decoded with decode.unk_replace: false")
        return
    a = Side(name, metric="bleu_unk") if name else None
    note = "; ".join(x for x in ("A: after replacement (bleu_unk), B: before (bleu)", note) if x)
    yield _row(ctx, claim, LUONG_TABLE1.citation, a, Side(name) if name else None, pa.values["bleu"],
               pb.values["bleu"], BETTER, "needs an attentional variant", note)


def _ensembles(ctx: _Context) -> Iterator[dict[str, Any]]:
    claim = "An ensemble beats its best member"
    pa, pb = _rows(LUONG_TABLE1, "ensemble", "unk")
    note = "both sides before unknown-word replacement (the paper's rows are after it)"
    if not ctx.spec.ensembles:
        yield _row(ctx, claim, LUONG_TABLE1.citation, None, None, pa.values["bleu"], pb.values["bleu"], BETTER,
                   "the experiment has no ensemble")
        return
    for name, members in ctx.spec.ensembles.items():
        best = ctx.best(list(members))
        yield _row(ctx, claim, LUONG_TABLE1.citation, Side(name), Side(best) if best else None, pa.values["bleu"],
                   pb.values["bleu"], BETTER, f"no result for any member of {name} yet", note)


def _rnnsearch_sides(ctx: _Context) -> tuple[str | None, str | None, str]:
    a, b = ctx.mapped_to(BAHDANAU_TABLE1, "rnnsearch-50"), ctx.mapped_to(BAHDANAU_TABLE1, "rnnencdec-50")
    if a is not None and b is not None:
        return a, b, ""
    rnn = lambda v: v["model"]["arch"] == "rnnsearch"  # noqa: E731
    a = a or ctx.best(ctx.variants_where(lambda v: rnn(v) and attention_label(v) == "rnnsearch"))
    b = b or ctx.best(ctx.variants_where(lambda v: rnn(v) and v["model"]["attention"] == "none"))
    return a, b, "compares the experiment's RNNsearch-architecture models with and without attention"


def _rnnsearch(ctx: _Context) -> Iterator[dict[str, Any]]:
    pa, pb = _rows(BAHDANAU_TABLE1, "rnnsearch-50", "rnnencdec-50")
    a, b, note = _rnnsearch_sides(ctx)
    missing = "needs an RNNsearch variant and an RNNencdec variant (arch: rnnsearch, attention: none)"
    yield _row(ctx, "RNNsearch is much better than RNNencdec", BAHDANAU_TABLE1.citation, Side(a) if a else None,
               Side(b) if b else None, pa.values["bleu_all"], pb.values["bleu_all"], LARGE, missing, note)
    yield _length_gain(ctx, a, b, missing)


def _length_gain(ctx: _Context, a: str | None, b: str | None, missing: str) -> dict[str, Any]:
    """Bahdanau Fig. 2: RNNsearch's advantage grows with sentence length. Ours: the test set split
    at its median source length; A − B on the longer half minus A − B on the rest, each half
    scored with tokenized BLEU (first seed). A split with no free parameter: BLEU of the extreme
    length buckets rests on a handful of sentences (Multi30k: 7 and 1)."""
    claim = "RNNsearch's gain over RNNencdec is largest on long sentences"
    source = f"{BAHDANAU_TABLE1.paper}, Fig. 2"
    out = _row(ctx, claim, source, None, None, None, None, BETTER, missing)
    out["metric"] = "gain in test BLEU before unk replacement, long half − short half"
    if a is None or b is None:
        return out
    out["compared"] = f"A: {a} vs B: {b}; the gain on the sentences longer than the median vs the rest"
    src, refs = test_sentences(ctx.spec, "src"), test_sentences(ctx.spec, "tgt")
    hyps = {}
    for name in (a, b):
        path = translation_path(ctx.spec, name, ctx.spec.runs(name)[0], ctx.spec.settings[name][0]).with_suffix(".txt")
        hyps[name] = read_lines(path) if path.exists() else None
    if src is None or refs is None or any(h is None or len(h) != len(refs) for h in hyps.values()):
        out["note"] = "no translations of both models yet"
        return out
    median = statistics.median(len(s) for s in src)
    short = [i for i, s in enumerate(src) if len(s) <= median]
    long_ = [i for i, s in enumerate(src) if len(s) > median]
    if not short or not long_:
        out["note"] = "every test sentence has the same length"
        return out

    def gain(idx: list[int]) -> float:
        bleu = [tokenized_bleu([hyps[n][i] for i in idx], [" ".join(refs[i]) for i in idx]).to_dict()["bleu"]
                for n in (a, b)]
        return bleu[0] - bleu[1]

    gain_short, gain_long = gain(short), gain(long_)
    out.update(ours_a=round(gain_long, 4), ours_b=round(gain_short, 4), ours_diff=round(gain_long - gain_short, 4),
               verdict=HOLDS if gain_long > gain_short else FAILS,
               note=f"A: BLEU gain on the {len(long_)} sentences of more than {median:g} source words; B: on the "
                    f"other {len(short)}; the paper shows this as a figure (no number)")
    return out


def _shu_value(row_key: str, ctx: _Context, metric: str) -> float | None:
    (row,) = _rows(SHU_TABLE1, row_key)
    column = ("en_ja_" if ctx.ja else "de_en_") + metric
    return row.values.get(column)


def _shu_sides(ctx: _Context) -> tuple[str | None, str | None, str | None, str]:
    """(global baseline, flexible, fine-tuned) of Shu's architecture, through paper_row or the
    variants' properties; and a note on how they were found."""
    g = ctx.mapped_to(SHU_TABLE1, "global")
    f = ctx.mapped_to(SHU_TABLE1, "flexible-inf") or ctx.mapped_to(SHU_TABLE1, "flexible-1.2")
    ft = ctx.mapped_to(SHU_TABLE1, "finetuned-1.2")
    note = ""
    variants = ctx.spec.variants
    if f is None:
        flex = ctx.variants_where(lambda v: v["model"]["attention"] == "flexible" and not v.get("finetune_from"))
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


def _shu(ctx: _Context) -> Iterator[dict[str, Any]]:
    src = SHU_TABLE1.citation + (" (En→Ja)" if ctx.ja else " (De→En)")
    g, f, ft, note = _shu_sides(ctx)
    no_flex = "needs a Flexible Attention variant (attention: flexible)"
    # τ = ∞: Flexible Attention only adds a penalty term, so it should not lose to its baseline
    yield _row(ctx, "Flexible Attention at τ = ∞ is as good as global attention of the same architecture", src,
               Side(f) if f else None, Side(g) if g else None, _shu_value("flexible-inf", ctx, "bleu"),
               _shu_value("global", ctx, "bleu"), SMALL,
               no_flex if f is None else f"needs Shu's global-attention baseline beside {f} "
                                          f"(paper_row: {{shu_table1: global}})", note)
    s12 = ctx.setting(f, 1.2) if f else None
    missing12 = no_flex if f is None else f"{f} is not decoded at τ = 1.2 (decode.taus)"
    # τ = 1.2: fewer than half the scores computed, for little BLEU
    yield _window_row(ctx, "Flexible Attention at τ = 1.2 computes under half the attention scores", src,
                      Side(f, s12, "avg_window") if s12 else None, Side(f, None, "avg_window") if f else None,
                      _shu_value("flexible-1.2", ctx, "window"), _shu_value("flexible-inf", ctx, "window"),
                      HALF_WINDOW, missing12 if s12 is None else "")
    yield _row(ctx, "… for a small loss of BLEU", src, Side(f, s12) if s12 else None, Side(f) if f else None,
               _shu_value("flexible-1.2", ctx, "bleu"), _shu_value("flexible-inf", ctx, "bleu"), SMALL,
               missing12 if s12 is None else "")
    sft = ctx.setting(ft, 1.2) if ft else None
    missing_ft = ("needs a fine-tuned Flexible Attention variant (finetune_from, train.beta)" if ft is None
                  else f"{ft} is not decoded at τ = 1.2" if sft is None else missing12 if s12 is None else "")
    ok = sft is not None and s12 is not None
    yield _window_row(ctx, "β fine-tuning shrinks the window further (τ = 1.2)", src,
                      Side(ft, sft, "avg_window") if ok else None, Side(f, s12, "avg_window") if ok else None,
                      _shu_value("finetuned-1.2", ctx, "window"), _shu_value("flexible-1.2", ctx, "window"),
                      SMALLER_WINDOW, missing_ft)
    yield _row(ctx, "… at a small cost in BLEU (τ = 1.2)", src, Side(ft, sft) if ok else None,
               Side(f, s12) if ok else None, _shu_value("finetuned-1.2", ctx, "bleu"),
               _shu_value("flexible-1.2", ctx, "bleu"), SMALL, missing_ft)


def _window_row(ctx: _Context, claim: str, source: str, a: Side | None, b: Side | None, paper_a: float | None,
                paper_b: float | None, criterion: Criterion, missing: str) -> dict[str, Any]:
    """A window comparison: ``ours_diff`` is A's window relative to B's, in percent, and the
    criterion applies to that (no spread: windows of one model differ by decoding, not by seed)."""
    out = _row(ctx, claim, source, a, b, paper_a, paper_b, criterion, missing)
    pct = lambda x, y: None if x is None or y is None or not y else round(100 * (x - y) / y, 2)  # noqa: E731
    out.update(metric="window (A vs B: change %)", paper_diff=pct(paper_a, paper_b), spread=None, within_spread=None)
    change = pct(out["ours_a"], out["ours_b"])
    if change is not None:
        out.update(ours_diff=change, verdict=HOLDS if criterion.holds(change) else FAILS,
                   note="; ".join(n for n in str(out["note"] or "").split("; ") if n and "spread" not in n))
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


def findings_table(spec: ExperimentSpec, ours: Ours | None = None) -> pd.DataFrame:
    """One row per claim (per pair for Luong Table 4's rankings); see the module docstring."""
    ctx = _Context(spec, ours or Ours(spec))
    rows = [row for claim in CLAIMS for row in claim.rows(ctx)]
    rows.sort(key=lambda r: r["verdict"] == UNTESTED)  # what the experiment tests first, in claim order
    df = pd.DataFrame(rows, columns=COLUMNS)
    for column in ("paper_a", "paper_b", "paper_diff", "ours_a", "ours_b", "ours_diff", "spread"):
        df[column] = [None if v is None or (isinstance(v, float) and math.isnan(v)) else v for v in df[column]]
    return df


def counts(df: pd.DataFrame) -> dict[str, int]:
    """Verdicts counted: ``{"holds": n, "does not hold": n, "not tested": n}``."""
    return {v: int((df["verdict"] == v).sum()) for v in (HOLDS, FAILS, UNTESTED)}


def write_findings(df: pd.DataFrame, spec: ExperimentSpec, path_csv) -> TableHtml:
    """``findings.csv`` and its renderings, with the verdicts counted in the header; returns the HTML
    rendering's parts."""
    c = counts(df)
    seeds = len(spec.seeds)
    spread = ("with one seed the run-to-run spread is unknown: a small difference may not survive another seed"
              if seeds < 2 else f"spread: the sum of both sides' standard deviations over {seeds} seeds")
    header = (f"Experiment `{spec.experiment}` ({spec.results}), {data_description(spec)}, seeds {spec.seeds}: "
              f"of the papers' claims, {c[HOLDS]} hold, {c[FAILS]} "
              f"{'does' if c[FAILS] == 1 else 'do'} not hold and {c[UNTESTED]} are not tested by this experiment's "
              f"variants. A and B are the two rows compared; "
              f"paper_diff and ours_diff are A − B (the paper's on the paper's data); {spread}.")
    notes = ("BLEU: tokenized BLEU on the test set, before unknown-word replacement unless metric says after. Shu & "
             "Nakayama's claims use "
             "their protocol: the raw output and the per-sentence window. Criteria: 'helps' and 'beats' need a "
             f"positive difference, '≫' at least {LARGE_GAIN:g} BLEU, 'as good as' and 'small loss' a loss of at most "
             f"{SMALL_LOSS:g} BLEU. Rows are found through each variant's paper_row, else by the variants' "
             "properties (said in note).")
    return write_table(df, path_csv, f"The papers' claims on experiment {spec.experiment}", notes, header)
