"""Figures draw the words of every script the corpora hold (nmtlib.report.figures, fallback font).

matplotlib's default font has no Japanese glyph; without a fallback it warns "Glyph … missing from
font(s) DejaVu Sans" and draws a box for each character, as it would on every attention heatmap of
small-enja and small-jaen. The words below are a sentence of small_parallel_enja's test set.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest

from nmtlib.errors import NmtlibError
from nmtlib.report import figures

ENGLISH = "they finally acknowledged it as true .".split()
JAPANESE = "彼 ら は つい に それ が 真実 だ と 認め た 。".split()


def _heatmap(draw, src: list[str], tgt: list[str], path: Path) -> list[str]:
    """Draw one sentence's heatmap with ``draw``; the glyph warnings matplotlib gave."""
    matrices = {"global": {0: np.full((len(tgt) + 1, len(src)), 1.0 / len(src))}}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        draw(matrices, [src], [tgt], [0], path)
    return [str(w.message) for w in caught if "missing from font" in str(w.message)]


def test_japanese_words_are_drawn_with_glyphs(tmp_path: Path) -> None:
    # without the fallback (the undecorated function), matplotlib itself reports the missing glyphs
    missing = _heatmap(figures.attention_heatmaps.__wrapped__, ENGLISH, JAPANESE, tmp_path / "default.png")
    assert any("HIRAGANA LETTER RA" in m for m in missing)
    assert any("CJK UNIFIED IDEOGRAPH-771F" in m for m in missing)  # 真
    # with it, every glyph of both directions' labels is found
    assert _heatmap(figures.attention_heatmaps, ENGLISH, JAPANESE, tmp_path / "enja.png") == []
    assert _heatmap(figures.attention_heatmaps, JAPANESE, ENGLISH, tmp_path / "jaen.png") == []
    assert (tmp_path / "enja.png").read_bytes() != (tmp_path / "default.png").read_bytes()


def test_a_figure_without_japanese_is_the_same_png(tmp_path: Path) -> None:
    german = "zwei junge männer stehen im freien .".split()
    assert _heatmap(figures.attention_heatmaps.__wrapped__, german, ENGLISH, tmp_path / "default.png") == []
    assert _heatmap(figures.attention_heatmaps, german, ENGLISH, tmp_path / "fallback.png") == []
    assert (tmp_path / "fallback.png").read_bytes() == (tmp_path / "default.png").read_bytes()


def test_the_fallback_leaves_the_callers_fonts_alone(tmp_path: Path) -> None:
    import matplotlib

    before = list(matplotlib.rcParams["font.family"])
    _heatmap(figures.attention_heatmaps, ENGLISH, JAPANESE, tmp_path / "enja.png")
    assert matplotlib.rcParams["font.family"] == before


def test_without_the_font_package_one_line_names_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(figures, "FALLBACK_FONT_PACKAGE", "nmtlib-test-no-such-distribution")
    figures.fallback_font.cache_clear()
    try:
        with pytest.raises(NmtlibError, match=r"^no font file of nmtlib-test-no-such-distribution is installed: "
                                              r"pip install nmtlib-test-no-such-distribution"):
            figures.fallback_font()
    finally:
        figures.fallback_font.cache_clear()


def _source_ticks(monkeypatch: pytest.MonkeyPatch, src: list[str], tgt: list[str], path: Path) -> list[tuple[str, float]]:
    """The heatmap's source-word tick labels and their rotation, as drawn."""
    kept = []
    monkeypatch.setattr(figures, "_save", lambda fig, path, tight=True: kept.append(fig))
    _heatmap(figures.attention_heatmaps, src, tgt, path)
    return [(t.get_text(), t.get_rotation()) for t in kept[0].axes[0].get_xticklabels()]


def test_japanese_source_words_stand_upright_and_latin_ones_are_turned(monkeypatch: pytest.MonkeyPatch,
                                                                     tmp_path: Path) -> None:
    # Japanese is written top to bottom: one character under the other, each upright
    ticks = _source_ticks(monkeypatch, JAPANESE, ENGLISH, tmp_path / "jaen.png")
    assert ticks[:4] == [("彼", 0), ("ら", 0), ("は", 0), ("つ\nい", 0)] and ticks[-1] == ("。", 0)
    # Latin words, wider than a column, are turned a quarter, as before
    assert _source_ticks(monkeypatch, ENGLISH, JAPANESE, tmp_path / "enja.png")[:2] == [("they", 90), ("finally", 90)]
    # a sentence with a Latin word among Japanese ones is turned as a whole
    mixed = ["iPhone", *JAPANESE[1:]]
    assert {rotation for _, rotation in _source_ticks(monkeypatch, mixed, ENGLISH, tmp_path / "mixed.png")} == {90}
