"""Checking a workflow configuration before any job starts.

The files first (:func:`check_config_files`: a key given twice in one mapping, which YAML would
resolve silently), then two passes over the merged config: the JSON schema (types, names,
unknown keys with the key they probably misspell; defaults filled in), then what a schema
cannot say — every variant resolves (:func:`nmtlib.config.resolve_variant`), ensembles and
fine-tuning stages name existing variants, a downloaded corpus names its splits. Every error
names the key (as a dotted path) and, where there is a closed set, the allowed values.
:func:`size_warnings` reports a variant far larger than the experiment's others.
"""

from __future__ import annotations

import dataclasses
import json
import math
import statistics
from pathlib import Path
from typing import Any, Iterable

import jsonschema
import yaml

from nmtlib.config import (ConfigError, is_number, DecodeConfig, ModelConfig, TrainConfig, VariantConfig, closest,
                           did_you_mean, estimate_parameters, options_schema, resolve_variant, setting_name,
                           yaml_number_hint)
from nmtlib.layout import Layout, seed_run
from nmtlib.words import and_list, counted


def _path(error: jsonschema.ValidationError) -> str:
    parts = [str(p) for p in error.absolute_path]
    return ".".join(parts) if parts else "(top level)"


def _message(error: jsonschema.ValidationError) -> str:
    where = _path(error)
    if error.validator == "additionalProperties" and isinstance(error.instance, dict):
        allowed = sorted(error.schema.get("properties", {}))
        extra = sorted(set(error.instance) - set(allowed), key=str)
        if allowed:
            unknown = ", ".join(f"{key!r}{_hint(key, allowed)}" for key in extra)
            return f"{where}: unknown key{'s' if len(extra) > 1 else ''} {unknown}; allowed keys: {allowed}"
    if error.validator == "enum":
        return f"{where}: {error.instance!r} is not one of {error.validator_value}"
    if error.validator == "type" and isinstance(error.instance, str) and is_number(error.instance):
        return f"{where}: {error.message}; {yaml_number_hint(error.instance)}"
    if error.validator == "required":
        return f"{where}: {error.message}"
    return f"{where}: {error.message}"


#: the sections of the options, for a key written one level off (``lr`` in a variant, ``beam``
#: at the top level): the message says where it belongs
_SECTIONS = {"train:": TrainConfig, "decode:": DecodeConfig, "a variant": ModelConfig}


def _hint(key: Any, allowed: list[str]) -> str:
    """Why ``key`` is unknown where it is: an option of another section (`` (an option of train:;
    put it there)``), or a misspelling of an allowed key (`` (did you mean 'tokenizer'?)``) or of
    another section's option (`` (did you mean 'hidden_size', an option of a variant?)``)."""
    homes: dict[str, list[str]] = {}
    for section, cls in _SECTIONS.items():
        for f in dataclasses.fields(cls):
            homes.setdefault(f.name, []).append(section)
    if key in homes:
        return f" (an option of {' or '.join(homes[key])}; put it there)"
    match = closest(key, [*allowed, *homes])
    if match is None:
        return ""
    if match in allowed:
        return f" (did you mean {match!r}?)"
    return f" (did you mean {match!r}, an option of {' or '.join(homes[match])}?)"


def _with_defaults(validator_class):
    """A validator that also fills in ``default`` values (as Snakemake's ``validate`` does)."""
    validate_properties = validator_class.VALIDATORS["properties"]

    def set_defaults(validator, properties, instance, schema):
        if isinstance(instance, dict):
            for name, sub in properties.items():
                if isinstance(sub, dict) and "default" in sub and name not in instance:
                    instance[name] = sub["default"]
        yield from validate_properties(validator, properties, instance, schema)

    return jsonschema.validators.extend(validator_class, {"properties": set_defaults})


