"""The papers' tables and figures, each declared once, with the papers' numbers and their source (paper, year, table).

A paper table is one :class:`PaperTable` in :data:`TABLES` (docs/extending.md, "Adding a paper
table"): its rows, the paper's in the paper's order with the paper's numbers; the function that
builds it with our numbers beside the paper's (``build``, ``"module:function"``, imported when the
report runs: checking a config reads the rows only); and its entry in the HTML report (``shows``,
beside the paper and the table, and its ``caption``, which the report writes out for Snakemake).
The report writes it, the workflow declares its files and the report lists it from this
declaration alone. A variant of an experiment
says which row(s) it regenerates with its ``paper_row`` config entry, a mapping from table name
to a row key (or a list of keys)::

    variants:
      local-p-general-feed:
        paper_row:
          luong_table1: [local-p-general-feed, unk]   # row "… local-p (general) + feed" and "+ unk replace"
          luong_table4: local-p-general
          luong_table6: local-p-general

A figure the report draws after a paper's is one :class:`PaperFigure` in :data:`FIGURES`: the
paper's figure it follows, its label in the HTML report and its caption, which the report writes
out for Snakemake and ``nmtlib publish`` prints under the figure.

Row keys are the short ``key`` of each :class:`PaperRow` (or one of its ``aliases``); the
paper's own row text is accepted too (case, spaces, ``τ``/``tau`` and ``∞``/``inf`` are ignored).
The numbers are transcribed from the papers (cited by authors, year, title and table, see
:data:`PAPERS`); numbers the papers print with a qualifier (``>7.0``, ``x``) are kept as ``None``
with the qualifier in ``note``.
"""

from __future__ import annotations

import dataclasses
import importlib
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from nmtlib.registry import MECHANISMS

if TYPE_CHECKING:
    import pandas as pd

    from nmtlib.report.collect import ExperimentSpec, Ours

LUONG = "Luong et al. 2015"
BAHDANAU = "Bahdanau et al. 2015"
SHU = "Shu & Nakayama 2017"

#: short name → the paper in full: authors, year, title, venue (what the tables cite)
PAPERS = {
    LUONG: "Luong, Pham & Manning 2015, \"Effective Approaches to Attention-based Neural Machine Translation\" "
           "(EMNLP 2015)",
    BAHDANAU: "Bahdanau, Cho & Bengio 2015, \"Neural Machine Translation by Jointly Learning to Align and "
              "Translate\" (ICLR 2015, arXiv:1409.0473)",
    SHU: "Shu & Nakayama 2017, \"An Empirical Study of Adequate Vision Span for Attention-Based Neural Machine "
         "Translation\" (Workshop on Neural Machine Translation 2017)",
}


@dataclass(frozen=True)
class PaperRow:
    key: str  #: short handle used in ``paper_row`` configs
    label: str  #: the paper's row text
    values: dict[str, float | None]  #: metric → the paper's number (None: not reported)
    section: str = ""  #: the paper's row group (e.g. "Our NMT systems")
    progressive: bool = False  #: part of a chain of rows each adding to the previous (deltas)
    delta: float | None = None  #: the paper's printed improvement over the previous row
    unk_replace: bool = False  #: BLEU of this row is after unknown-word replacement
    tau: float | None = None  #: Flexible Attention threshold of the row (None: τ = ∞)
    aliases: tuple[str, ...] = ()
    note: str = ""  #: qualifiers the paper prints instead of a number
    source: str = ""  #: where in the paper, when not the table itself (e.g. a footnote)


