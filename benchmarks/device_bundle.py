#!/usr/bin/env python
"""Pack, here, what a machine without network needs to run a whole experiment of the workflow:
wheels of every Python package of nmtlib's closure that the machine's image lacks, and the
corpora from the download cache (issue #30: a whole small experiment timed end to end on a lent
GPU, ``benchmarks/device_experiment.sh``).

    python benchmarks/device_bundle.py --corpus multi30k          # for the lent H100/H200 (Python 3.12)
    python benchmarks/device_bundle.py --corpus small_parallel_enja --peer   # and the peer, for peer_opennmt.py
    python benchmarks/device_bundle.py --python-version 3.11 --wheels /tmp/w --data /tmp/d   # this machine's Python

The closure is read from this environment's installed metadata (nmtlib's requirements and
theirs, markers evaluated for ``--python-version``), so the versions are the ones the tests
pass with here. Packages the machine's image already has (``--present``: one name per line;
the default is the lent machines' image as the device tool's KINDS.md listed it on 2026-11-17)
are left out, and so are ``--skip`` (fugashi and unidic-lite: only Japanese corpora need them,
and unidic-lite alone is 50 MB). Each wheel is downloaded for that Python and manylinux; a
package published only as source is built here, and must then be pure Python.

nmtlib itself travels with the working tree: the workflow runs it as ``python -m nmtlib`` from
the repository's root. ``--peer`` adds, in ``WHEELS/peer`` apart from the workflow's, the wheels
that ``benchmarks/peer/setup_offline.sh`` installs the peer from (OpenNMT-py 3.5.1,
ConfigArgParse, pyonmttok: 18 MB). Both folders are git-ignored; the device tool's ``carry``
takes them as they are, and the script prints the list. Over ``--limit-mb`` (the tool carries
64 MiB in all) it stops.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import bench_common as bc

ROOT = Path(__file__).resolve().parent.parent
PRESENT = Path(__file__).resolve().parent / "device_image_packages.txt"
#: what benchmarks/peer/setup_offline.sh installs OpenNMT-py from (its pins: benchmarks/README.md)
PEER_WHEELS = {"opennmt-py": "3.5.1", "configargparse": "1.9.0", "pyonmttok": "1.38.1"}
PLATFORMS = ["manylinux_2_28_x86_64", "manylinux_2_27_x86_64", "manylinux_2_17_x86_64", "manylinux2014_x86_64",
             "manylinux1_x86_64"]


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--python-version", default="3.12", help="the machine's Python, major.minor (default 3.12)")
    p.add_argument("--wheels", type=Path, default=ROOT / ".whl", help="wheel folder (default .whl, git-ignored)")
    p.add_argument("--data", type=Path, default=ROOT / "benchmarks" / "out" / "device-data",
                   help="download-cache folder to fill with --corpus (default benchmarks/out/device-data)")
    p.add_argument("--corpus", action="append", default=[], help="a corpus folder of the cache to copy (repeatable)")
    p.add_argument("--cache", type=Path, default=bc.shared_dir() / "data", help="the download cache to copy from")
    p.add_argument("--present", type=Path, default=PRESENT, help="packages the machine already has, one per line")
    p.add_argument("--skip", default="fugashi,unidic-lite", help="comma-separated packages to leave out")
    p.add_argument("--peer", action="store_true", help="also the peer's wheels, in WHEELS/peer (setup_offline.sh)")
    p.add_argument("--limit-mb", type=float, default=60.0)
    return p.parse_args(argv)


def canonical(name: str) -> str:
    from packaging.utils import canonicalize_name

    return canonicalize_name(name)


def closure(root: str, python_version: str, leave_out: set[str]) -> dict[str, str]:
    """{package: installed version} of ``root``'s requirements, recursively, for ``python_version``
    on x86-64 Linux; a package in ``leave_out`` is neither taken nor followed."""
    from packaging.requirements import Requirement

    env = {"python_version": python_version, "python_full_version": python_version + ".0", "sys_platform": "linux",
           "platform_system": "Linux", "platform_machine": "x86_64", "os_name": "posix",
           "implementation_name": "cpython", "platform_python_implementation": "CPython", "extra": ""}
    found: dict[str, str] = {}
    todo = [root]
    while todo:
        name = canonical(todo.pop())
        if name in found or (name in leave_out and found):  # the root itself is always followed
            continue
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            raise SystemExit(f"{name}: required by the closure of {root} but not installed here") from None
        found[name] = dist.version
        for line in dist.requires or []:
            req = Requirement(line)
            if req.marker is None or req.marker.evaluate(env):
                todo.append(req.name)
    return found


def fetch(name: str, version: str, python_version: str, wheels: Path) -> str:
    """Download ``name==version``'s wheel for the target; build it here if only a source is
    published (then it must be pure Python). Returns how it came."""
    pip = [sys.executable, "-m", "pip"]
    platforms = [a for p in PLATFORMS for a in ("--platform", p)]
    spec = f"{name}=={version}"
    got = subprocess.run([*pip, "download", "-q", "--no-deps", "--only-binary=:all:", "--python-version",
                          python_version, "--implementation", "cp", *platforms, "-d", str(wheels), spec],
                         capture_output=True, text=True)
    if got.returncode == 0:
        return "downloaded"
    built = subprocess.run([*pip, "wheel", "-q", "--no-deps", "-w", str(wheels), spec], capture_output=True, text=True)
    if built.returncode != 0:
        raise SystemExit(f"{spec}: no wheel for Python {python_version} and no build here:\n{built.stderr[-2000:]}")
    from packaging.utils import parse_wheel_filename

    for wheel in wheels.glob("*.whl"):
        wname, wversion, _, tags = parse_wheel_filename(wheel.name)
        if (wname, str(wversion)) == (canonical(name), version):
            if all(tag.abi == "none" and tag.platform == "any" for tag in tags):
                return "built here"
            raise SystemExit(f"{spec}: built {wheel.name}, not a pure-Python wheel: it would not run on Python "
                             f"{python_version}")
    raise SystemExit(f"{spec}: pip built no wheel of it in {wheels}")


def size_mb(path: Path) -> float:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file()) / 2**20 if path.exists() else 0.0


def main(argv=None) -> int:
    args = parse_args(argv)
    for corpus in args.corpus:  # before any download
        if not (args.cache / corpus).is_dir():
            raise SystemExit(f"--corpus {corpus}: no folder {corpus}/ in the download cache {args.cache}")
    names = (line.split("#")[0].strip() for line in args.present.read_text(encoding="utf-8").splitlines())
    present = {canonical(name) for name in names if name}
    skip = {canonical(s) for s in args.skip.split(",") if s.strip()}
    packages = closure("nmtlib", args.python_version, present | skip)
    packages.pop("nmtlib")
    args.wheels.mkdir(parents=True, exist_ok=True)
    for name, version in sorted(packages.items()):
        print(f"{name}=={version}: {fetch(name, version, args.python_version, args.wheels)}")
    if args.peer:
        (args.wheels / "peer").mkdir(exist_ok=True)
        for name, version in PEER_WHEELS.items():
            print(f"peer: {name}=={version}: {fetch(name, version, args.python_version, args.wheels / 'peer')}")
    for corpus in args.corpus:
        shutil.copytree(args.cache / corpus, args.data / corpus, dirs_exist_ok=True)
        print(f"{corpus}: copied from {args.cache / corpus}")
    wheels_mb, data_mb = size_mb(args.wheels), size_mb(args.data)
    total = wheels_mb + data_mb
    peer = f" and the peer's {len(PEER_WHEELS)}" if args.peer else ""
    print(f"\n{len(packages)} wheels{peer} in {args.wheels} ({wheels_mb:.1f} MB), data in {args.data} ({data_mb:.1f} MB)")
    carry = [str(p.resolve().relative_to(ROOT)) for p in (args.wheels, args.data) if p.resolve().is_relative_to(ROOT)]
    print(f"carry: {carry}")
    if total > args.limit_mb:
        raise SystemExit(f"{total:.1f} MB is over --limit-mb {args.limit_mb:g}: carry fewer corpora or skip packages")
    return 0


if __name__ == "__main__":
    sys.exit(main())
