"""``nmtlib translate``: beam search (or an ensemble) over raw text or a tokenized file.

Two ways in:

- text (no --out): raw sentences from --src or standard input are tokenized as the
  model's experiment tokenized its data (recorded in model.pt), decoded, their unknown words
  replaced, detokenized and printed one per line; --tokenized takes and prints tokens.
- files (--out PREFIX, what the workflow runs): a tokenized --src in, PREFIX.txt,
  PREFIX.unk.txt and PREFIX.jsonl (per-sentence details) out.

Vocabularies come from the model file unless --src-vocab/--tgt-vocab are given. Decoding options:
the defaults, then the experiment's settings when the model sits in an experiment's results
(models/<variant>/decode.json, written by the workflow), then --decode-json, then the flags given.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from nmtlib.atomic import atomic_write
from nmtlib.cli import add_threads_argument, strip_markup
from nmtlib.errors import NmtlibError
from nmtlib.config import (ConfigError, DecodeConfig, TrainConfig, argparse_type, check_run_settings, option_choices,
                           option_help)

#: the experiment's decoding settings of a variant, beside its seeds' folders (models/<variant>/)
SETTINGS_FILE = "decode.json"

#: DecodeConfig options that are flags of ``translate`` (``taus`` is ``--tau``, one at a time, and
#: ``unk_replace`` is ``--no-unk-replace``): type, range, default and help come from their definition
_FLAGS = ("beam", "max_len_ratio", "length_norm", "batch_size", "cuda_graphs", "tf32", "in_flight", "max_src_len")


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
    p.add_argument("--src-vocab", type=Path, default=None, help="source vocabulary (default: the model's own)")
    p.add_argument("--tgt-vocab", type=Path, default=None, help="target vocabulary (default: the model's own)")
    p.add_argument("--decode-json", type=_run_settings, default=None, metavar="JSON",
                   help="decoding options as one JSON object: every decode option of the config but taus, plus "
                        f"tau (what the workflow passes; default: the experiment's models/<variant>/{SETTINGS_FILE} "
                        "when there is one); a flag given beside it wins")
    _decode_flags(p)
    p.add_argument("--greedy", action="store_true", help="plain argmax decoding (same output as --beam 1)")
    p.add_argument("--tau", type=argparse_type(DecodeConfig, "taus"), default=None,
                   help="Flexible Attention threshold τ, a positive number (default: ∞, no threshold)")
    p.add_argument("--dict", type=Path, default=None, help="dictionary for unknown-word replacement")
    p.add_argument("--no-unk-replace", action="store_true",
                   help="replace no <unk> (PREFIX.unk.txt is then the raw output; Shu & Nakayama's protocol)")
    p.add_argument("--device", default="auto", choices=option_choices(TrainConfig, "device"),
                   help="auto: CUDA when available (default: auto)")
    p.add_argument("--summary-out", type=Path, default=None, help="files mode: also write the JSON summary here")
    p.add_argument("--save-settings", type=Path, default=None, metavar="FILE",
                   help="write the decoding options (--decode-json and flags, checked) to FILE and exit; the "
                        f"workflow writes models/<variant>/{SETTINGS_FILE} so")
    add_threads_argument(p)
    p.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    p.set_defaults(func=run)


def _decode_flags(p: argparse.ArgumentParser) -> None:
    # default None: a flag not given leaves the option to --decode-json, then to DecodeConfig
    for key in _FLAGS:
        default = getattr(DecodeConfig, key)
        flag = "--" + key.replace("_", "-")
        if isinstance(default, bool):
            p.add_argument(flag, action="store_true", default=None, help=option_help(DecodeConfig, key))
        else:
            p.add_argument(flag, type=argparse_type(DecodeConfig, key), default=None,
                           help=option_help(DecodeConfig, key), metavar="N" if isinstance(default, int) else "X")


def _run_settings(text: str) -> dict:
    try:
        return check_run_settings(json.loads(text), "JSON")
    except json.JSONDecodeError as err:
        raise argparse.ArgumentTypeError(f"not JSON: {err}") from None
    except ConfigError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def experiment_settings(model: Path) -> Path | None:
    """The experiment's settings file of a model in its results (models/<variant>/seed<N>/model.pt)."""
    path = model.resolve().parent.parent / SETTINGS_FILE
    return path if path.is_file() else None