@dataclass(frozen=True)
class PaperTable:
    name: str  #: file name of the regenerated table, e.g. ``luong_table1``
    paper: str
    table: str  #: e.g. "Table 1"
    title: str
    setting: str  #: the paper's data and metric
    rows: tuple[PaperRow, ...]
    notes: str = ""
    #: ``module:function`` of its builder, ``f(spec, ours, table) -> DataFrame``: one row per paper
    #: row and variant regenerating it (:class:`nmtlib.report.tables.Builder` has the shared pieces)
    build: str = field(kw_only=True)
    #: what the table shows, in a few words: its label in the HTML report, beside paper and table
    shows: str = field(kw_only=True)
    #: what the table is and what its columns mean, in reStructuredText: its caption in the HTML
    #: report (:meth:`caption_rst`), followed there by its metric columns
    caption: str = field(kw_only=True)

    def __post_init__(self) -> None:
        module, _, function = self.build.partition(":")
        if not (module and function and self.shows and self.caption.strip()):
            raise ValueError(f"paper table {self.name!r}: build is 'module:function', shows a few words, caption "
                             f"its reStructuredText")

    def caption_rst(self, columns: str) -> str:
        """The table's caption in the HTML report: :attr:`caption`, why the table is there, and its
        metric columns (``columns``, :func:`nmtlib.report.metrics.columns_rst`). ``nmtlib report``
        writes it beside the table (:meth:`nmtlib.layout.Layout.caption`), so that a paper table is
        declared here alone; Snakemake reads captions from files."""
        return (f"{self.caption.strip()}\n\nThis table is in the report because a variant (or an ensemble) of the "
                f"experiment regenerates one of its rows (``paper_row: {{{self.name}: <row>}}`` in the variant's "
                f"config); an experiment that regenerates none does not write it.\n\n{columns}")

    def builder(self) -> Callable[[ExperimentSpec, Ours, PaperTable], pd.DataFrame]:
        """The function that builds the table (imports its module, pandas with it)."""
        module, _, function = self.build.partition(":")
        return getattr(importlib.import_module(module), function)

    @property
    def citation(self) -> str:
        return f"{self.paper}, {self.table}"

    @property
    def reference(self) -> str:
        """The paper in full (authors, year, title, venue) and the table: what a table header cites."""
        return f"{PAPERS[self.paper]}, {self.table}"

    def find(self, handle: str) -> list[PaperRow]:
        """Rows a ``paper_row`` handle names (a key, an alias or the paper's label)."""
        h = normalise(handle)
        return [r for r in self.rows if h in {normalise(r.key), normalise(r.label), *map(normalise, r.aliases)}]

    def handles(self) -> list[str]:
        return [r.key for r in self.rows] + sorted({a for r in self.rows for a in r.aliases})


def normalise(text: str) -> str:
    text = text.lower().replace("τ", "tau").replace("∞", "inf").replace("–", "-")
    return re.sub(r"[\s_]+", "", text)


def _r(key: str, label: str, section: str = "", **kw: Any) -> PaperRow:
    """A row: the keywords that are no :class:`PaperRow` field are the paper's numbers (``bleu=20.7``)."""
    options = {f.name for f in dataclasses.fields(PaperRow)}
    values = {k: kw.pop(k) for k in list(kw) if k not in options}
    return PaperRow(key, label, values, section, **kw)


#: the module of the builders of the tables below
_BUILT = "nmtlib.report.tables"

_OURS = "Our NMT systems"

_PROGRESSIVE_NOTES = (
    "paper_test_ppl / ours_test_ppl: test perplexity. paper_bleu / ours_bleu: tokenized BLEU on the test set, after "
    "unknown-word replacement where unk_replaced is True, before it otherwise. paper_delta: the paper's "
    "printed gain of a row over the row right above it (its systems only). ours_delta: our gain over the same row "
    "(ours_delta_vs), scored the same way; empty, with a note, where this experiment has no number for that row."
)

