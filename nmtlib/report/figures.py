"""Figures of the papers, drawn with matplotlib (Agg backend: no display needed).

Words of any script the corpora hold: matplotlib's own font, DejaVu Sans, has no Japanese glyph,
and an attention heatmap of ``small-enja`` labelled with it shows a box for every Japanese word.
Every figure is drawn with IPAexGothic, the Japanese font that the ``matplotlib-fontja`` package
ships, as the fallback behind the default: a glyph DejaVu Sans lacks comes from it, every other
glyph as before (a figure without Japanese text is the same PNG, byte for byte).
"""

from __future__ import annotations

import functools
import importlib.metadata
import io
import textwrap
import unicodedata
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import ParamSpec, TypeVar

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.ticker import FormatStrFormatter, LogLocator, MaxNLocator, NullFormatter  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from PIL import Image  # noqa: E402

from nmtlib.atomic import atomic_write  # noqa: E402
from nmtlib.errors import NmtlibError  # noqa: E402
from nmtlib.layout import Layout, run_order  # noqa: E402
from nmtlib.report.collect import attention_order  # noqa: E402
from nmtlib.report.paper import OTHER_GROUP  # noqa: E402

#: the distribution that ships the fallback font (pyproject.toml's dependencies)
FALLBACK_FONT_PACKAGE = "matplotlib-fontja"


@functools.cache
def fallback_font() -> str:
    """Register the font file of :data:`FALLBACK_FONT_PACKAGE` with matplotlib and return its family
    name. The file is found in the distribution's file list: importing ``matplotlib_fontja`` would
    make its font the default for every glyph, Latin ones included."""
    try:
        files = importlib.metadata.files(FALLBACK_FONT_PACKAGE) or []
    except importlib.metadata.PackageNotFoundError:
        files = []
    fonts = [f for f in files if f.suffix == ".ttf"]
    if not fonts:
        raise NmtlibError(f"no font file of {FALLBACK_FONT_PACKAGE} is installed: pip install {FALLBACK_FONT_PACKAGE} "
                           "(a dependency of nmtlib) to draw figures with Japanese words")
    path = str(fonts[0].locate())
    matplotlib.font_manager.fontManager.addfont(path)
    return matplotlib.font_manager.FontProperties(fname=path).get_name()


P = ParamSpec("P")
R = TypeVar("R")


def _any_script(draw: Callable[P, R]) -> Callable[P, R]:
    """``draw`` with :func:`fallback_font` behind the default font families."""
    @functools.wraps(draw)
    def drawn(*args: P.args, **kwargs: P.kwargs) -> R:
        with matplotlib.rc_context({"font.family": [*plt.rcParams["font.family"], fallback_font()]}):
            return draw(*args, **kwargs)
    return drawn


def _save(fig: plt.Figure, path: Path, tight: bool = True) -> None:
    """``path`` as a PNG, whole or not at all (:func:`nmtlib.atomic.atomic_write`): drawn at 120 dpi,
    then reduced to a palette of 256 colours without dithering, a third of the bytes of matplotlib's
    RGBA with no change to be seen (the published pages commit their figures, each time they are
    published)."""
    try:
        if tight:
            fig.tight_layout()
        drawn = io.BytesIO()
        fig.savefig(drawn, format="png", dpi=120)
    finally:
        plt.close(fig)
    with Image.open(drawn) as image:
        palette = image.convert("RGB").quantize(256, method=Image.Quantize.MEDIANCUT, dither=Image.Dither.NONE)
    with atomic_write(path, binary=True) as f:
        palette.save(f, format="PNG", optimize=True)


def _wrapped(text: str, inches: float, points: float) -> str:
    """``text`` broken at its spaces into lines of about ``inches`` wide at ``points`` (a character is
    about 0.6 of the font size wide), never inside a word or at its hyphens (variant names)."""
    return textwrap.fill(text, max(12, int(inches * 72 / (0.6 * points))), break_on_hyphens=False,
                         break_long_words=False)


def _empty(path: Path, title: str, why: str) -> None:
    """A figure whose inputs this experiment does not have: its title and why, no axes."""
    fig, ax = plt.subplots(figsize=(7, 3))
    ax.set_title(title)
    ax.text(0.5, 0.5, f"Not in this experiment:\n{why}", ha="center", va="center", wrap=True, fontsize=11,
            bbox={"boxstyle": "round", "facecolor": "#f3f3f3", "edgecolor": "#999999"})
    ax.set_axis_off()
    _save(fig, path)


#: at most this many lines share one panel of a line figure; one with more draws a panel per paper
#: table (``groups``: :func:`nmtlib.report.paper.figure_groups`), so that no two lines share a colour
MAX_LINES = 10


