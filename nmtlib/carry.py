"""Results carried to another machine without their model weights (``nmtlib carry``).

A long run can outlive its machine: a cluster's scratch space is purged, a cloud node is given
back, the run moves to another cluster. What it computed, but for the weights, is small and
travels: every model's learning curve and record, the translations, scores and attention, the
tables, figures and report, and the jobs' logs and benchmark files. :func:`save` copies them into a
folder with a manifest of each file's SHA-256, size and modification time (a file of 64 KiB or more
gzip-compressed: a training job's log is mostly progress bars); :func:`restore` checks
every byte and puts them back where they were, times included.

Why the times: where Snakemake's own records (``.snakemake/``) are missing, as on a new machine, it
decides what to run from the files' times, and it makes a missing file again only for a job that
needs it. A carried model whose results are all back, in the order they were made, is therefore not
trained again although its ``model.pt`` is not there; a job that does need the weights (a variant
fine-tuned from it, an ensemble not decoded yet, a decoding setting added since) trains it again
from its seed first. ``tests/test_carry.py`` runs both on the real workflow.

What stays behind:

- the weights and the resume states (``model.pt``, ``checkpoints/``): a finished model's folder
  holds :data:`~nmtlib.layout.LEFT_BEHIND` in their place, with the weights' digest, size and time
  and the preprocess record the reports read of them (:meth:`~nmtlib.layout.Layout.trained` counts
  the model as trained); a model still training when saved is left out whole, and trains from the
  start on the other machine; a carried model being trained again for its weights (the same
  variant, seed and data) keeps the results carried before until it is done;
- the corpus and its tokenized text (``corpus/``, ``data/``): the other machine makes them again
  from its download cache, and the manifest keeps their digests and times, which :func:`restore`
  checks and sets. So the workflow's data steps run there first
  (``snakemake --until prepare_split``, with the run's config), then the restore, then the run.

Nothing already there is overwritten: a result that exists with other bytes than the carried one
stops the restore before it writes anything, and a log already there (of a job that ran on this
machine too, such as the data steps) is kept in place of the carried one.

Written here, not taken from ``rsync`` or ``tar``, because what to leave out (a model in training,
the weights) and what to check (the data made again against the data the models were trained on)
are the workflow's layout, and Snakemake needs the times.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from nmtlib.atomic import atomic_write
from nmtlib.errors import NmtlibError
from nmtlib.files import file_digests
from nmtlib.layout import LEFT_BEHIND, LOGS, MODEL, RECORD, RESULTS, TRAIN_LOG, TRAINING_RULE, Layout, Logs

#: the manifest of a carried folder, beside its ``results/`` and ``logs/``
MANIFEST = "carried.json"
FORMAT = 1
#: files from this size on are kept gzip-compressed in a carried folder (``<name>.gz``; the manifest says so)
GZIP_FROM, GZIP = 64 * 1024, "gzip"


class CarryError(NmtlibError):
    """A carried folder that cannot be written or restored as asked (the message says which file)."""


@dataclass
class Carried:
    """What :func:`save` or :func:`restore` did."""

    files: int = 0  #: files carried (saved, or restored and found in place)
    bytes: int = 0
    copied: int = 0  #: files written (the rest were there already, with the same bytes)
    models: list[str] = field(default_factory=list)  #: ``variant/run`` of every finished model carried
    left_out: list[str] = field(default_factory=list)  #: ``variant/run`` of models still training, left out
    regenerated: int = 0  #: corpus and data files checked, not carried

    def as_dict(self) -> dict[str, Any]:
        return {"files": self.files, "bytes": self.bytes, "copied": self.copied, "models": len(self.models),
                "left_out": self.left_out, "regenerated": self.regenerated}


def _entry(path: Path) -> dict[str, Any]:
    stat = path.stat()
    return {"sha256": file_digests(path)["sha256"], "size": stat.st_size, "mtime_ns": stat.st_mtime_ns}


def _model_runs(layout: Layout[Path]) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """The experiment's model folders: those trained, and those still training: no weights and no
    record of weights left behind, or a carried model trained again (:func:`_training_again`)."""
    trained, training = [], []
    for folder, (variant, run) in layout.found(layout.model_dir("*", "*")):
        if folder.is_dir():
            done = layout.trained(variant, run) and not _training_again(layout, variant, run)
            (trained if done else training).append((variant, run))
    return trained, training


def _training_again(layout: Layout[Path], variant: str, run: str) -> bool:
    """Whether a model carried here without its weights is being trained again (a job needs them):
    Snakemake has removed the learning curve and record it was carried with and the trainer writes
    new ones, so they are not those its record of the weights left behind names, or it has a resume
    state. Its folder then holds the start of a training, not the carried model."""
    left = Path(layout.left_behind(variant, run))
    if Path(layout.model(variant, run)).exists() or not left.exists():
        return False
    if Path(layout.resume_state(variant, run)).exists():
        return True
    beside = json.loads(left.read_text(encoding="utf-8")).get("beside", {})  # (records before it: none)
    model_dir = Path(layout.model_dir(variant, run))
    return any(not (model_dir / name).exists() or file_digests(model_dir / name)["sha256"] != digest
               for name, digest in beside.items())


def _same_training(record: Path, carried: bytes) -> bool:
    """Whether the training whose record (``env.json``) is ``record`` trains the model carried with
    the record ``carried``: the same variant, seed, parent and data, so the same weights on the same
    kind of processor."""
    try:
        now, then = json.loads(record.read_text(encoding="utf-8")), json.loads(carried)
    except (OSError, ValueError):
        return False
    return all(now.get(key) == then.get(key) for key in ("variant", "seed", "init_from", "data_sha256"))


def _left_out(layout: Layout[Path], logs: Logs[Path], training: list[tuple[str, str]]) -> set[Path]:
    """Every file and folder that belongs to a model still training: its folder, any output of an earlier
    training of it, its training job's log and benchmark."""
    out: set[Path] = set()
    for variant, run in training:
        out |= {layout.model_dir(variant, run), layout.translation(variant, run, "x").parent,
                layout.scores(variant, run, "x").parent, layout.attention(variant, run).parent,
                logs.job(TRAINING_RULE, f"{variant}.{run}"), logs.benchmark(TRAINING_RULE, f"{variant}.{run}")}
    return out