LUONG_TABLE1 = PaperTable(
    "luong_table1", LUONG, "Table 1", "WMT'14 English-German results (progressive improvements)",
    "WMT'14 En→De, newstest2014; perplexity and tokenized BLEU (multi-bleu.perl)",
    (
        _r("wmt14-winner", "Winning WMT'14 system – phrase-based + large LM (Buck et al., 2014)", "WMT'14 system",
           ppl=None, bleu=20.7),
        _r("rnnsearch-jean", "RNNsearch (Jean et al., 2015)", "Existing NMT systems", ppl=None, bleu=16.5),
        _r("rnnsearch-jean-unk", "RNNsearch + unk replace (Jean et al., 2015)", "Existing NMT systems",
           ppl=None, bleu=19.0, unk_replace=True),
        _r("rnnsearch-jean-ensemble",
           "RNNsearch + unk replace + large vocab + ensemble 8 models (Jean et al., 2015)", "Existing NMT systems",
           ppl=None, bleu=21.6, unk_replace=True),
        _r("base", "Base", _OURS, ppl=10.6, bleu=11.3, progressive=True),
        _r("reverse", "Base + reverse", _OURS, ppl=9.9, bleu=12.6, progressive=True, delta=1.3),
        _r("dropout", "Base + reverse + dropout", _OURS, ppl=8.1, bleu=14.0, progressive=True, delta=1.4),
        _r("global-location", "Base + reverse + dropout + global attention (location)", _OURS,
           ppl=7.3, bleu=16.8, progressive=True, delta=2.8),
        _r("feed", "Base + reverse + dropout + global attention (location) + feed input", _OURS,
           ppl=6.4, bleu=18.1, progressive=True, delta=1.3, aliases=("global-location-feed",)),
        _r("local-p-general-feed", "Base + reverse + dropout + local-p attention (general) + feed input", _OURS,
           ppl=5.9, bleu=19.0, progressive=True, delta=0.9, aliases=("local-p",)),
        _r("unk", "Base + reverse + dropout + local-p attention (general) + feed input + unk replace", _OURS,
           ppl=None, bleu=20.9, progressive=True, delta=1.9, unk_replace=True),
        _r("ensemble", "Ensemble 8 models + unk replace", _OURS, ppl=None, bleu=23.0, progressive=True, delta=2.1,
           unk_replace=True),
    ),
    notes=_PROGRESSIVE_NOTES,
    build=f"{_BUILT}:progressive_table", shows="ppl, BLEU by system, En→De",
    caption="""\
**Luong et al. 2015, Table 1** (WMT'14 En→De, newstest2014) regenerated: every row of the paper
with the paper's numbers beside ours. Rows of the progressive chain (Base → + reverse → + dropout
→ + global attention (location) → + feed input → local-p (general) + feed → + unk replace →
ensemble) carry the paper's printed gain and ours.

- ``paper_test_ppl``, ``ours_test_ppl``: test perplexity (lower is better).
- ``paper_bleu``, ``ours_bleu``: tokenized BLEU (multi-bleu.perl, 0–100) on the test set, after
  unknown-word replacement where ``unk_replaced`` is True, before it otherwise.
- ``paper_delta``: the paper's printed gain in BLEU over the row right above; ``ours_delta``: our
  gain over the same row (``ours_delta_vs``), scored the same way, empty (with a ``note``) where we
  have no number for that row.
- ``ours_from``: the variant (seeds, setting) behind our numbers; an empty *ours* means no variant
  regenerates the row (a variant names its rows with ``paper_row: {luong_table1: ...}``; the first
  ensemble fills the ensemble row).

Ours are means over seeds on this experiment's data (said above the table): compare gains, not
values.
""",
)

LUONG_TABLE3 = PaperTable(
    "luong_table3", LUONG, "Table 3", "WMT'15 German-English results (progressive improvements)",
    "WMT'15 De→En, newstest2015; perplexity and tokenized BLEU",
    (
        _r("wmt15-sota", "SOTA – phrase-based (Edinburgh)", "WMT'15 systems", ppl=None, bleu=29.2),
        _r("mila-rerank", "NMT + 5-gram rerank (MILA)", "WMT'15 systems", ppl=None, bleu=27.6),
        _r("base-reverse", "Base (reverse)", _OURS, ppl=14.3, bleu=16.9, progressive=True, aliases=("base",)),
        _r("global-location", "+ global (location)", _OURS, ppl=12.7, bleu=19.1, progressive=True, delta=2.2),
        _r("global-location-feed", "+ global (location) + feed", _OURS, ppl=10.9, bleu=20.1, progressive=True,
           delta=1.0, aliases=("feed",)),
        _r("global-dot-drop-feed", "+ global (dot) + drop + feed", _OURS, ppl=9.7, bleu=22.8, progressive=True,
           delta=2.7),
        _r("unk", "+ global (dot) + drop + feed + unk", _OURS, ppl=None, bleu=24.9, progressive=True, delta=2.1,
           unk_replace=True),
    ),
    notes="The base system already reverses the source; each row adds to the previous one. " + _PROGRESSIVE_NOTES,
    build=f"{_BUILT}:progressive_table", shows="ppl, BLEU by system, De→En",
    caption="""\
**Luong et al. 2015, Table 3** (WMT'15 De→En, newstest2015) regenerated: Base (reverse) → + global
(location) → + feed → + global (dot) + dropout + feed → + unk replace, the paper's numbers beside
ours.

- ``paper_test_ppl``, ``ours_test_ppl``: test perplexity (lower is better).
- ``paper_bleu``, ``ours_bleu``: tokenized BLEU (0–100) on the test set, after unknown-word
  replacement where ``unk_replaced`` is True, before it otherwise.
- ``paper_delta``, ``ours_delta``: gain in BLEU over the row right above (ours against
  ``ours_delta_vs``, empty with a ``note`` where we have no number for that row).
- ``ours_from``: the variant behind our numbers; rows no variant regenerates keep the paper's
  numbers and an empty *ours*.
""",
)

