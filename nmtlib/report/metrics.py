"""The report's metrics, each declared once: what a number is, where it comes from, where it is shown.

A :class:`Metric` names a column (``name``: the summary's column, ``ours_<name>`` in a paper table,
the key of :meth:`nmtlib.report.collect.Ours.value`), says it in words (``label``, ``help``), reads
or computes its value from one result's files (``read``: a :class:`RunFiles`, the scores JSON the
workflow wrote, the translations, the reference) and lists the tables it appears in (``tables``:
``summary``, ``findings`` and paper table names). The summary, the paper tables, the notes and
captions under them and the findings all take their metric columns from :data:`METRICS`; adding a
metric is one :func:`register` call (docs/extending.md, "Adding a metric").

``statistics`` gives the sacreBLEU metric whose per-sentence sufficient statistics the findings'
paired bootstrap resamples (:mod:`nmtlib.report.significance`): tokenized BLEU is
:class:`nmtlib.metrics.bleu.MultiBleuPerl`, the sacreBLEU metric whose statistics the scores'
``multi-bleu.perl`` numbers are summed from (docs/metrics.md); chrF is sacreBLEU's ``CHRF()``
with its defaults, on the same tokenized output and reference as BLEU. A metric of a text that
is the mean of its sentences' scores (RIBES) gives them instead (``sentence_scores``). Either way
the bootstrap takes a text metric's per-sentence rows from hypotheses and references alone, so
the findings over an experiment's files and ``nmtlib compare`` over any two files resample the
same rows (:meth:`nmtlib.report.significance.Statistic.of_text`).
"""

from __future__ import annotations

import contextlib
import functools
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from sacrebleu.metrics.base import Metric as SacreMetric
from sacrebleu.metrics.chrf import CHRF

from nmtlib.data.vocab import UNK
from nmtlib.files import read_lines
from nmtlib.layout import DETAILS, PPL_SENTENCES, RAW_TEXT, REPLACED_TEXT, Layout
from nmtlib.metrics.bleu import MultiBleuPerl
from nmtlib.metrics.perplexity import perplexity
from nmtlib.metrics.ribes import SCORED_CASE_SENSITIVE, corpus_ribes
from nmtlib.metrics.unknowns import UnknownWords, unknown_words
from nmtlib.metrics.window import sentence_window

#: ``Metric.level``: one value per (variant or ensemble, run, decoding setting), or per (variant, seed)
TRANSLATION, MODEL = "translation", "model"
#: ``Metric.text``: the output a translation metric scores, as decoded or after unknown-word replacement
RAW, REPLACED = "raw", "replaced"
#: file suffix of each text (``nmtlib translate --out PREFIX`` writes both)
TEXT_SUFFIX = {RAW: RAW_TEXT, REPLACED: REPLACED_TEXT}


@dataclass
class RunFiles:
    """The files of one result: a translation (``setting`` given) or a model (``setting`` None).

    Reads are cached on the instance: a table reads many metrics of the same result.
    """

    layout: Layout[Path]  #: the experiment's results folder
    name: str
    run: str
    setting: str | None = None
    _cache: dict[Any, Any] = field(default_factory=dict, repr=False)

    def _once(self, key: Any, load: Callable[[], Any]) -> Any:
        if key not in self._cache:
            self._cache[key] = load()
        return self._cache[key]

    def json(self, what: str | None = None) -> dict[str, Any] | None:
        """The scores JSON of the result (``what`` None: the translation's setting; ``ppl``, ``aer``:
        the model's), or None."""
        path = self.layout.scores(self.name, self.run, what or str(self.setting))
        return self._once(("json", path), lambda: json.loads(path.read_text(encoding="utf-8"))
                          if path.exists() else None)

    def translation_path(self, text: str) -> Path:
        return self.layout.translation(self.name, self.run, str(self.setting), TEXT_SUFFIX[text])

    def hypotheses(self, text: str) -> list[str] | None:
        """The tokenized output (``RAW`` or ``REPLACED``), one line per test sentence, or None if absent."""
        path = self.translation_path(text)
        return self._once(("hyp", path), lambda: read_lines(path) if path.exists() else None)

    def details(self) -> list[dict[str, Any]] | None:
        """Per-sentence decoding details (the translation's ``.jsonl``), or None if absent."""
        path = self.layout.translation(self.name, self.run, str(self.setting), DETAILS)
        return self._once(("details", path), lambda: [json.loads(line) for line in read_lines(path) if line.strip()]
                          if path.exists() else None)

    def references(self) -> list[str] | None:
        """The tokenized test reference every tokenized score is against (the prepared test split)."""
        return reference_lines(self.layout)

    def unknown_words(self) -> UnknownWords | None:
        """The translation's unknown words and their replacements (:mod:`nmtlib.metrics.unknowns`),
        or None where a text is missing or the three are not line-parallel."""
        def count() -> UnknownWords | None:
            raw, replaced, refs = self.hypotheses(RAW), self.hypotheses(REPLACED), self.references()
            if raw is None or replaced is None or refs is None or not len(raw) == len(replaced) == len(refs):
                return None
            return unknown_words(raw, replaced, refs, UNK)
        return self._once("unknown_words", count)


