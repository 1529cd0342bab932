"""Translate a file: load checkpoints, batch the source by length, beam-search, restore order,
replace unknown words, and write the translations with per-sentence details.

Outputs:

- ``<out>.txt``: one translation per line, ``<unk>`` kept (the "before unk replacement" score);
- ``<out>.unk.txt``: the same after unknown-word replacement (identical to ``.txt`` when
  ``unk_replace`` is off: then nothing is replaced, not even by copying the attended word);
- ``<out>.jsonl``: per sentence ``id``, ``score``, ``length``, ``time_ms`` (wall time of the
  sentence's batch divided by its size: exact with ``batch_size`` 1; with ``in_flight`` > 1 the
  batch's share of the wall time, :func:`nmtlib.decode.interleave.interleave`), ``scores_computed`` and
  ``avg_window`` (score evaluations per step averaged over beam hypotheses, Shu & Nakayama §5;
  the test set's window is the mean of these, :func:`nmtlib.metrics.window.mean_window`),
  ``truncated_from`` on a sentence whose source was cut (below), and with ``n_best`` > 1
  ``n_best``: the sentence's best hypotheses, best first, each ``{score, length, text, unk}``
  (``text`` as in ``.txt``, ``unk`` after replacement);
- ``<out>.nbest.txt`` (``n_best`` > 1 only): ``id ||| translation after replacement ||| score``,
  ``n_best`` lines per sentence (fewer where the search finished fewer), best first, ``id``
  0-based (the n-best format of Moses).

Long sources. A source line of more than ``max_src_len`` tokens (``decode.max_src_len`` of
:class:`~nmtlib.config.DecodeConfig` unless given; ``None``: no limit) is decoded from its first ``max_src_len`` tokens: a warning on stderr
names the file and line, and the line's record in ``.jsonl`` has ``"truncated_from": <tokens>``.
The output keeps one line per input line; nothing fails and nothing is dropped. The search keeps
every step's attention for unknown-word replacement, K·(r·L + 10)·L floats for a source of L
tokens at beam K and ``max_len_ratio`` r: 6 MB at L = 250, K = 12, r = 2, but up to 1 TB at
L = 100,000.

Empty sources. An empty (or blank) source line has nothing to translate: its output is an empty
line, with score 0, length 0 and no step (window 0), and the models are not run on it; a model
run on no words would still write a sentence of its own (what it says for ``<eos>`` alone).
"""

from __future__ import annotations

import contextlib
import json
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from tqdm import tqdm

from nmtlib.atomic import claim_outputs, write_lines
from nmtlib.checkpoint import embedded_vocabularies, load_model
from nmtlib.config import DecodeConfig, owner_error
from nmtlib.data.batching import ParallelData, collate, truncate_sources
from nmtlib.data.vocab import EOS_ID, Vocabulary
from nmtlib.decode.beam import Hypothesis, Search, beam_search_steps, greedy_search_steps
from nmtlib.decode.graphs import GraphedSteps
from nmtlib.decode.interleave import interleave
from nmtlib.decode.steps import Ensemble
from nmtlib.decode.unk import replace_unknowns
from nmtlib.files import read_lines
from nmtlib.memory import keep_freed_memory
from nmtlib.metrics.window import mean_window
from nmtlib.models.seq2seq import Seq2Seq


@dataclass
class DecodeOptions:
    beam: int = DecodeConfig.beam
    max_len_ratio: float = DecodeConfig.max_len_ratio
    length_norm: bool = DecodeConfig.length_norm
    batch_size: int = DecodeConfig.batch_size
    tau: float | None = None  #: Flexible Attention threshold (None = ∞)
    greedy: bool = False  #: use the plain argmax decoder (identical to beam 1)
    cuda_graphs: bool = DecodeConfig.cuda_graphs  #: replay beam-search steps as CUDA graphs (CUDA only)
    tf32: bool = DecodeConfig.tf32  #: float32 matrix products in TF32 on CUDA (:func:`matmul_precision`)
    in_flight: int = DecodeConfig.in_flight  #: batches decoded at once on CUDA, their steps interleaved
    max_src_len: int | None = DecodeConfig.max_src_len  #: source tokens decoded per line, the rest cut (None: all)
    n_best: int = 1  #: hypotheses kept per sentence, best first (Hypothesis.alternatives); at most ``beam``