def _under(path: Path, folders: set[Path]) -> bool:
    return any(path == f or f in path.parents for f in folders)


def _files(root: Path) -> list[Path]:
    """Every plain file under ``root``, sorted; hidden names (a writer's temporary file) left out."""
    return sorted(p for p in root.rglob("*") if p.is_file() and not p.name.startswith("."))


def left_behind_record(model: Path) -> dict[str, Any]:
    """What a model folder keeps of its weights when they stay behind: their digest, size and time,
    and the preprocess record (languages, tokenizers, case) ``nmtlib translate`` and the reports read."""
    from nmtlib import checkpoint

    beside = {name: file_digests(model.parent / name)["sha256"] for name in (TRAIN_LOG, RECORD)
              if (model.parent / name).exists()}  # how the model's folder was when it finished
    return {**_entry(model), "file": MODEL, "preprocess": checkpoint.load(model).get("preprocess"),
            "beside": beside}


def read_manifest(folder: Path) -> dict[str, Any]:
    path = folder / MANIFEST
    if not folder.is_dir():
        raise CarryError(f"{folder}: no such folder")
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise CarryError(f"{folder}: no {MANIFEST}: not a folder that nmtlib carry save wrote") from None
    except (OSError, ValueError) as err:
        raise CarryError(f"{path}: cannot read ({err})") from None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise CarryError(f"{path}: not a manifest of format {FORMAT} (nmtlib carry save writes one)")
    return manifest


