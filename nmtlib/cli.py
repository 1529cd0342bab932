"""The ``nmtlib`` command line: one sub-command per pipeline step.

Each sub-command lives in ``nmtlib/commands/<name>.py`` and exposes
``register(subparsers) -> None``, which adds its parser and sets ``func`` (a callable taking
the parsed ``argparse.Namespace`` and returning an exit code). Modules are imported lazily per
invocation so that ``nmtlib score`` does not pay for importing torch.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import os
import re
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nmtlib.errors import NmtlibError

if TYPE_CHECKING:  # imported where used: `nmtlib score` does not pay for torch
    import torch

    from nmtlib.data.batching import ParallelData
    from nmtlib.data.vocab import Vocabulary
    from nmtlib.models.seq2seq import Seq2Seq

#: sub-command modules under ``nmtlib.commands``, in the order ``--help`` lists them
COMMANDS: tuple[str, ...] = (
    "corpus",
    "download",
    "prepare",
    "vocab",
    "train",
    "translate",
    "align",
    "score",
    "compare",
    "evaluate",
    "report",
    "publish",
    "verify",
    "carry",
)


def int_at_least(minimum: int):
    """An argparse ``type=`` for counts: ``--threads 0`` is an error, not "all cores"."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be at least {minimum}, got {value}")
        return value

    parse.__name__ = "int"  # argparse names the type in its messages
    return parse


positive_int = int_at_least(1)


def add_forced_decoding_arguments(parser: argparse.ArgumentParser) -> None:
    """The inputs of a command that runs a model over source and reference (``align``,
    ``evaluate perplexity``): the model, the parallel text, its vocabularies, batch and device."""
    parser.add_argument("--model", type=Path, required=True, help="model.pt")
    parser.add_argument("--src", type=Path, required=True, help="tokenized source, one sentence per line")
    parser.add_argument("--tgt", type=Path, required=True, help="tokenized reference, line-parallel to --src")
    parser.add_argument("--src-vocab", type=Path, default=None,
                        help="the model's source vocabulary, checked against it (default: the one model.pt carries)")
    parser.add_argument("--tgt-vocab", type=Path, default=None,
                        help="the model's target vocabulary (default: the one model.pt carries)")
    parser.add_argument("--batch-size", type=positive_int, default=64, metavar="N",
                        help="sentences per batch (default: 64)")
    parser.add_argument("--device", default="auto", choices=["auto", "cpu", "cuda"],
                        help="auto: CUDA when available (default: auto)")
    add_threads_argument(parser)


def load_vocabulary(path: str | Path) -> Vocabulary:
    """The vocabulary file ``path`` (``-``: standard input).

    :raises ValueError: naming the file, when it is not a vocabulary."""
    from nmtlib.data.vocab import Vocabulary
    from nmtlib.files import is_stdin, read_lines

    return Vocabulary(read_lines(path)) if is_stdin(path) else Vocabulary.load(path)


def load_forced_decoding_inputs(args: argparse.Namespace, outputs: tuple[str, ...] = ("out",), *, prog: str
                                ) -> tuple[Seq2Seq, dict[str, Any], ParallelData, torch.device]:
    """How a command of :func:`add_forced_decoding_arguments` begins (``align``, ``evaluate
    perplexity``): at most one of its inputs from standard input (:func:`one_stdin`, ``outputs``
    aside), PyTorch's threads set, the device chosen; then the model, its record, the parallel text
    and that device; a warning (``prog: warning: ...``) for each source line longer than the
    model attends to (:func:`warn_past_location`). The text is encoded with the vocabulary files
    given (checked against the model; ``-`` is standard input) or, without them, with those
    model.pt carries (as ``nmtlib translate`` does).

    :raises NmtlibError: in one line, naming the file."""
    from nmtlib.checkpoint import embedded_vocabularies, load_model, select_device
    from nmtlib.data.batching import ParallelData

    one_stdin(args, outputs)
    set_threads(args.threads)
    device = select_device(args.device)
    if (args.src_vocab is None) != (args.tgt_vocab is None):
        raise NmtlibError("give both vocabulary files (--src-vocab and --tgt-vocab), or neither for the model's own")
    try:
        # unreadable, not a model, a pickle payload, or vocabularies other than the model's:
        # checkpoint.CheckpointError (a ValueError) names the files in one line
        model, record = load_model(args.model, device, args.src_vocab, args.tgt_vocab)
        if args.src_vocab is None:
            src_vocab, tgt_vocab = embedded_vocabularies(record, args.model)
        else:
            src_vocab, tgt_vocab = load_vocabulary(args.src_vocab), load_vocabulary(args.tgt_vocab)
        data = ParallelData.load(args.src, args.tgt, src_vocab, tgt_vocab)
    except (ValueError, OSError) as err:  # OSError: a file that cannot be read
        raise NmtlibError(str(err)) from None
    warn_past_location(prog, [model], [len(s) for s in data.src],
                       "<stdin>" if str(args.src) == "-" else args.src)
    return model, record, data, device