class UniqueKeyLoader(yaml.SafeLoader):
    """A YAML loader that refuses a key given twice in one mapping. PyYAML (and Snakemake, which
    loads ``--configfile`` itself) keeps the second value silently: a second variant of the same
    name would replace the first without a word. Keys merged in with ``<<: *anchor`` may be
    overridden, as YAML intends."""

    def construct_document(self, node: yaml.Node) -> Any:
        self._check_unique(node, [], set())
        return super().construct_document(node)

    def _check_unique(self, node: yaml.Node, path: list[str], seen: set[int]) -> None:
        if id(node) in seen:  # an alias of a node checked already
            return
        seen.add(id(node))
        if isinstance(node, yaml.SequenceNode):
            for i, item in enumerate(node.value):
                self._check_unique(item, [*path, str(i)], seen)
        elif isinstance(node, yaml.MappingNode):
            lines: dict[Any, int] = {}
            for key_node, value_node in node.value:
                if key_node.tag == "tag:yaml.org,2002:merge":
                    self._check_unique(value_node, path, seen)
                    continue
                key = self.construct_object(key_node, deep=True) if isinstance(key_node, yaml.ScalarNode) else None
                line = key_node.start_mark.line + 1
                if key is not None and key in lines:
                    where = ".".join([*path, str(key)])
                    lines_text = f"on line {line}" if lines[key] == line else f"on lines {lines[key]} and {line}"
                    raise ConfigError(f"{key_node.start_mark.name}: {where} is given twice, {lines_text} (YAML would "
                                      f"keep only the second, silently); remove or rename one of them")
                if key is not None:
                    lines[key] = line
                self._check_unique(value_node, [*path, str(key)], seen)


def check_config_files(paths: Any) -> None:
    """Read each config file the workflow was given (``--configfile``, the default config) with
    :class:`UniqueKeyLoader`. Snakemake has loaded them already, without this check; a file it
    read that YAML cannot (a JSON oddity) is left to it.

    :raises ConfigError: ``<file>: variants.base is given twice, on lines 12 and 30 …``
    """
    for path in paths:
        path = Path(path)
        if not path.is_file():
            continue
        with path.open(encoding="utf-8") as stream:
            try:
                yaml.load(stream, Loader=UniqueKeyLoader)
            except yaml.YAMLError:
                continue


def load_schema(schema_path: str | Path) -> dict[str, Any]:
    """The workflow's schema with the model, ``train`` and ``decode`` options filled in from
    their one definition in :mod:`nmtlib.config`."""
    schema = yaml.safe_load(Path(schema_path).read_text(encoding="utf-8"))
    defs = schema["$defs"]
    defs["train"]["properties"] = options_schema(TrainConfig)
    defs["decode"]["properties"] = options_schema(DecodeConfig)
    defs["variant"]["properties"] = {**options_schema(ModelConfig), **defs["variant"]["properties"]}
    return schema