def save(results: Path, logs: Path, to: Path) -> Carried:
    """Copy what ``results`` (an experiment's results folder) and ``logs`` (its logs folder) computed,
    but the weights, the resume states, the corpus and a model still training, into ``to``, with the
    manifest. A folder ``to`` saved before from the same results is brought up to date (files that did
    not change are not copied again; files no longer there are removed)."""
    results, logs, to = Path(results), Path(logs), Path(to)
    if not results.is_dir():
        raise CarryError(f"{results}: no such results folder")
    _apart("--to", to, results, logs)
    before: dict[str, Any] | None = None
    if to.exists() and any(to.iterdir()):
        before = read_manifest(to) if (to / MANIFEST).exists() else None
        if before is None:
            raise CarryError(f"--to {to}: not empty and holds no {MANIFEST}; give an empty or new folder")
        if before.get("results") != results.name:
            raise CarryError(f"--to {to}: holds the results of {before.get('results')!r} carried earlier, not "
                             f"of {results.name!r}; give another folder")
    layout, job_logs = Layout(results), Logs(logs)
    trained, training = _model_runs(layout)
    skipped = _left_out(layout, job_logs, training)
    regenerated_dirs = {layout.corpus_dir(), layout.data_dir()}
    model_dirs = {layout.model_dir(v, r) for v, r in trained}
    # of a trained model's folder: the learning curve and the record; the weights become a record of them
    kept = {p for v, r in trained for p in (layout.train_log(v, r), layout.record(v, r))}
    kept |= {layout.left_behind(v, r) for v, r in trained if not layout.model(v, r).exists()}
    done = Carried(models=[f"{v}/{r}" for v, r in trained], left_out=[f"{v}/{r}" for v, r in training])
    carried: dict[str, dict[str, Any]] = {}
    regenerated: dict[str, dict[str, Any]] = {}
    sources: dict[str, Path | bytes] = {}
    for root, name in ((results, RESULTS), (logs, LOGS)):
        for path in _files(root) if root.is_dir() else []:
            key = f"{name}/{path.relative_to(root).as_posix()}"
            if _under(path, skipped) or (_under(path, model_dirs) and path not in kept):
                continue
            if root is results and _under(path, regenerated_dirs):
                regenerated[key] = _entry(path)
                continue
            if path.name.endswith(".gz"):  # atomic_write would compress the restored bytes a second time
                raise CarryError(f"{path}: a result named .gz; nmtlib carry restores through a writer that "
                                 f"compresses such names, so it cannot carry it")
            carried[key], sources[key] = _entry(path), path
    # a carried model trained again for the same weights (a job needs them): the results carried earlier
    # stay carried, so that losing this machine during the training loses nothing
    earlier = (before or {}).get("carried", {})
    for variant, run in training:
        record_key = f"{RESULTS}/{layout.record(variant, run).relative_to(results).as_posix()}"
        if not Path(layout.left_behind(variant, run)).exists() or record_key not in earlier:
            continue
        if not _same_training(layout.record(variant, run), _carried_bytes(to, record_key, earlier[record_key])):
            continue
        own = _left_out(layout, job_logs, [(variant, run)])
        for key, entry in earlier.items():
            if _under(_place(key, results, logs), own):
                carried[key], sources[key] = entry, _carried_bytes(to, key, entry)
        done.left_out.remove(f"{variant}/{run}")
        done.models.append(f"{variant}/{run}")
    for variant, run in trained:
        model = layout.model(variant, run)
        if model.exists():  # (a left-behind record beside it is of weights trained again since)
            record = left_behind_record(model)
            text = (json.dumps(record, indent=2) + "\n").encode()
            key = f"{RESULTS}/{layout.left_behind(variant, run).relative_to(results).as_posix()}"
            carried[key] = {"sha256": hashlib.sha256(text).hexdigest(), "size": len(text),
                            "mtime_ns": record["mtime_ns"]}
            sources[key] = text
    to.mkdir(parents=True, exist_ok=True)
    for key, entry in carried.items():
        source = sources[key]
        data = source if isinstance(source, bytes) else source.read_bytes()
        if len(data) >= GZIP_FROM:  # a training job's log is mostly progress bars: 0.8 MB, 40 KB gzipped
            entry["stored"] = GZIP
        dest = _stored(to, key, entry)
        done.files += 1
        done.bytes += entry["size"]
        if not (dest.exists() and _read_stored(dest, entry) == data):
            with atomic_write(dest, binary=True) as f:  # a .gz name: written gzip-compressed, the same bytes each time
                f.write(data)
            done.copied += 1
        os.utime(dest, ns=(entry["mtime_ns"], entry["mtime_ns"]))
    stored = {_stored(to, key, entry).relative_to(to).as_posix() for key, entry in carried.items()}
    for name in (RESULTS, LOGS):  # what an earlier save carried that is gone since (a model trained again)
        for path in _files(to / name) if (to / name).is_dir() else []:
            if path.relative_to(to).as_posix() not in stored:
                path.unlink()
        for folder in sorted((to / name).rglob("*") if (to / name).is_dir() else [], reverse=True):
            if folder.is_dir() and not any(folder.iterdir()):
                folder.rmdir()
    done.regenerated = len(regenerated)
    with atomic_write(to / MANIFEST) as f:
        f.write(json.dumps({"format": FORMAT, "results": results.name, "logs": logs.name,
                            "saved": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
                            "models": done.models, "left_out": done.left_out,
                            "carried": carried, "regenerated": regenerated}, indent=1) + "\n")
    return done


