"""The corpus registry: ``corpora.yaml`` (next to this module), read and checked.

What: every file the experiments read - upstream URL, sha256, size and its place in the cache,
grouped per data set - as :class:`Registry` / :class:`Dataset` / :class:`FileEntry`.
:func:`load_registry` reads the packaged file, another YAML file or a mapping (tests).

Why we check it ourselves instead of trusting the YAML: every path in it becomes a path under
the cache folder, so a typo or a ``..`` must fail here, naming the file and the key, rather than
write outside the cache or download under the wrong name later.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any, TypeAlias

from nmtlib.errors import NmtlibError

__all__ = ["FileEntry", "Dataset", "Registry", "RegistrySource", "load_registry"]

_HEX = {"sha256": 64, "sha1": 40, "md5": 32}
_CONVERTERS = ("wmt-sgm",)
_ARCHIVE_SUFFIXES = (".tar.gz", ".tgz", ".tar.bz2", ".tbz2", ".tar.xz", ".txz", ".tar", ".zip")


@dataclass(frozen=True)
class FileEntry:
    """One file of a data set, as the registry describes it."""

    dataset: str
    name: str
    path: str  # relative to the cache root, POSIX, starts with "<dataset>/"
    url: str | None
    sha256: str | None
    size: int | None
    md5: str | None = None
    sha1: str | None = None
    manual: bool = False
    optional: bool = False
    convert: str | None = None
    extract_to: str | None = None
    members: tuple[str, ...] = ()

    @property
    def tofu_key(self) -> str:
        """The path relative to ``<cache>/<dataset>/``, as ``SHA256SUMS.tofu`` lists it."""
        return self.path[len(self.dataset) + 1 :]


@dataclass(frozen=True)
class Dataset:
    name: str
    description: str
    source: str
    licence: str
    manual: bool
    instructions: str
    files: dict[str, FileEntry] = field(default_factory=dict)


@dataclass(frozen=True)
class Registry:
    datasets: dict[str, Dataset]
    origin: str

    def dataset(self, name: str) -> Dataset:
        try:
            return self.datasets[name]
        except KeyError:
            raise NmtlibError(
                f"unknown data set {name!r} in {self.origin}; "
                f"valid names: {', '.join(sorted(self.datasets))}"
            ) from None


#: what the public functions take as ``registry``: a loaded registry, a mapping (tests), a YAML
#: file, or None for the packaged ``corpora.yaml``
RegistrySource: TypeAlias = Registry | Mapping[str, Any] | str | os.PathLike[str] | None


_DATASET_KEYS = {"description", "source", "licence", "manual", "instructions", "files"}
_FILE_KEYS = {
    "path",
    "url",
    "sha256",
    "size",
    "md5",
    "sha1",
    "optional",
    "manual",
    "convert",
    "extract_to",
    "members",
}


def _check_mapping(raw: Any, allowed: set[str], where: str) -> None:
    """Fail, naming ``where``, unless ``raw`` is a mapping whose keys are all in ``allowed``."""
    if not isinstance(raw, Mapping):
        raise NmtlibError(f"{where}: must be a mapping")
    unknown = sorted(set(raw) - allowed)
    if unknown:
        raise NmtlibError(f"{where}: unknown key(s) {', '.join(unknown)}; valid: {', '.join(sorted(allowed))}")


def _safe_relpath(value: Any, where: str) -> str:
    if not isinstance(value, str) or not value:
        raise NmtlibError(f"{where}: must be a non-empty relative path, got {value!r}")
    p = PurePosixPath(value)
    if p.is_absolute() or ".." in p.parts or "\\" in value or value != p.as_posix():
        raise NmtlibError(f"{where}: {value!r} must be a normalized relative POSIX path")
    return value


def _parse_entry(dataset: str, name: str, raw: Any, manual_ds: bool, where: str) -> FileEntry:
    _check_mapping(raw, _FILE_KEYS, where)
    for key in ("path", "sha256", "size"):
        if key not in raw:
            raise NmtlibError(f"{where}: missing key {key!r} (use null when unknown)")
    path = _safe_relpath(raw["path"], f"{where}.path")
    if not path.startswith(dataset + "/"):
        raise NmtlibError(f"{where}.path: {path!r} must lie under {dataset + '/'!r}")
    hashes: dict[str, str | None] = {}
    for algo, length in _HEX.items():
        value = raw.get(algo)
        if value is not None and not (
            isinstance(value, str) and re.fullmatch(f"[0-9a-f]{{{length}}}", value)
        ):
            raise NmtlibError(f"{where}.{algo}: expected {length} lowercase hex digits or null")
        hashes[algo] = value
    size = raw["size"]
    if size is not None and (not isinstance(size, int) or isinstance(size, bool) or size < 0):
        raise NmtlibError(f"{where}.size: expected a byte count or null, got {size!r}")
    manual = bool(raw.get("manual", manual_ds))
    url = raw.get("url")
    if url is None and not manual:
        raise NmtlibError(f"{where}: missing key 'url' (or mark the data set manual: true)")
    if url is not None and not (isinstance(url, str) and re.match(r"https?://", url)):
        raise NmtlibError(f"{where}.url: expected an http(s) URL, got {url!r}")
    convert = raw.get("convert")
    if convert is not None and convert not in _CONVERTERS:
        raise NmtlibError(f"{where}.convert: {convert!r} is not one of {', '.join(_CONVERTERS)}")
    extract_to = raw.get("extract_to")
    members = raw.get("members") or []
    if extract_to is not None:
        extract_to = _safe_relpath(extract_to, f"{where}.extract_to")
        if not extract_to.startswith(dataset + "/") or extract_to == path:
            raise NmtlibError(f"{where}.extract_to: must be a folder under {dataset + '/'!r}")
        if not path.endswith(_ARCHIVE_SUFFIXES):
            raise NmtlibError(
                f"{where}: extract_to needs an archive name ({', '.join(_ARCHIVE_SUFFIXES)})"
            )
    elif members:
        raise NmtlibError(f"{where}.members: only valid together with extract_to")
    if not isinstance(members, list):
        raise NmtlibError(f"{where}.members: expected a list of paths")
    for i, member in enumerate(members):
        _safe_relpath(member, f"{where}.members[{i}]")
    return FileEntry(
        dataset=dataset,
        name=name,
        path=path,
        url=url,
        sha256=hashes["sha256"],
        size=size,
        md5=hashes["md5"],
        sha1=hashes["sha1"],
        manual=manual,
        optional=bool(raw.get("optional", False)),
        convert=convert,
        extract_to=extract_to,
        members=tuple(members),
    )


def _parse_registry(data: Any, origin: str) -> Registry:
    if not isinstance(data, Mapping) or not isinstance(data.get("datasets"), Mapping):
        raise NmtlibError(f"{origin}: expected a mapping with a 'datasets' key")
    datasets: dict[str, Dataset] = {}
    for ds_name, ds in data["datasets"].items():
        where = f"{origin}: datasets.{ds_name}"
        if not isinstance(ds_name, str) or not re.fullmatch(r"[A-Za-z0-9_.-]+", ds_name):
            raise NmtlibError(f"{where}: data set names are letters, digits, '_', '-', '.'")
        _check_mapping(ds, _DATASET_KEYS, where)
        files_raw = ds.get("files")
        if not isinstance(files_raw, Mapping) or not files_raw:
            raise NmtlibError(f"{where}.files: expected a non-empty mapping")
        manual = bool(ds.get("manual", False))
        files = {
            str(name): _parse_entry(ds_name, str(name), raw, manual, f"{where}.files.{name}")
            for name, raw in files_raw.items()
        }
        paths = [f.path for f in files.values()]
        if len(set(paths)) != len(paths):
            raise NmtlibError(f"{where}.files: two entries share one path")
        datasets[ds_name] = Dataset(
            name=ds_name,
            description=" ".join(str(ds.get("description", "")).split()),
            source=" ".join(str(ds.get("source", "")).split()),
            licence=str(ds.get("licence", "")),
            manual=manual,
            instructions=" ".join(str(ds.get("instructions", "")).split()),
            files=files,
        )
    return Registry(datasets=datasets, origin=origin)


def load_registry(source: RegistrySource = None) -> Registry:
    """Read and validate a registry: the packaged ``corpora.yaml`` (None), a YAML file path, or
    an already-parsed mapping (tests). Errors name the file and the offending key."""
    if isinstance(source, Registry):
        return source
    if isinstance(source, Mapping):
        return _parse_registry(source, "<registry dict>")
    import yaml

    if source is None:
        from importlib import resources

        origin = "nmtlib/data/corpora.yaml"
        text = resources.files("nmtlib.data").joinpath("corpora.yaml").read_text(encoding="utf-8")
    else:
        origin = str(source)
        try:
            text = Path(source).read_text(encoding="utf-8")
        except OSError as err:
            raise NmtlibError(f"{origin}: cannot read registry ({err.strerror})") from err
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        line = f":{mark.line + 1}" if mark is not None else ""
        raise NmtlibError(f"{origin}{line}: invalid YAML ({getattr(err, 'problem', err)})") from err
    return _parse_registry(data, origin)