@contextlib.contextmanager
def matmul_precision(tf32: bool, device: torch.device) -> Iterator[None]:
    """float32 matrix products in TF32 within the block when ``tf32`` and ``device`` is CUDA
    (``torch.set_float32_matmul_precision("high")``), then the process's setting again.

    TF32 rounds the products' inputs to 10 mantissa bits and accumulates in float32. PyTorch keeps
    it off for matrix products by default; at paper scale a decoder step is bound by them (a
    beam-12 × batch-30 step: 2.29 ms of GPU time in float32, 1.15 ms in TF32 on an H100,
    benchmarks/RESULTS.md G5). On a CPU nothing changes."""
    if not (tf32 and device.type == "cuda"):
        yield
        return
    before = torch.get_float32_matmul_precision()
    torch.set_float32_matmul_precision("high")
    try:
        yield
    finally:
        torch.set_float32_matmul_precision(before)


def decode_data(
    models: list[Seq2Seq], data: ParallelData, opts: DecodeOptions, device: torch.device, progress: bool = False
) -> tuple[list[Hypothesis], list[float]]:
    """Hypotheses and per-sentence time (ms) in the data's order.

    On CUDA, ``opts.in_flight`` batches are decoded at once, each one's host bookkeeping running
    while the GPU computes another's step; on a CPU there is nothing to overlap, so one."""
    if opts.in_flight < 1:
        raise ValueError(f"decode in_flight must be at least 1, got {opts.in_flight}")
    if opts.greedy and opts.n_best > 1:
        raise ValueError(f"n-best {opts.n_best} needs beam search, not greedy decoding")
    if device.type == "cpu":  # freed (rows, V) blocks are reused, not faulted in afresh every step (same results)
        keep_freed_memory()
    ensemble = Ensemble(models, opts.tau)
    # steps that read values on the host (FlexibleAttention.host_bounds) run eagerly: GraphedSteps.search
    graphs = GraphedSteps(ensemble) if opts.cuda_graphs and device.type == "cuda" and not opts.greedy else None
    # an empty source is answered by an empty output, not decoded (the module's docstring)
    order = sorted((i for i in range(len(data)) if data.src[i]), key=lambda i: (len(data.src[i]), i))
    batches = [order[start : start + opts.batch_size] for start in range(0, len(order), opts.batch_size)]

    def search(idx: list[int], lane: int) -> Search[list[Hypothesis]]:
        batch = collate(data, idx).to(device)
        if opts.greedy:
            return greedy_search_steps(ensemble, batch, opts.max_len_ratio)
        return beam_search_steps(ensemble, batch, opts.beam, opts.max_len_ratio, opts.length_norm, graphs, lane,
                                 opts.n_best)

    hyps: list[Hypothesis] = [Hypothesis([], 0.0, np.zeros((1, 0), np.float32)) if not data.src[i] else None
                              for i in range(len(data))]  # type: ignore[misc]
    times = [0.0] * len(data)
    bar = tqdm(total=len(order), unit="sent", desc="translate", disable=not progress)
    in_flight = opts.in_flight if device.type == "cuda" else 1
    with matmul_precision(opts.tf32, device):
        # a search's last step is read on the host, so its seconds include all its device work
        for idx, out, seconds in interleave(batches, search, in_flight):
            per_sentence = seconds * 1000 / len(idx)
            for i, h in zip(idx, out):
                hyps[i] = h
                times[i] = per_sentence
            bar.update(len(idx))
    bar.close()
    return hyps, times


def warn_truncated(cut: dict[int, int], max_src_len: int | None, where: Path | str, jsonl: Path | None = None,
                   shown: int = 10) -> None:
    """One warning line on stderr per source line cut at ``max_src_len`` (``cut`` is ``{index:
    tokens before the cut}``): the first ``shown``, then how many more; with ``jsonl``, where the
    record of each is."""
    record = f" (see \"truncated_from\" in {jsonl})" if jsonl is not None else ""
    for n, (i, tokens) in enumerate(sorted(cut.items())):
        if n == shown:
            print(f"nmtlib translate: warning: {where}: {len(cut) - shown} more line(s) over {max_src_len} tokens "
                  f"truncated the same way{record}", file=sys.stderr)
            break
        print(f"nmtlib translate: warning: {where}:{i + 1}: {tokens} tokens, translated from its first "
              f"{max_src_len} (decode max_src_len){record}", file=sys.stderr)