def location_limit(models: Sequence[torch.nn.Module]) -> int | None:
    """The fewest source positions a model of ``models`` attends to: L_max of the location score
    (Luong et al. 2015, Eq. 9: ``W_a`` has one row per position, so positions at or past it get no
    weight), the smallest among an ensemble's; None where no model has such a limit."""
    limits = [int(m.max_positions) for model in models for m in model.modules() if hasattr(m, "max_positions")]
    return min(limits) if limits else None


def warn_past_location(prog: str, models: Sequence[torch.nn.Module], lengths: Sequence[int], where: Path | str,
                       first_line: int = 1, shown: int = 10) -> None:
    """One warning line on stderr per source line longer than the models' location limit
    (:func:`location_limit`; ``lengths``: the tokens each line is decoded from, the first being line
    ``first_line`` of ``where``): its words past L_max are read by the encoder but get no attention
    (docs/reliability.md, L3). The first ``shown`` lines, then how many more."""
    limit = location_limit(models)
    if limit is None:
        return
    over = [(i, n) for i, n in enumerate(lengths, first_line) if n > limit]
    for k, (line, n) in enumerate(over):
        if k == shown:
            print(f"{prog}: warning: {where}: {len(over) - shown} more line(s) over {limit} tokens, their last "
                  f"words unattended the same way", file=sys.stderr)
            break
        print(f"{prog}: warning: {where}:{line}: {n} tokens, but the location score attends to the first {limit} "
              f"(max_positions): the last {n - limit} get no attention", file=sys.stderr)


def add_threads_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--threads", type=positive_int, default=None, metavar="N",
                        help="CPU threads for PyTorch (default: all cores; the workflow passes its rule's threads)")


@contextlib.contextmanager
def library_log_to_stderr(prefix: str, level: int | None = None) -> Iterator[None]:
    """Within the block, show the ``nmtlib`` logger's records (the library reports downloads and
    first-use checksums through logging) on stderr as ``<prefix>: <message>``; ``level``, if given,
    lowers the logger's threshold for the block."""
    import logging

    logger = logging.getLogger("nmtlib")
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter(f"{prefix}: %(message)s"))
    old_level = logger.level
    logger.addHandler(handler)
    if level is not None:
        logger.setLevel(level)
    try:
        yield
    finally:
        logger.removeHandler(handler)
        logger.setLevel(old_level)


def set_threads(threads: int | None) -> None:
    """Pin PyTorch's intra-op threads. Oversubscribed OpenMP threads spin against each other:
    with two 2-thread jobs on 2 cores, training ran 5x slower than with 1 thread each."""
    if threads:
        import torch

        torch.set_num_threads(threads)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="nmtlib", description=plain_text(__doc__.split("\n\n")[0]))
    parser.add_argument("--version", action="version", version=_version())
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name in COMMANDS:
        module = importlib.import_module(f"nmtlib.commands.{name}")
        module.register(sub)
        # a command says once what it does, in its module's docstring: that is its --help description
        command = sub.choices[name]
        if command.description is None and module.__doc__:
            command.description = plain_text(module.__doc__.split("\n\n")[0])
    return parser


def strip_markup(doc: str) -> str:
    """A docstring without its reStructuredText markup (``x`` and :func:`x` become x), its lines kept."""
    return re.sub(r":\w+:`~?([^`]+)`", r"\1", doc).replace("``", "")  # :func:`x` -> x


def plain_text(doc: str) -> str:
    """A docstring paragraph as --help shows it: no reStructuredText markup, one line."""
    return " ".join(strip_markup(doc).split())


def _version() -> str:
    from nmtlib import __version__

    return f"nmtlib {__version__}"


def one_stdin(args: argparse.Namespace, outputs: tuple[str, ...] = ("out",)) -> None:
    """Fail unless at most one file argument of ``args`` (the ``outputs`` aside) is ``-``:
    standard input is one stream, and two files read from it would both get it whole."""
    from nmtlib.files import is_stdin

    readers = [f"--{name.replace('_', '-')}" for name, value in vars(args).items() if name not in outputs
               for item in (value if isinstance(value, list) else [value]) if is_stdin(item)]
    if len(readers) > 1:
        raise NmtlibError(f"{', '.join(readers[:-1])} and {readers[-1]} read standard input (-): only one file "
                          f"can come from it")


#: the exit status of a command whose reader closed its output (``| head -1``): a shell's for SIGPIPE
BROKEN_PIPE_EXIT = 128 + 13


def main(argv: Sequence[str] | None = None) -> int:
    from nmtlib.atomic import one_command

    args = build_parser().parse_args(argv)
    try:
        with one_command():  # the rule for every output of every command (nmtlib.atomic)
            code = int(args.func(args) or 0)
        sys.stdout.flush()  # here, not at exit: a closed pipe must be caught below
        return code
    except NmtlibError as err:
        print(f"nmtlib {args.command}: error: {err}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        # the reader went away (`nmtlib score ... | head -1`): stop quietly, as a tool killed by SIGPIPE
        # does; what is still buffered for stdout goes nowhere, not into a traceback at exit
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return BROKEN_PIPE_EXIT


if __name__ == "__main__":
    raise SystemExit(main())
