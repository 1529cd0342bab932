"""Issue #27, "nothing wrong used, kept or scored": the cache is verified where it is read,
killed writers leave nothing behind, every corrupt copy is kept, every output is atomic.

All faults are real: cache files altered on disk after they verified, a real ``snakemake`` run of
the copy jobs, real processes killed with SIGKILL in the middle of a write (``nmtlib prepare``
on a large input, and small children that hold :func:`nmtlib.atomic.atomic_write` open), real
downloads from a local HTTP server. Expected digests and contents are computed here with
``hashlib`` / ``gzip`` from the bytes the test wrote, not by the code under test.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import logging
import os
import shlex
import signal
import subprocess
import sys
import tarfile
import time
from pathlib import Path

import pytest
import yaml

from nmtlib.atomic import atomic_write, write_lines
from nmtlib.data.download import fetch

from conftest import ROOT, SHARED
from test_download import FAST, Server, registry_for, server  # noqa: F401  (server: a fixture)
from test_report import make_experiment, run_report

pytestmark = pytest.mark.timeout(300)

SHARED_DATA = SHARED / "data"
needs_shared = pytest.mark.skipif(not (SHARED_DATA / "multi30k" / "val.de.gz").is_file(),
                                  reason="shared data not available")


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def nmtlib(*args: str, timeout: int = 120) -> subprocess.CompletedProcess[str]:
    """``python -m nmtlib ARGS``, a real process, as the workflow's rules run it."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "nmtlib", *args], capture_output=True, text=True, cwd=ROOT,
                          env=env, timeout=timeout)


def flip_byte(path: Path, at: int) -> bytes:
    """Change one byte of ``path`` in place (same size), as a bad disk or a stray edit would."""
    data = bytearray(path.read_bytes())
    data[at] ^= 0x01
    path.write_bytes(bytes(data))
    return bytes(data)


def temporaries(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob(".*.tmp"))


def snakemake(workdir: Path, *args: str, timeout: int = 300) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "snakemake", "-s", str(ROOT / "Snakefile"), "--directory", str(workdir), *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)


def shell_commands(log: str) -> list[list[str]]:
    """The commands ``snakemake -p`` printed, split as the shell splits them."""
    prefix = "Shell command: "
    return [shlex.split(line[len(prefix):]) for line in log.splitlines() if line.startswith(prefix)]


# == F1: a cache file is verified where it is read ===============================================

TEXT = "".join(f"line {i}: ein Satz mit Wörtern\n" for i in range(2000)).encode("utf-8")


def _toy_cache(tmp_path: Path, server_url: str = "http://127.0.0.1:9") -> tuple[Path, Path, bytes]:
    """A cache with one gzip file (toy/a.gz) placed by hand, and a registry file pinning it."""
    packed = gzip.compress(TEXT, mtime=0)
    cache = tmp_path / "cache"
    (cache / "toy").mkdir(parents=True)
    (cache / "toy" / "a.gz").write_bytes(packed)
    reg = tmp_path / "registry.json"  # JSON is YAML
    reg.write_text(json.dumps(registry_for(
        {"a.gz": {"url": f"{server_url}/a.gz", "sha256": sha256(packed), "size": len(packed)}})))
    return cache, reg, packed


def test_copy_verifies_the_bytes_it_copies_and_gunzips_them(tmp_path: Path) -> None:
    cache, reg, packed = _toy_cache(tmp_path)
    out = tmp_path / "results" / "corpus" / "train.src"
    run = nmtlib("corpus", "copy", "toy", "a.gz", "--cache", str(cache), "--registry", str(reg), "--out", str(out))
    assert run.returncode == 0, run.stderr
    assert out.read_bytes() == TEXT  # gunzipped, as gzip -cdf did
    assert f"sha256 {sha256(packed)}, verified" in run.stdout
    # a plain (not gzip) file is copied as it is
    plain = b"plain text\nzwei\n"
    (cache / "toy" / "b.txt").write_bytes(plain)
    reg.write_text(json.dumps(registry_for({"b.txt": {"url": "http://127.0.0.1:9/b", "sha256": sha256(plain)}})))
    run = nmtlib("corpus", "copy", "toy", "b.txt", "--cache", str(cache), "--registry", str(reg),
                 "--out", str(tmp_path / "b"))
    assert run.returncode == 0 and (tmp_path / "b").read_bytes() == plain