def _panels(names: list[str], lines: int, groups: Mapping[str, str] | None) -> dict[str, list[str]]:
    """Panel title → its variants (in ``names``' order): one untitled panel for at most
    :data:`MAX_LINES` lines, else one per group of ``groups`` (variant → group)."""
    panels: dict[str, list[str]] = {}
    for name in names:
        panels.setdefault((groups or {}).get(name, OTHER_GROUP), []).append(name)
    if groups is None or lines <= MAX_LINES or len(panels) == 1:
        return {"": list(names)}
    return panels


def _grid(panels: dict[str, list[str]], title: str, sharey: bool) -> tuple[plt.Figure, list[plt.Axes]]:
    """One axes per panel, two to a row under the figure's title (one panel: a plain figure)."""
    if len(panels) == 1:
        fig, ax = plt.subplots(figsize=(7.5, 4.5))
        ax.set_title(title)
        return fig, [ax]
    rows = -(-len(panels) // 2)
    fig, grid = plt.subplots(rows, 2, figsize=(12, 3.9 * rows), sharey=sharey, squeeze=False)
    axes = list(grid.flat)
    for ax in axes[len(panels):]:
        ax.set_visible(False)
    for ax, panel in zip(axes, panels):
        ax.set_title(panel, fontsize=10)
    fig.suptitle(title)
    return fig, axes[:len(panels)]


@_any_script
def learning_curves(curves: pd.DataFrame, path: Path, title: str = "Learning curves (Luong et al. 2015, Fig. 5)",
                    groups: Mapping[str, str] | None = None) -> None:
    """Dev perplexity against training updates, one line per variant and seed; a panel per paper
    table where there are more than :data:`MAX_LINES` lines (``groups``).

    ``curves`` is :func:`nmtlib.report.collect.learning_curves`: x is ``updates``, counted from the
    start of the whole training, so a fine-tuning stage (``finetune_from``) continues its parent's
    line from the parent's model it starts from (that point is drawn as the stage's first).
    """
    if curves.empty:
        return _empty(path, title, "no training logs yet")
    panels = _panels(list(dict.fromkeys(curves["variant"])), len(curves.groupby(["variant", "run"])), groups)
    fig, axes = _grid(panels, title, sharey=True)
    # seed k's line style is the same in every panel and experiment, whichever seeds have logs yet
    styles = {r: ["-", "--", ":", "-."][i % 4] for i, r in enumerate(sorted(set(curves["run"]), key=run_order))}
    several = curves["run"].nunique() > 1
    has_updates = "updates" in curves
    for ax, variants in zip(axes, panels.values()):
        colours = {v: f"C{i % 10}" for i, v in enumerate(variants)}
        panel = curves[curves["variant"].isin(variants)]
        for (variant, run), df in panel.groupby(["variant", "run"], sort=False):
            label = f"{variant} ({run})" if several else variant
            parent = df["finetune_from"].iloc[0] if "finetune_from" in df else ""
            x, y = list(df["step"]), list(df["dev_ppl"])
            if has_updates and df["updates"].notna().all():
                x = [float(u) for u in df["updates"]]
                if parent:
                    label += f", fine-tuned from {parent}"
                    start = x[0] - float(df["step"].iloc[0])
                    p = curves[(curves["variant"] == parent) & (curves["run"] == run) & (curves["updates"] == start)]
                    if not p.empty:  # the parent's model the stage starts from
                        x, y = [start, *x], [float(p["dev_ppl"].iloc[0]), *y]
            elif parent:
                label += f", fine-tuned from {parent} (its own updates: the parent's are unknown)"
            ax.plot(x, y, marker="o", markersize=3, color=colours[variant], linestyle=styles[run], label=label)
        ax.set_yscale("log")
        ax.yaxis.set_major_locator(LogLocator(subs=(1.0, 2.0, 5.0)))
        ax.yaxis.set_major_formatter(FormatStrFormatter("%g"))
        ax.yaxis.set_minor_formatter(NullFormatter())
        ax.set_xlabel("training updates (mini-batches; fine-tuning continues from its parent's model)",
                      fontsize=None if len(axes) == 1 else 8)
        ax.set_ylabel("dev perplexity (log scale)")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8 if len(axes) == 1 else 7, title="variant", title_fontsize=8)
    _save(fig, path)


def _bucket_start(label: str) -> int:
    return int(str(label).split("-")[0].rstrip("+"))


