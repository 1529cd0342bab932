"""Registry, cache and downloader, without internet.

The shared data folder is used as a ready cache (it holds byte-identical upstream files), and
every failure mode of the downloader is exercised against a small HTTP server on 127.0.0.1
that serves a temp folder (with Range support, and switchable faults).
"""

from __future__ import annotations

import argparse
import hashlib
import http.server
import io
import json
import logging
import shutil
import tarfile
import threading
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from nmtlib.errors import NmtlibError
from nmtlib.commands import download as download_cmd
from nmtlib.data.archives import sgm_to_text
from nmtlib.data.cache import TOFU_NAME, resolve_cache_dir
from nmtlib.data.corpora import load_registry
from nmtlib.data.download import fetch, verify

from conftest import SHARED as SHARED_ROOT

SHARED = SHARED_ROOT / "data"
needs_shared = pytest.mark.skipif(
    not (SHARED / "SHA256SUMS").is_file(), reason="shared data not available"
)
pytestmark = pytest.mark.timeout(60)  # a hung socket must fail the test, not the session


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


# --- a tiny local HTTP server -----------------------------------------------------------------


@dataclass
class Faults:
    fail: dict[str, int] = field(default_factory=dict)  # path -> HTTP status, always
    truncate_once: dict[str, int] = field(default_factory=dict)  # path -> bytes sent, then hang up
    requests: list[tuple[str, str | None, int]] = field(default_factory=list)  # path, Range, status


class _Handler(http.server.BaseHTTPRequestHandler):
    timeout = 10  # bounded: a stuck client cannot keep a server thread forever

    def log_message(self, *args: Any) -> None:  # keep test output clean
        pass

    def do_GET(self) -> None:  # the name http.server dispatches to
        root: Path = self.server.root  # type: ignore[attr-defined]
        faults: Faults = self.server.faults  # type: ignore[attr-defined]
        path = self.path.split("?", 1)[0]
        rng = self.headers.get("Range")
        if path in faults.fail:
            faults.requests.append((path, rng, faults.fail[path]))
            self.send_error(faults.fail[path])
            return
        file = root / path.lstrip("/")
        if not file.is_file():
            faults.requests.append((path, rng, 404))
            self.send_error(404)
            return
        data = file.read_bytes()
        start = 0
        if rng and rng.startswith("bytes=") and rng.endswith("-"):
            start = int(rng[len("bytes=") : -1])
            if start >= len(data):
                faults.requests.append((path, rng, 416))
                self.send_response(416)
                self.send_header("Content-Range", f"bytes */{len(data)}")
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
        body = data[start:]
        status = 206 if start else 200
        faults.requests.append((path, rng, status))
        self.send_response(status)
        if start:
            self.send_header("Content-Range", f"bytes {start}-{len(data) - 1}/{len(data)}")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if path in faults.truncate_once:
            self.wfile.write(body[: faults.truncate_once.pop(path)])
            self.close_connection = True  # hang up before Content-Length bytes were sent
            return
        self.wfile.write(body)


@dataclass
class Server:
    url: str
    root: Path
    faults: Faults