def reference_lines(layout: Layout[Path]) -> list[str] | None:
    path = layout.data("test", "tgt")
    return read_lines(path) if path.exists() else None


@dataclass(frozen=True)
class Metric:
    """One metric of the report, declared once (see the module docstring)."""

    name: str  #: its column everywhere (paper tables: ``ours_<name>``)
    label: str  #: in words, for headers and the findings' ``metric`` column
    help: str  #: what the number is, for the notes and captions
    read: Callable[[RunFiles], float | None]  #: its value for one result, None where the files lack it
    level: str = TRANSLATION  #: :data:`TRANSLATION` or :data:`MODEL`
    tables: tuple[str, ...] = ("summary",)  #: where it appears: summary, findings, paper table names
    decimals: int = 2  #: digits shown in Markdown and HTML (0: a count, shown as an integer)
    family: str = ""  #: the measure (bleu, chrf): the findings compare a claim on each family it has
    text: str = ""  #: for a translation metric, the output it scores (:data:`RAW` or :data:`REPLACED`)
    #: the sacreBLEU metric whose sentence statistics the paired bootstrap resamples
    statistics: Callable[[], SacreMetric] | None = None
    #: for a metric of a text that is the mean of its sentences' scores (RIBES), each sentence's
    #: score of hypotheses against references (one each), in place of ``statistics``
    sentence_scores: Callable[[list[str], list[str]], list[float]] | None = None
    #: for another metric that is a mean over sentences, each sentence's value from the result's
    #: files (what the bootstrap resamples instead)
    sentences: Callable[[RunFiles], list[float] | None] | None = None
    #: for a metric of other per-sentence sums, each sentence's row of them (perplexity: NLL and
    #: tokens), and ``of_sums`` the metric of their totals; a metric with none of these four has
    #: no interval over sentences
    sums: Callable[[RunFiles], list[list[float]] | None] | None = None
    of_sums: Callable[[np.ndarray], float] | None = None


#: the report's metrics, in the order of the summary's columns
METRICS: dict[str, Metric] = {}


def register(metric: Metric) -> Metric:
    """Add ``metric`` to :data:`METRICS` (after those declared before it); a name is declared once."""
    if metric.name in METRICS:
        raise ValueError(f"metric {metric.name!r} is already declared")
    if metric.level not in (TRANSLATION, MODEL):
        raise ValueError(f"metric {metric.name!r}: level must be {TRANSLATION!r} or {MODEL!r}, not {metric.level!r}")
    METRICS[metric.name] = metric
    return metric


@contextlib.contextmanager
def registered(metric: Metric) -> Iterator[Metric]:
    """``metric`` declared for the duration of a ``with`` block (a plug-in's or a test's)."""
    register(metric)
    try:
        yield metric
    finally:
        METRICS.pop(metric.name, None)


def metrics_in(table: str, level: str | None = None) -> list[Metric]:
    """The metrics declared for ``table``, in declaration order (``level``: only that level's)."""
    return [m for m in METRICS.values() if table in m.tables and (level is None or m.level == level)]


def companion(metric: str, family: str) -> Metric | None:
    """The metric of ``family`` that scores the same text as ``metric`` (chrF beside a BLEU)."""
    base = METRICS.get(metric)
    if base is None or not base.text:
        return None
    return next((m for m in METRICS.values() if m.family == family and m.text == base.text), None)


def over_sentences(metric: Metric) -> bool:
    """Whether the bootstrap can resample ``metric`` over the test sentences (it has per-sentence
    statistics, scores, values or sums)."""
    return any(x is not None for x in (metric.statistics, metric.sentence_scores, metric.sentences, metric.sums))


def text_families() -> list[str]:
    """The families that can be compared on any translation files (``nmtlib compare``): those of
    the metrics of the text as decoded with per-sentence statistics or scores, in declaration order."""
    out: list[str] = []
    for m in METRICS.values():
        if m.text == RAW and (m.statistics is not None or m.sentence_scores is not None) and m.family not in out:
            out.append(m.family)
    return out


def _from_json(what: str | None, *keys: str) -> Callable[[RunFiles], float | None]:
    """A reader of the scores JSON ``what`` (None: the translation's own), following ``keys``."""
    def read(files: RunFiles) -> float | None:
        value: Any = files.json(what)
        for key in keys:
            value = value.get(key) if isinstance(value, dict) else None
        return None if value is None else float(value)
    return read