LUONG_TABLE4 = PaperTable(
    "luong_table4", LUONG, "Table 4", "Attentional architectures",
    "WMT'14 En→De, newstest2014; every model with reverse + dropout + feed input; tokenized BLEU",
    (
        _r("global-location", "global (location)", ppl=6.4, bleu=18.1, bleu_unk=19.3, delta=1.2),
        _r("global-dot", "global (dot)", ppl=6.1, bleu=18.6, bleu_unk=20.5, delta=1.9),
        _r("global-general", "global (general)", ppl=6.1, bleu=17.3, bleu_unk=19.1, delta=1.8),
        _r("local-m-dot", "local-m (dot)", ppl=None, bleu=None, bleu_unk=None,
           note="ppl >7.0 (two models trained); BLEU not reported (x)"),
        _r("local-m-general", "local-m (general)", ppl=6.2, bleu=18.6, bleu_unk=20.4, delta=1.8),
        _r("local-p-dot", "local-p (dot)", ppl=6.6, bleu=18.0, bleu_unk=19.6, delta=1.9,
           note="the paper prints (+1.9), but 19.6 − 18.0 = 1.6"),
        _r("local-p-general", "local-p (general)", ppl=5.9, bleu=19.0, bleu_unk=20.9, delta=1.9),
        _r("global-concat", "global (concat)", ppl=6.7, bleu=None, bleu_unk=None,
           note="ppl only (footnote 15)", source="footnote 15"),
        _r("local-m-concat", "local-m (concat)", ppl=7.1, bleu=None, bleu_unk=None,
           note="ppl only (footnote 15)", source="footnote 15"),
        _r("local-p-concat", "local-p (concat)", ppl=7.1, bleu=None, bleu_unk=None,
           note="ppl only (footnote 15)", source="footnote 15"),
    ),
    notes="unk gain: BLEU after minus before unknown-word replacement (the paper's number in parentheses).",
    build=f"{_BUILT}:luong_table4", shows="attention types × scores",
    caption="""\
**Luong et al. 2015, Table 4** (attentional architectures, WMT'14 En→De): one row per attention
type and score function, the paper's numbers beside ours.

- ``paper_test_ppl``, ``ours_test_ppl``: test perplexity (lower is better).
- ``paper_bleu_before_unk_replace``, ``ours_bleu_before_unk_replace``: tokenized BLEU (0–100) of
  the translation as decoded; ``*_bleu_after_unk_replace``: after unknown-word replacement.
- ``paper_unk_gain``, ``ours_unk_gain``: BLEU after minus before replacement.
- ``ours_from``: the variant (seeds, setting) behind our numbers (``paper_row: {luong_table4: ...}``).

The concat rows carry only the perplexities of the paper's footnote 15; local-m (dot) has none
(the paper reports ppl > 7.0 and no BLEU). The paper prints +1.9 for local-p (dot), whose numbers
differ by 1.6: kept as printed and flagged in ``note``.
""",
)

