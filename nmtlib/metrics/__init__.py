"""Evaluation metrics that reproduce the reference scorers the papers used.

- :mod:`nmtlib.metrics.bleu`: tokenized BLEU equal to Moses ``multi-bleu.perl`` and
  detokenized BLEU with sacreBLEU (``13a``);
- :mod:`nmtlib.metrics.ribes`: RIBES equal to NTT's ``RIBES.py`` 1.02.4;
- :mod:`nmtlib.metrics.aer`: alignment error rate as lilt's ``aer.py --oneRef``;
- :mod:`nmtlib.metrics.perplexity` and :mod:`nmtlib.metrics.buckets` (BLEU per source length);
- :mod:`nmtlib.metrics.unknowns`: what unknown-word replacement had to work with.

Every score is an object with ``to_dict()`` (what the CLI prints as JSON) and ``format()``
(the reference tool's own output line), as in sacreBLEU. This package only holds the shared
input checks, so that ``nmtlib score`` imports nothing heavy (no torch, no numpy for BLEU).
"""

from __future__ import annotations

from collections.abc import Sequence
from os import PathLike

from nmtlib.errors import InputError
from nmtlib.files import read_lines

__all__ = ["MetricInputError", "check_parallel", "check_nonempty", "read_scored_files"]


class MetricInputError(InputError):
    """Input that cannot be scored (unparallel files, a bad link, no segment).

    An :class:`~nmtlib.errors.InputError`: the CLI prints it as one line with exit code 2, and
    library callers catch it as a :class:`ValueError`. Unreadable files raise the InputError of
    :func:`nmtlib.files.read_lines`.
    """


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