def sacrebleu_score(statistics: Callable[[], SacreMetric], text: str) -> Callable[[RunFiles], float | None]:
    """A reader that scores a translation's ``text`` against the tokenized reference with sacreBLEU."""
    def read(files: RunFiles) -> float | None:
        hyp, ref = files.translation_path(text), files.layout.data("test", "tgt")
        if not hyp.exists() or not ref.exists():
            return None
        return _file_score(statistics, hyp, _stamp(hyp), ref, _stamp(ref))
    return read


def _stamp(path: Path) -> tuple[int, int]:
    stat = path.stat()
    return stat.st_mtime_ns, stat.st_size


@functools.lru_cache(maxsize=4096)
def _file_score(statistics: Callable[[], SacreMetric], hyp: Path, hyp_stamp: tuple[int, int], ref: Path,
                ref_stamp: tuple[int, int]) -> float | None:
    """A sacreBLEU corpus score of two files, once per version of them (the stamps: one report scores
    every translation for the summary, the paper tables and the findings)."""
    hyps, refs = read_lines(hyp), read_lines(ref)
    if len(hyps) != len(refs) or not refs:
        return None
    return float(statistics().corpus_score(hyps, [refs]).score)


def sentence_windows(files: RunFiles) -> list[float] | None:
    """Each test sentence's window (:func:`nmtlib.metrics.window.sentence_window`), from the details."""
    details = files.details()
    return None if details is None else [sentence_window(d["scores_computed"], d["hypothesis_steps"])
                                         for d in details]


def sentence_nll(files: RunFiles) -> list[list[float]] | None:
    """Each test sentence's ``[NLL, tokens]`` under the model (the perplexity scores'
    :data:`nmtlib.layout.PPL_SENTENCES`), or None where the scores do not have them."""
    scores = files.json("ppl")
    return None if scores is None else scores.get(PPL_SENTENCES)


def perplexity_of_sums(sums: np.ndarray) -> float:
    """The perplexity of summed ``[NLL, tokens]`` rows."""
    return perplexity(float(sums[0]), int(round(float(sums[1]))))


def ribes_sentence_scores(hyps: list[str], refs: list[str]) -> list[float]:
    """Each sentence's RIBES as the workflow scores it (case kept, one reference)."""
    return corpus_ribes(hyps, refs, case_sensitive=SCORED_CASE_SENSITIVE).sentence_scores


def chrf_statistics() -> CHRF:
    """sacreBLEU's chrF with its defaults (character 6-grams, β = 2, whitespace ignored)."""
    return CHRF()


