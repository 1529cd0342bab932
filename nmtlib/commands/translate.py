"""``nmtlib translate``: beam search (or an ensemble) over raw text or a tokenized file.

Two ways in:

- text (no --out): raw sentences from --src or standard input are tokenized as the
  model's experiment tokenized its data (recorded in model.pt), decoded, their unknown words
  replaced, detokenized and printed one per line; --tokenized takes and prints tokens. Lines
  that arrive one at a time (a pipe, a terminal) are translated and printed as they come; a
  file is read whole and decoded in the batches the workflow decodes it in.
  A corpus that comes tokenized (small_parallel_enja: English lowercased and tokenized, Japanese
  segmented with KyTea) records the tokenizer none, and raw input is then split at spaces only:
  --src-tokenizer, --tgt-tokenizer and --lowercase name the tokenization nearest that corpus' own
  (say, --src-tokenizer ja for Japanese, --src-tokenizer moses --lowercase for its English). The
  last stderr line counts the input words that are not in the model's source vocabulary.
- files (--out PREFIX, what the workflow runs): a tokenized --src in, PREFIX.txt,
  PREFIX.unk.txt and PREFIX.jsonl (per-sentence details) out.

A blank input line gives an empty output line: there is nothing to translate, and the models
are not run on it. --greedy is beam 1 (another --beam beside it is an error), and --tau needs a
model with Flexible Attention (as the config requires): what the banner and the summary report
is what runs.

--n-best K keeps the K best hypotheses of each sentence, best first: text mode prints K lines
``id ||| translation ||| score`` per sentence (id 0-based), files mode adds them to each
PREFIX.jsonl record and writes PREFIX.nbest.txt in that format.

Vocabularies come from the model file unless --src-vocab/--tgt-vocab are given. Each decoding
option comes from the first of: its flag; --decode-json; the experiment's settings when the
model sits in an experiment's results (models/<variant>/decode.json, which the workflow writes
with every option it decoded with and the unknown-word dictionary with its sha256); the
defaults. For an ensemble, the first model's. stderr names the models and each option with
where it came from.
"""

from __future__ import annotations

import argparse
import json
import os
import select
import stat
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from nmtlib.atomic import atomic_write, outputs_together
from nmtlib.cli import add_threads_argument, location_limit, positive_int, strip_markup, warn_past_location
from nmtlib.files import is_stdin, iter_lines
from nmtlib.data.tokenize import available_tokenizers
from nmtlib.errors import NmtlibError
from nmtlib.layout import DECODE_SETTINGS, Layout, settings_beside
from nmtlib.config import (ConfigError, DecodeConfig, TrainConfig, argparse_type, check_run_settings, option_choices,
                           option_help)

#: the experiment's decoding settings of a variant, beside its seeds' folders (nmtlib.layout)
SETTINGS_FILE = DECODE_SETTINGS
#: where that file is in a results folder, for the help texts
_SETTINGS_PATH = Layout(Path()).decode_settings("<variant>")
#: bytes of piped input gathered into one chunk at most (:func:`input_chunks`)
GATHER = 1 << 24
#: where a flag's default comes from before DecodeConfig's (``--help``)
DEFAULT_FROM = f"the experiment's, from {_SETTINGS_PATH}"

