"""Evaluation metrics that reproduce the reference scorers the papers used.

- :mod:`nmtlib.metrics.bleu`: tokenized BLEU equal to Moses ``multi-bleu.perl`` and
  detokenized BLEU with sacreBLEU (``13a``);
- :mod:`nmtlib.metrics.ribes`: RIBES equal to NTT's ``RIBES.py`` 1.02.4;
- :mod:`nmtlib.metrics.aer`: alignment error rate as lilt's ``aer.py --oneRef``;
- :mod:`nmtlib.metrics.perplexity` and :mod:`nmtlib.metrics.buckets` (BLEU per source length).

Every score is an object with ``to_dict()`` (what the CLI prints as JSON) and ``format()``
(the reference tool's own output line), as in sacreBLEU. This package only holds the shared
file helpers, so that ``nmtlib score`` imports nothing heavy (no torch, no numpy for BLEU).
"""

from __future__ import annotations

from collections.abc import Sequence
from os import PathLike
from pathlib import Path

from nmtlib.cli import NmtlibError

__all__ = ["MetricInputError", "read_lines", "check_parallel", "check_nonempty", "read_scored_files"]


class MetricInputError(NmtlibError, ValueError):
    """Input that cannot be scored (unparallel files, bad link, unreadable file).

    A :class:`~nmtlib.cli.NmtlibError`, so the CLI prints it as one line with exit code 2, and a
    :class:`ValueError`, so library callers can catch it without knowing about the CLI.
    """


def read_lines(path: str | PathLike[str]) -> list[str]:
    """Read a UTF-8 text file as one string per line, without the ``\\n``.

    Lines are split on ``\\n`` only (not on the other separators ``str.splitlines`` knows, such
    as U+2028 or form feed), like Perl's ``<FH>`` and Python's file iteration in the reference
    scorers; a final line without ``\\n`` is kept whole. Carriage returns stay in the line: all
    scorers split words on whitespace, which swallows them.

    :raises MetricInputError: the file is missing, unreadable or not UTF-8 (with the line number).
    """
    path = Path(path)
    try:
        data = path.read_bytes()
    except OSError as err:
        raise MetricInputError(f"cannot read {path}: {err.strerror or err}") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        line = data.count(b"\n", 0, err.start) + 1
        raise MetricInputError(f"{path}:{line}: not valid UTF-8 ({err.reason})") from None
    lines = text.split("\n")
    if lines[-1] == "":  # the newline that ends the last line does not start another one
        lines.pop()
    return lines


def check_parallel(
    hyp_name: str, hyps: Sequence[object], ref_name: str, refs: Sequence[object]
) -> None:
    """Fail unless two line-aligned inputs have the same number of lines.

    The reference scripts do not check this (``multi-bleu.perl`` silently scores a prefix),
    which turns a truncated output file into a plausible but wrong score.

    :raises MetricInputError: naming both inputs and their line counts.
    """
    if len(hyps) != len(refs):
        raise MetricInputError(
            f"{hyp_name} has {len(hyps)} lines but {ref_name} has {len(refs)} lines; "
            "they must be line-parallel (one segment per line)"
        )


def check_nonempty(what: str, segments: Sequence[object]) -> None:
    """Fail on zero segments: a corpus score of nothing is undefined, not 0 or 100.

    :raises MetricInputError: naming ``what``.
    """
    if not segments:
        raise MetricInputError(f"{what}: no segment to score (0 lines)")


def read_scored_files(hyp_path: str | PathLike[str], ref_paths: Sequence[str | PathLike[str]]
                      ) -> tuple[list[str], list[list[str]]]:
    """A hypothesis file and its reference files, checked line-parallel and not empty.

    :raises MetricInputError: unreadable, not parallel (naming both files) or empty.
    """
    hyps = read_lines(hyp_path)
    refs = [read_lines(path) for path in ref_paths]
    for path, stream in zip(ref_paths, refs, strict=True):
        check_parallel(f"hypothesis file {hyp_path}", hyps, f"reference file {path}", stream)
    check_nonempty(f"hypothesis file {hyp_path} and reference file {ref_paths[0]}", hyps)
    return hyps, refs
