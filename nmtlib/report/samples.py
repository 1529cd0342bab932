"""Sample translations on a results page: a few test sentences with every model's output beside them.

The papers show a handful of test sentences with their systems' translations (Luong et al. 2015,
Table 5; Bahdanau et al. 2015, Table 2) so that a reader sees what the numbers stand for. A page
here shows the same for every variant and ensemble at once, each at τ = ∞ as decoded (the text its
tables' BLEU counts, before unknown-word replacement), its first run.

The sentences are chosen by their source length alone, never by a score, so that they show what
the models do rather than their best: the first test sentence of the median length (the lower
median where the count is even) and the first of the greatest length (:func:`sample_sentences`).
Every other test translation is in the files beside the page.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from nmtlib.files import read_lines
from nmtlib.layout import RAW_TEXT, Layout, run_order, run_seed
from nmtlib.report.tables import MISSING


def sample_sentences(source: list[str]) -> list[tuple[int, str]]:
    """(0-based line, why it was chosen) of the sample sentences of the test source ``source``: the
    first line of the median length in words (the lower median) and the first of the greatest, each
    once; none for an empty source."""
    lengths = [len(line.split()) for line in source]
    if not lengths:
        return []
    median, longest = sorted(lengths)[(len(lengths) - 1) // 2], max(lengths)
    if median == longest:
        return [(lengths.index(longest), f"the median and the longest source, {longest} words")]
    return [(lengths.index(median), f"median source length, {median} words"),
            (lengths.index(longest), f"the longest source, {longest} words")]


def markdown_text(text: str) -> str:
    """``text`` shown as it is in a Markdown table cell: tags such as ``<unk>`` kept visible, no
    emphasis or link made of the corpus's own ``*``, ``_``, ``[`` or backticks, no cell split at ``|``."""
    text = text.replace("\\", "\\\\").replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    for c in "|*_`[]":
        text = text.replace(c, f"\\{c}")
    return text


def samples_section(published: Layout[Path], summary: pd.DataFrame, source: Path, reference: Path) -> list[str]:
    """A table per sample sentence (:func:`sample_sentences` of ``source``): the source, the
    reference, then each row of ``summary`` (a variant or ensemble, at its τ = ∞ setting) with the
    line of its first run's translation among those copied into ``published``; rows without a
    translation are left out."""
    src, ref = read_lines(source), read_lines(reference)
    outputs = []
    for _, row in summary.iterrows():
        variant, setting = str(row["variant"]), str(row["setting"])
        found = published.found(published.translation(variant, "*", setting, RAW_TEXT))
        if found:
            path, (run,) = min(found, key=lambda f: run_order(f[1][0]))
            outputs.append((variant if run_seed(run) in (1, None) else f"{variant} ({run})", read_lines(path)))
    picks = sample_sentences(src)
    if not outputs or not picks:
        return []
    lines = ["### Sample translations", "",
             "Test sentences chosen by source length alone (never by a score): each variant's and ensemble's "
             "output as decoded at τ = ∞, before unknown-word replacement (what the tables' BLEU counts), "
             "from its first seed.", ""]
    for i, why in picks:
        rows = [{"": "source", "text": src[i]}, {"": "reference", "text": ref[i] if i < len(ref) else MISSING}]
        rows += [{"": name, "text": text[i] if i < len(text) else MISSING} for name, text in outputs]
        table = pd.DataFrame([{"": markdown_text(r[""]), "text": markdown_text(r["text"]) or "(empty)"} for r in rows])
        lines += [f"Line {i + 1} ({why}):", "", table.to_markdown(index=False, disable_numparse=True), ""]
    return lines
