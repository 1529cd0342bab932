"""``prepare``: lockstep reading, line-for-line test-set mode, filters, errors, atomic outputs."""

from __future__ import annotations

import argparse
import gzip
import json
from pathlib import Path

import pytest

from nmtlib.errors import NmtlibError
from nmtlib.commands import prepare as prepare_cmd
from nmtlib.atomic import atomic_write
from nmtlib.data.prepare import length_filter, prepare_parallel, read_lines
from nmtlib.data.tokenize import get_tokenizer

from conftest import SHARED

MULTI30K = SHARED / "data" / "multi30k"
STATS_KEYS = {"read", "kept", "dropped_long", "dropped_empty", "dropped_ratio"}


def _write(path: Path, lines: list[str], newline: str = "\n") -> Path:
    path.write_text("".join(line + newline for line in lines), encoding="utf-8")
    return path


def _read(path: Path) -> list[str]:
    return list(read_lines(path))


def _none(lang: str = "xx"):
    return get_tokenizer("none", lang)


def _run_cli(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="nmtlib")
    prepare_cmd.register(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["prepare", *argv])
    return args.func(args)


@pytest.mark.skipif(not MULTI30K.is_dir(), reason="shared data not available")
def test_gzip_test_set_is_line_for_line(tmp_path: Path) -> None:
    src, tgt = MULTI30K / "val.en.gz", MULTI30K / "val.de.gz"
    stats = prepare_parallel(
        src,
        tgt,
        tmp_path / "val.en",
        tmp_path / "val.de",
        src_tokenizer=get_tokenizer("moses", "en"),
        tgt_tokenizer=get_tokenizer("moses", "de"),
        stats_path=tmp_path / "stats.json",
    )
    with gzip.open(src, "rt", encoding="utf-8") as fh:
        raw_en = fh.read().split("\n")[:-1]
    out_en = _read(tmp_path / "val.en")
    assert len(out_en) == len(raw_en) == 1014 == len(_read(tmp_path / "val.de"))
    moses_en = get_tokenizer("moses", "en")
    assert all(o == moses_en.tokenize(r) for o, r in zip(out_en, raw_en, strict=True))
    saved = json.loads((tmp_path / "stats.json").read_text())
    assert set(saved) == STATS_KEYS
    assert (
        saved
        == stats.as_dict()
        == {"read": 1014, "kept": 1014, "dropped_long": 0, "dropped_empty": 0, "dropped_ratio": 0}
    )


def test_no_filters_keeps_empty_lines_in_place(tmp_path: Path) -> None:
    src = _write(tmp_path / "s", ["a b", "", "c"])
    tgt = _write(tmp_path / "t", ["x", "y z", "   "])
    stats = prepare_parallel(
        src, tgt, tmp_path / "os", tmp_path / "ot", src_tokenizer=_none(), tgt_tokenizer=_none()
    )
    assert _read(tmp_path / "os") == ["a b", "", "c"]
    assert _read(tmp_path / "ot") == ["x", "y z", ""]
    assert stats.kept == stats.read == 3


def test_filters_count_each_drop_once(tmp_path: Path) -> None:
    src = _write(tmp_path / "s", ["a b", "", "a b c d e f", "a", "a b c", "x"])
    tgt = _write(tmp_path / "t", ["x y", "y", "x", "w x y z", "", "y"])
    # pair 2: empty src; pair 3: src too long (6 > 5); pair 4: ratio 4 > 3; pair 5: empty tgt
    stats = prepare_parallel(
        src,
        tgt,
        tmp_path / "os",
        tmp_path / "ot",
        src_tokenizer=_none(),
        tgt_tokenizer=_none(),
        drop_empty=True,
        max_len=5,
        max_ratio=3.0,
        stats_path=tmp_path / "st.json",
    )
    assert _read(tmp_path / "os") == ["a b", "x"]
    assert _read(tmp_path / "ot") == ["x y", "y"]
    assert stats.as_dict() == {
        "read": 6,
        "kept": 2,
        "dropped_long": 1,
        "dropped_empty": 2,
        "dropped_ratio": 1,
    }
    assert json.loads((tmp_path / "st.json").read_text()) == stats.as_dict()