#: DecodeConfig options that are flags of ``translate`` (``taus`` is ``--tau``, one at a time):
#: type, range, default and help come from their definition
_FLAGS = ("beam", "max_len_ratio", "length_norm", "batch_size", "unk_replace", "cuda_graphs", "tf32", "in_flight",
          "max_src_len")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("translate", help="translate raw text (stdin to stdout) or a tokenized file",
                       description=strip_markup(__doc__), formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", type=Path, action="append", default=[],
                   help="model.pt (required); give several for an ensemble (averaged output distributions)")
    p.add_argument("--src", type=Path, default=None,
                   help="source file (text mode default: standard input; files mode: required, tokenized)")
    p.add_argument("--out", type=Path, default=None, metavar="PREFIX",
                   help="files mode: write PREFIX.txt, PREFIX.unk.txt and PREFIX.jsonl instead of printing")
    p.add_argument("--tokenized", action="store_true",
                   help="text mode: the input is tokenized as the training data was; print tokens, not text")
    tokenizers = available_tokenizers()
    p.add_argument("--src-tokenizer", choices=tokenizers, default=None, metavar="NAME",
                   help="text mode: tokenize the raw input with NAME, not with the tokenizer the model records (its "
                        f"experiment's): for a corpus that came tokenized, which records none ({', '.join(tokenizers)})")
    p.add_argument("--tgt-tokenizer", choices=tokenizers, default=None, metavar="NAME",
                   help="text mode: detokenize the output with NAME, not with the tokenizer the model records")
    p.add_argument("--lowercase", action=argparse.BooleanOptionalAction, default=None,
                   help="text mode: lowercase the raw input (default: as the model records)")
    p.add_argument("--src-vocab", type=Path, default=None, help="source vocabulary (default: the model's own)")
    p.add_argument("--tgt-vocab", type=Path, default=None, help="target vocabulary (default: the model's own)")
    p.add_argument("--decode-json", type=_run_settings, default=None, metavar="JSON",
                   help="decoding options as one JSON object: every decode option of the config but taus, plus "
                        f"tau (what the workflow passes; default: {DEFAULT_FROM} when there is one); a flag given "
                        "beside it wins")
    _decode_flags(p)
    p.add_argument("--greedy", action="store_true",
                   help="plain argmax decoding: beam 1, the same output as --beam 1 (another --beam beside it is an error)")
    p.add_argument("--tau", type=argparse_type(DecodeConfig, "taus"), default=None,
                   help=f"Flexible Attention threshold τ, a positive number (default: {DEFAULT_FROM}, else ∞, no "
                        f"threshold)")
    p.add_argument("--dict", type=Path, default=None, metavar="FILE",
                   help=f"dictionary for unknown-word replacement, 'source target' per line (default: the one "
                        f"{DEFAULT_FROM} records, checked by its sha256; else none: copy the attended source word)")
    p.add_argument("--n-best", type=positive_int, default=1, metavar="K",
                   help="keep the K best hypotheses per sentence, best first, at most the beam: text mode prints "
                        "'id ||| translation ||| score' lines, files mode adds PREFIX.nbest.txt (default: 1)")
    p.add_argument("--device", default="auto", choices=option_choices(TrainConfig, "device"),
                   help="auto: CUDA when available (default: auto)")
    p.add_argument("--summary-out", type=Path, default=None, help="files mode: also write the JSON summary here")
    p.add_argument("--save-settings", type=Path, default=None, metavar="FILE",
                   help="write the decoding options (--decode-json and flags, checked, and the --dict file's path "
                        f"relative to FILE and sha256) to FILE and exit; the workflow writes {_SETTINGS_PATH} "
                        "so")
    add_threads_argument(p)
    p.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    p.set_defaults(func=run)


def _decode_flags(p: argparse.ArgumentParser) -> None:
    # default None: a flag not given leaves the option to --decode-json, then decode.json, then DecodeConfig
    for key in _FLAGS:
        default = getattr(DecodeConfig, key)
        flag = "--" + key.replace("_", "-")
        if isinstance(default, bool):  # --length-norm / --no-length-norm: either can override decode.json
            p.add_argument(flag, action=argparse.BooleanOptionalAction, default=None,
                           help=option_help(DecodeConfig, key, DEFAULT_FROM))
        else:
            p.add_argument(flag, type=argparse_type(DecodeConfig, key), default=None,
                           help=option_help(DecodeConfig, key, DEFAULT_FROM),
                           metavar="N" if isinstance(default, int) else "X")


def _run_settings(text: str) -> dict:
    try:
        raw = json.loads(text)
        check_run_settings(raw, "JSON")
        return raw
    except json.JSONDecodeError as err:
        raise argparse.ArgumentTypeError(f"not JSON: {err}") from None
    except ConfigError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def experiment_settings(model: Path) -> Path | None:
    """The experiment's settings file of a model in its results (:func:`nmtlib.layout.settings_beside`)."""
    path = settings_beside(model.resolve())
    return path if path.is_file() else None


#: a settings file written before it recorded the dictionary (no "dictionary" key)
_UNRECORDED = object()


