"""Parallel data as token ids, and the batching of Luong et al. 2015 / Shu & Nakayama 2017:
batches of length-sorted pairs, visited in a shuffled order that depends only on (seed, epoch),
so a resumed run sees exactly the batches an uninterrupted one would."""

from __future__ import annotations

import random
from dataclasses import dataclass
from pathlib import Path

import torch
from torch import Tensor

from nmtlib.data.vocab import BOS_ID, EOS_ID, PAD_ID, Vocabulary
# one reader for training, decoding and scoring: split on \n only, errors name file:line (a ValueError)
from nmtlib.files import read_lines


@dataclass
class ParallelData:
    src: list[list[int]]
    tgt: list[list[int]] | None

    def __len__(self) -> int:
        return len(self.src)

    @classmethod
    def load(
        cls, src_path: str | Path, tgt_path: str | Path | None, src_vocab: Vocabulary, tgt_vocab: Vocabulary
    ) -> ParallelData:
        src_lines = read_lines(src_path)
        tgt_lines = read_lines(tgt_path) if tgt_path is not None else None
        if tgt_lines is not None and len(src_lines) != len(tgt_lines):
            raise ValueError(
                f"{src_path} has {len(src_lines)} lines but {tgt_path} has {len(tgt_lines)}; "
                "a parallel corpus needs one line per sentence on both sides"
            )
        src = [src_vocab.encode(line.split()) for line in src_lines]
        tgt = None if tgt_lines is None else [tgt_vocab.encode(line.split()) for line in tgt_lines]
        return cls(src, tgt)


def truncate_sources(data: ParallelData, max_len: int | None) -> dict[int, int]:
    """Cut every source sentence of ``data`` longer than ``max_len`` tokens to its first
    ``max_len`` (in place); ``None`` cuts nothing. Returns ``{index: tokens before the cut}`` of
    the sentences it cut, so that the caller can say so (``nmtlib translate`` warns and records
    ``truncated_from``; :func:`nmtlib.decode.translate.translate_file`)."""
    if max_len is None:
        return {}
    if max_len < 1:
        raise ValueError(f"decode max_src_len must be at least 1, got {max_len}")
    cut = {}
    for i, sentence in enumerate(data.src):
        if len(sentence) > max_len:
            cut[i] = len(sentence)
            data.src[i] = sentence[:max_len]
    return cut


@dataclass
class Batch:
    indices: list[int]  #: positions of the batch's sentences in the data set
    src: Tensor  #: (B, S) padded source ids
    src_lengths: Tensor  #: (B,)
    tgt_in: Tensor | None  #: (B, T) <bos> y_1 … y_n
    tgt_out: Tensor | None  #: (B, T) y_1 … y_n <eos>, padded with PAD_ID
    _target_tokens: int | None = None  #: counted on the host before moving (no device sync per step)

    @property
    def target_tokens(self) -> int:
        if self._target_tokens is None:
            self._target_tokens = 0 if self.tgt_out is None else int((self.tgt_out != PAD_ID).sum())
        return self._target_tokens

    def to(self, device: torch.device) -> Batch:
        move = lambda t: None if t is None else t.to(device, non_blocking=True)  # noqa: E731
        return Batch(self.indices, move(self.src), self.src_lengths, move(self.tgt_in), move(self.tgt_out),
                     self.target_tokens)


def pad(seqs: list[list[int]], value: int = PAD_ID) -> Tensor:
    width = max(1, max(len(s) for s in seqs))
    out = torch.full((len(seqs), width), value, dtype=torch.long)
    for i, s in enumerate(seqs):
        out[i, : len(s)] = torch.tensor(s, dtype=torch.long)
    return out


def collate(data: ParallelData, indices: list[int]) -> Batch:
    # an empty source line still needs one position to encode: it reads <eos>
    src = [data.src[i] or [EOS_ID] for i in indices]
    lengths = torch.tensor([len(s) for s in src], dtype=torch.long)
    tgt_in = tgt_out = None
    if data.tgt is not None:
        tgt = [data.tgt[i] for i in indices]
        tgt_in = pad([[BOS_ID, *t] for t in tgt])
        tgt_out = pad([[*t, EOS_ID] for t in tgt])
    return Batch(indices, pad(src), lengths, tgt_in, tgt_out)


def length_sorted_batches(data: ParallelData, batch_size: int, seed: int, epoch: int, shuffle: bool = True) -> list[list[int]]:
    """Sentence indices grouped into batches of similar lengths, batches in a shuffled order.

    The order is a function of (seed, epoch) alone: pairs are sorted by (target length, source
    length, a seeded random key) and cut into batches, whose order is then shuffled.
    """
    rng = random.Random(seed * 1_000_003 + epoch)
    keys = [rng.random() for _ in range(len(data))]
    tgt_len = (lambda i: len(data.tgt[i])) if data.tgt is not None else (lambda i: 0)
    order = sorted(range(len(data)), key=lambda i: (tgt_len(i), len(data.src[i]), keys[i]))
    batches = [order[i : i + batch_size] for i in range(0, len(order), batch_size)]
    if shuffle:
        rng.shuffle(batches)
    return batches


def sequential_batches(n: int, batch_size: int) -> list[list[int]]:
    return [list(range(i, min(n, i + batch_size))) for i in range(0, n, batch_size)]
