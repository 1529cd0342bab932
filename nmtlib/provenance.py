"""Whether a model folder holds the model a run would train: the one take-up check.

A model folder records how its model is trained in ``env.json``, written when the training starts
(``model.pt`` comes at its end): the resolved variant, the seed and the sha256 of every file it
reads (training and dev text, vocabularies). :func:`differences` compares that record with what a
variant, seed and set of files would train now, and names each difference.

Two places go through it, so that a model of other options is never reported as a variant:

- ``nmtlib train`` refuses to write into a folder that holds a finished model of other options,
  data or seed (the workflow removes a job's outputs before it retrains, so only a hand run or a
  second workflow finds one there);
- ``nmtlib report`` refuses to tabulate a model whose record differs from the variant it stands
  for (a model copied in, or kept by Snakemake after its metadata in ``.snakemake/`` was lost).

What counts is what decides the weights (:func:`nmtlib.config.trained_options`): no decoding
option, no report label, nothing in :data:`nmtlib.config.UNTRAINED_OPTIONS`. An option a record
does not name (the model is older than the option) is not a difference.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from nmtlib.config import trained_options
from nmtlib.files import sha256_file
from nmtlib.layout import RECORD, Layout

def read_record(folder: str | Path) -> dict[str, Any] | None:
    """A model folder's ``env.json``, or None where there is none (no training has started there).

    :raises ValueError: the file is there but is not a JSON object (names the file)."""
    path = Path(folder) / RECORD
    if not path.exists():
        return None
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError) as err:
        raise ValueError(f"{path}: not JSON ({str(err).splitlines()[0]})") from None
    if not isinstance(record, dict):
        raise ValueError(f"{path}: expected a JSON object, got {type(record).__name__}")
    return record


def starts(record: dict[str, Any]) -> list[dict[str, Any]]:
    """Every start of a model's training as its record lists them (``starts``: step, time, commit,
    training-code files changed from it, processor, ``cpu_capability``, threads, device), oldest
    first; for a record older than that list, one start at step 0 from its top-level keys (commit
    and device; the processor and instruction set unknown, None)."""
    listed = record.get("starts")
    if isinstance(listed, list) and listed and all(isinstance(s, dict) for s in listed):
        return listed
    return [{"step": 0, "git_commit": record.get("git_commit"), "changed_training_code": None,
             "processor": None, "cpu_capability": None, "device": record.get("device"),
             "cuda_device": record.get("cuda_device")}]


def machine(start: dict[str, Any]) -> str:
    """Where one start of a training ran, in words: the GPU's name, or the processor with the
    instruction set of PyTorch's CPU kernels (``Intel(R) Xeon(R) Processor, AVX512``), or the device
    alone where an older record names no processor; "" unknown."""
    if start.get("cuda_device"):
        return str(start["cuda_device"])
    cpu = ", ".join(str(v) for v in (start.get("processor"), start.get("cpu_capability")) if v)
    if cpu or not start.get("device"):
        return cpu
    return "cpu (processor not recorded)" if start["device"] == "cpu" else str(start["device"])


def _flat(value: Any, prefix: str = "") -> dict[str, Any]:
    if isinstance(value, dict):
        flat: dict[str, Any] = {}
        for key, item in value.items():
            flat |= _flat(item, f"{prefix}{key}.")
        return flat
    return {prefix.rstrip("."): json.loads(json.dumps(value))}  # tuples as lists, as JSON keeps them


#: the files a training reads, in the order the trainer records their sha256 in ``data_sha256``
#: (:meth:`nmtlib.train.trainer.Trainer._write_env`), named as ``nmtlib train``'s flags name them
ROLES = ("train_src", "train_tgt", "dev_src", "dev_tgt", "src_vocab", "tgt_vocab")


def recorded_digests(record: dict[str, Any]) -> dict[str, tuple[str, str]]:
    """Role → (path as recorded, sha256) of the files a record names; empty for a record that does
    not name one per role (none of them is then compared)."""
    items = list((record.get("data_sha256") or {}).items())
    return dict(zip(ROLES, items)) if len(items) == len(ROLES) else {}


def recorded_files(record: dict[str, Any], results: str | Path) -> dict[str, Path]:
    """Role → the file of the experiment folder ``results`` in that role now
    (:meth:`nmtlib.layout.Layout.train_inputs`), for each role the record names: what the
    variant would train on, wherever the folder was at training."""
    now = Layout(Path(results)).train_inputs()
    return {role: now[role] for role in recorded_digests(record)}


def differences(record: dict[str, Any], variant: dict[str, Any], seed: int,
                files: dict[str, str | Path | None], digests: dict[str, str] | None = None) -> list[str]:
    """What differs between a model folder's record and what ``variant`` (a resolved variant as a dict,
    :meth:`nmtlib.config.VariantConfig.to_dict`), ``seed`` and ``files`` would train, one phrase each;
    empty when the folder's model is the one they would train.

    ``files``: the run's input files by role (:data:`ROLES`; training and dev text, vocabularies),
    each compared by content with the file the record names in that role (paths may have moved).
    ``digests``: sha256 already computed, by path, so that a caller checking many folders hashes
    each file once."""
    found: list[str] = []
    recorded = _flat(trained_options(record.get("variant") or {}))
    wanted = _flat(trained_options(variant))
    for key, value in wanted.items():
        if key in recorded and recorded[key] != value:
            found.append(f"{key} {json.dumps(recorded[key])} in the model's record, {json.dumps(value)} in the "
                         f"variant")
    if record.get("seed") is not None and record["seed"] != seed:
        found.append(f"seed {record['seed']} in the model's record, {seed} wanted")
    named = recorded_digests(record)
    digests = {} if digests is None else digests
    for role, path in files.items():
        if role in named and path is not None and Path(path).exists():
            key = str(path)
            if key not in digests:
                digests[key] = sha256_file(path)
            if digests[key] != named[role][1]:
                found.append(f"--{role.replace('_', '-')} {path} of other content than the model was trained on "
                             f"(sha256 {digests[key][:12]}…, not {named[role][1][:12]}…)")
    return found