def validate_config(config: dict[str, Any], schema_path: str | Path, corpora: set[str] | None = None) -> dict[str, VariantConfig]:
    """Validate ``config`` in place (defaults filled) and return its resolved variants.

    :raises ConfigError: naming the offending key.
    """
    # NaN passes every range check of the schema (each comparison with it is false); the model,
    # train and decode options have their own check (nmtlib.config.Range), the rest is here
    for section in ("data", "report"):
        _check_finite(config.get(section), section)
    schema = load_schema(schema_path)
    validator = _with_defaults(jsonschema.Draft202012Validator)(schema)
    errors = sorted(validator.iter_errors(config), key=lambda e: (len(list(e.absolute_path)), _path(e)))
    if errors:
        raise ConfigError("; ".join(_message(e) for e in errors[:5]))

    if config.get("only_variants") == []:
        raise ConfigError("only_variants: an empty list names no variant; give variant names, or null to run all")
    data = config["data"]
    if data["corpus"] != "synthetic":
        if corpora is None:  # the packaged registry, which the download rules read too
            from nmtlib.data.corpora import load_registry

            corpora = set(load_registry().datasets)
        if data["corpus"] not in corpora:
            raise ConfigError(f"data.corpus: unknown data set {data['corpus']!r}{did_you_mean(data['corpus'], corpora)}; "
                              f"valid names: synthetic, {', '.join(sorted(corpora))}")
        missing = [s for s in ("train", "dev", "test") if s not in (data.get("splits") or {})]
        if missing:
            raise ConfigError(f"data.splits: a downloaded corpus needs the files of splits {missing}")
    for key in ("alignments", "dictionary"):
        if data.get(key) == "generated" and data["corpus"] != "synthetic":
            raise ConfigError(f"data.{key}: 'generated' exists only for the synthetic corpus")

    from nmtlib.report.paper import PaperRowError, resolve_paper_row

    variants = config["variants"]
    resolved: dict[str, VariantConfig] = {}
    for name, raw in variants.items():
        resolved[name] = resolve_variant(name, raw, config.get("train"), config.get("decode"), variants)
        try:  # a typo in a paper row is caught now, not after training
            resolve_paper_row(name, resolved[name].paper_row)
        except PaperRowError as err:
            raise ConfigError(str(err)) from None
        parent = resolved[name].finetune_from
        if parent is not None and variants[parent].get("finetune_from"):
            raise ConfigError(f"variants.{name}.finetune_from: {parent!r} is itself a fine-tuning stage; "
                              f"chain stages from a trained variant")
    for name in variants:
        parent = resolved[name].finetune_from
        if parent is not None and not set(variant_seeds(config, name)) <= set(variant_seeds(config, parent)):
            raise ConfigError(f"variants.{name}.seeds: {variant_seeds(config, name)} fine-tune {parent!r}'s models of "
                              f"the same seeds, and {parent!r} trains seeds {variant_seeds(config, parent)}")
    for name, members in (config.get("ensembles") or {}).items():
        if name in variants:
            raise ConfigError(f"ensembles.{name}: the name is already a variant's")
        twice = sorted({m for m in members if members.count(m) > 1})
        if twice:  # a member named twice would be tabulated as an ensemble of different models
            raise ConfigError(f"ensembles.{name}: {twice} named more than once; an ensemble's members are "
                              f"different variants (each brings all its seeds)")
        unknown = [m for m in members if m not in variants]
        if unknown:
            raise ConfigError(f"ensembles.{name}: unknown variant(s) {_suggest(unknown, variants)}; "
                              f"variants: {sorted(variants)}")
    return _only(config, resolved)


def _check_finite(value: Any, where: str) -> None:
    """No NaN or infinity in ``value`` (YAML's ``.nan``, ``.inf``), said as the options' own
    check says it (:meth:`nmtlib.config.Range.violation`)."""
    if isinstance(value, float) and not math.isfinite(value):
        raise ConfigError(f"{where}: must be a finite number, got {value}")
    if isinstance(value, dict):
        for key, item in value.items():
            _check_finite(item, f"{where}.{key}")
    elif isinstance(value, list):
        for i, item in enumerate(value):
            _check_finite(item, f"{where}.{i}")


def _suggest(unknown: list[str], names: Any) -> str:
    """``['flexibel' (did you mean 'flexible'?)]``: unknown variant names, each with the name it
    probably misspells."""
    return f"[{', '.join(f'{n!r}{did_you_mean(n, names)}' for n in unknown)}]"


def _only(config: dict[str, Any], resolved: dict[str, VariantConfig]) -> dict[str, VariantConfig]:
    """``only_variants``: run a subset of the experiment's variants (every variant was checked
    above, so the file stays valid as a whole). The config is narrowed in place: the variants
    not named, and the ensembles with a member not named, are left out."""
    only = config.get("only_variants")
    if not only:
        return resolved
    unknown = [n for n in only if n not in resolved]
    if unknown:
        raise ConfigError(f"only_variants: unknown variant(s) {_suggest(unknown, resolved)}; "
                          f"variants: {sorted(resolved)}")
    for name in only:
        parent = resolved[name].finetune_from
        if parent is not None and parent not in only:
            raise ConfigError(f"only_variants: {name!r} fine-tunes {parent!r}, which must be named too")
    config["variants"] = {n: v for n, v in config["variants"].items() if n in only}
    config["ensembles"] = {e: m for e, m in (config.get("ensembles") or {}).items() if set(m) <= set(only)}
    return {n: v for n, v in resolved.items() if n in only}


#: a variant more than this many times the median size of the experiment's other variants is
#: reported (:func:`size_warnings`)
SIZE_FACTOR = 10
_SIZE_KEYS = ("embedding_size", "hidden_size", "layers")


