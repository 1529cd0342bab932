"""``nmtlib train``: train one variant with one seed (resumes from its last checkpoint)."""

from __future__ import annotations

import argparse
import json
import shlex
from pathlib import Path

from nmtlib.cli import add_threads_argument, plain_text
from nmtlib.errors import NmtlibError
from nmtlib.layout import MODEL, RECORD, TRAIN_LOG, Layout


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("train", help="train one variant of an experiment with one seed; resumable; writes model.pt",
                       description=f"{plain_text(__doc__.split(chr(10) * 2)[0])}\n\n{_USAGE}",
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    spec = p.add_mutually_exclusive_group(required=True)
    spec.add_argument("--config", type=Path, metavar="FILE",
                      help="an experiment config (config/config.yaml, config/experiments/*.yaml); with --variant")
    spec.add_argument("--variant-json", metavar="JSON", help="the variant spec as JSON: {name, options, train_defaults, "
                      "variants} (what the workflow passes)")
    p.add_argument("--variant", metavar="NAME", help="with --config: the variant to train")
    p.add_argument("--seed", type=int, default=1, help="random seed of initialisation, order and dropout (default: 1)")
    workflow = Layout.of("<experiment>")  # where the workflow puts each file (the defaults of --config)
    p.add_argument("--train-src", type=Path, help="tokenized training source, one sentence per line (default with "
                   f"--config: {workflow.data('train', 'src')})")
    p.add_argument("--train-tgt", type=Path, help="tokenized training target, line-aligned")
    p.add_argument("--dev-src", type=Path, help="tokenized dev source (perplexity, early stopping)")
    p.add_argument("--dev-tgt", type=Path, help="tokenized dev target")
    p.add_argument("--src-vocab", type=Path, help="source vocabulary (nmtlib vocab; default with --config: "
                   f"{workflow.vocab('src')})")
    p.add_argument("--tgt-vocab", type=Path, help="target vocabulary")
    p.add_argument("--out", type=Path, metavar="DIR", help=f"model folder: {MODEL}, {TRAIN_LOG}, {RECORD}, "
                   f"checkpoints/ (default with --config: {workflow.model_dir('<variant>', 'seed<seed>')}, where "
                   "the workflow would put it)")
    p.add_argument("--init-from", type=Path, default=None, help="start from this model.pt (fine-tuning stage; default "
                   "with --config: the parent variant's model of the same seed)")
    p.add_argument("--preprocess-json", type=_preprocess, default=None, metavar="JSON",
                   help="how the text was tokenized, kept in model.pt so that translate takes raw text: "
                        '{"src_lang", "tgt_lang", "src_tokenizer", "tgt_tokenizer", "lowercase", "escape"} '
                        "(default with --config: the config's data settings)")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="override a train option, e.g. --set max_steps=20 (repeatable)")
    add_threads_argument(p)
    p.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    p.set_defaults(func=run)


_USAGE = """\
Two ways to say what to train:

  nmtlib train --config config/config.yaml --variant flexible [--seed 1]
      a variant of an experiment config; the data, vocabularies and model folder default to
      where the workflow puts them (nmtlib/layout.py), so prepare the data first
      (the error says which snakemake targets make the missing files), and --threads to the
      config's threads. With --set or other data, give --out DIR: the workflow takes up
      whatever model its folder holds, so a run that trains another model is refused there
  nmtlib train --variant-json JSON --train-src ... --out DIR
      what the workflow runs: every file given"""


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


def load_variant(text: str, overrides: list[str] | None = None, where: str = "--variant-json"):
    """A variant from its spec as JSON (``--variant-json``, or
    :func:`nmtlib.workflow_config.variant_spec` of a config), with ``train`` options overridden by
    KEY=VALUE pairs."""
    import yaml

    from nmtlib.config import ConfigError, TrainConfig, check_option, resolve_variant

    try:
        # JSON is parsed as JSON: YAML 1.1 would read 1e+30 as a string
        raw = json.loads(text)
    except ValueError as err:
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