@_any_script
def bleu_by_length(buckets: pd.DataFrame, path: Path, title: str = "BLEU by source length (Luong et al. 2015, Fig. 6)",
                   groups: Mapping[str, str] | None = None) -> None:
    """Tokenized BLEU after unknown-word replacement (``nmtlib evaluate`` scores the buckets on the
    replaced output) per source-length bucket, one line per variant (mean over seeds); a panel per
    paper table where there are more than :data:`MAX_LINES` variants (``groups``)."""
    if buckets.empty:
        return _empty(path, title, "no translations scored yet")
    mean = buckets.groupby(["variant", "bucket"], sort=False)[["bleu", "sentences"]].mean().reset_index()
    order = sorted(dict.fromkeys(buckets["bucket"]), key=_bucket_start)
    counts = buckets.groupby("bucket")["sentences"].max()
    variants = list(dict.fromkeys(mean["variant"]))
    panels = _panels(variants, len(variants), groups)
    fig, axes = _grid(panels, title, sharey=True)
    for ax, names in zip(axes, panels.values()):
        for variant in names:
            df = mean[mean["variant"] == variant].set_index("bucket").reindex(order)
            ax.plot(range(len(order)), df["bleu"], marker="o", label=variant)
        ax.set_xticks(range(len(order)), [f"{b}\n({int(counts[b])} sent.)" for b in order], fontsize=8)
        ax.set_xlabel("source sentence length (words)")
        ax.set_ylabel("test BLEU after unk replacement (tokenized, %)")
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8 if len(axes) == 1 else 7, title="variant", title_fontsize=8)
    _save(fig, path)


def _column_labels(words: list[str]) -> tuple[list[str], float]:
    """Tick labels for one column per word, and their rotation: Latin words turned a quarter (they
    are wider than a column); words written in wide characters only (Japanese, Chinese) upright,
    one character under the other, as the script is written vertically, not lying on their side."""
    if words and all(all(unicodedata.east_asian_width(c) in "WF" for c in w) for w in words):
        return ["\n".join(w) for w in words], 0
    return list(words), 90


@_any_script
def attention_heatmaps(
    matrices: dict[str, dict[int, np.ndarray]], src: list[list[str]] | None, tgt: list[list[str]] | None,
    sentences: list[int], path: Path, labels: dict[str, str] | None = None,
    title: str = "Attention of forced decoding (rows: decoder step, by the target word it predicts; columns: source words)",
) -> None:
    """One panel per (variant, sentence): the attention of each decoder step over the source words.

    ``matrices``: variant → sentence id → weights, (T+1, S) as ``nmtlib align`` exports them (row
    t: the step that predicts target word t+1, the last one ``<eos>``) or (T, S) (one row per
    target word); ``labels``: variant → panel label (attention type). Words label the axes when
    the matrix matches the sentence's length.
    """
    if not matrices or src is None or tgt is None:
        return _empty(path, title, "no attentional variant with exported attention "
                                   f"({Layout(Path()).attention('<variant>', 'seedN')})")
    sentences = [i for i in sentences if i < len(src) and all(i in m for m in matrices.values())]
    if not sentences:
        return _empty(path, title, "none of report.heatmap_sentences is a sentence of the test set")
    names = list(matrices)
    # inches per word: as large as fits a figure of about 18 × 20 inches, never below 0.1 (a 5 pt label)
    max_t = max(len(tgt[i]) for i in sentences) + 1
    cell = min(0.22, (18 - 1.5 * len(sentences)) / max(1, sum(len(src[i]) for i in sentences)),
               (20 - 0.8) / len(names) / max(1, max_t) - 1.4 / max(1, max_t))
    cell = max(0.1, cell)
    font = max(5.0, min(8.0, cell * 72 * 0.75))
    width = [max(2.8, cell * len(src[i]) + 1.4) for i in sentences]
    height = max(2.6, cell * max_t + 1.4)
    fig, axes = plt.subplots(len(names), len(sentences), figsize=(sum(width) + 1.2, height * len(names) + 0.8),
                             squeeze=False, gridspec_kw={"width_ratios": width}, layout="constrained")
    image = None
    for r, name in enumerate(names):
        for c, sid in enumerate(sentences):
            ax = axes[r][c]
            m = matrices[name][sid]
            image = ax.imshow(m, cmap="Greys", vmin=0, vmax=1, aspect="auto", interpolation="nearest")
            if m.shape[1] == len(src[sid]):
                words, rotation = _column_labels(src[sid])
                ax.set_xticks(range(len(src[sid])), words, rotation=rotation, fontsize=font)
            ylabel = "decoder step"
            if m.shape[0] == len(tgt[sid]) + 1:  # one row per decoder step, labelled by the word it predicts
                ax.set_yticks(range(m.shape[0]), [*tgt[sid], "<eos>"], fontsize=font)
                ylabel = "predicted target word"
            elif m.shape[0] == len(tgt[sid]):  # rows already assigned to target words (older exports)
                ax.set_yticks(range(len(tgt[sid])), tgt[sid], fontsize=font)
                ylabel = "target word"
            # as wide as its panel at the most: a wider one runs into its neighbour's
            ax.set_title(_wrapped(f"{(labels or {}).get(name, name)}: {name}, sentence {sid}", width[c] - 1.4, 9),
                         fontsize=9)
            ax.set_ylabel(ylabel if c == 0 else "")
            ax.set_xlabel("source word" if r == len(names) - 1 else "")
    fig.colorbar(image, ax=axes, shrink=0.6, label="attention weight a_t(s)")
    # wrapped to the figure's width: a title wider than two narrow panels is cut at both edges
    size = plt.rcParams["figure.titlesize"]
    points = matplotlib.font_manager.FontProperties(size=size).get_size_in_points()
    fig.suptitle(_wrapped(title, fig.get_figwidth(), points), fontsize=size)
    _save(fig, path, tight=False)


