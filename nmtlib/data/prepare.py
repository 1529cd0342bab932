"""Tokenize and clean a parallel corpus: two input files in, two aligned output files out.

What: ``prepare_parallel`` reads a source and a target file (plain or gzip) in lockstep,
tokenizes each side, optionally lowercases, and - only when asked - drops pairs that are empty,
too long or too unbalanced. It returns (and can write as JSON) the counts of what it read, kept
and dropped, and writes its outputs atomically.

Why this shape:
- Test sets go through the same code with no filter options, and then line *i* of each output is
  line *i* of the input (references, alignments and sentence-level scores depend on that), even
  when one side is empty.
- Errors name the file and line (invalid UTF-8) or both files and both counts (length mismatch),
  because a silently shifted corpus trains fine and scores badly.
- With ``require_pairs`` (which ``nmtlib prepare`` sets), a split with no pair left (empty files,
  or every pair filtered out) is an error naming both files, not an empty output that a later
  step would train on or score.
- Outputs appear only when complete (temp file in the same folder, then ``os.replace``), so an
  interrupted run never leaves a half file that looks finished to Snakemake or to a person.
"""

from __future__ import annotations

import json
import logging
import sys
from collections.abc import Iterator, Sequence
from contextlib import ExitStack
from dataclasses import asdict, dataclass
from itertools import zip_longest
from pathlib import Path
from typing import Any

from nmtlib.atomic import atomic_write, outputs_together
from nmtlib.errors import NmtlibError
from nmtlib.files import iter_lines
from nmtlib.data.tokenize import Tokenizer

__all__ = ["PrepareStats", "prepare_parallel", "read_lines", "atomic_write", "length_filter"]

log = logging.getLogger(__name__)

#: pairs handed to a worker at a time: large enough to amortize inter-process overhead
_BATCH = 2000


@dataclass
class PrepareStats:
    """Counts of one run; each dropped pair is counted once, under the first rule it fails
    (empty, then long, then ratio)."""

    read: int = 0
    kept: int = 0
    dropped_long: int = 0
    dropped_empty: int = 0
    dropped_ratio: int = 0

    def as_dict(self) -> dict[str, int]:
        return asdict(self)

    def summary(self) -> str:
        return (
            f"read {self.read}, kept {self.kept}, dropped {self.read - self.kept} "
            f"(empty {self.dropped_empty}, long {self.dropped_long}, ratio {self.dropped_ratio})"
        )


#: the one reader of text (BOM, line ends, UTF-8, NUL and control characters: nmtlib.files)
read_lines = iter_lines


def _count_rest(lines: Iterator[str]) -> int:
    return sum(1 for _ in lines)


def _paired(src: Path, tgt: Path) -> Iterator[tuple[str, str]]:
    """Both files in lockstep; a length mismatch is an error naming both files and counts."""
    src_lines, tgt_lines = read_lines(src), read_lines(tgt)
    n = 0
    for s, t in zip_longest(src_lines, tgt_lines):
        if s is None or t is None:
            n_src = n + (0 if s is None else 1 + _count_rest(src_lines))
            n_tgt = n + (0 if t is None else 1 + _count_rest(tgt_lines))
            raise NmtlibError(
                f"line count mismatch: {src} has {n_src} lines, {tgt} has {n_tgt} lines"
            )
        n += 1
        yield s, t


def length_filter(
    n_src: int,
    n_tgt: int,
    *,
    drop_empty: bool = False,
    max_len: int | None = None,
    max_ratio: float | None = None,
) -> str | None:
    """Why a pair with these token counts is dropped (``"empty"``, ``"long"``, ``"ratio"``), or
    None to keep it. The ratio rule applies only to pairs with both sides non-empty: an empty
    side is ``drop_empty``'s business, so each pair has exactly one reason."""
    if drop_empty and (n_src == 0 or n_tgt == 0):
        return "empty"
    if max_len is not None and (n_src > max_len or n_tgt > max_len):
        return "long"
    if (
        max_ratio is not None
        and n_src
        and n_tgt
        and max(n_src, n_tgt) / min(n_src, n_tgt) > max_ratio
    ):
        return "ratio"
    return None


# --- tokenization, optionally in worker processes --------------------------------------------

_WORKER: dict[str, Any] = {}


def _init_worker(src_tok: Tokenizer, tgt_tok: Tokenizer, lowercase: bool) -> None:
    _WORKER.update(src=src_tok, tgt=tgt_tok, lowercase=lowercase)


def _tokenize_batch(batch: Sequence[tuple[str, str]]) -> list[tuple[str, str]]:
    src_tok, tgt_tok, lower = _WORKER["src"], _WORKER["tgt"], _WORKER["lowercase"]
    out = []
    for s, t in batch:
        s, t = src_tok.tokenize(s), tgt_tok.tokenize(t)
        if lower:
            s, t = s.lower(), t.lower()
        out.append((s, t))
    return out