def from_config(args: argparse.Namespace) -> tuple[str, dict[str, Path | None], dict | None]:
    """``--config FILE --variant NAME``: the variant's spec, its files (each flag given wins over
    the workflow's layout) and the config's tokenization record."""
    from nmtlib.config import ConfigError, did_you_mean
    from nmtlib.workflow_config import load_experiment, preprocess_record, train_files, variant_spec

    if args.variant is None:
        raise NmtlibError(f"--config {args.config}: name the variant to train with --variant NAME")
    try:
        config, variants = load_experiment(args.config)
    except ConfigError as err:
        raise NmtlibError(str(err)) from None
    if args.variant not in variants:
        raise NmtlibError(f"--variant {args.variant!r}: no such variant in {args.config}"
                          f"{did_you_mean(args.variant, variants)}; variants: {', '.join(variants)}")
    layout = train_files(config, variants, args.variant, args.seed)
    files = {key: getattr(args, key) if getattr(args, key) is not None else Path(layout[key])
             for key in ("train_src", "train_tgt", "dev_src", "dev_tgt", "src_vocab", "tgt_vocab", "out")}
    files["init"] = args.init_from if args.init_from is not None else (Path(layout["init"]) if "init" in layout
                                                                       else None)
    missing = [str(path) for key, path in files.items() if key != "out" and path is not None and not path.exists()]
    if missing:
        raise NmtlibError(f"{', '.join(missing)}: not there yet; make {'them' if len(missing) > 1 else 'it'} with "
                          f"snakemake --cores all --configfile {shlex.quote(str(args.config))} "
                          f"{' '.join(shlex.quote(m) for m in missing)}")
    preprocess = args.preprocess_json if args.preprocess_json is not None else json.loads(
        preprocess_record(config["data"]))
    _keep_out_of_the_workflows_folder(args, files["out"], Path(layout["out"]))
    if args.threads is None:  # as the workflow runs it: CPU results depend on the thread count
        args.threads = config["threads"]
    return variant_spec(config, args.variant), files, preprocess


#: flags of ``--config`` runs that make a model other than the one the workflow trains for the variant
_CHANGES_THE_MODEL = ("set", "train_src", "train_tgt", "dev_src", "dev_tgt", "src_vocab", "tgt_vocab", "init_from",
                      "preprocess_json")


def _keep_out_of_the_workflows_folder(args: argparse.Namespace, out: Path, workflow_out: Path) -> None:
    """Refuse a hand run that would write a model other than the workflow's into the workflow's
    folder of the variant: Snakemake takes up whatever model.pt it finds there, and the tables
    would report it as the variant (a 1-update model under ``--set max_steps=1``)."""
    changed = [f"--{key.replace('_', '-')}" for key in _CHANGES_THE_MODEL if getattr(args, key) not in (None, [])]
    if changed and out.resolve() == workflow_out.resolve():
        raise NmtlibError(f"{workflow_out} is the workflow's folder of variant {args.variant} seed {args.seed}, and "
                          f"{', '.join(changed)} trains another model than the workflow's, which it would take up as "
                          f"its own: give this run its own --out DIR")


def _keep_finished_model(out: Path, variant, seed: int, files: dict[str, Path | None]) -> None:
    """Refuse to train into a folder that holds a finished model of other options, seed or data
    (:mod:`nmtlib.provenance`): this run would replace it, and whoever reads the folder (the
    workflow's tables) would take the new model for the old one. The workflow removes a job's
    outputs before it retrains, so it never meets one."""
    from nmtlib.provenance import differences, read_record

    try:
        record = read_record(out)
    except ValueError as err:
        raise NmtlibError(str(err)) from None
    if record is None or not (out / "model.pt").exists():
        return
    found = differences(record, variant.to_dict(), seed, files)
    if found:
        raise NmtlibError(f"{out} holds a finished model of other settings ({'; '.join(found)}), which this run "
                          f"would replace: give this run its own --out DIR, or remove {out} first")


def run(args: argparse.Namespace) -> int:
    from nmtlib.cli import set_threads

    if args.config is not None:
        text, files, preprocess = from_config(args)
        where = f"{args.config}: variants.{args.variant}"
    else:
        if args.variant is not None:
            raise NmtlibError("--variant names a variant of --config FILE; --variant-json carries its own")
        needed = ("train_src", "train_tgt", "dev_src", "dev_tgt", "src_vocab", "tgt_vocab", "out")
        absent = [f"--{key.replace('_', '-')}" for key in needed if getattr(args, key) is None]
        if absent:
            raise NmtlibError(f"--variant-json needs {', '.join(absent)} (or train a variant of a config: "
                              f"--config FILE --variant NAME)")
        text, preprocess, where = args.variant_json, args.preprocess_json, "--variant-json"
        files = {key: getattr(args, key) for key in needed} | {"init": args.init_from}
    set_threads(args.threads)
    from nmtlib.train.trainer import Trainer, TrainingError, TrainPaths

    variant = load_variant(text, args.set, where)
    _keep_finished_model(files["out"], variant, args.seed, files)
    paths = TrainPaths(files["train_src"], files["train_tgt"], files["dev_src"], files["dev_tgt"], files["src_vocab"],
                       files["tgt_vocab"], files["out"])
    try:
        result = Trainer(variant, paths, seed=args.seed, init_from=files["init"],
                         progress=not args.no_progress, preprocess=preprocess).run()
    except (TrainingError, ValueError, OSError) as err:
        raise NmtlibError(str(err)) from None
    print(json.dumps(result))
    return 0