LUONG_TABLE6 = PaperTable(
    "luong_table6", LUONG, "Table 6", "AER of attention alignments",
    "RWTH English-German gold alignments of 508 Europarl sentences; one-to-one links from forced decoding",
    (
        _r("global-location", "global (location)", aer=0.39),
        _r("local-m-general", "local-m (general)", aer=0.34),
        _r("local-p-general", "local-p (general)", aer=0.36),
        _r("ensemble", "ensemble", aer=0.34),
        _r("berkeley", "Berkeley Aligner", aer=0.32, note="one-to-many alignments of a word aligner"),
    ),
    notes="paper_aer_fn14 / ours_aer_fn14: AER by the paper's protocol (footnote 14), with the precision and recall "
          "of our links (ours_aer_fn14_precision, ours_aer_fn14_recall); ours_aer_predicted_word: every a_t aligned "
          "to the word it predicts.",
    build=f"{_BUILT}:luong_table6", shows="alignment error rate",
    caption="""\
**Luong et al. 2015, Table 6**: alignment error rate (AER, 0–1, lower is better) of one-to-one
alignments read from the attention of forced decoding (each target word linked to the source word
its attention weighs most), the paper's (RWTH De–En gold alignments) beside ours (this
experiment's gold alignments).

- ``paper_aer_fn14``, ``ours_aer_fn14``: AER by the paper's protocol (footnote 14: for a
  content-based score, the attention of step t aligns the input word y_{t−1}), with our links'
  precision and recall (``ours_aer_fn14_precision``, ``ours_aer_fn14_recall``).
- ``ours_aer_predicted_word``: the same attention with every step aligned to the word it predicts,
  y_t; for content-based scores it is the better measure of how well the attention aligns.

AER is scored per model, so the ensemble and Berkeley Aligner rows have no *ours*.
""",
)

BAHDANAU_TABLE1 = PaperTable(
    "bahdanau_table1", BAHDANAU, "Table 1", "RNNencdec vs RNNsearch on all and on no-UNK sentences",
    "WMT'14 En→Fr test set (news-test-2014); BLEU on all sentences and on sentences without unknown words",
    (
        _r("rnnencdec-30", "RNNencdec-30", bleu_all=13.93, bleu_no_unk=24.19),
        _r("rnnsearch-30", "RNNsearch-30", bleu_all=21.50, bleu_no_unk=31.44),
        _r("rnnencdec-50", "RNNencdec-50", bleu_all=17.82, bleu_no_unk=26.71, aliases=("rnnencdec",)),
        _r("rnnsearch-50", "RNNsearch-50", bleu_all=26.75, bleu_no_unk=34.16, aliases=("rnnsearch",)),
        _r("rnnsearch-50-star", "RNNsearch-50* (trained longer)", bleu_all=28.45, bleu_no_unk=36.15),
        _r("moses", "Moses (phrase-based)", bleu_all=33.30, bleu_no_unk=35.63),
    ),
    notes="No UNK: sentences whose source and reference have no out-of-vocabulary word; BLEU before any "
          "unknown-word replacement (the paper has none).",
    build=f"{_BUILT}:bahdanau_table1", shows="BLEU, all and no-UNK",
    caption="""\
**Bahdanau et al. 2015, Table 1** (WMT'14 En→Fr, news-test-2014): RNNencdec against RNNsearch, the
paper's BLEU beside ours, before any unknown-word replacement (the paper has none).

- ``paper_bleu_all``, ``ours_bleu_all``: tokenized BLEU (0–100) on all test sentences.
- ``paper_bleu_no_unk``, ``ours_bleu_no_unk``: BLEU on the sentences without unknown words (source
  and reference in the vocabularies); ``ours_no_unk_sentences``: how many of our test sentences
  that is.
- ``ours_from``: the variant behind our numbers (``paper_row: {bahdanau_table1: ...}``).
""",
)

#: Shu & Nakayama's mechanism as declared (the gated one): its name is also the handle of their rows
_SHU_MECHANISM = next(m.name for m in MECHANISMS if m.gated)