def _read_settings_file(path: Path) -> tuple[dict[str, Any], Any]:
    """The options a settings file gives (as written, checked) and the dictionary it records,
    found relative to the file and checked against its sha256 (``_UNRECORDED``: a file written
    before it recorded one)."""
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
        record = raw.pop("dictionary", _UNRECORDED) if isinstance(raw, dict) else None
        check_run_settings(raw, str(path))
    except (ValueError, OSError) as err:  # ConfigError and JSONDecodeError are ValueErrors
        raise NmtlibError(f"{path}: {err}") from None
    if record is None or record is _UNRECORDED:
        return raw, record
    if not (isinstance(record, dict) and isinstance(record.get("path"), str) and isinstance(record.get("sha256"), str)):
        raise NmtlibError(f"{path}: \"dictionary\" must be null or {{\"path\": ..., \"sha256\": ...}}, got {record!r}")
    dictionary = Path(os.path.normpath(path.parent / record["path"]))
    from nmtlib.files import sha256_file

    if not dictionary.is_file():
        raise NmtlibError(f"{path}: the experiment replaced unknown words with the dictionary {dictionary}, which is "
                          f"not there; give it with --dict FILE, or --no-unk-replace")
    if (digest := sha256_file(dictionary)) != record["sha256"]:
        raise NmtlibError(f"{dictionary}: sha256 {digest[:12]}…, but the experiment decoded with sha256 "
                          f"{record['sha256'][:12]}… ({path}): the dictionary changed; give it with --dict "
                          f"{dictionary} to use it as it is now")
    return raw, dictionary


def decode_settings(args: argparse.Namespace) -> tuple[dict[str, Any], dict[str, str]]:
    """The run's decoding options, ``dictionary`` (a path, or None) among them, and where each came
    from: ``flags``, else ``--decode-json``, else the experiment's settings file (its path), else
    ``defaults``."""
    settings: dict[str, Any] = {**check_run_settings({}, "defaults"), "dictionary": None}
    sources = dict.fromkeys(settings, "defaults")
    if args.decode_json is not None:  # checked by argparse (_run_settings)
        given, label = dict(args.decode_json), "--decode-json"
    elif args.model and (path := experiment_settings(args.model[0])) is not None:
        given, dictionary = _read_settings_file(path)
        label = str(path)
        if dictionary is not _UNRECORDED:
            given["dictionary"] = dictionary
        elif args.dict is None and (given.get("unk_replace", DecodeConfig.unk_replace) if args.unk_replace is None
                                    else args.unk_replace):
            print(f"nmtlib translate: warning: {path} was written before it recorded the unknown-word dictionary; "
                  f"if the experiment had one (data.dictionary), give it with --dict FILE (snakemake rewrites "
                  f"{SETTINGS_FILE} with it)", file=sys.stderr)
    else:
        given, label = {}, "defaults"
    flags = {key: getattr(args, key) for key in _FLAGS if getattr(args, key) is not None}
    if args.tau is not None:
        flags["tau"] = args.tau
    if args.dict is not None:
        flags["dictionary"] = args.dict
    for values, where in ((given, label), (flags, "flags")):
        checked = check_run_settings({k: v for k, v in values.items() if k != "dictionary"}, where)
        for key, value in values.items():
            settings[key] = value if key == "dictionary" else checked[key]
            sources[key] = where
    return settings, sources


def describe(settings: dict[str, Any], sources: dict[str, str]) -> list[str]:
    """The banner's lines of options: each option and its value, grouped by where it came from."""

    def shown(key: str) -> str:
        value = settings[key]
        if key == "tau":
            return "tau ∞" if value is None else f"tau {value:g}"
        if key == "dictionary":
            if not settings["unk_replace"]:
                return "dictionary unused (no replacement)"
            if value is None:
                return "dictionary none (an <unk> becomes the source word it attends to most)"
            from nmtlib.files import sha256_file

            return f"dictionary {value} (sha256 {sha256_file(value)[:12]}…)"
        return f"{key} {str(value).lower() if isinstance(value, bool) else value}"

    groups: dict[str, list[str]] = {}
    for key in settings:
        groups.setdefault(sources[key], []).append(shown(key))
    rank = {"flags": 0, "--decode-json": 1, "defaults": 3}  # a settings file: 2
    return [f"from {where}: {', '.join(groups[where])}" for where in sorted(groups, key=lambda w: rank.get(w, 2))]


def _save_settings(path: Path, settings: dict[str, Any]) -> None:
    """``settings`` as the experiment's settings file, the dictionary by its path relative to the
    file's folder and its sha256 (:func:`_read_settings_file` reads it back)."""
    from nmtlib.files import sha256_file

    dictionary = settings["dictionary"] if settings["unk_replace"] else None
    try:
        record = {**settings, "dictionary": None if dictionary is None else {
            "path": os.path.relpath(dictionary, path.resolve().parent), "sha256": sha256_file(dictionary)}}
    except OSError as err:
        raise NmtlibError(f"--dict {dictionary}: {err.strerror or err}") from None
    with atomic_write(path) as f:
        f.write(json.dumps(record, indent=2, sort_keys=True) + "\n")