_NO_WORDS = UnknownWords(0, 0, 0, 0)
_ALL_PAPER_BLEU = ("luong_table1", "luong_table3", "luong_table4")
for _metric in (
    Metric("dev_ppl", "dev perplexity", "dev perplexity of the model kept (the epoch of lowest dev perplexity)",
           _from_json("ppl", "dev_ppl"), MODEL),
    Metric("test_ppl", "test perplexity", "test perplexity of the model kept (lowest dev perplexity)",
           _from_json("ppl", "ppl"), MODEL, sums=sentence_nll, of_sums=perplexity_of_sums),
    Metric("bleu_before_unk_replace", "test BLEU before unk replacement",
           "tokenized BLEU (multi-bleu.perl) of the test translation as decoded, before unknown-word replacement",
           _from_json(None, "bleu", "bleu"), family="bleu", text=RAW, statistics=MultiBleuPerl),
    Metric("length_ratio", "test output length / reference length",
           "words of the test output as decoded per word of the reference, the ratio BLEU's brevity penalty "
           "reads (under 1: the penalty exp(1 − 1/ratio) lowers BLEU)", _from_json(None, "bleu", "ratio"),
           decimals=3),
    Metric("bleu_after_unk_replace", "test BLEU after unk replacement",
           "the same after Luong's unknown-word replacement", _from_json(None, "bleu_unk", "bleu"),
           family="bleu", text=REPLACED, statistics=MultiBleuPerl),
    Metric("chrf_before_unk_replace", "test chrF before unk replacement",
           "sacreBLEU's chrF (character 6-grams, β = 2) of the tokenized test translation as decoded, against the "
           "tokenized reference", sacrebleu_score(chrf_statistics, RAW),
           tables=("summary", "findings", *_ALL_PAPER_BLEU, "bahdanau_table1", "shu_table1"), family="chrf",
           text=RAW, statistics=chrf_statistics),
    Metric("chrf_after_unk_replace", "test chrF after unk replacement",
           "the same after unknown-word replacement", sacrebleu_score(chrf_statistics, REPLACED),
           tables=("summary", "findings", *_ALL_PAPER_BLEU), family="chrf", text=REPLACED, statistics=chrf_statistics),
    Metric("bleu_no_unk_sentences", "test BLEU on sentences without unknown words",
           "tokenized BLEU before unknown-word replacement on the test sentences whose source and reference are in "
           "the vocabularies (Bahdanau et al. 2015's \"No UNK\")", _from_json(None, "bleu_no_unk", "bleu")),
    Metric("no_unk_sentences", "test sentences without unknown words",
           "how many test sentences have their source and reference in the vocabularies",
           _from_json(None, "no_unk_sentences"), tables=("bahdanau_table1",), decimals=0),
    Metric("unk_words", "unknown words in the output (%)",
           "output words (as decoded) that are the unknown-word symbol, per 100 output words",
           lambda files: (files.unknown_words() or _NO_WORDS).unknown_percent),
    Metric("unk_replaced_in_reference", "unknown words replaced by a reference word (%)",
           "of the unknown words in the output, the share that unknown-word replacement turned into a word "
           "of the sentence's reference, per 100: the words it can gain on (nmtlib.metrics.unknowns)",
           lambda files: (files.unknown_words() or _NO_WORDS).in_reference_percent),
    Metric("sacrebleu_after_unk_replace", "test sacreBLEU after unk replacement",
           "sacreBLEU after unknown-word replacement (detokenized where the tokenizer allows)",
           _from_json(None, "sacrebleu", "bleu")),
    Metric("ribes_before_unk_replace", "test RIBES before unk replacement",
           "RIBES (RIBES.py 1.02.4, case kept) before unknown-word replacement", _from_json(None, "ribes"),
           tables=("summary", "findings"), decimals=3, family="ribes", text=RAW, sentence_scores=ribes_sentence_scores),
    Metric("ribes_after_unk_replace", "test RIBES after unk replacement", "RIBES after unknown-word replacement",
           _from_json(None, "ribes_unk"), tables=("summary", "findings"), decimals=3, family="ribes", text=REPLACED,
           sentence_scores=ribes_sentence_scores),
    Metric("aer_fn14", "AER (footnote 14)",
           "alignment error rate of forced decoding, Luong et al. 2015's footnote-14 convention (their Table 6 "
           "protocol)", _from_json("aer", "aer"), MODEL, decimals=3),
    Metric("aer_fn14_precision", "precision of the footnote-14 links", "precision of those links",
           _from_json("aer", "precision"), MODEL, tables=("luong_table6",), decimals=3),
    Metric("aer_fn14_recall", "recall of the footnote-14 links", "recall of those links",
           _from_json("aer", "recall"), MODEL, tables=("luong_table6",), decimals=3),
    Metric("aer_predicted_word", "AER (predicted word)",
           "alignment error rate of the same attention, every a_t aligned to the word it predicts",
           _from_json("aer", "predicted", "aer"), MODEL, tables=("summary", "luong_table6"), decimals=3),
    Metric("avg_window", "test window (source words scored per step)",
           "source positions scored per decoding step and hypothesis, the mean over sentences (Shu & Nakayama "
           "2017; an ensemble's is summed over its members)", _from_json(None, "avg_window"),
           sentences=sentence_windows),
    Metric("time_ms", "decoding time per sentence (ms)", "decoding time per test sentence, in milliseconds",
           _from_json(None, "time_ms_per_sentence"), decimals=1),
):
    register(_metric)


def columns_rst(table: str, columns: list[str]) -> str:
    """The registered metrics among a table's ``columns`` as a reStructuredText list (``- ``col``:
    help``), for the table's caption in the HTML report (``workflow/report/<table>.rst`` includes it; a
    paper table's caption ends with it, :meth:`nmtlib.report.paper.PaperTable.caption_rst`).

    A column is a metric's name, ``ours_<name>`` (paper tables), ``<name>_sd`` (its standard
    deviation over seeds) or, in the findings, ``<family>_<part>`` of a metric family.
    """
    lines = []
    for column in columns:
        name = column.removeprefix("ours_")
        if name in METRICS:
            lines.append(f"- ``{column}``: {METRICS[name].help}.")
        elif name.endswith("_sd") and name.removesuffix("_sd") in METRICS:
            lines.append(f"- ``{column}``: the standard deviation over seeds of ``{name.removesuffix('_sd')}``.")
    for family in dict.fromkeys(m.family for m in METRICS.values() if m.family and table in m.tables):
        if table == "findings" and f"{family}_diff" in columns:
            lines.append(f"- ``{family}_a``, ``{family}_b``, ``{family}_diff``, ``{family}_ci_low``, "
                         f"``{family}_ci_high``, ``{family}_p_value``: the same comparison on {family} (the "
                         f"{family} metric of the same texts), with its own interval and p-value.")
    body = "\n".join(lines) if lines else "(no registered metric column)"
    return f"Metric columns (declared in ``nmtlib/report/metrics.py``):\n\n{body}\n"