def _batches(pairs: Iterator[tuple[str, str]], size: int) -> Iterator[list[tuple[str, str]]]:
    batch: list[tuple[str, str]] = []
    for pair in pairs:
        batch.append(pair)
        if len(batch) >= size:
            yield batch
            batch = []
    if batch:
        yield batch


def prepare_parallel(
    src: Path | str,
    tgt: Path | str,
    out_src: Path | str,
    out_tgt: Path | str,
    *,
    src_tokenizer: Tokenizer,
    tgt_tokenizer: Tokenizer,
    lowercase: bool = False,
    drop_empty: bool = False,
    max_len: int | None = None,
    max_ratio: float | None = None,
    stats_path: Path | str | None = None,
    jobs: int = 1,
    progress: bool | None = None,
    require_pairs: bool = False,
) -> PrepareStats:
    """Tokenize (then lowercase, then filter) a parallel corpus; see the module docstring.

    :param max_len: drop pairs with more than this many tokens on either side.
    :param max_ratio: drop pairs whose longer side has more than this many times the tokens of
        the shorter side (both non-empty).
    :param jobs: worker processes for tokenization (1: in this process). Output order is the
        input order either way.
    :param progress: tqdm progress on stderr; None shows it only when stderr is a terminal.
    :param require_pairs: fail (writing nothing) when no pair is kept, because the inputs are
        empty or the filters dropped every pair; ``nmtlib prepare`` always sets it.
    :returns: the counts, also written to ``stats_path`` as JSON when given.
    """
    src, tgt, out_src, out_tgt = Path(src), Path(tgt), Path(out_src), Path(out_tgt)
    if max_len is not None and max_len < 1:
        raise NmtlibError(f"max_len must be >= 1, got {max_len}")
    if max_ratio is not None and max_ratio < 1:
        raise NmtlibError(f"max_ratio must be >= 1, got {max_ratio}")
    if out_src.resolve() == out_tgt.resolve():
        raise NmtlibError(f"source and target outputs are the same file: {out_src}")
    for path in (src, tgt):
        if not path.is_file():
            raise NmtlibError(f"{path}: no such file")
    jobs = max(1, int(jobs))

    from tqdm import tqdm

    # the two splits and their statistics appear together, or none of them
    with outputs_together():
        stats = PrepareStats()
        pairs = _paired(src, tgt)
        with ExitStack() as stack:
            f_src = stack.enter_context(atomic_write(out_src))
            f_tgt = stack.enter_context(atomic_write(out_tgt))
            bar = stack.enter_context(
                tqdm(
                    desc=f"prepare {src.name}",
                    unit=" lines",
                    file=sys.stderr,
                    disable=None if progress is None else not progress,
                    mininterval=1.0,
                )
            )
            if jobs == 1:
                _init_worker(src_tokenizer, tgt_tokenizer, lowercase)
                stack.callback(_WORKER.clear)
                tokenized: Iterator[list[tuple[str, str]]] = map(
                    _tokenize_batch, _batches(pairs, _BATCH)
                )
            else:
                import multiprocessing

                pool = multiprocessing.Pool(
                    jobs, initializer=_init_worker, initargs=(src_tokenizer, tgt_tokenizer, lowercase)
                )
                stack.callback(pool.terminate)  # runs last-in-first-out: before the files commit
                tokenized = pool.imap(_tokenize_batch, _batches(pairs, _BATCH))
            for batch in tokenized:
                for s, t in batch:
                    stats.read += 1
                    reason = length_filter(
                        len(s.split()),
                        len(t.split()),
                        drop_empty=drop_empty,
                        max_len=max_len,
                        max_ratio=max_ratio,
                    )
                    if reason is None:
                        stats.kept += 1
                        f_src.write(s + "\n")
                        f_tgt.write(t + "\n")
                    else:
                        field = f"dropped_{reason}"
                        setattr(stats, field, getattr(stats, field) + 1)
                bar.update(len(batch))
            if require_pairs and stats.kept == 0:
                # raised inside the ExitStack, so neither output appears: an empty split would train
                # an untrained model, or score an empty test set, without any error further on
                why = "both files are empty" if stats.read == 0 else f"every pair was dropped: {stats.summary()}"
                raise NmtlibError(f"no sentence pairs in {src} / {tgt}: {why}")
        if stats_path is not None:
            with atomic_write(stats_path) as fh:
                json.dump(stats.as_dict(), fh, indent=2)
                fh.write("\n")
    log.info("prepare %s / %s: %s", src, tgt, stats.summary())
    return stats
