"""``nmtlib train``: train one variant with one seed (resumes from its last checkpoint)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from nmtlib.cli import add_threads_argument
from nmtlib.errors import NmtlibError


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("train", help="train a variant; resumable; writes MODEL_DIR/model.pt")
    spec = p.add_mutually_exclusive_group(required=True)
    spec.add_argument("--variant-config", type=Path, help="YAML/JSON file with the variant spec (see --variant-json)")
    spec.add_argument("--variant-json", help="the variant spec as JSON: {name, options, train_defaults, "
                      "decode_defaults, variants} (the workflow passes this)")
    p.add_argument("--train-src", type=Path, required=True, help="tokenized training source, one sentence per line")
    p.add_argument("--train-tgt", type=Path, required=True, help="tokenized training target, line-aligned")
    p.add_argument("--dev-src", type=Path, required=True, help="tokenized dev source (perplexity, early stopping)")
    p.add_argument("--dev-tgt", type=Path, required=True, help="tokenized dev target")
    p.add_argument("--src-vocab", type=Path, required=True, help="source vocabulary (nmtlib vocab)")
    p.add_argument("--tgt-vocab", type=Path, required=True, help="target vocabulary (nmtlib vocab)")
    p.add_argument("--out-dir", type=Path, required=True, help="model folder (checkpoints/, train_log.csv, env.json, model.pt)")
    p.add_argument("--seed", type=int, default=1, help="random seed of initialisation, order and dropout (default: 1)")
    p.add_argument("--init-from", type=Path, default=None, help="start from this model.pt (fine-tuning stage)")
    p.add_argument("--preprocess-json", type=_preprocess, default=None, metavar="JSON",
                   help="how the text was tokenized, kept in model.pt so that translate takes raw text: "
                        '{"src_lang", "tgt_lang", "src_tokenizer", "tgt_tokenizer", "lowercase", "escape"} '
                        "(the workflow passes its data settings)")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="override a train option, e.g. --set max_steps=20 (repeatable)")
    add_threads_argument(p)
    p.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    p.set_defaults(func=run)


def _preprocess(text: str) -> dict:
    from nmtlib.checkpoint import check_preprocess
    from nmtlib.data.tokenize import available_tokenizers

    try:
        record = check_preprocess(json.loads(text), "JSON")
    except ValueError as err:  # json.JSONDecodeError too
        raise argparse.ArgumentTypeError(str(err)) from None
    for side in ("src", "tgt"):
        if record[f"{side}_tokenizer"] not in (*available_tokenizers(), "space"):
            raise argparse.ArgumentTypeError(f"JSON.{side}_tokenizer: {record[f'{side}_tokenizer']!r} is not one of "
                                             f"{available_tokenizers()}")
    return record


def load_variant(path: Path | None, overrides: list[str] | None = None, text: str | None = None):
    """A variant from its spec (a file or a JSON string), with ``train`` options overridden by
    KEY=VALUE pairs."""
    import yaml

    from nmtlib.config import ConfigError, TrainConfig, check_option, resolve_variant

    where = str(path) if path is not None else "--variant-json"
    try:
        # JSON is parsed as JSON: YAML 1.1 would read 1e+30 as a string
        raw = json.loads(text) if text is not None else yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, yaml.YAMLError) as err:
        raise NmtlibError(f"{where}: {err}") from None
    path = where
    if not isinstance(raw, dict) or "name" not in raw or "options" not in raw:
        raise NmtlibError(f"{path}: expected a mapping with 'name' and 'options' (and optional train_defaults, "
                          f"decode_defaults, variants)")
    options = dict(raw["options"])
    if overrides:
        train = dict(options.get("train") or {})
        for item in overrides:
            key, sep, value = item.partition("=")
            if not sep:
                raise NmtlibError(f"--set {item!r}: expected KEY=VALUE")
            try:  # the same definition of each option as the workflow's schema checks
                train[key] = check_option(TrainConfig, key, _parse_value(value), f"--set {item}")
            except (ConfigError, yaml.YAMLError) as err:
                raise NmtlibError(str(err).replace("\n", " ")) from None
        options["train"] = train
    try:
        return resolve_variant(raw["name"], options, raw.get("train_defaults"), raw.get("decode_defaults"),
                               raw.get("variants"))
    except ConfigError as err:
        raise NmtlibError(f"{path}: {err}") from None


def _parse_value(text: str):
    """A ``--set`` value: JSON first (so ``1e-4`` is a number), else YAML (``true``, bare words)."""
    import yaml

    try:
        return json.loads(text)
    except ValueError:
        return yaml.safe_load(text)


def run(args: argparse.Namespace) -> int:
    from nmtlib.cli import set_threads

    set_threads(args.threads)
    from nmtlib.train.trainer import Trainer, TrainingError, TrainPaths

    variant = load_variant(args.variant_config, args.set, args.variant_json)
    paths = TrainPaths(args.train_src, args.train_tgt, args.dev_src, args.dev_tgt, args.src_vocab,
                       args.tgt_vocab, args.out_dir)
    try:
        result = Trainer(variant, paths, seed=args.seed, init_from=args.init_from,
                         progress=not args.no_progress, preprocess=args.preprocess_json).run()
    except (TrainingError, ValueError, OSError) as err:
        raise NmtlibError(str(err)) from None
    print(json.dumps(result))
    return 0