@pytest.fixture()
def server(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Server]:
    for var in ("http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("no_proxy", "127.0.0.1,localhost")
    root = tmp_path / "www"
    root.mkdir()
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    httpd.daemon_threads = True
    httpd.root = root  # type: ignore[attr-defined]
    httpd.faults = Faults()  # type: ignore[attr-defined]
    thread = threading.Thread(
        target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
    )
    thread.start()
    try:
        yield Server(f"http://127.0.0.1:{httpd.server_address[1]}", root, httpd.faults)  # type: ignore[attr-defined]
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(5)


def registry_for(
    files: dict[str, dict[str, Any]], dataset: str = "toy", **ds: Any
) -> dict[str, Any]:
    """A one-data-set registry; each file defaults to path toy/<name>, size null."""
    entries = {}
    for name, spec in files.items():
        entry = {"path": f"{dataset}/{name}", "sha256": None, "size": None}
        entry.update(spec)
        entries[name] = entry
    return {"datasets": {dataset: {"description": "test", **ds, "files": entries}}}


FAST = {"retries": 2, "backoff": 0.01, "timeout": 5.0, "progress": False}


# --- the real registry against the shared copy -----------------------------------------------


@needs_shared
def test_fetch_multi30k_from_shared_copy_without_network(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_network(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("fetch tried to use the network")

    monkeypatch.setattr(urllib.request, "urlopen", no_network)
    paths = fetch("multi30k", cache_dir=SHARED)
    expected = {
        f"{split}.{lang}.gz"
        for split in ("train", "val", "test_2016_flickr", "test_2017_flickr", "test_2017_mscoco")
        for lang in ("en", "de")
    }
    assert set(paths) == expected  # test_2018_flickr is registered but optional
    for name, path in paths.items():
        assert path == SHARED / "multi30k" / name and path.is_file()


@needs_shared
@pytest.mark.parametrize("dataset", ["multi30k", "small_parallel_enja", "newstest", "alignments"])
def test_shared_data_sets_verify(dataset: str) -> None:
    paths = verify(dataset, SHARED)
    assert paths and all(p.is_file() for p in paths.values())
    assert not (SHARED / dataset / TOFU_NAME).exists()  # everything pinned: nothing recorded


@needs_shared
def test_registry_pins_every_shared_file() -> None:
    reg = load_registry()
    by_path = {e.path: e for ds in reg.datasets.values() for e in ds.files.values()}
    lines = (SHARED / "SHA256SUMS").read_text().split("\n")
    pinned = [line.split() for line in lines if line.strip()]
    assert len(pinned) == 30
    for digest, rel in pinned:
        entry = by_path[rel]
        assert entry.sha256 == digest, rel
        assert entry.size == (SHARED / rel).stat().st_size, rel


def test_packaged_registry_is_complete() -> None:
    reg = load_registry()
    assert {
        "multi30k",
        "small_parallel_enja",
        "newstest",
        "alignments",
        "wmt14_stanford",
        "wmt15",
        "iwslt15_en_vi",
        "kftt",
        "aspec",
        "rwth_deen_alignment",
    } <= set(reg.datasets)
    m30k = reg.dataset("multi30k").files
    assert m30k["test_2018_flickr.en.gz"].sha256 == (
        "ef4f4844037d4c5dea75c9a8ed5fd78905967a26f67c255e230cc9780032654d"
    )
    assert m30k["test_2018_flickr.de.gz"].optional and m30k["test_2018_flickr.de.gz"].size is None
    assert all(e.manual for e in reg.dataset("aspec").files.values())
    assert reg.dataset("rwth_deen_alignment").manual
    for ds in reg.datasets.values():
        for e in ds.files.values():
            assert e.manual or (e.url or "").startswith(("https://", "http://"))
    with pytest.raises(NmtlibError, match=r"unknown data set 'nope'.*valid names: alignments"):
        reg.dataset("nope")


@pytest.mark.parametrize(
    "spec, message",
    [
        ({"url": "http://x/a", "sha256": "abc"}, r"toy\.files\.a\.sha256: expected 64"),
        ({"url": "http://x/a", "colour": 1}, r"unknown key\(s\) colour"),
        ({"url": "http://x/a", "path": "other/a"}, r"must lie under 'toy/'"),
        ({"url": "http://x/a", "path": "toy/../../etc/passwd"}, r"normalized relative POSIX path"),
        ({}, r"missing key 'url'"),
        ({"url": "ftp://x/a"}, r"expected an http\(s\) URL"),
        ({"url": "http://x/a", "members": ["m"]}, r"only valid together with extract_to"),
    ],
)
def test_registry_validation_names_the_key(spec: dict[str, Any], message: str) -> None:
    with pytest.raises(NmtlibError, match=message):
        load_registry(registry_for({"a": spec}))


def test_registry_validation_names_the_data_set_key() -> None:
    with pytest.raises(NmtlibError, match=r"datasets\.toy: unknown key\(s\) licens; valid: description, files"):
        load_registry(registry_for({"a": {"url": "http://x/a"}}, licens="CC"))
    with pytest.raises(NmtlibError, match=r"datasets\.toy: must be a mapping"):
        load_registry({"datasets": {"toy": ["a"]}})
    with pytest.raises(NmtlibError, match=r"toy\.files\.a: must be a mapping"):
        load_registry({"datasets": {"toy": {"files": {"a": "http://x/a"}}}})


def test_registry_file_errors_name_file_and_line(tmp_path: Path) -> None:
    bad = tmp_path / "reg.yaml"
    bad.write_text("datasets:\n  toy:\n    files: [unclosed\n")
    with pytest.raises(NmtlibError, match=rf"{bad}:\d+: invalid YAML"):
        load_registry(bad)


def test_cache_dir_resolution(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("NMTLIB_CACHE", str(tmp_path / "env"))
    assert resolve_cache_dir(tmp_path / "arg") == tmp_path / "arg"
    assert resolve_cache_dir() == tmp_path / "env"
    monkeypatch.delenv("NMTLIB_CACHE")
    assert resolve_cache_dir() == Path.home() / ".cache" / "nmtlib"


# --- downloads against the local server --------------------------------------------------------


def test_download_then_cache_hit(
    server: Server, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = b"hello corpus\n" * 1000
    (server.root / "a.txt").write_bytes(data)
    reg = registry_for(
        {"a.txt": {"url": f"{server.url}/a.txt", "sha256": sha256(data), "size": len(data)}}
    )
    cache = tmp_path / "cache"
    paths = fetch("toy", cache, registry=reg, **FAST)
    assert paths == {"a.txt": cache / "toy" / "a.txt"}
    assert paths["a.txt"].read_bytes() == data
    assert not list((cache / "toy").glob("*.part"))
    # second use: verified from the cache, no request at all
    monkeypatch.setattr(urllib.request, "urlopen", lambda *a, **k: pytest.fail("network used"))
    assert fetch("toy", cache, registry=reg, **FAST) == paths


def test_interrupted_download_resumes_with_range(server: Server, tmp_path: Path) -> None:
    data = bytes(range(256)) * 4000  # ~1 MB
    (server.root / "big.bin").write_bytes(data)
    server.faults.truncate_once["/big.bin"] = 300_000
    reg = registry_for(
        {"big.bin": {"url": f"{server.url}/big.bin", "sha256": sha256(data), "size": len(data)}}
    )
    paths = fetch("toy", tmp_path / "cache", registry=reg, **FAST)
    assert paths["big.bin"].read_bytes() == data
    first, second = server.faults.requests
    assert first == ("/big.bin", None, 200)
    assert second == ("/big.bin", "bytes=300000-", 206)  # resumed, not restarted


def test_leftover_part_file_is_resumed(server: Server, tmp_path: Path) -> None:
    data = b"0123456789" * 5000
    (server.root / "f").write_bytes(data)
    cache = tmp_path / "cache"
    (cache / "toy").mkdir(parents=True)
    (cache / "toy" / "f.part").write_bytes(data[:12345])  # an earlier, interrupted run
    reg = registry_for({"f": {"url": f"{server.url}/f", "sha256": sha256(data)}})
    assert fetch("toy", cache, registry=reg, **FAST)["f"].read_bytes() == data
    assert server.faults.requests == [("/f", "bytes=12345-", 206)]
    # a .part that is already complete: the server answers 416 and the file is still verified
    (cache / "toy" / "f").rename(cache / "toy" / "f.part")
    assert fetch("toy", cache, registry=reg, **FAST)["f"].read_bytes() == data
    assert server.faults.requests[-1] == ("/f", f"bytes={len(data)}-", 416)


def test_wrong_checksum_is_reported_and_never_returned(server: Server, tmp_path: Path) -> None:
    tampered = b"tampered upstream\n"
    (server.root / "a.txt").write_bytes(tampered)
    expected = sha256(b"the real thing\n")
    reg = registry_for({"a.txt": {"url": f"{server.url}/a.txt", "sha256": expected}})
    cache = tmp_path / "cache"
    with pytest.raises(NmtlibError) as err:
        fetch("toy", cache, registry=reg, **FAST)
    msg = str(err.value)
    assert f"expected {expected}" in msg and f"got {sha256(tampered)}" in msg
    assert "a.txt" in msg and f"{server.url}/a.txt" in msg
    assert not (cache / "toy" / "a.txt").exists()
    assert (cache / "toy" / "a.txt.part.corrupt").read_bytes() == tampered


def test_size_mismatch_is_a_verification_failure(server: Server, tmp_path: Path) -> None:
    (server.root / "a").write_bytes(b"abc")
    reg = registry_for({"a": {"url": f"{server.url}/a", "size": 4}})
    with pytest.raises(NmtlibError, match="size mismatch: expected 4 bytes"):
        fetch("toy", tmp_path / "cache", registry=reg, **FAST)


def test_http_500_is_retried_then_fails_clearly(server: Server, tmp_path: Path) -> None:
    server.faults.fail["/a"] = 500
    reg = registry_for({"a": {"url": f"{server.url}/a"}})
    cache = tmp_path / "cache"
    with pytest.raises(NmtlibError) as err:
        fetch("toy", cache, registry=reg, **FAST)
    msg = str(err.value)
    assert "HTTP 500" in msg and "after 3 attempts" in msg and f"{server.url}/a" in msg
    assert str(cache / "toy" / "a") in msg
    assert [r[2] for r in server.faults.requests] == [500, 500, 500]


def test_http_404_is_not_retried(server: Server, tmp_path: Path) -> None:
    reg = registry_for({"a": {"url": f"{server.url}/missing"}})
    with pytest.raises(NmtlibError, match="HTTP 404"):
        fetch("toy", tmp_path / "cache", registry=reg, **FAST)
    assert len(server.faults.requests) == 1


def test_unreachable_host_names_url_and_cache_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("no_proxy", "127.0.0.1")
    url = "http://127.0.0.1:9/corpus.txt"  # the discard port: nothing listens there
    reg = registry_for({"corpus.txt": {"url": url, "sha256": sha256(b"x")}})
    cache = tmp_path / "cache"
    with pytest.raises(NmtlibError) as err:
        fetch("toy", cache, registry=reg, retries=1, backoff=0.01, timeout=5.0, progress=False)
    msg = str(err.value)
    assert url in msg and "offline" in msg
    assert (
        f"place the file by hand at {cache / 'toy' / 'corpus.txt'} (sha256 {sha256(b'x')})" in msg
    )
    # the other way out on an offline machine that has the data: every way of pointing the cache
    assert "$NMTLIB_CACHE" in msg and "nmtlib download --cache" in msg and "cache_dir=" in msg


@needs_shared
def test_corrupted_cache_file_is_moved_aside_and_refetched(
    server: Server, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    good = (SHARED / "multi30k" / "val.en.gz").read_bytes()
    (server.root / "val.en.gz").write_bytes(good)
    entry = load_registry().dataset("multi30k").files["val.en.gz"]
    reg = registry_for(
        {
            "val.en.gz": {
                "path": entry.path,
                "url": f"{server.url}/val.en.gz",
                "sha256": entry.sha256,
                "size": entry.size,
            }
        },
        dataset="multi30k",
    )
    cache = tmp_path / "cache"
    (cache / "multi30k").mkdir(parents=True)
    bad = bytearray(good)
    bad[100] ^= 0xFF  # one flipped byte
    (cache / "multi30k" / "val.en.gz").write_bytes(bytes(bad))
    with caplog.at_level(logging.WARNING, logger="nmtlib"):
        paths = fetch("multi30k", cache, registry=reg, **FAST)
    assert paths["val.en.gz"].read_bytes() == good
    assert (cache / "multi30k" / "val.en.gz.corrupt").read_bytes() == bytes(bad)
    report = caplog.text
    assert "val.en.gz" in report and f"expected {entry.sha256}" in report
    assert f"got {sha256(bytes(bad))}" in report
    assert [r[2] for r in server.faults.requests] == [200]


def test_verify_reports_without_fixing(tmp_path: Path) -> None:
    reg = registry_for(
        {
            "a": {"url": "http://127.0.0.1:9/a", "sha256": sha256(b"a")},
            "b": {"url": "http://127.0.0.1:9/b", "sha256": sha256(b"b")},
        }
    )
    cache = tmp_path / "cache"
    (cache / "toy").mkdir(parents=True)
    (cache / "toy" / "a").write_bytes(b"not a")
    with pytest.raises(NmtlibError) as err:
        verify("toy", cache, registry=reg)
    msg = str(err.value)
    assert "sha256 mismatch" in msg and "b: missing" in msg
    assert (cache / "toy" / "a").read_bytes() == b"not a"  # nothing moved by verify


def test_trust_on_first_use(server: Server, tmp_path: Path) -> None:
    first = sha256(b"first version\n")
    (server.root / "u.txt").write_bytes(b"first version\n")
    reg = registry_for({"u.txt": {"url": f"{server.url}/u.txt"}})  # sha256: null
    cache = tmp_path / "cache"
    fetch("toy", cache, registry=reg, **FAST)
    tofu = (cache / "toy" / TOFU_NAME).read_text()
    assert f"{first}  u.txt" in tofu
    # later the cached copy gets damaged and upstream has changed: both disagree with the record
    (cache / "toy" / "u.txt").write_bytes(b"damaged\n")
    (server.root / "u.txt").write_bytes(b"second version\n")
    with pytest.raises(NmtlibError, match=f"expected {first} \\(recorded on first use"):
        fetch("toy", cache, registry=reg, **FAST)
    assert not (cache / "toy" / "u.txt").exists()
    assert (
        verify(
            "toy",
            cache,
            registry=registry_for({"u.txt": {"url": f"{server.url}/u.txt", "optional": True}}),
        )
        == {}
    )


def test_manual_entries_say_where_to_get_and_put_files(tmp_path: Path) -> None:
    digest = sha256(b"licensed\n")
    reg = registry_for(
        {"a.txt": {"sha256": digest}, "b.txt": {}},
        manual=True,
        instructions="Apply at https://example.org and copy the files to <cache>/toy/.",
    )
    cache = tmp_path / "cache"
    with pytest.raises(NmtlibError) as err:
        fetch("toy", cache, registry=reg)
    msg = str(err.value)
    assert "https://example.org" in msg and f"{cache}/toy/." in msg
    assert (
        f"{cache / 'toy' / 'a.txt'} (sha256 {digest})" in msg
        and str(cache / "toy" / "b.txt") in msg
    )
    assert not cache.exists()  # nothing created while reporting
    (cache / "toy").mkdir(parents=True)
    (cache / "toy" / "a.txt").write_bytes(b"licensed\n")
    (cache / "toy" / "b.txt").write_bytes(b"also licensed\n")
    assert set(fetch("toy", cache, registry=reg)) == {"a.txt", "b.txt"}
    (cache / "toy" / "a.txt").write_bytes(b"wrong\n")
    with pytest.raises(
        NmtlibError, match="licence-restricted"
    ):  # bad copy moved aside, not re-downloadable
        fetch("toy", cache, registry=reg)


def test_wmt_sgm_entries_are_converted_verbatim(server: Server, tmp_path: Path) -> None:
    sgm = (
        '<refset trglang="de" setid="newstest2014" srclang="any">\n'
        '<doc sysid="ref" docid="1" genre="news" origlang="en">\n'
        '<seg id="1">Standard & Poor\'s  sagt "ja".</seg>\n'
        '<seg id="2"></seg>\n'
        "</doc>\n</refset>\n"
    )
    text = 'Standard & Poor\'s  sagt "ja".\n\n'
    (server.root / "x.sgm").write_text(sgm, encoding="utf-8")
    reg = registry_for(
        {
            "news.de": {
                "url": f"{server.url}/x.sgm",
                "convert": "wmt-sgm",
                "sha256": sha256(text.encode()),
            }
        }
    )
    paths = fetch("toy", tmp_path / "cache", registry=reg, **FAST)
    assert paths["news.de"].read_text(encoding="utf-8") == text
    assert sorted(
        p.name for p in (tmp_path / "cache" / "toy").iterdir() if not p.name.startswith(".")
    ) == ["news.de"]
    assert sgm_to_text(server.root / "x.sgm", tmp_path / "t.txt") == 2


def _tar(entries: list[tuple[str, bytes | None, str | None]]) -> bytes:
    """A .tar.gz from (name, data, symlink target) triples."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tf:
        for name, data, link in entries:
            info = tarfile.TarInfo(name)
            if link is not None:
                info.type, info.linkname = tarfile.SYMTYPE, link
                tf.addfile(info)
            else:
                assert data is not None
                info.size = len(data)
                tf.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def test_archive_is_extracted_and_members_returned(server: Server, tmp_path: Path) -> None:
    blob = _tar(
        [
            ("kit/data/train.en", b"hello\n", None),
            ("kit/data/train.ja", b"konnichiwa\n", None),
            ("kit/latest", None, "data/train.en"),
        ]
    )
    (server.root / "kit.tar.gz").write_bytes(blob)
    reg = registry_for(
        {
            "kit.tar.gz": {
                "url": f"{server.url}/kit.tar.gz",
                "sha256": sha256(blob),
                "extract_to": "toy/extracted",
                "members": ["kit/data/train.en", "kit/data/train.ja"],
            }
        }
    )
    cache = tmp_path / "cache"
    paths = fetch("toy", cache, registry=reg, **FAST)
    assert paths["kit/data/train.en"] == cache / "toy" / "extracted" / "kit" / "data" / "train.en"
    assert paths["kit/data/train.ja"].read_bytes() == b"konnichiwa\n"
    assert verify("toy", cache, registry=reg) == paths
    # a later run reuses the unpacking (marker matches the archive's sha256)
    (paths["kit/data/train.en"]).write_bytes(b"edited\n")
    assert (
        fetch("toy", cache, registry=reg, **FAST)["kit/data/train.en"].read_bytes() == b"edited\n"
    )


@pytest.mark.parametrize(
    "entries, why",
    [
        ([("ok.txt", b"fine", None), ("../evil", b"pwned", None)], "absolute path or '..'"),
        ([("/tmp/evil-abs", b"pwned", None)], "absolute path or '..'"),
        ([("dir/link", None, "../../evil")], "outside the archive"),
        ([("link", None, "/etc/passwd")], "outside the archive"),
    ],
    ids=["dotdot", "absolute", "relative-link-out", "absolute-link"],
)
def test_unsafe_archives_are_rejected(
    server: Server, tmp_path: Path, entries: list[Any], why: str
) -> None:
    blob = _tar(entries)
    (server.root / "evil.tar.gz").write_bytes(blob)
    reg = registry_for(
        {
            "evil.tar.gz": {
                "url": f"{server.url}/evil.tar.gz",
                "sha256": sha256(blob),
                "extract_to": "toy/extracted",
            }
        }
    )
    cache = tmp_path / "deep" / "cache"
    with pytest.raises(NmtlibError, match=f"unsafe archive member .*{why}"):
        fetch("toy", cache, registry=reg, **FAST)
    assert not (tmp_path / "deep" / "evil").exists() and not (cache / "evil").exists()
    assert not (cache / "toy" / "extracted").exists()
    assert not [p for p in (cache / "toy").iterdir() if p.name.endswith(".tmp")]


def test_unknown_names_list_the_valid_ones(tmp_path: Path) -> None:
    reg = registry_for({"a": {"url": "http://127.0.0.1:9/a"}})
    with pytest.raises(NmtlibError, match=r"unknown data set 'nope'.*valid names: toy"):
        fetch("nope", tmp_path, registry=reg)
    with pytest.raises(NmtlibError, match="no file\\(s\\) 'b'; valid: a"):
        fetch("toy", tmp_path, files=["b"], registry=reg)


def _cli(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="nmtlib")
    download_cmd.register(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["download", *argv])
    return args.func(args)


def test_cli_prints_json_on_last_line(
    server: Server, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (server.root / "a").write_bytes(b"A")
    reg_file = tmp_path / "reg.json"  # JSON is YAML: the --registry option takes either
    reg_file.write_text(
        json.dumps(registry_for({"a": {"url": f"{server.url}/a", "sha256": sha256(b"A")}}))
    )
    cache = tmp_path / "cache"
    assert _cli(["toy", "--cache", str(cache), "--registry", str(reg_file), "--retries", "0"]) == 0
    out = capsys.readouterr().out.strip().split("\n")
    assert json.loads(out[-1]) == {"a": str(cache / "toy" / "a")}
    assert _cli(["toy", "--cache", str(cache), "--registry", str(reg_file), "--verify-only"]) == 0
    assert json.loads(capsys.readouterr().out.strip().split("\n")[-1]) == {
        "a": str(cache / "toy" / "a")
    }


@needs_shared
def test_cli_verify_only_on_shared_copy(capsys: pytest.CaptureFixture[str]) -> None:
    assert _cli(["newstest", "--cache", str(SHARED), "--verify-only"]) == 0
    paths = json.loads(capsys.readouterr().out.strip().split("\n")[-1])
    assert paths["newstest2014.de"] == str(SHARED / "newstest" / "newstest2014.de")


def test_copy_of_shared_file_round_trip(tmp_path: Path) -> None:
    # the cache is just a folder: files placed by hand with the right checksum are accepted
    if not (SHARED / "alignments" / "enfr.gold").is_file():
        pytest.skip("shared data not available")
    cache = tmp_path / "cache"
    (cache / "alignments").mkdir(parents=True)
    shutil.copy(SHARED / "alignments" / "enfr.gold", cache / "alignments" / "enfr.gold")
    assert fetch("alignments", cache, files=["enfr.gold"])["enfr.gold"].is_file()
    assert TOFU_NAME not in {p.name for p in (cache / "alignments").iterdir()}