def size_warnings(config: dict[str, Any], variants: dict[str, VariantConfig]) -> list[str]:
    """One line for each variant whose estimated parameter count
    (:func:`nmtlib.config.estimate_parameters`, with the experiment's vocabulary sizes) is more
    than :data:`SIZE_FACTOR` times the median of the experiment's other variants: a variant that
    takes its sizes from a paper's preset (``arch: luong`` is 4 layers × 1000 units) in a
    small experiment trains for hours where the others take minutes. Fine-tuning stages have
    their parent's model and are not counted."""
    vocab = config["data"].get("vocab_size") or {}
    src, tgt = vocab.get("src", 50000), vocab.get("tgt", 50000)
    sizes = {name: estimate_parameters(v.model, src, tgt) for name, v in variants.items() if v.finetune_from is None}
    warnings = []
    for name, size in sizes.items():
        others = [s for n, s in sizes.items() if n != name]
        if not others or size <= SIZE_FACTOR * statistics.median(others):
            continue
        m = variants[name].model
        raw = config["variants"].get(name) or {}
        inherited = [k for k in _SIZE_KEYS if k not in raw]
        one = len(inherited) == 1
        preset = (f"; its {and_list(inherited)} come{'s' if one else ''} from the preset arch: {m.arch} (a paper's "
                  f"sizes): give {'it' if one else 'them'} to size it like the others") if inherited else ""
        warnings.append(f"warning: variant {name!r} has about {_millions(size)} parameters ({counted(m.layers, 'layer')}"
                        f" × {m.hidden_size} units, {m.embedding_size}-d embeddings), "
                        f"more than {SIZE_FACTOR}× the median ({_millions(statistics.median(others))}) of the other "
                        f"variants of experiment {config['experiment']!r}{preset}")
    return warnings


def _millions(n: float) -> str:
    return f"{n / 1e6:.2g}M"


# == One variant of an experiment, outside Snakemake (nmtlib train --config FILE --variant NAME) ==

#: the workflow's config schema, in the repository beside the package (an editable install)
SCHEMA = Path(__file__).resolve().parent.parent / "workflow" / "schemas" / "config.schema.yaml"


def load_experiment(path: str | Path, *overrides: str | Path) -> tuple[dict[str, Any], dict[str, VariantConfig]]:
    """An experiment config file read and checked as the workflow reads it: keys given twice, the
    schema (defaults filled in), every variant resolved. ``overrides``: files merged over it in
    order, as Snakemake merges several ``--configfile`` (a mapping key by key, any other value
    replaced; ``config/experiments/overrides/``).

    :raises ConfigError: ``<file>: <what>``, one line.
    """
    config = _read_config(Path(path))
    for override in overrides:
        _merge(config, _read_config(Path(override)))
    if not SCHEMA.is_file():
        raise ConfigError(f"{SCHEMA}: the workflow's schema is not beside nmtlib; install nmtlib from its repository "
                          f"(pip install -e .) to read experiment configs")
    where = " + ".join(str(p) for p in (path, *overrides))
    try:
        variants = validate_config(config, SCHEMA)
    except ConfigError as err:
        raise ConfigError(f"{where}: {err}") from None
    return config, variants


def _read_config(path: Path) -> dict[str, Any]:
    try:
        with path.open(encoding="utf-8") as stream:
            config = yaml.load(stream, Loader=UniqueKeyLoader)
    except OSError as err:
        raise ConfigError(f"{path}: {err.strerror or err}") from None
    except ConfigError:
        raise
    except yaml.YAMLError as err:  # a python/* tag among them: the safe loader refuses it
        raise ConfigError(f"{path}: invalid YAML: {' '.join(str(err).split())}") from None
    if not isinstance(config, dict):
        raise ConfigError(f"{path}: expected a mapping of config keys (experiment, data, variants, …)")
    return config


def _merge(config: dict[str, Any], override: dict[str, Any]) -> None:
    """``override`` merged into ``config`` as Snakemake's ``update_config`` merges config files."""
    for key, value in override.items():
        if isinstance(value, dict) and isinstance(config.get(key), dict):
            _merge(config[key], value)
        else:
            config[key] = value


def variant_seeds(config: dict[str, Any], name: str) -> list[int]:
    """The seeds variant ``name`` is trained with: its own ``seeds``; else, for a fine-tuning
    (``finetune_from``), its parent's, one fine-tuning per parent model, which its claims pair seed by
    seed with the parent; else the experiment's. A close comparison can take more seeds than the
    rest of the experiment (docs/experiments.md)."""
    variant = config["variants"][name]
    if variant.get("seeds"):
        return list(variant["seeds"])
    parent = variant.get("finetune_from")
    return variant_seeds(config, parent) if parent in config["variants"] else list(config["seeds"])