def limit_source_lengths(data: ParallelData, max_src_len: int | None, src_path: Path, out_prefix: Path) -> dict[int, int]:
    """Cut the sources of ``data`` longer than ``max_src_len`` (:func:`truncate_sources`) and warn
    (:func:`warn_truncated`). Returns ``{index: tokens before the cut}``."""
    cut = truncate_sources(data, max_src_len)
    warn_truncated(cut, max_src_len, src_path, Path(f"{out_prefix}.jsonl"))
    return cut


def load_models(
    model_paths: list[Path], device: torch.device, src_vocab_path: Path | None = None, tgt_vocab_path: Path | None = None,
    tau: float | None = None,
) -> tuple[list[Seq2Seq], Vocabulary, Vocabulary, dict[str, Any]]:
    """The models of an ensemble, the vocabularies they decode with and the first one's record.

    With vocabulary files, every model must have been trained with them
    (:func:`~nmtlib.checkpoint.check_vocabularies`); without, the vocabularies the model files
    carry are used, and must be the same in every member. A threshold ``tau`` needs a member
    whose attention takes it (the config's check, :func:`~nmtlib.config.owner_error`): on the
    others it would change nothing while the run reports it."""
    if (src_vocab_path is None) != (tgt_vocab_path is None):
        raise ValueError("give both vocabulary files (--src-vocab and --tgt-vocab) or neither")
    if src_vocab_path is not None:  # and so tgt_vocab_path; files that are no vocabulary are named first
        src_vocab, tgt_vocab = Vocabulary.load(src_vocab_path), Vocabulary.load(tgt_vocab_path)
    loaded = [load_model(p, device, src_vocab_path, tgt_vocab_path) for p in model_paths]
    models, record = [m for m, _ in loaded], loaded[0][1]
    if tau is not None:
        refusals = [owner_error("decode.taus", r["variant"]["model"].get("attention", "none")) for _, r in loaded]
        if all(refusals):  # no member takes τ
            raise ValueError(f"τ {tau:g} does not apply to {', '.join(map(str, model_paths))}: {refusals[0]}")
    if src_vocab_path is not None:
        return models, src_vocab, tgt_vocab, record
    vocabs = [embedded_vocabularies(r, p) for p, (_, r) in zip(model_paths, loaded)]
    for p, (src, tgt) in zip(model_paths[1:], vocabs[1:]):
        if (src.itos, tgt.itos) != (vocabs[0][0].itos, vocabs[0][1].itos):
            raise ValueError(f"{p} and {model_paths[0]} were trained with different vocabularies: an ensemble "
                             f"needs one pair")
    return models, vocabs[0][0], vocabs[0][1], record


def output_words(h: Hypothesis, tgt_vocab: Vocabulary, source_tokens: list[str], dictionary: dict[str, str] | None,
                 unk_replace: bool) -> tuple[list[str], list[str]]:
    """A hypothesis as words, and the same after unknown-word replacement (when ``unk_replace``)."""
    words = tgt_vocab.decode(t for t in h.tokens if t != EOS_ID)
    return words, (replace_unknowns(words, source_tokens, h.attention, dictionary) if unk_replace else words)


def ranked(h: Hypothesis) -> list[Hypothesis]:
    """A sentence's hypotheses, best first: the best and its ``alternatives`` (``n_best``)."""
    return [h, *h.alternatives]


def translate_tokens(
    models: list[Seq2Seq], sources: list[list[str]], src_vocab: Vocabulary, tgt_vocab: Vocabulary,
    opts: DecodeOptions, device: torch.device, dictionary: dict[str, str] | None = None, unk_replace: bool = True,
    progress: bool = False,
) -> tuple[list[list[tuple[list[str], float]]], dict[int, int]]:
    """Tokenized sentences in memory → per sentence its ``opts.n_best`` translations, best first,
    as words (after unknown-word replacement when ``unk_replace``) and score; and ``{index:
    tokens before the cut}`` of the sources cut at ``opts.max_src_len``. ``nmtlib translate`` on
    text uses it; files go through :func:`translate_file`."""
    data = ParallelData([src_vocab.encode(tokens) for tokens in sources], None)
    truncated = truncate_sources(data, opts.max_src_len)
    hyps, _ = decode_data(models, data, opts, device, progress)
    return [[(output_words(r, tgt_vocab, sources[i], dictionary, unk_replace)[1], r.score) for r in ranked(h)]
            for i, h in enumerate(hyps)], truncated