@_any_script
def window_tradeoff(points: pd.DataFrame, mean_src_len: float | None, path: Path,
                    title: str = "Window of vision span vs BLEU over τ (Shu & Nakayama 2017, Fig. 3)") -> None:
    """One point per τ setting of each variant of a gated mechanism (``gated``: Flexible Attention;
    a line per variant, labelled with τ), other attentional variants as single markers (those of
    the Flexible variants' architecture where there are any: Shu's own baselines, as in the
    paper's figure; else every one), and the mean test source length as a
    vertical reference line: global attention scores every source word, so its window (a mean
    over sentences, :func:`nmtlib.metrics.window.mean_window`) lies on that line. BLEU is of the
    raw output, before unknown-word replacement (Shu & Nakayama replace nothing)."""
    if points.empty or not points["gated"].astype(bool).any():
        return _empty(path, title, "no Flexible Attention variant decoded with thresholds τ\n"
                                   "(a variant with attention: flexible and decode.taus)")
    fig, ax = plt.subplots(figsize=(7.5, 4.8))
    markers = dict(zip(attention_order(), "sD^v<>phH8*"), none="x")
    bleu = "bleu_before_unk_replace"  # Shu & Nakayama replace no unknown word
    gated = points["gated"].astype(bool)
    for k, (name, df) in enumerate(points[gated].groupby("variant", sort=False)):
        df = df.sort_values("avg_window")
        line, = ax.plot(df["avg_window"], df[bleu], marker="o",
                        label=f"{name} ({df['attention'].iloc[0]}, one point per τ)")
        for _, p in df.iterrows():
            tau = "∞" if pd.isna(p["tau"]) else f"{p['tau']:g}"
            # labels of different variants go above / below their points, so coinciding points stay legible
            ax.annotate(f"τ={tau}", (p["avg_window"], p[bleu]), textcoords="offset points",
                        xytext=(4, 5 if k % 2 == 0 else -11), fontsize=7, color=line.get_color())
    others = points[~gated & (points["attention"] != "none")]
    same = others[others["arch"].isin(set(points.loc[gated, "arch"]))]
    others = same if not same.empty else others
    for _, p in others.iterrows():
        ax.plot([p["avg_window"]], [p[bleu]], linestyle="none", marker=markers.get(p["attention"], "o"),
                markersize=8, label=f"{p['variant']} ({p['attention']})")
    if mean_src_len is not None:
        ax.axvline(mean_src_len, color="grey", linestyle="--",
                   label=f"mean test source length ({mean_src_len:.1f} words)")
    ax.set_xlabel("average window of vision span (test; source words scored per step)")
    ax.set_ylabel("test BLEU before unk replacement (tokenized, %)")
    ax.set_title(title)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=7)
    _save(fig, path)


@_any_script
def vision_span(spans: dict, path: Path,
                title: str = "Vision span per decoding step (Shu & Nakayama 2017, Fig. 4)") -> None:
    """Per long test sentence, the number of source words scored at each decoding step (mean
    over live beam hypotheses) for global attention and Flexible Attention at a τ."""
    if spans.get("missing"):
        return _empty(path, title, spans["missing"])
    sentences = spans["sentences"]
    cols = 2 if len(sentences) > 1 else 1
    rows = (len(sentences) + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(6 * cols, 3.4 * rows), squeeze=False)
    for k, (sid, words) in enumerate(sentences):
        ax = axes[k // cols][k % cols]
        for s in spans["series"]:
            y = s["spans"].get(sid) or []
            if y:
                ax.plot(range(1, len(y) + 1), y, marker="." if len(y) <= 30 else None, label=s["label"],
                        linestyle="-" if s["gated"] else "--")
        ax.axhline(len(words), color="grey", linestyle=":", label=f"source length ({len(words)} words)")
        ax.set_ylim(0, len(words) + 2)
        ax.set_title(f"test sentence {sid} ({len(words)} source words)", fontsize=9)
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.set_xlabel("beam search step (target position)")
        ax.set_ylabel("window (source words scored)")
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=7)
    for k in range(len(sentences), rows * cols):
        axes[k // cols][k % cols].set_axis_off()
    fig.suptitle(title)
    _save(fig, path)