def variant_spec(config: dict[str, Any], name: str) -> str:
    """What trains variant ``name`` of a checked ``config``, as the JSON ``nmtlib train
    --variant-json`` takes. The workflow passes it as a rule parameter, so a change retrains:
    hence only what changes the weights — the variant's own options (no decoding options, no
    report labels, no seed list), the experiment's train defaults, and the chain of variants it
    fine-tunes from."""
    from nmtlib.config import LABEL_KEYS

    def keep(options: dict[str, Any]) -> dict[str, Any]:
        return {k: v for k, v in options.items() if k not in (*LABEL_KEYS, "decode", "seeds")}

    variants = config["variants"]
    chain, parent = {}, variants[name].get("finetune_from")
    while parent is not None:
        chain[parent] = keep(variants[parent])
        parent = variants[parent].get("finetune_from")
    return json.dumps({
        "name": name,
        "options": keep(variants[name]),
        "train_defaults": config.get("train") or {},
        "variants": {name: keep(variants[name]), **chain},
    }, sort_keys=True)


def preprocess_record(data: dict[str, Any]) -> str:
    """How an experiment's text was tokenized (``nmtlib prepare``'s options, from its ``data:``
    section), as the JSON ``nmtlib train --preprocess-json`` keeps in model.pt so that ``nmtlib
    translate --model model.pt`` takes raw text."""
    tokenizer = data.get("tokenizer", {})
    return json.dumps({
        "src_lang": data["src"], "tgt_lang": data["tgt"],
        "src_tokenizer": tokenizer.get("src", "none"), "tgt_tokenizer": tokenizer.get("tgt", "none"),
        "lowercase": bool(data["lowercase"]), "escape": bool(data["escape"]),
    }, sort_keys=True)


def results_dir(config: dict[str, Any]) -> str:
    """Where the workflow writes an experiment's results (relative to where it runs)."""
    return Layout.of(config["experiment"]).root


def decoding_settings(config: dict[str, Any], variants: dict[str, VariantConfig], name: str) -> list[str]:
    """The decoding settings of a variant or an ensemble: beamK, plus beamK.tauX per Flexible
    Attention τ. An ensemble has the experiment's beam (decode.beam) and τ = ∞ only."""
    decode = variants[name].decode if name in variants else None
    beam = decode.beam if decode else config.get("decode", {}).get("beam", DecodeConfig.beam)
    return [setting_name(beam), *(setting_name(beam, tau) for tau in (decode.taus if decode else ()))]


def report_spec(config: dict[str, Any], variants: dict[str, VariantConfig]) -> dict[str, Any]:
    """What ``nmtlib report`` needs to know of an experiment (its ``--spec``, as JSON): the
    workflow's rule make_report and ``nmtlib report --config`` both take it from here."""
    ensembles = config.get("ensembles") or {}
    return {
        "experiment": config["experiment"],
        "results": results_dir(config),
        "seeds": config["seeds"],
        "variant_seeds": {name: variant_seeds(config, name) for name in variants},
        "variants": {name: v.to_dict() for name, v in variants.items()},
        "ensembles": ensembles,
        "settings": {name: decoding_settings(config, variants, name) for name in [*variants, *ensembles]},
        "report": config.get("report", {}),
        "data": {k: config["data"].get(k) for k in ("corpus", "src", "tgt")},
        "aer": config["data"].get("alignments") is not None,
    }  # not sorted: the tables list the variants in the config's order


def train_files(config: dict[str, Any], variants: dict[str, VariantConfig], name: str, seed: int) -> dict[str, str]:
    """The files that train seed ``seed`` of variant ``name``, as the workflow lays them out: the
    prepared data, the vocabularies, the parent's model of a fine-tuning stage (``init``), and the
    model folder (``out``)."""
    layout = Layout.of(config["experiment"])
    files = layout.train_inputs()
    parent = variants[name].finetune_from
    if parent is not None:
        files["init"] = layout.model(parent, seed_run(seed))
    files["out"] = layout.model_dir(name, seed_run(seed))
    return files