def decode_settings(args: argparse.Namespace) -> tuple[dict[str, Any], str]:
    """The run's decoding options and where they came from: DecodeConfig's defaults < the
    experiment's settings file < ``--decode-json`` < the flags given."""
    if args.decode_json is not None:  # checked by argparse (_run_settings)
        source, settings = "--decode-json", dict(args.decode_json)
    elif args.model and (path := experiment_settings(args.model[0])) is not None:
        try:
            source, settings = str(path), check_run_settings(json.loads(path.read_text(encoding="utf-8")), str(path))
        except (ValueError, OSError) as err:  # ConfigError and JSONDecodeError are ValueErrors
            raise NmtlibError(f"{path}: {err}") from None
    else:
        source, settings = "defaults", check_run_settings({}, "defaults")
    settings.update({key: getattr(args, key) for key in _FLAGS if getattr(args, key) is not None})
    if args.tau is not None:
        settings["tau"] = args.tau
    if args.no_unk_replace:
        settings["unk_replace"] = False
    return settings, source


def run(args: argparse.Namespace) -> int:
    settings, source = decode_settings(args)
    if args.save_settings is not None:
        with atomic_write(args.save_settings) as f:
            f.write(json.dumps(settings, indent=2, sort_keys=True) + "\n")
        return 0
    if not args.model:
        raise NmtlibError("give the model to translate with: --model PATH/model.pt")
    if args.out is not None and args.src is None:
        raise NmtlibError("--out translates a file: give it with --src")
    from nmtlib.cli import set_threads

    set_threads(args.threads)
    import torch

    from nmtlib.checkpoint import select_device
    from nmtlib.decode.translate import DecodeOptions
    from nmtlib.decode.unk import load_dictionary

    opts = DecodeOptions(greedy=args.greedy, **{key: settings[key] for key in (*_FLAGS, "tau")})
    try:
        dictionary = load_dictionary(args.dict) if args.dict and settings["unk_replace"] else None
        with torch.no_grad():  # not torch.set_grad_enabled(False): in-process callers keep their autograd
            if args.out is None:
                return _translate_text(args, opts, settings, source, dictionary, select_device(args.device))
            from nmtlib.decode.translate import translate_file

            result = translate_file(args.model, args.src, args.src_vocab, args.tgt_vocab, args.out, opts,
                                    dictionary, select_device(args.device), progress=not args.no_progress,
                                    unk_replace=settings["unk_replace"])
    except (ValueError, FileNotFoundError) as err:
        raise NmtlibError(str(err)) from None
    result.update({key: settings[key] for key in ("tau", "beam", "tf32", "in_flight")})
    if args.summary_out:
        with atomic_write(args.summary_out) as f:
            f.write(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result))
    return 0


def _translate_text(args: argparse.Namespace, opts, settings: dict[str, Any], source: str, dictionary,
                    device) -> int:
    """Text mode: raw lines in (a file or stdin), one translation per line on stdout."""
    from nmtlib.data.tokenize import get_tokenizer
    from nmtlib.decode.translate import load_models, translate_tokens, warn_truncated

    where = str(args.src) if args.src is not None else "<stdin>"
    text = args.src.read_text(encoding="utf-8") if args.src is not None else sys.stdin.read()
    lines = text.splitlines()
    models, src_vocab, tgt_vocab, record = load_models(args.model, device, args.src_vocab, args.tgt_vocab)
    prep = record.get("preprocess")
    if not args.tokenized and prep is None:
        raise NmtlibError(f"{args.model[0]} records no tokenization (trained before nmtlib kept it in model.pt); "
                          f"tokenize the input as its training data was and pass --tokenized")
    if not args.tokenized:
        src_tok = get_tokenizer(prep["src_tokenizer"], prep["src_lang"], escape=prep["escape"])
        tgt_tok = get_tokenizer(prep["tgt_tokenizer"], prep["tgt_lang"], escape=prep["escape"])
        lines = [src_tok.tokenize(line.lower() if prep["lowercase"] else line) for line in lines]
    print(f"nmtlib translate: {len(lines)} line(s) from {where}, beam {settings['beam']}"
          f"{'' if settings['tau'] is None else ', τ ' + format(settings['tau'], 'g')}"
          f" (options: {source})", file=sys.stderr)
    outputs, truncated = translate_tokens(models, [line.split() for line in lines], src_vocab, tgt_vocab, opts,
                                          device, dictionary, settings["unk_replace"],
                                          progress=not args.no_progress and len(lines) > 1)
    warn_truncated(truncated, opts.max_src_len, where)
    for words in outputs:
        line = " ".join(words)
        print(line if args.tokenized else tgt_tok.detokenize(line))
    return 0