SHU_TABLE1 = PaperTable(
    "shu_table1", SHU, "Table 1", "Window of vision span and accuracy of Flexible Attention",
    "En→Ja (ASPEC; BLEU and RIBES with KyTea) and De→En (WMT'15 newstest2015; tokenized BLEU); beam 20",
    (
        _r("global", "Global Attention baseline", en_ja_window=24.4, en_ja_bleu=34.87, en_ja_ribes=0.810,
           de_en_window=20.7, de_en_bleu=20.62),
        _r("local", "Local Attention baseline", en_ja_window=18.4, en_ja_bleu=34.52, en_ja_ribes=0.809,
           de_en_window=15.7, de_en_bleu=21.09),
        _r("flexible-inf", "Flexible Attention (τ=∞)", en_ja_window=24.4, en_ja_bleu=35.01, en_ja_ribes=0.814,
           de_en_window=20.7, de_en_bleu=21.31, aliases=(_SHU_MECHANISM,)),
        _r("flexible-1.2", "Flexible Attention (τ=1.2)", en_ja_window=16.4, en_ja_bleu=34.90, en_ja_ribes=0.812,
           de_en_window=7.8, de_en_bleu=21.11, tau=1.2, aliases=(_SHU_MECHANISM,)),
        _r("finetuned-1.2", "+ fine-tuning (τ=1.2)", en_ja_window=10.7, en_ja_bleu=34.78, en_ja_ribes=0.807,
           de_en_window=7.4, de_en_bleu=20.79, tau=1.2, aliases=("finetuned", "fine-tuned", "fine-tuning")),
    ),
    notes="window: source positions whose score is computed per decoding step and hypothesis, averaged per "
          "sentence, then over sentences (Global computes all of them: the mean source length). BLEU and RIBES "
          "of the output before any unknown-word replacement (the paper replaces none). The paper's fine-tuned model cuts the window by 56% (En→Ja) and "
          "64% (De→En) against Global.",
    build=f"{_BUILT}:shu_table1", shows="window, BLEU, RIBES by τ",
    caption="""\
**Shu & Nakayama 2017, Table 1**: window of vision span, BLEU and RIBES of Global, Local and
Flexible Attention at τ = ∞ and τ = 1.2, with and without fine-tuning, the paper's En→Ja and De→En
numbers beside ours; every other τ we decode follows as a row of our own.

- ``tau``: the threshold τ of the decoding (∞: every score computed); ``ours_from``: the
  variant (seeds, setting) behind our numbers.
- ``paper_*_window``, ``ours_window``: source words whose attention score is computed per decoding
  step and beam hypothesis, averaged per sentence, then over sentences (Global: the mean source
  length); smaller is cheaper.
- ``paper_*_bleu``, ``ours_bleu_before_unk_replace``: BLEU (0–100) of the output before any
  unknown-word replacement (the paper replaces none); ``paper_en_ja_ribes``,
  ``ours_ribes_before_unk_replace``: RIBES (0–1).
- ``ours_window_change_pct``: our window's change in % against our Global row (the paper's
  fine-tuned model: −56% En→Ja, −64% De→En).
""",
)

SHU_TABLE3 = PaperTable(
    "shu_table3", SHU, "Table 3", "Average decoding time per sentence",
    "char-level En→Ja, 5,000 sentences, reference tokens fed back (forced), GPU: GTX TITAN X, "
    "CPU: i7-5960X single core (Theano)",
    (
        _r("global", "Global Attention", gpu_ms=123.0, cpu_ms=751.0),
        _r(_SHU_MECHANISM, "Flexible Attention (fine-tuned, τ=1.0)", gpu_ms=136.0, cpu_ms=677.0, tau=1.0,
           aliases=("finetuned", "fine-tuned", f"{_SHU_MECHANISM}-1.0")),
    ),
    build=f"{_BUILT}:shu_table3", shows="decoding time",
    caption="""\
**Shu & Nakayama 2017, Table 3**: average decoding time per sentence of Global and fine-tuned
Flexible Attention.

- ``paper_gpu_ms``, ``paper_cpu_ms``: the paper's milliseconds per sentence (character-level
  En→Ja, reference fed back; GTX TITAN X, one core of an i7-5960X).
- ``ours_ms``: the mean decoding time of our beam-search translations (a batch's wall time divided
  by its sentences), on ``ours_device`` ("not recorded" when unknown).
- ``ours_from``: the variant (seeds, setting) behind our numbers, decoded at the paper's τ or
  the nearest one decoded.
- ``*_vs_global``: time relative to the Global row. Compare these ratios, not the milliseconds:
  hardware, framework and batch differ.
""",
)

#: every paper table, by name, in the order the report and the results page list them
TABLES: dict[str, PaperTable] = {
    t.name: t
    for t in (LUONG_TABLE1, LUONG_TABLE3, LUONG_TABLE4, LUONG_TABLE6, BAHDANAU_TABLE1, SHU_TABLE1, SHU_TABLE3)
}