def _apart(flag: str, carried: Path, results: Path, logs: Path) -> None:
    """The carried folder and the run's two folders must not hold one another: a save into the logs
    folder would carry its own copy on the next save, a restore from inside the results would write
    over what it reads."""
    def overlap(a: Path, b: Path) -> bool:
        a, b = a.resolve(), b.resolve()
        return a == b or a in b.parents or b in a.parents

    for name, folder in (("results", results), ("logs", logs)):
        if overlap(carried, folder):
            raise CarryError(f"{flag} {carried}: overlaps the {name} folder {folder}; give a folder apart from "
                             f"both the results and the logs folders")
    if overlap(results, logs):
        raise CarryError(f"--results {results} and --logs {logs}: one holds the other; give the run's two folders")


def _stored(folder: Path, key: str, entry: dict[str, Any]) -> Path:
    """Where a carried folder holds the file ``key``: under its name, gzip-compressed ones with ``.gz`` added."""
    return folder / (key + ".gz" if entry.get("stored") == GZIP else key)


def _read_stored(path: Path, entry: dict[str, Any]) -> bytes:
    data = path.read_bytes()
    return gzip.decompress(data) if entry.get("stored") == GZIP else data


def _carried_bytes(folder: Path, key: str, entry: dict[str, Any]) -> bytes:
    """The bytes of the carried file ``key``, checked against the manifest."""
    path = _stored(folder, key, entry)
    try:
        data = _read_stored(path, entry)
    except FileNotFoundError:
        raise CarryError(f"{path}: in {MANIFEST} but not in the folder; nothing restored") from None
    except (OSError, EOFError) as err:
        raise CarryError(f"{path}: cannot read ({err}); nothing restored") from None
    if len(data) != entry["size"] or hashlib.sha256(data).hexdigest() != entry["sha256"]:
        raise CarryError(f"{path}: its bytes differ from {MANIFEST} (sha256 {entry['sha256'][:12]}…); nothing restored")
    return data


def _place(key: str, results: Path, logs: Path) -> Path:
    top, _, rest = key.partition("/")
    if top not in (RESULTS, LOGS) or not rest or ".." in Path(rest).parts:
        raise CarryError(f"{MANIFEST}: {key!r} is not a path under {RESULTS}/ or {LOGS}/")
    return (results if top == RESULTS else logs) / rest


def _same(path: Path, entry: dict[str, Any]) -> bool:
    return path.stat().st_size == entry["size"] and file_digests(path)["sha256"] == entry["sha256"]