def nbest_line(index: int, translation: str, score: float) -> str:
    """One line of an n-best list: ``id ||| translation ||| score`` (Moses' format, no features)."""
    return f"{index} ||| {translation} ||| {score:.4f}"


def translate_file(
    model_paths: list[Path],
    src_path: Path,
    src_vocab_path: Path | None,
    tgt_vocab_path: Path | None,
    out_prefix: Path,
    opts: DecodeOptions,
    dictionary: dict[str, str] | None = None,
    device: torch.device | None = None,
    progress: bool = True,
    unk_replace: bool = True,
) -> dict[str, Any]:
    """Translate ``src_path`` into ``<out_prefix>.{txt,unk.txt,jsonl}`` (see the module docstring).

    ``unk_replace`` False writes the raw output to ``.unk.txt`` too (Shu & Nakayama replace
    nothing); ``dictionary`` is used only when it is True."""
    device = device or torch.device("cuda" if torch.cuda.is_available() else "cpu")
    models, src_vocab, tgt_vocab, _ = load_models(model_paths, device, src_vocab_path, tgt_vocab_path)
    return translate_loaded(models, src_vocab, tgt_vocab, src_path, out_prefix, opts, dictionary, device, progress,
                            unk_replace)


def translate_loaded(
    models: list[Seq2Seq], src_vocab: Vocabulary, tgt_vocab: Vocabulary, src_path: Path, out_prefix: Path,
    opts: DecodeOptions, dictionary: dict[str, str] | None, device: torch.device, progress: bool = True,
    unk_replace: bool = True,
) -> dict[str, Any]:
    """:func:`translate_file` with the models loaded (:func:`load_models`)."""
    data = ParallelData.load(src_path, None, src_vocab, tgt_vocab)
    outputs = [Path(f"{out_prefix}{ext}") for ext in (".txt", ".unk.txt", ".jsonl", ".nbest.txt")]
    claim_outputs(*outputs[:4 if opts.n_best > 1 else 3])  # refused now, not after the decoding
    truncated = limit_source_lengths(data, opts.max_src_len, src_path, out_prefix)  # {line index: tokens}
    source_tokens = [line.split() for line in read_lines(src_path)]
    hyps, times = decode_data(models, data, opts, device, progress)

    device_name = (f"cuda: {torch.cuda.get_device_name(device)}" if device.type == "cuda"
                   else f"cpu ({torch.get_num_threads()} thread{'s' if torch.get_num_threads() > 1 else ''})")
    plain, replaced, details, nbest = [], [], [], []
    for i, (h, ms) in enumerate(zip(hyps, times)):
        # per hypothesis, best first: its words before and after unknown-word replacement
        outputs = [output_words(r, tgt_vocab, source_tokens[i], dictionary, unk_replace) for r in ranked(h)]
        words, after = outputs[0]
        plain.append(" ".join(words))
        replaced.append(" ".join(after))
        details.append({
            "id": i, "score": round(h.score, 4), "length": len(words), "time_ms": round(ms, 3),
            "device": device_name, "scores_computed": h.scores_computed, "hypothesis_steps": h.hypothesis_steps, "avg_window": round(h.average_window, 4),
            "window_per_step": [round(x, 3) for x in h.window_per_step],
            **({"truncated_from": truncated[i]} if i in truncated else {}),
            **({"n_best": [{"score": round(r.score, 4), "length": len(w), "text": " ".join(w), "unk": " ".join(a)}
                           for r, (w, a) in zip(ranked(h), outputs)]} if opts.n_best > 1 else {}),
        })
        nbest += [nbest_line(i, " ".join(a), r.score) for r, (_, a) in zip(ranked(h), outputs)]
    write_lines(Path(f"{out_prefix}.txt"), plain)
    write_lines(Path(f"{out_prefix}.unk.txt"), replaced)
    write_lines(Path(f"{out_prefix}.jsonl"), [json.dumps(d) for d in details])
    if opts.n_best > 1:
        write_lines(Path(f"{out_prefix}.nbest.txt"), nbest)
    steps = sum(d["length"] + 1 for d in details)
    return {
        "sentences": len(hyps),
        "avg_window": mean_window(details),
        "time_ms_per_sentence": sum(times) / max(1, len(times)),
        "output_tokens": steps,
        "truncated": len(truncated),
    }