def test_length_filter_rules() -> None:
    assert length_filter(0, 3) is None  # no option, no drop
    assert length_filter(0, 3, drop_empty=True) == "empty"
    assert length_filter(0, 30, max_ratio=2.0) is None  # ratio is only defined for non-empty pairs
    assert length_filter(51, 3, max_len=50) == "long"
    assert length_filter(50, 50, max_len=50) is None
    assert length_filter(9, 3, max_ratio=3.0) is None
    assert length_filter(10, 3, max_ratio=3.0) == "ratio"


def test_lowercase_after_tokenizing(tmp_path: Path) -> None:
    src = _write(tmp_path / "s", ["Hello, World!"])
    tgt = _write(tmp_path / "t", ["Hallo, WELT!"])
    prepare_parallel(
        src,
        tgt,
        tmp_path / "os",
        tmp_path / "ot",
        lowercase=True,
        src_tokenizer=get_tokenizer("moses", "en"),
        tgt_tokenizer=get_tokenizer("moses", "de"),
    )
    assert _read(tmp_path / "os") == ["hello , world !"]
    assert _read(tmp_path / "ot") == ["hallo , welt !"]


def test_line_count_mismatch_names_both_files(tmp_path: Path) -> None:
    src = _write(tmp_path / "src.txt", ["a", "b", "c"])
    tgt = _write(tmp_path / "tgt.txt", ["x", "y"])
    out = _write(tmp_path / "out.src", ["previous complete output"])
    with pytest.raises(NmtlibError) as err:
        prepare_parallel(
            src, tgt, out, tmp_path / "out.tgt", src_tokenizer=_none(), tgt_tokenizer=_none()
        )
    msg = str(err.value)
    assert f"{src} has 3 lines" in msg and f"{tgt} has 2 lines" in msg
    # nothing half-written: the old output is untouched, no new file, no temp files
    assert _read(out) == ["previous complete output"]
    assert not (tmp_path / "out.tgt").exists()
    assert not list(tmp_path.glob(".*.tmp"))


def test_invalid_utf8_names_file_and_line(tmp_path: Path) -> None:
    src = _write(tmp_path / "s", ["a", "b", "c"])
    tgt = tmp_path / "t"
    tgt.write_bytes(b"x\ny\n\xff\xfe broken\n")
    with pytest.raises(NmtlibError, match=rf"{tgt}:3: invalid UTF-8"):
        prepare_parallel(
            src, tgt, tmp_path / "os", tmp_path / "ot", src_tokenizer=_none(), tgt_tokenizer=_none()
        )
    assert not (tmp_path / "os").exists()


def test_line_endings_bom_and_unicode_separators(tmp_path: Path) -> None:
    src = tmp_path / "s"
    src.write_bytes("\ufeffa\u2028b\r\nc".encode())  # BOM, LINE SEPARATOR, CRLF, no final newline
    tgt = _write(tmp_path / "t", ["x", "y"])
    prepare_parallel(
        src, tgt, tmp_path / "os", tmp_path / "ot", src_tokenizer=_none(), tgt_tokenizer=_none()
    )
    # U+2028 is whitespace for the tokenizer, but never a line break
    assert _read(tmp_path / "os") == ["a b", "c"]


def test_failure_mid_run_leaves_no_output(tmp_path: Path) -> None:
    class Boom:
        name, lang, escape = "boom", "xx", False

        def tokenize(self, line: str) -> str:
            if line == "bad":
                raise RuntimeError("tokenizer crashed")
            return line

        def detokenize(self, line: str) -> str:
            return line

    src = _write(tmp_path / "s", ["ok", "bad"])
    tgt = _write(tmp_path / "t", ["ok", "ok"])
    with pytest.raises(RuntimeError):
        prepare_parallel(
            src, tgt, tmp_path / "os", tmp_path / "ot", src_tokenizer=Boom(), tgt_tokenizer=_none()
        )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s", "t"]