@dataclass(frozen=True)
class PaperFigure:
    """A figure of the report, drawn as one of a paper's (:mod:`nmtlib.report.figures` draws it)."""

    name: str  #: file name of the figure, e.g. ``learning_curves``
    paper: str
    figure: str  #: e.g. "Fig. 5"
    title: str
    #: what the figure shows, in a few words: its label in the HTML report, beside paper and figure
    shows: str
    #: what it plots, in reStructuredText: its caption after the title and the paper's figure
    caption: str

    def caption_rst(self) -> str:
        """The figure's caption in the HTML report (``nmtlib report`` writes it beside the figure,
        :meth:`nmtlib.layout.Layout.caption`)."""
        return f"**{self.title}** (as {self.paper}, {self.figure}): {' '.join(self.caption.split())}\n"

    def caption_markdown(self) -> str:
        """The same caption in Markdown, for a results page."""
        return self.caption_rst().replace("``", "`")


#: every figure of the report, by name, in the order the report and the results page list them
FIGURES: dict[str, PaperFigure] = {f.name: f for f in (
    PaperFigure(
        "learning_curves", LUONG, "Fig. 5", "Learning curves", "dev ppl during training", """
        dev perplexity (log scale, lower is better) against training updates (mini-batches), one colour per
        variant and one line style per seed, read from each model's ``train_log.csv``; with more than ten
        lines, one panel per paper table a variant regenerates a row of (its first), the panels sharing the
        y axis. A fine-tuning stage continues its parent's line from the parent's model it starts from."""),
    PaperFigure(
        "bleu_by_length", LUONG, "Fig. 6", "BLEU by sentence length", "BLEU by sentence length", """
        tokenized test BLEU (0–100, after unknown-word replacement) of the sentences grouped by source length
        in buckets of ``report.bucket_width`` words (one of fewer than ``report.min_bucket_sentences``
        sentences merged into its smaller neighbour), one line per variant and ensemble (mean over seeds,
        τ = ∞; with more than ten, one panel per paper table, as in the learning curves); a tick label gives
        the bucket's number of sentences. Attention models should hold up on long
        sentences where the base model degrades."""),
    PaperFigure(
        "attention_heatmaps", BAHDANAU, "Fig. 3", "Attention heatmaps", "attention weights", """
        attention weights (0–1, darker is more weight, colour bar) from forced decoding of the reference for
        the same test sentences (``report.heatmap_sentences``), one row of panels per attention type of the
        experiment (global, RNNsearch (additive), local-m, local-p, Flexible; the fine-tuned variant when
        there is one), first seed. Columns are source words, rows decoder steps, labelled by the target word
        each step predicts (the last row predicts ``<eos>``). Luong et al.'s AER protocol (footnote 14)
        assigns a content-based step's weights to its *input* word, the row above; Luong Table 6 scores
        both readings. local-p rows need not sum to 1 (its Gaussian applies after the softmax)."""),
    PaperFigure(
        "window_tradeoff", SHU, "Fig. 3", "Window against BLEU", "window vs BLEU over τ", """
        x is the average window (source words whose attention score is computed per decoding step and
        hypothesis, averaged per sentence, then over sentences), y tokenized test BLEU (0–100) of the raw
        output, before any unknown-word replacement. One point per τ setting of each Flexible Attention
        variant (mean over seeds; τ = ∞ computes every score), other attentional variants as single
        markers (those of the Flexible variants' architecture, Shu's own baselines, where the experiment
        has any), and the mean test source length as a dashed line (where global attention lies). Points to
        the left look at fewer source words: the curve shows the BLEU a narrower vision span costs. An
        experiment without a Flexible Attention variant shows a "not in this experiment" panel."""),
    PaperFigure(
        "vision_span", SHU, "Fig. 4", "Vision span per step", "vision span per step", """
        for the longest test sentences, the number of source words whose attention score is computed at
        each target step (mean over the live beam hypotheses, first seed): global attention (every source
        word: dashed, on the dotted source-length line; one global variant, of the Flexible variants'
        architecture where there is one) and each Flexible Attention variant at the decoded
        τ nearest 1.2. Flexible Attention should look at the whole sentence only occasionally. An
        experiment without a Flexible Attention variant shows a "not in this experiment" panel."""),
)}