def run(args: argparse.Namespace) -> int:
    settings, sources = decode_settings(args)
    if args.save_settings is not None:
        _save_settings(args.save_settings, settings)
        return 0
    if not args.model:
        raise NmtlibError("give the model to translate with: --model PATH/model.pt")
    if args.out is not None and args.src is None:
        raise NmtlibError("--out translates a file: give it with --src")
    text_flags = [f"--{k.replace('_', '-')}" for k in ("src_tokenizer", "tgt_tokenizer", "lowercase")
                  if getattr(args, k) is not None]
    if text_flags and (args.out is not None or args.tokenized):
        raise NmtlibError(f"{' '.join(text_flags)}: for raw text in text mode, not with "
                          f"{'--out (files mode reads tokens)' if args.out is not None else '--tokenized'}")
    if args.greedy:  # greedy search is beam 1: a beam given beside it would be reported, not run
        if settings["beam"] != 1 and sources["beam"] in ("flags", "--decode-json"):
            raise NmtlibError(f"--greedy decodes with beam 1, but beam {settings['beam']} comes from "
                              f"{'--beam' if sources['beam'] == 'flags' else '--decode-json'}: give one of them")
        if args.n_best > 1:
            raise NmtlibError(f"--n-best {args.n_best} needs beam search: not with --greedy")
        # the experiment's or the default beam gives way: what is reported is what runs
        settings["beam"], sources["beam"] = 1, "flags"
    if args.n_best > settings["beam"]:
        raise NmtlibError(f"--n-best {args.n_best}: at most the beam size, {settings['beam']} "
                          f"({sources['beam']}); give --beam {args.n_best} or more")
    from nmtlib.cli import set_threads

    set_threads(args.threads)
    import torch

    from nmtlib.checkpoint import select_device
    from nmtlib.decode.translate import DecodeOptions, load_models, translate_loaded
    from nmtlib.decode.unk import load_dictionary

    opts = DecodeOptions(greedy=args.greedy, n_best=args.n_best,
                         **{key: settings[key] for key in (*_FLAGS, "tau") if key != "unk_replace"})
    try:
        device = select_device(args.device)
        loaded = load_models(args.model, device, args.src_vocab, args.tgt_vocab, settings["tau"])
        dictionary = load_dictionary(settings["dictionary"]) if settings["dictionary"] and settings["unk_replace"] \
            else None
        # what runs, once the models and the dictionary are known to load (an error is one line)
        models = "1 model" if len(args.model) == 1 else f"an ensemble of {len(args.model)} models"
        print(f"nmtlib translate: {models}: {', '.join(map(str, args.model))}", file=sys.stderr)
        for line in describe(settings, sources):
            print(f"nmtlib translate: {line}", file=sys.stderr)
        with torch.no_grad():  # not torch.set_grad_enabled(False): in-process callers keep their autograd
            if args.out is None:
                return _translate_text(args, loaded, opts, settings, dictionary, device)
            # standard input can be read once only: by the decoding
            if location_limit(loaded[0]) is not None and not is_stdin(args.src):
                warn_past_location("nmtlib translate", loaded[0],
                                   [_decoded_length(line.split(), opts) for line in iter_lines(args.src)], args.src)
            with outputs_together():  # PREFIX.txt, .unk.txt, .jsonl and the summary: all or none
                result = translate_loaded(*loaded[:3], args.src, args.out, opts, dictionary, device,
                                          progress=not args.no_progress, unk_replace=settings["unk_replace"])
                result.update({key: settings[key] for key in ("tau", "beam", "tf32", "in_flight")})
                if args.summary_out:
                    with atomic_write(args.summary_out) as f:
                        f.write(json.dumps(result, indent=2) + "\n")
    except (ValueError, FileNotFoundError) as err:
        raise NmtlibError(str(err)) from None
    print(json.dumps(result))
    return 0


def _decoded_length(tokens: list[str], opts: Any) -> int:
    """How many of a source line's ``tokens`` the search reads (``max_src_len`` cuts the rest)."""
    return len(tokens) if opts.max_src_len is None else min(len(tokens), opts.max_src_len)


