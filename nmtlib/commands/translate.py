"""``nmtlib translate``: beam search (or an ensemble) over a source file."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from nmtlib.atomic import atomic_write
from nmtlib.cli import add_threads_argument
from nmtlib.errors import NmtlibError
from nmtlib.config import (ConfigError, DecodeConfig, TrainConfig, argparse_type, check_run_settings, option_choices,
                           option_help)


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("translate", help="translate a file with beam search; writes PREFIX.{txt,unk.txt,jsonl}")
    p.add_argument("--model", type=Path, action="append", required=True,
                   help="model.pt; give several for an ensemble (averaged output distributions)")
    p.add_argument("--src", type=Path, required=True)
    p.add_argument("--src-vocab", type=Path, required=True)
    p.add_argument("--tgt-vocab", type=Path, required=True)
    p.add_argument("--out-prefix", type=Path, required=True)
    p.add_argument("--decode-json", type=_run_settings, default={}, metavar="JSON",
                   help="decoding options as one JSON object (what the workflow passes: every decode option of "
                        "the config but taus, plus tau); a flag given beside it wins")
    _decode_flags(p)
    p.add_argument("--greedy", action="store_true", help="plain argmax decoding (same output as --beam 1)")
    p.add_argument("--tau", type=argparse_type(DecodeConfig, "taus"), default=None,
                   help="Flexible Attention threshold τ, a positive number (default: ∞, no threshold)")
    p.add_argument("--dict", type=Path, default=None, help="dictionary for unknown-word replacement")
    p.add_argument("--no-unk-replace", action="store_true",
                   help="replace no <unk> (PREFIX.unk.txt is then the raw output; Shu & Nakayama's protocol)")
    p.add_argument("--device", default="auto", choices=option_choices(TrainConfig, "device"))
    p.add_argument("--summary", type=Path, default=None, help="also write the JSON summary here")
    add_threads_argument(p)
    p.add_argument("--no-progress", action="store_true")
    p.set_defaults(func=run)


#: DecodeConfig options that are flags of ``translate`` (``taus`` is ``--tau``, one at a time, and
#: ``unk_replace`` is ``--no-unk-replace``): type, range, default and help come from their definition
_FLAGS = ("beam", "max_len_ratio", "length_norm", "batch_size", "cuda_graphs", "tf32", "in_flight", "max_src_len")


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


def decode_settings(args: argparse.Namespace) -> dict:
    """The run's decoding options: DecodeConfig's defaults < ``--decode-json`` < the flags given."""
    settings = check_run_settings(args.decode_json, "--decode-json") if args.decode_json else check_run_settings({}, "")
    settings.update({key: getattr(args, key) for key in _FLAGS if getattr(args, key) is not None})
    if args.tau is not None:
        settings["tau"] = args.tau
    if args.no_unk_replace:
        settings["unk_replace"] = False
    return settings


def run(args: argparse.Namespace) -> int:
    from nmtlib.cli import set_threads

    set_threads(args.threads)
    import torch

    from nmtlib.checkpoint import select_device
    from nmtlib.decode.translate import DecodeOptions, translate_file
    from nmtlib.decode.unk import load_dictionary

    settings = decode_settings(args)
    opts = DecodeOptions(greedy=args.greedy, **{key: settings[key] for key in (*_FLAGS, "tau")})
    try:
        dictionary = load_dictionary(args.dict) if args.dict and settings["unk_replace"] else None
        with torch.no_grad():  # not torch.set_grad_enabled(False): in-process callers keep their autograd
            result = translate_file(args.model, args.src, args.src_vocab, args.tgt_vocab, args.out_prefix, opts,
                                    dictionary, select_device(args.device), progress=not args.no_progress,
                                    unk_replace=settings["unk_replace"])
    except (ValueError, FileNotFoundError) as err:
        raise NmtlibError(str(err)) from None
    result.update({key: settings[key] for key in ("tau", "beam", "tf32", "in_flight")})
    if args.summary:
        with atomic_write(args.summary) as f:
            f.write(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result))
    return 0