class PaperRowError(ValueError):
    """A ``paper_row`` entry names a table or a row that does not exist."""


def resolve_paper_row(variant: str, paper_row: dict[str, Any]) -> dict[str, list[str]]:
    """Table name → keys of the rows a variant regenerates; unknown tables or rows raise."""
    out: dict[str, list[str]] = {}
    for table_name, value in (paper_row or {}).items():
        table = TABLES.get(table_name)
        if table is None:
            raise PaperRowError(f"variants.{variant}.paper_row: unknown table {table_name!r}; "
                                f"tables: {sorted(TABLES)}")
        handles = [value] if isinstance(value, str) else value
        if not isinstance(handles, list) or not all(isinstance(h, str) for h in handles):
            raise PaperRowError(f"variants.{variant}.paper_row.{table_name}: give a row key or a list of row keys, "
                                f"not {value!r}")
        keys: list[str] = []
        for h in handles:
            rows = table.find(h)
            if not rows:
                raise PaperRowError(f"variants.{variant}.paper_row.{table_name}: no row {h!r}; rows: "
                                    f"{table.handles()}")
            keys += [r.key for r in rows if r.key not in keys]
        out[table_name] = keys
    return out


def ensemble_tables(ensembles: Iterable[str], report: Mapping[str, Any] | None) -> dict[str, list[str]]:
    """Table → ensembles regenerating its ``ensemble`` row.

    Ensembles have no config entry of their own to carry a ``paper_row``; the experiment's first
    ensemble regenerates the ensemble rows (the rows of key ``ensemble``: Luong Tables 1 and 6)
    unless the report options name others under ``paper_rows: {<ensemble>: {<table>: ensemble}}``.
    """
    ensembles = list(ensembles)
    explicit = (report or {}).get("paper_rows") or {}
    named = [e for e in ensembles if e in explicit]
    if named:
        out: dict[str, list[str]] = {}
        for e in named:
            for table in explicit[e]:
                out.setdefault(table, []).append(e)
        return out
    if not ensembles:
        return {}
    return {t.name: [ensembles[0]] for t in TABLES.values() if any(r.key == "ensemble" for r in t.rows)}


def tables_with_rows(paper_rows: Mapping[str, Mapping[str, Any] | None], ensembles: Iterable[str],
                     report: Mapping[str, Any] | None) -> list[str]:
    """The paper tables (in :data:`TABLES` order) of which at least one row is regenerated by an
    experiment: by a variant's ``paper_row`` (``paper_rows``: variant → its ``paper_row``) or by an
    ensemble (:func:`ensemble_tables`). Only these are written: a table with no row of ours would
    show the paper's numbers alone (issue #29)."""
    named = {table for variant, rows in paper_rows.items() for table in resolve_paper_row(variant, rows or {})}
    named |= set(ensemble_tables(ensembles, report))
    return [t for t in TABLES if t in named]


#: the panel of a variant that regenerates no paper row
OTHER_GROUP = "Other variants"


def figure_groups(paper_rows: Mapping[str, Mapping[str, Any] | None], ensembles: Mapping[str, Iterable[str]],
                  report: Mapping[str, Any] | None) -> dict[str, str]:
    """Variant or ensemble → the paper table it is drawn with, where a figure has too many lines
    for one panel: the first table (in :data:`TABLES` order) of which it regenerates a row (its
    ``paper_row``; an ensemble: :func:`ensemble_tables`, else its first member's table), as
    ``"Luong et al. 2015, Table 1"``; :data:`OTHER_GROUP` for a variant of no paper row."""
    order = list(TABLES)
    groups: dict[str, str] = {}
    for variant, rows in paper_rows.items():
        tables = sorted(resolve_paper_row(variant, dict(rows or {})), key=order.index)
        groups[variant] = TABLES[tables[0]].citation if tables else OTHER_GROUP
    by_ensemble: dict[str, list[str]] = {}
    for table, names in ensemble_tables(list(ensembles), report).items():
        for name in names:
            by_ensemble.setdefault(name, []).append(table)
    for name, members in ensembles.items():
        tables = sorted(by_ensemble.get(name, []), key=order.index)
        first = next(iter(members), None)
        groups[name] = TABLES[tables[0]].citation if tables else groups.get(first, OTHER_GROUP)
    return groups