def input_chunks(src: Path | None) -> Iterator[list[str]]:
    """The input's lines in chunks, each what has arrived by the time the previous one is done:
    ``src`` or a regular file on standard input whole, in one chunk (the batches of the workflow's
    decoding of it); a pipe or a terminal as its lines come, so that each is answered before the
    next arrives."""
    from nmtlib.files import CHUNK, decode_lines, read_lines

    if src is not None:
        yield read_lines(src)
        return
    try:
        fd = sys.stdin.fileno()
    except (AttributeError, OSError, ValueError):  # a stand-in for stdin (an in-process caller's)
        yield sys.stdin.read().splitlines()
        return
    if stat.S_ISREG(os.fstat(fd).st_mode):
        yield read_lines("-")
        return
    pending, number = b"", 1
    while True:
        data = os.read(fd, CHUNK)  # waits for input; nothing at its end
        eof = not data
        # and what else has arrived meanwhile (up to a bound, for a producer that never pauses)
        while not eof and len(data) < GATHER and select.select([fd], [], [], 0)[0]:
            more = os.read(fd, CHUNK)
            eof = not more
            data += more
        *complete, pending = (pending + data).split(b"\n")
        if eof and pending:  # a last line without its newline
            complete, pending = [*complete, pending], b""
        if complete:
            lines = decode_lines(b"\n".join(complete) + b"\n", "<stdin>", number)
            number += len(lines)
            yield lines
        if eof:
            return


def _translate_text(args: argparse.Namespace, loaded, opts, settings: dict[str, Any], dictionary, device) -> int:
    """Text mode: raw lines in (a file or stdin), one translation per line on stdout (``n_best``
    lines with ``--n-best``), printed as each chunk of input is decoded. ``loaded``: what
    :func:`~nmtlib.decode.translate.load_models` returned."""
    from nmtlib.data.tokenize import NoneTokenizer, get_tokenizer
    from nmtlib.decode.translate import nbest_line, translate_tokens, warn_truncated

    where = str(args.src) if args.src is not None else "<stdin>"
    models, src_vocab, tgt_vocab, record = loaded
    prep = record.get("preprocess")
    if not args.tokenized and prep is None:
        raise NmtlibError(f"{args.model[0]} records no tokenization (trained before nmtlib kept it in model.pt); "
                          f"tokenize the input as its training data was and pass --tokenized")
    if not args.tokenized:
        src_name, tgt_name = args.src_tokenizer or prep["src_tokenizer"], args.tgt_tokenizer or prep["tgt_tokenizer"]
        lowercase = prep["lowercase"] if args.lowercase is None else args.lowercase
        src_tok = get_tokenizer(src_name, prep["src_lang"], escape=prep["escape"])
        tgt_tok = get_tokenizer(tgt_name, prep["tgt_lang"], escape=prep["escape"])
        came_tokenized = args.src_tokenizer is None and isinstance(src_tok, NoneTokenizer)
        print(f"nmtlib translate: raw text in: tokenizer {src_name} ({_origin(args.src_tokenizer)}), "
              f"{'lowercased' if lowercase else 'case kept'} ({_origin(args.lowercase)}); out: detokenizer {tgt_name} "
              f"({_origin(args.tgt_tokenizer)})"
              + ("; the model's corpus came tokenized, so each line is split at spaces only: give raw text "
                 "--src-tokenizer NAME" if came_tokenized else ""), file=sys.stderr)
    print(f"nmtlib translate: translating {where}", file=sys.stderr)
    done = n_words = n_unknown = 0  # the input's words and those not in the source vocabulary
    for lines in input_chunks(args.src):
        if not args.tokenized:
            lines = [src_tok.tokenize(line.lower() if lowercase else line) for line in lines]
        sentences = [line.split() for line in lines]
        n_words += sum(map(len, sentences))
        n_unknown += sum(w not in src_vocab.stoi for tokens in sentences for w in tokens)
        outputs, truncated = translate_tokens(models, sentences, src_vocab, tgt_vocab, opts,
                                              device, dictionary, settings["unk_replace"],
                                              progress=not args.no_progress and len(lines) > 1)
        warn_truncated({done + i: tokens for i, tokens in truncated.items()}, opts.max_src_len, where)
        warn_past_location("nmtlib translate", models, [_decoded_length(s, opts) for s in sentences], where,
                           first_line=done + 1)
        for i, hypotheses in enumerate(outputs):
            texts = [(" ".join(words), score) for words, score in hypotheses]
            if not args.tokenized:
                texts = [(tgt_tok.detokenize(text), score) for text, score in texts]
            if opts.n_best == 1:
                print(texts[0][0])
            else:
                for text, score in texts:
                    print(nbest_line(done + i, text, score))
        sys.stdout.flush()  # each chunk's translations before the next chunk is waited for
        done += len(lines)
    share = f" ({100 * n_unknown / n_words:.0f}%)" if n_words else ""
    print(f"nmtlib translate: {done} line(s) translated; {n_unknown} of {n_words} source words{share} not in the "
          f"model's source vocabulary", file=sys.stderr)
    return 0


def _origin(flag: str | bool | None) -> str:
    return "the model's" if flag is None else "flag"