def test_a_cache_file_changed_after_it_verified_is_refused_where_it_is_read(tmp_path: Path) -> None:
    cache, reg, packed = _toy_cache(tmp_path)
    assert nmtlib("download", "toy", "--cache", str(cache), "--registry", str(reg), "--verify-only").returncode == 0
    out_dir = tmp_path / "results" / "corpus"
    out = out_dir / "train.src"
    first = nmtlib("corpus", "copy", "toy", "a.gz", "--cache", str(cache), "--registry", str(reg), "--out", str(out))
    assert first.returncode == 0 and out.read_bytes() == TEXT
    bad = flip_byte(cache / "toy" / "a.gz", len(packed) // 2)  # after the verification
    fresh = out_dir / "dev.src"
    run = nmtlib("corpus", "copy", "toy", "a.gz", "--cache", str(cache), "--registry", str(reg), "--out", str(fresh))
    assert run.returncode == 2
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in run.stderr, run.stderr
    assert lines[0] == (
        f"nmtlib corpus: error: {cache / 'toy' / 'a.gz'}: sha256 mismatch: expected {sha256(packed)} (registry), "
        f"got {sha256(bad)}; the file changed after it was verified, and nothing was copied to {fresh}: delete it "
        f"or rerun the download (nmtlib download toy --cache {shlex.quote(str(cache))} moves it aside and fetches "
        "it again), then rerun")
    assert not fresh.exists() and not temporaries(tmp_path / "results")
    # an earlier copy is left as it was, not replaced by the changed bytes
    again = nmtlib("corpus", "copy", "toy", "a.gz", "--cache", str(cache), "--registry", str(reg), "--out", str(out))
    assert again.returncode == 2 and out.read_bytes() == TEXT
    assert sorted(p.name for p in out_dir.iterdir()) == ["train.src"]


def test_the_advice_of_the_copy_error_repairs_the_cache(server: Server, tmp_path: Path) -> None:  # noqa: F811
    cache, reg, packed = _toy_cache(tmp_path, server.url)
    (server.root / "a.gz").write_bytes(packed)
    bad = flip_byte(cache / "toy" / "a.gz", 20)
    out = tmp_path / "out"
    run = nmtlib("corpus", "copy", "toy", "a.gz", "--cache", str(cache), "--registry", str(reg), "--out", str(out))
    assert run.returncode == 2 and "rerun the download" in run.stderr
    download = nmtlib("download", "toy", "--cache", str(cache), "--registry", str(reg), "--retries", "0")
    assert download.returncode == 0, download.stderr
    assert (cache / "toy" / "a.gz.corrupt").read_bytes() == bad  # kept for inspection
    run = nmtlib("corpus", "copy", "toy", "a.gz", "--cache", str(cache), "--registry", str(reg), "--out", str(out))
    assert run.returncode == 0 and out.read_bytes() == TEXT


def test_a_file_the_registry_does_not_know_is_refused(tmp_path: Path) -> None:
    cache, reg, _ = _toy_cache(tmp_path)
    (cache / "toy" / "stray.gz").write_bytes(gzip.compress(b"x\n"))
    run = nmtlib("corpus", "copy", "toy", "stray.gz", "--cache", str(cache), "--registry", str(reg),
                 "--out", str(tmp_path / "x"))
    assert run.returncode == 2 and len(run.stderr.strip().splitlines()) == 1
    assert "'stray.gz' is not a file of data set 'toy'" in run.stderr and "its files: a.gz" in run.stderr
    assert not (tmp_path / "x").exists()


def _tar(members: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tf:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def test_an_archive_member_is_checked_against_the_digest_recorded_when_unpacked(tmp_path: Path) -> None:
    members = {"corp/train.en": b"one\ntwo\n", "corp/train.ja": "一\n二\n".encode()}
    archive = _tar(members)
    cache = tmp_path / "cache"
    (cache / "toy").mkdir(parents=True)
    (cache / "toy" / "corp.tar.gz").write_bytes(archive)  # placed by hand: no download
    reg = tmp_path / "registry.json"
    reg.write_text(json.dumps(registry_for({"corp.tar.gz": {
        "url": "http://127.0.0.1:9/corp.tar.gz", "sha256": sha256(archive), "extract_to": "toy/x",
        "members": list(members)}})))
    assert nmtlib("download", "toy", "--cache", str(cache), "--registry", str(reg)).returncode == 0
    out = tmp_path / "train.tgt"
    run = nmtlib("corpus", "copy", "toy", "x/corp/train.ja", "--cache", str(cache), "--registry", str(reg),
                 "--out", str(out))
    assert run.returncode == 0, run.stderr
    assert out.read_bytes() == members["corp/train.ja"]
    member = cache / "toy" / "x" / "corp" / "train.ja"
    bad = flip_byte(member, 0)
    out.unlink()
    run = nmtlib("corpus", "copy", "toy", "x/corp/train.ja", "--cache", str(cache), "--registry", str(reg),
                 "--out", str(out))
    assert run.returncode == 2 and len(run.stderr.strip().splitlines()) == 1
    assert (f"{member}: sha256 mismatch: expected {sha256(members['corp/train.ja'])} (recorded in "
            f"{cache / 'toy' / 'x' / '.nmtlib-extracted'} when unpacked), got {sha256(bad)}") in run.stderr
    assert f"delete {cache / 'toy' / 'x'} and rerun the download" in run.stderr
    assert not out.exists()
    # the advice works: the verified archive is unpacked again
    import shutil

    shutil.rmtree(cache / "toy" / "x")
    assert nmtlib("download", "toy", "--cache", str(cache), "--registry", str(reg)).returncode == 0
    run = nmtlib("corpus", "copy", "toy", "x/corp/train.ja", "--cache", str(cache), "--registry", str(reg),
                 "--out", str(out))
    assert run.returncode == 0 and out.read_bytes() == members["corp/train.ja"]


def test_an_unpacking_without_member_digests_is_unpacked_again(tmp_path: Path) -> None:
    members = {"corp/a": b"a\n"}
    archive = _tar(members)
    cache = tmp_path / "cache"
    (cache / "toy" / "x" / "corp").mkdir(parents=True)
    (cache / "toy" / "corp.tar.gz").write_bytes(archive)
    # what an older nmtlib left: the member and a marker holding the archive's sha256 only
    (cache / "toy" / "x" / "corp" / "a").write_bytes(b"a\n")
    (cache / "toy" / "x" / ".nmtlib-extracted").write_text(sha256(archive) + "\n")
    reg = tmp_path / "registry.json"
    reg.write_text(json.dumps(registry_for({"corp.tar.gz": {
        "url": "http://127.0.0.1:9/c", "sha256": sha256(archive), "extract_to": "toy/x", "members": ["corp/a"]}})))
    run = nmtlib("corpus", "copy", "toy", "x/corp/a", "--cache", str(cache), "--registry", str(reg),
                 "--out", str(tmp_path / "a"))
    assert run.returncode == 2 and "no sha256 recorded for it" in run.stderr and not (tmp_path / "a").exists()
    assert nmtlib("download", "toy", "--cache", str(cache), "--registry", str(reg)).returncode == 0
    marker = (cache / "toy" / "x" / ".nmtlib-extracted").read_text().splitlines()
    assert marker == [sha256(archive), sha256(b"a\n") + "  corp/a"]
    run = nmtlib("corpus", "copy", "toy", "x/corp/a", "--cache", str(cache), "--registry", str(reg),
                 "--out", str(tmp_path / "a"))
    assert run.returncode == 0 and (tmp_path / "a").read_bytes() == b"a\n"


SPLIT_FILES = {("train", "src"): "train.de.gz", ("train", "tgt"): "train.en.gz", ("dev", "src"): "val.de.gz",
               ("dev", "tgt"): "val.en.gz", ("test", "src"): "test_2016_flickr.de.gz",
               ("test", "tgt"): "test_2016_flickr.en.gz"}


@needs_shared
def test_the_workflow_copy_job_refuses_a_cache_file_changed_after_the_download_job(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    (cache / "multi30k").mkdir(parents=True)
    for name in SPLIT_FILES.values():
        (cache / "multi30k" / name).write_bytes((SHARED_DATA / "multi30k" / name).read_bytes())
    config = yaml.safe_load((ROOT / "tests" / "configs" / "tiny.yaml").read_text())
    config["data"] = {"corpus": "multi30k", "splits": {split: {} for split, _ in SPLIT_FILES}}
    for (split, side), name in SPLIT_FILES.items():
        config["data"]["splits"][split][side] = name
    config.update(experiment="integrity", cache_dir=str(cache))
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    work = tmp_path / "work"
    work.mkdir()
    corpus = work / "results" / "integrity" / "corpus"
    rel = "results/integrity/corpus"  # targets relative to the working directory
    run = snakemake(work, f"{rel}/download.json", "--cores", "1", "--configfile", str(path))
    assert run.returncode == 0, (run.stdout + run.stderr)[-3000:]  # the download job verified every file
    changed = cache / "multi30k" / "val.de.gz"
    good = changed.read_bytes()
    bad = flip_byte(changed, len(good) // 2)
    targets = [f"{rel}/{split}.{side}" for split, side in SPLIT_FILES]
    run = snakemake(work, *targets, "--cores", "1", "-p", "--keep-going", "--configfile", str(path))
    log = run.stdout + run.stderr
    assert run.returncode != 0 and "Error in rule copy_split" in log, log[-3000:]
    # every copy is an nmtlib command whose arguments reach it as one word each
    copies = [c for c in shell_commands(log) if c[2:5] == ["nmtlib", "corpus", "copy"]]
    assert sorted(c[6] for c in copies) == sorted(SPLIT_FILES.values())
    assert all(c[c.index("--cache") + 1] == str(cache) for c in copies)
    job_log = (work / "logs" / "integrity" / "copy_split" / "dev.src.log").read_text()
    assert job_log.strip().splitlines() == [
        f"nmtlib corpus: error: {changed}: sha256 mismatch: expected {sha256(good)} (registry), got {sha256(bad)}; "
        f"the file changed after it was verified, and nothing was copied to results/integrity/corpus/dev.src: "
        f"delete it or rerun the download (nmtlib download multi30k --cache {shlex.quote(str(cache))} moves it "
        "aside and fetches it again), then rerun"]
    assert not (corpus / "dev.src").exists() and not temporaries(work / "results")
    for (split, side), name in SPLIT_FILES.items():  # the other copies are the verified files, gunzipped
        if (split, side) != ("dev", "src"):
            assert (corpus / f"{split}.{side}").read_bytes() == gzip.decompress(
                (SHARED_DATA / "multi30k" / name).read_bytes())


# == F2: temporary files of killed writers ========================================================

_HOLD = """
import sys
from contextlib import ExitStack
from nmtlib.atomic import atomic_write
with ExitStack() as stack:
    for path in sys.argv[1:]:
        stack.enter_context(atomic_write(path)).write("partial " * 1000)
    print("READY", flush=True)
    sys.stdin.readline()
"""


def _writer(*paths: Path) -> subprocess.Popen:
    """A real process holding ``atomic_write`` open on ``paths`` (it commits them when its stdin
    gets a line)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen([sys.executable, "-c", _HOLD, *map(str, paths)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True, env=env)
    assert proc.stdout is not None and proc.stdout.readline() == "READY\n"
    return proc


def _killed_writer(*paths: Path) -> list[Path]:
    """SIGKILL a process in the middle of writing ``paths``; returns the temporary files it left."""
    proc = _writer(*paths)
    left = [p for path in paths for p in path.parent.glob(f".{path.name}.{proc.pid}.*.tmp")]
    proc.send_signal(signal.SIGKILL)
    assert proc.wait(timeout=30) == -signal.SIGKILL
    assert len(left) == len(paths) and all(p.exists() for p in left)  # the fault is real
    return left


def test_a_rerun_removes_what_a_killed_writer_left_and_nothing_else(tmp_path: Path) -> None:
    target, other = tmp_path / "train.src", tmp_path / "train.tgt"
    [dead] = _killed_writer(target)
    [dead_other] = _killed_writer(other)
    live = _writer(target)  # a writer of the same file that is still running
    try:
        [live_tmp] = tmp_path.glob(f".train.src.{live.pid}.*.tmp")
        write_lines(target, ["ours"])
        assert target.read_text() == "ours\n"
        assert not dead.exists(), "the dead writer's leftover is removed"
        assert live_tmp.exists(), "a live writer's file is never touched"
        assert dead_other.exists(), "only leftovers of the same target name"
        assert live.stdin is not None
        live.stdin.write("\n")
        live.stdin.close()
        assert live.wait(timeout=30) == 0  # the live writer still commits its file
    finally:
        if live.poll() is None:
            live.kill()
    assert target.read_text() == "partial " * 1000
    assert temporaries(tmp_path) == [dead_other]


def test_nmtlib_prepare_killed_mid_write_then_rerun_leaves_no_temporary_file(tmp_path: Path) -> None:
    src, tgt = tmp_path / "in.de", tmp_path / "in.en"
    lines = 1_000_000
    src.write_text("".join(f"das ist satz {i} .\n" for i in range(lines)), encoding="utf-8")
    tgt.write_text("".join(f"this is sentence {i} .\n" for i in range(lines)), encoding="utf-8")
    out = tmp_path / "data"
    argv = [sys.executable, "-m", "nmtlib", "prepare", "--src", str(src), "--tgt", str(tgt),
            "--src-out", str(out / "test.src"), "--tgt-out", str(out / "test.tgt"), "--src-lang", "de",
            "--tgt-lang", "en", "--src-tokenizer", "none", "--tgt-tokenizer", "none", "--stats-out",
            str(out / "test.stats.json")]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    deadline = time.time() + 60
    while not any(p.stat().st_size > 0 for p in (out.glob(".test.src.*.tmp") if out.is_dir() else [])):
        assert proc.poll() is None and time.time() < deadline, "prepare ended before it could be killed"
        time.sleep(0.01)
    proc.send_signal(signal.SIGKILL)
    assert proc.wait(timeout=30) == -signal.SIGKILL
    left = temporaries(out)
    assert [p.name.split(".")[1:3] for p in left] == [["test", "src"], ["test", "tgt"]]  # the fault is real
    assert not (out / "test.src").exists()
    rerun = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=120)
    assert rerun.returncode == 0, rerun.stderr
    assert temporaries(out) == []
    assert sorted(p.name for p in out.iterdir()) == ["test.src", "test.stats.json", "test.tgt"]
    # tokenizer "none", no filter: the outputs are the inputs
    assert (out / "test.src").read_bytes() == src.read_bytes()
    assert (out / "test.tgt").read_bytes() == tgt.read_bytes()


# == F3: every corrupt copy is kept ===============================================================


def test_two_corruptions_of_a_cached_file_keep_both_copies(server: Server, tmp_path: Path,  # noqa: F811
                                                           caplog: pytest.LogCaptureFixture) -> None:
    good = b"the real corpus\n" * 100
    (server.root / "a.txt").write_bytes(good)
    reg = registry_for({"a.txt": {"url": f"{server.url}/a.txt", "sha256": sha256(good), "size": len(good)}})
    cache = tmp_path / "cache"
    target = cache / "toy" / "a.txt"
    assert fetch("toy", cache, registry=reg, **FAST)["a.txt"].read_bytes() == good
    bad1 = flip_byte(target, 3)
    with caplog.at_level(logging.WARNING, logger="nmtlib"):
        fetch("toy", cache, registry=reg, **FAST)
    assert f"moved to {cache / 'toy' / 'a.txt.corrupt'}, fetching it again" in caplog.text
    bad2 = flip_byte(target, 7)
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="nmtlib"):
        fetch("toy", cache, registry=reg, **FAST)
    assert f"moved to {cache / 'toy' / 'a.txt.corrupt.1'}, fetching it again" in caplog.text
    assert target.read_bytes() == good
    assert (cache / "toy" / "a.txt.corrupt").read_bytes() == bad1  # the first one is not overwritten
    assert (cache / "toy" / "a.txt.corrupt.1").read_bytes() == bad2


def test_two_bad_downloads_keep_both_and_the_message_names_each(server: Server, tmp_path: Path) -> None:  # noqa: F811
    reg = tmp_path / "registry.json"
    reg.write_text(json.dumps(registry_for({"a.txt": {"url": f"{server.url}/a.txt", "sha256": sha256(b"real\n")}})))
    cache = tmp_path / "cache"
    seen = []
    for tampered in (b"tampered once\n", b"tampered twice\n"):
        (server.root / "a.txt").write_bytes(tampered)
        run = nmtlib("download", "toy", "--cache", str(cache), "--registry", str(reg), "--retries", "0")
        assert run.returncode == 2 and "Traceback" not in run.stderr
        seen.append(run.stderr.strip().splitlines()[-1])  # after the "downloading ..." progress line
    part = cache / "toy" / "a.txt.part"
    assert seen[0].endswith(f"moved to {part}.corrupt and not used")
    assert seen[1].endswith(f"moved to {part}.corrupt.1 and not used")
    assert "got " + sha256(b"tampered twice\n") in seen[1]
    assert Path(f"{part}.corrupt").read_bytes() == b"tampered once\n"
    assert Path(f"{part}.corrupt.1").read_bytes() == b"tampered twice\n"
    assert not (cache / "toy" / "a.txt").exists()


# == F4: every output goes through atomic_write ===================================================

#: the tables the fixture experiment has (no variant of it regenerates a row of Luong Table 3)
REPORT_TABLES = ["summary", "findings", "luong_table1", "luong_table4", "luong_table6", "bahdanau_table1",
                 "shu_table1", "shu_table3"]
REPORT_FIGURES = ["learning_curves", "bleu_by_length", "attention_heatmaps", "window_tradeoff", "vision_span"]


def test_every_table_and_figure_of_the_report_is_written_atomically(tmp_path: Path) -> None:
    spec = make_experiment(tmp_path / "results")
    tables, figures = tmp_path / "out" / "tables", tmp_path / "out" / "figures"
    outputs = [tables / f"{t}.{ext}" for t in REPORT_TABLES for ext in ("csv", "md", "html")]
    outputs += [figures / f"{f}.png" for f in REPORT_FIGURES]
    # a report killed while writing every one of its outputs
    for path in outputs:
        path.parent.mkdir(parents=True, exist_ok=True)
    left = _killed_writer(*outputs)
    assert len(left) == len(outputs)
    run_report(spec, tmp_path / "out")
    # each output's writer went through atomic_write, which removed the dead writer's leftover
    assert temporaries(tmp_path / "out") == []
    for path in outputs:
        data = path.read_bytes()
        assert data and not data.startswith(b"partial")
    for name in REPORT_FIGURES:
        assert (figures / f"{name}.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_a_figure_that_fails_to_render_leaves_the_previous_one(tmp_path: Path) -> None:
    import numpy as np

    from nmtlib.report import figures

    path = tmp_path / "attention_heatmaps.png"
    matrices = {"g": {0: np.full((3, 2), 0.5)}}
    figures.attention_heatmaps(matrices, [["a", "b"]], [["x", "y"]], [0], path)
    before = path.read_bytes()
    assert before[:8] == b"\x89PNG\r\n\x1a\n"
    with pytest.raises(ValueError):  # matplotlib cannot parse this title; it fails inside savefig
        figures.attention_heatmaps(matrices, [["a", "b"]], [["x", "y"]], [0], path, title=r"$\frac$")
    assert path.read_bytes() == before and temporaries(tmp_path) == []


def test_publish_writes_its_page_and_figures_atomically(tmp_path: Path) -> None:
    from nmtlib.cli import main

    results = tmp_path / "results" / "unit"
    spec = make_experiment(results)
    run_report(spec, results)
    out = tmp_path / "docs" / "unit.md"
    pngs = [out.parent / "unit" / f"{n}.png" for n in ("learning_curves", "bleu_by_length", "window_tradeoff")]
    pngs[0].parent.mkdir(parents=True)
    left = _killed_writer(out, *pngs)
    assert len(left) == 4
    assert main(["publish", "--results", str(results), "--out", str(out), "--command", "c", "--hardware", "h"]) == 0
    assert temporaries(tmp_path / "docs") == []
    assert out.read_text(encoding="utf-8").startswith("# Reference results: unit")
    assert all(p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" for p in pngs)


def test_an_interrupted_atomic_write_keeps_the_previous_file(tmp_path: Path) -> None:
    path = tmp_path / "scores.json"
    path.write_text("old\n")
    with pytest.raises(RuntimeError), atomic_write(path) as f:
        f.write("new, half written")
        raise RuntimeError("the writer fails")
    assert path.read_text() == "old\n" and temporaries(tmp_path) == []