def restore(source: Path, results: Path, logs: Path) -> Carried:
    """Put the results carried in ``source`` (:func:`save`) back into ``results`` and ``logs``, each file
    with its time. Every check comes first (the carried bytes against the manifest; the corpus and data,
    which must have been made again already, against the digests the models were trained on; a file
    already in place against the carried one), so that a failed restore writes nothing."""
    source, results, logs = Path(source), Path(results), Path(logs)
    _apart("--from", source, results, logs)
    manifest = read_manifest(source)
    if manifest.get("results") != results.name:
        raise CarryError(f"{source}: carries the results of {manifest.get('results')!r}, not of {results.name!r}")
    carried: dict[str, dict[str, Any]] = manifest.get("carried", {})
    regenerated: dict[str, dict[str, Any]] = manifest.get("regenerated", {})
    for key, entry in regenerated.items():
        dest = _place(key, results, logs)
        if not dest.exists():
            raise CarryError(f"{dest}: not there: make the corpus and its tokenized text first (snakemake --until "
                             f"prepare_split, with the run's config), then restore")
        if not _same(dest, entry):
            raise CarryError(f"{dest}: not the file the carried models were trained on (sha256 "
                             f"{entry['sha256'][:12]}…); nothing restored")
    todo: list[tuple[Path, bytes | None, dict[str, Any]]] = []
    for key, entry in carried.items():
        data, dest = _carried_bytes(source, key, entry), _place(key, results, logs)
        if dest.name == LEFT_BEHIND and (weights_here := dest.with_name(MODEL)).exists():
            if not _same(weights_here, json.loads(data)):
                raise CarryError(f"{weights_here}: other weights than those the carried results were computed "
                                 f"with ({LEFT_BEHIND}: sha256 {json.loads(data)['sha256'][:12]}…); nothing restored "
                                 f"(move them away to take the carried results)")
            continue  # the weights themselves are here: no record of them left behind
        if dest.exists():
            if not _same(dest, entry):
                if key.startswith(f"{LOGS}/"):
                    continue  # the log of a job that ran here too (the data steps): this machine's own is kept
                raise CarryError(f"{dest}: already there with other bytes than the carried file; nothing restored "
                                 f"(move it away to take the carried one)")
            data = None  # there already, the same bytes: only its time is set
        todo.append((dest, data, entry))
    done = Carried(models=list(manifest.get("models", [])), left_out=list(manifest.get("left_out", [])),
                   regenerated=len(regenerated))
    for dest, data, entry in todo:
        if data is not None:
            dest.parent.mkdir(parents=True, exist_ok=True)
            with atomic_write(dest, binary=True) as f:
                f.write(data)
            done.copied += 1
        os.utime(dest, ns=(entry["mtime_ns"], entry["mtime_ns"]))
        done.files += 1
        done.bytes += entry["size"]
    for key, entry in regenerated.items():
        dest = _place(key, results, logs)
        os.utime(dest, ns=(entry["mtime_ns"], entry["mtime_ns"]))
    return done


def preprocess_of(layout: Layout[Path], variant: str, run: str) -> dict[str, Any] | None:
    """The preprocess record of a trained model: from its ``model.pt``, or from the record of the weights
    left behind where its results were carried."""
    model, left = Path(layout.model(variant, run)), Path(layout.left_behind(variant, run))
    if model.exists():
        from nmtlib import checkpoint

        return checkpoint.load(model).get("preprocess")
    if left.exists():
        return json.loads(left.read_text(encoding="utf-8")).get("preprocess")
    return None



def weights(layout: Layout[Path], variant: str, run: str) -> Path:
    """The ``model.pt`` of a trained model, for an analysis that runs it; a model whose results were
    carried here without it, or one not trained, is a :class:`CarryError` that says how to get it."""
    model = Path(layout.model(variant, run))
    if model.exists():
        return model
    if Path(layout.left_behind(variant, run)).exists():
        raise CarryError(f"{model}: not here: its results were carried from another machine without the weights "
                         f"({LEFT_BEHIND}); train it again from its seed with snakemake --cores 1 --configfile "
                         f"<the run's config> {model}")
    raise CarryError(f"{model}: no trained model of {variant} {run}")