#: trains every variant of an experiment in float32, whatever its config says (added after it)
FP32_OVERRIDE = "config/experiments/overrides/fp32.yaml"


def cannot_train_here(variants: dict[str, VariantConfig], names: Iterable[str]) -> str | None:
    """Why variants ``names`` cannot train on this machine, or None: the checks the trainer makes
    before it reads anything (``train.device`` names a device that is not here; ``train.bf16`` on a
    CPU that would emulate bf16), made once for all of them. The workflow asks this before its first
    job when its jobs run here, so that a run does not spend its corpus work and then stop at the
    first training; on a cluster each node's trainer decides for itself. Imports torch, only when
    there is something to train."""
    names = list(names)
    if not names:
        return None
    from nmtlib.checkpoint import select_device
    from nmtlib.precision import require_bf16

    refused: dict[str, list[str]] = {}  # one line per reason, with the variants it stops
    for name in names:
        train = variants[name].train
        try:
            device = select_device(train.device)
        except ValueError as err:
            refused.setdefault(f"train.device: {err}", []).append(name)
            continue
        if train.bf16:
            try:
                require_bf16(device, "train.bf16")
            except ValueError as err:
                refused.setdefault(f"{err}, or add {FP32_OVERRIDE} after the experiment's config", []).append(name)
    if not refused:
        return None
    reason, stopped = next(iter(refused.items()))
    shown = ", ".join(stopped[:3]) + (f" and {len(stopped) - 3} more" if len(stopped) > 3 else "")
    return f"{reason} (to train: {shown})"


#: the local scheduling unit of a GPU: a job asks for its share in percent (``gpu_pct``), so
#: ``snakemake --resources gpu_pct=100`` is one GPU whatever the experiment's ``jobs_per_gpu``
GPU_PCT = 100


def gpu_resources(jobs_per_gpu: int, shards_per_gpu: str | int | None = None,
                  gpu_model: str | None = None) -> dict[str, Any]:
    """Snakemake resources of one GPU job (training, decoding, perplexity, attention export) of an
    experiment whose GPU jobs share each GPU ``jobs_per_gpu`` ways (its config key).

    - ``gpu_pct``: the job's share of a GPU in percent, for a local run:
      ``--resources gpu_pct=100`` lets ``jobs_per_gpu`` of them run at once on one GPU (Snakemake
      resources are integers: a fraction would be rounded away);
    - on Slurm, a job with a GPU to itself asks ``gpu=1`` (``sbatch --gpus=1``, or
      ``--gpus=<gpu_model>:1``); jobs that share one ask for their share of the GPU's shards
      (Slurm's ``shard`` GRES: ``--gres=shard:<shards_per_gpu / jobs_per_gpu>``), where the site
      has shards (``shards_per_gpu``, as its gres.conf defines them per GPU). Without shards a
      Slurm job gets a whole GPU: Slurm gives no job part of a GPU otherwise.

    :raises ConfigError: a share smaller than one shard, or a shard count that is no positive integer.
    """
    if isinstance(jobs_per_gpu, bool) or not isinstance(jobs_per_gpu, int) or jobs_per_gpu < 1:
        raise ConfigError(f"jobs_per_gpu: must be an integer of at least 1, got {jobs_per_gpu!r}")
    res: dict[str, Any] = {"gpu_pct": GPU_PCT // jobs_per_gpu}
    shards = None if shards_per_gpu in (None, "") else str(shards_per_gpu)
    if shards is not None:
        if not shards.isdigit() or int(shards) < 1:
            raise ConfigError(f"NMT_SLURM_GPU_SHARDS: shards per GPU, a positive integer, got {shards_per_gpu!r}")
        shards = int(shards)
    if jobs_per_gpu == 1 or shards is None:
        res["gpu"] = 1
        if gpu_model:
            res["gpu_model"] = gpu_model
        return res
    if shards < jobs_per_gpu:
        raise ConfigError(f"jobs_per_gpu: {jobs_per_gpu} jobs cannot share a GPU of {shards} shards "
                          f"(NMT_SLURM_GPU_SHARDS); give at most {shards}")
    res["gres"] = f"shard:{shards // jobs_per_gpu}"
    return res