def test_two_jobs_give_the_same_output(tmp_path: Path) -> None:
    lines = [f'Satz Nummer {i}, mit "Zeichen" & Co.' for i in range(5000)]
    src = _write(tmp_path / "s", lines)
    tgt = _write(tmp_path / "t", [line.upper() for line in lines])
    kw = dict(
        src_tokenizer=get_tokenizer("moses", "de"),
        tgt_tokenizer=get_tokenizer("moses", "de"),
        lowercase=True,
        max_len=8,
    )
    one = prepare_parallel(src, tgt, tmp_path / "1s", tmp_path / "1t", jobs=1, **kw)
    two = prepare_parallel(src, tgt, tmp_path / "2s", tmp_path / "2t", jobs=2, **kw)
    assert one == two
    assert (tmp_path / "1s").read_bytes() == (tmp_path / "2s").read_bytes()
    assert (tmp_path / "1t").read_bytes() == (tmp_path / "2t").read_bytes()


def test_gzip_output_and_atomic_write(tmp_path: Path) -> None:
    with atomic_write(tmp_path / "x.gz") as fh:
        fh.write("ä\n")
    with gzip.open(tmp_path / "x.gz", "rt", encoding="utf-8") as fh:
        assert fh.read() == "ä\n"
    target = _write(tmp_path / "keep", ["old"])
    with pytest.raises(ValueError), atomic_write(target) as fh:
        fh.write("new, half written")
        raise ValueError
    assert _read(target) == ["old"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["keep", "x.gz"]


def test_cli(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = _write(tmp_path / "s", ['He said "yes" & left.', "", "Short"])
    tgt = _write(tmp_path / "t", ['Er sagte "ja" & ging.', "Nur links", "Kurz"])
    common = [
        "--src",
        str(src),
        "--tgt",
        str(tgt),
        "--src-lang",
        "en",
        "--tgt-lang",
        "de",
        "--src-tokenizer",
        "moses",
        "--tgt-tokenizer",
        "moses",
    ]
    assert (
        _run_cli(
            [
                *common,
                "--src-out",
                str(tmp_path / "a.en"),
                "--tgt-out",
                str(tmp_path / "a.de"),
                "--no-escape",
            ]
        )
        == 0
    )
    assert _read(tmp_path / "a.en") == ['He said " yes " & left .', "", "Short"]
    assert (
        _run_cli(
            [
                *common,
                "--src-out",
                str(tmp_path / "b.en"),
                "--tgt-out",
                str(tmp_path / "b.de"),
                "--drop-empty",
                "--lowercase",
                "--max-len",
                "3",
                "--stats-out",
                str(tmp_path / "b.json"),
            ]
        )
        == 0
    )
    assert _read(tmp_path / "b.en") == ["short"]
    assert json.loads((tmp_path / "b.json").read_text()) == {
        "read": 3,
        "kept": 1,
        "dropped_long": 1,
        "dropped_empty": 1,
        "dropped_ratio": 0,
    }
    assert "read 3, kept 1" in capsys.readouterr().err
    with pytest.raises(SystemExit):  # argparse rejects a tokenizer the name table lacks
        _run_cli([*common[:-1], "kytea", "--src-out", "x", "--tgt-out", "y"])


def test_write_lines_and_json_replace_whole_files_only(tmp_path: Path) -> None:
    """The one writer every output uses: a failure mid-write leaves the old file and no temp file."""
    from nmtlib.atomic import write_json, write_lines

    target = tmp_path / "sub" / "out.txt"
    write_lines(target, ["a", "b"])
    assert target.read_text(encoding="utf-8") == "a\nb\n"

    def failing():
        yield "c"
        raise RuntimeError("disk gone")

    with pytest.raises(RuntimeError):
        write_lines(target, failing())
    assert target.read_text(encoding="utf-8") == "a\nb\n"
    write_json(tmp_path / "x.json", {"b": 1, "a": [1, 2]})
    assert (tmp_path / "x.json").read_text() == '{\n  "a": [\n    1,\n    2\n  ],\n  "b": 1\n}\n'
    assert sorted(p.name for p in tmp_path.rglob("*") if p.is_file()) == ["out.txt", "x.json"]
