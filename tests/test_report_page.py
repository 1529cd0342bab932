"""The HTML report as a reader sees it, in a real headless Chromium (issue #29, item 1).

The demo (``config/config.yaml``: every variant, the ensemble, the τ sweeps and the fine-tuning
stage) is run once at test size (``overrides/smoke.yaml``: 12 updates per model, beam 2;
``tests/configs/demo-smoke.yaml``: a smaller synthetic pair; about 40 s on 2 cores) through the
real rules, and ``snakemake --report`` builds its report. Chromium loads ``report.html`` (1400 × 900
pixels) and dumps the page after its scripts have run: the landing page must show the papers'
claims as a table that reads first (the verdict in its first five columns and on screen, the
tested claims first, the untested ones folded by reason) and the summary's numbers (compared cell
by cell with ``tables/summary.csv``). To open an entry as a reader does, a copy of
the report gets a script that clicks the menu and an entry's buttons (the URL's fragment names the
clicks); the dumped page then holds the table in the main panel, or the entry's info panel. No
job-parameter dump (the JSON spec ``nmtlib report`` gets) may appear anywhere.

Skips, saying so, only when no Chromium binary is found (CI installs ``chromium`` with apt).
"""

from __future__ import annotations

import base64
import csv
import html
import json
import math
import re
import shutil
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import pytest
import yaml

from conftest import ROOT

#: the demo's config, then the overrides that make it test-sized (merged key by key, in order)
DEMO_SMOKE = (ROOT / "config" / "config.yaml", ROOT / "config" / "experiments" / "overrides" / "smoke.yaml",
              ROOT / "tests" / "configs" / "demo-smoke.yaml")
RES = "results/demo-smoke"
BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")

pytestmark = pytest.mark.slow


def _browser() -> str | None:
    for name in BROWSERS:
        if path := shutil.which(name):
            return path
    return "/usr/bin/chromium" if Path("/usr/bin/chromium").exists() else None


CHROMIUM = _browser()
if CHROMIUM is None:
    pytest.skip(f"no Chromium binary found (looked for {', '.join(BROWSERS)} on PATH): the report page tests "
                "need a real headless browser; install chromium (apt-get install chromium)", allow_module_level=True)


def snakemake(workdir: Path, *args: str, extra: tuple[Path, ...] = (), timeout: int = 900) -> subprocess.CompletedProcess:
    """``snakemake`` on the test-sized demo, and ``extra`` config files after it."""
    cmd = [sys.executable, "-m", "snakemake", "-s", str(ROOT / "Snakefile"), "--directory", str(workdir),
           "--configfile", *map(str, DEMO_SMOKE + extra), *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)


@pytest.fixture(scope="module")
def work(tmp_path_factory) -> Path:
    """The test-sized demo run to its end, and its report."""
    work = tmp_path_factory.mktemp("report-page")
    run = snakemake(work, "--cores", "2")
    assert run.returncode == 0, run.stderr[-4000:]
    run = snakemake(work, "--report", "report.html", timeout=300)
    assert run.returncode == 0, run.stderr[-4000:]
    return work


def chromium(url: str, profile: Path, *flags: str) -> str:
    """What headless Chromium prints for ``url`` once its scripts have run (virtual time)."""
    cmd = [CHROMIUM, "--headless", "--disable-gpu", "--no-sandbox", "--disable-dev-shm-usage",
           f"--user-data-dir={profile}", "--virtual-time-budget=15000", "--window-size=1400,900", *flags, url]
    run = subprocess.run(cmd, capture_output=True, text=True, timeout=180)
    assert run.returncode == 0, run.stderr[-3000:]
    return run.stdout


#: clicks as a reader makes them, from the URL fragment: `menu:TEXT` clicks the menu entry (or any
#: link) whose text is TEXT, `eye:TEXT` / `info:TEXT` the view / info button of the listed entry
#: whose row contains TEXT; steps are separated by `|`. The page's <body> gets `data-driven`
#: ("done" or the step that failed).
DRIVER = """<script>
window.addEventListener("load", function () {
  var steps = decodeURIComponent(location.hash.slice(1)).split("|").filter(Boolean);
  function links(root) { return Array.prototype.slice.call(root.querySelectorAll("a")); }
  function step(i) {
    if (i >= steps.length) { document.body.setAttribute("data-driven", "done"); return; }
    var kind = steps[i].split(":")[0], text = steps[i].slice(kind.length + 1), target = null;
    if (kind === "menu") {
      target = links(document).find(function (a) { return a.textContent.trim() === text; });
    } else {
      var row = Array.prototype.slice.call(document.querySelectorAll("nav tr")).find(function (r) {
        return r.textContent.indexOf(text) >= 0 && r.querySelector("a"); });
      if (row) { target = links(row)[kind === "eye" ? 0 : 1]; }
    }
    if (!target) { document.body.setAttribute("data-driven", "failed at " + steps[i]); return; }
    target.click();
    setTimeout(function () { step(i + 1); }, 400);
  }
  setTimeout(function () { step(0); }, 400);
});
</script>"""


def driven_copy(report: Path) -> Path:
    page = report.read_text(encoding="utf-8")
    end = page.rindex("</body>")
    copy = report.with_name("report.driven.html")
    copy.write_text(page[:end] + DRIVER + page[end:], encoding="utf-8")
    return copy


def open_report(work: Path, tmp_path: Path, clicks: str = "") -> str:
    """The report's DOM after ``clicks`` (none: the landing page)."""
    if not clicks:
        return chromium((work / "report.html").as_uri(), tmp_path / "profile", "--dump-dom")
    dom = chromium(driven_copy(work / "report.html").as_uri() + "#" + clicks, tmp_path / "profile", "--dump-dom")
    assert 'data-driven="done"' in dom, re.findall(r'data-driven="[^"]*"', dom) or "the driver did not run"
    return dom


class _Tables(HTMLParser):
    """Every <table> of a page as rows of cell texts, with the id of the element it is in."""

    def __init__(self) -> None:
        super().__init__()
        self.tables: list[tuple[str, list[list[str]]]] = []
        self._ids: list[str] = []
        self._cell: list[str] | None = None

    def handle_starttag(self, tag, attrs):
        ident = dict(attrs).get("id")
        if ident:
            self._ids.append(ident)
        if tag == "table":
            self.tables.append((self._ids[-1] if self._ids else "", []))
        elif tag == "tr" and self.tables:
            self.tables[-1][1].append([])
        elif tag in ("td", "th"):
            self._cell = []

    def handle_endtag(self, tag):
        if tag in ("td", "th") and self._cell is not None and self.tables and self.tables[-1][1]:
            self.tables[-1][1][-1].append(" ".join("".join(self._cell).split()))
            self._cell = None

    def handle_data(self, data):
        if self._cell is not None:
            self._cell.append(data)


def tables_in(dom: str) -> dict[str, list[list[str]]]:
    parser = _Tables()
    parser.feed(dom)
    return {ident: rows for ident, rows in parser.tables}


def text_of(dom: str) -> str:
    body = re.sub(r"<(script|style)\b.*?</\1>", " ", dom, flags=re.S | re.I)
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", body)).split())


def _number(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


def shown_equals(cell: str, value: str) -> bool:
    """Whether a cell the page shows is the CSV's ``value``: a number rounded to the cell's own
    decimals (the mean of a "mean ± sd" cell), an empty value as the em dash, text as is."""
    cell = cell.split(" ± ")[0]
    if value == "":
        return cell in ("—", "")
    number, shown = _number(value), _number(cell)
    if number is None or value in ("True", "False"):
        return cell == value
    if shown is None:
        return False
    decimals = len(cell.split(".")[1]) if "." in cell else 0
    return math.isclose(shown, number, abs_tol=0.5 * 10 ** -decimals + 1e-9)


def test_landing_page_shows_the_summary_numbers(work, tmp_path):
    dom = open_report(work, tmp_path)
    with open(work / RES / "tables" / "summary.csv", newline="", encoding="utf-8") as f:
        summary = list(csv.DictReader(f))
    assert summary, "summary.csv has no row"
    tables = tables_in(dom)
    assert "nmt-summary" in tables, f"no summary table on the landing page (tables: {list(tables)})"
    header, *rows = tables["nmt-summary"]
    assert [r[0] for r in rows] == [r["variant"] for r in summary]
    numbers = 0
    for csv_row, shown in zip(summary, rows):
        cells = dict(zip(header, shown))
        for column, value in csv_row.items():
            if column in cells:
                assert shown_equals(cells[column], value), (csv_row["variant"], column, cells[column], value)
                numbers += _number(value) is not None and value not in ("True", "False")
    assert numbers >= 3 * len(summary), "too few numbers of summary.csv on the page"
    # every metric the summary has is on screen, with its trained models' numbers (a standard
    # deviation over seeds in its mean's cell, "mean ± sd")
    assert {c for c in summary[0] if any(_number(r[c]) is not None for r in summary)
            and not c.endswith("_sd")} <= set(header)


def test_landing_page_shows_the_claims_first(work, tmp_path):
    dom = open_report(work, tmp_path)
    with open(work / RES / "tables" / "findings.csv", newline="", encoding="utf-8") as f:
        findings = list(csv.DictReader(f))
    tables = tables_in(dom)
    assert list(tables)[:2] == ["nmt-findings", "nmt-summary"], list(tables)
    header, *rows = tables["nmt-findings"]
    # headers in words, the claim, the paper's difference, ours with its interval and the verdict first
    assert header[:6] == ["Claim", "Paper: A − B", "Ours: A − B [95% interval]", "Seeds (A / B)", "Verdict",
                          "Rows compared (A vs B)"]
    tested = [r for r in findings if r["verdict"] != "not tested"]
    shown = [dict(zip(header, r)) for r in rows]
    assert [r["Claim"] for r in shown[:len(tested)]] == [r["claim"] for r in tested]
    assert [r["Verdict"] for r in shown[:len(tested)]] == [r["verdict"] for r in tested]
    for csv_row, cell in zip(tested, shown):
        # how many models each side is the mean of, as the CSV counts them
        assert cell["Seeds (A / B)"] == f"{int(float(csv_row['runs_a']))} / {int(float(csv_row['runs_b']))}"
        # ours: the difference and its interval, as the CSV has them
        diff, low, high = (float(x) for x in re.findall(r"[+-]\d+\.\d+", cell["Ours: A − B [95% interval]"]))
        for shown_value, value in ((diff, csv_row["ours_diff"]), (low, csv_row["ci_low"]), (high, csv_row["ci_high"])):
            assert shown_value == pytest.approx(float(value), abs=0.005 + 1e-9)
    # the untested claims: one line per reason, the claims it covers counted
    untested = [r for r in findings if r["verdict"] == "not tested"]
    folded = shown[len(tested):]
    reasons = list(dict.fromkeys(r["reason"] for r in untested))
    assert [r["Rows compared (A vs B)"] for r in folded] == reasons
    assert [r["Verdict"] for r in folded] == ["not tested"] * len(reasons)
    for reason, line in zip(reasons, folded):
        n = sum(r["reason"] == reason for r in untested)
        assert line["Claim"].startswith(f"{n} claim"), line
    # the landing page's text says what it is, before any click
    text = text_of(dom)
    assert "Attention-based NMT benchmark, experiment demo-smoke" in text
    assert "Summary of experiment demo-smoke" in text


#: measures, once the report has drawn its landing page, where the first verdict cell of the claims
#: table is: the <body> gets `data-verdict` = "column right innerWidth visible" (visible: the cell is
#: what the browser shows at its centre, not scrolled away or covered)
MEASURE = """<script>
window.addEventListener("load", function () {
  setTimeout(function () {
    var table = document.querySelector("table.nmt-claims");
    if (!table) { document.body.setAttribute("data-verdict", "no claims table"); return; }
    var heads = Array.prototype.map.call(table.querySelectorAll("thead th"), function (th) {
      return th.textContent.trim(); });
    var column = heads.indexOf("Verdict");
    var cell = table.querySelector("tbody tr").children[column];
    cell.scrollIntoView({block: "center", inline: "nearest"});
    var box = cell.getBoundingClientRect();
    var hit = document.elementFromPoint(box.left + box.width / 2, box.top + box.height / 2);
    var visible = hit !== null && (hit === cell || cell.contains(hit));
    document.body.setAttribute("data-verdict", [column, Math.round(box.right), window.innerWidth, visible].join(" "));
  }, 1500);
});
</script>"""


def test_the_verdict_is_on_screen_at_1400_pixels(work, tmp_path):
    page = (work / "report.html").read_text(encoding="utf-8")
    end = page.rindex("</body>")
    copy = work / "report.measured.html"
    copy.write_text(page[:end] + MEASURE + page[end:], encoding="utf-8")
    dom = chromium(copy.as_uri(), tmp_path / "profile", "--dump-dom")
    found = re.search(r'data-verdict="([^"]*)"', dom)
    assert found, "the measuring script did not run"
    column, right, width, visible = found.group(1).split()
    assert int(column) < 5 and width == "1400"
    assert int(right) <= 1400 and visible == "true", found.group(1)


def test_the_demos_findings_have_an_interval_per_tested_claim(work):
    with open(work / RES / "tables" / "findings.csv", newline="", encoding="utf-8") as f:
        findings = list(csv.DictReader(f))
    tested = [r for r in findings if r["verdict"] != "not tested"]
    assert tested
    for r in tested:
        assert r["ci_low"] and r["ci_high"] and r["p_value"], r["claim"]
        assert float(r["ci_low"]) <= float(r["ci_high"]) and 0 < float(r["p_value"]) <= 1
        # the demo at test size is a smoke run (12 updates): no verdict, in every table
        assert r["verdict"] == "no verdict: smoke run"
    for table in ("summary", "findings", "luong_table1"):
        assert "No verdict: smoke run" in (work / RES / "tables" / f"{table}.md").read_text(encoding="utf-8")


def test_no_job_parameter_dump(work, tmp_path):
    raw = (work / "report.html").read_text(encoding="utf-8")
    spec_json = re.compile(r'spec=|\\?"variants\\?":\s*\{|\\?"heatmap_sentences\\?"')
    assert not spec_json.search(raw), spec_json.search(raw).group(0)
    results = json.loads(re.search(r"var results = (\{.*?\});\n", raw, re.S).group(1))
    for path, result in results.items():
        assert len(result["job_properties"]["params"]) < 80, (path, result["job_properties"]["params"][:200])
    # the info panel a reader opens from an entry: caption, rule, short parameters
    dom = open_report(work, tmp_path, "menu:1. Overview|info:Experiment summary")
    text = text_of(dom)
    assert "Experiment summary" in text and "make_report" in text
    assert "test_ppl" in text  # the caption says what the numbers are
    assert not spec_json.search(text) and "spec=" not in text


def test_entries_are_labelled_and_categorised(work, tmp_path):
    raw = (work / "report.html").read_text(encoding="utf-8")
    categories = json.loads(re.search(r"var categories = (\{.*?\});\n", raw, re.S).group(1))
    assert sorted(categories) == ["1. Overview", "2. Paper tables", "3. Figures"]
    results = json.loads(re.search(r"var results = (\{.*?\});\n", raw, re.S).group(1))
    assert all(r["labels"] for r in results.values())
    dom = open_report(work, tmp_path, "menu:2. Paper tables")
    listing = tables_in(dom)
    rows = next(rows for rows in listing.values() if rows and rows[0][:3] == ["paper", "table", "shows"])
    # the paper tables of which the demo regenerates a row (the ensemble fills Luong Table 6's), and
    # no other: not Luong Table 3 nor Bahdanau Table 1
    assert [r[:2] for r in rows[1:]] == [["Luong et al. 2015", "Table 1"], ["Luong et al. 2015", "Table 4"],
                                         ["Luong et al. 2015", "Table 6"], ["Shu & Nakayama 2017", "Table 1"],
                                         ["Shu & Nakayama 2017", "Table 3"]]
    assert f"{RES}/tables/" not in text_of(dom)  # labels, not paths


@pytest.mark.parametrize("clicks, table", [
    ("menu:1. Overview|eye:Experiment summary", "summary"),
    ("menu:2. Paper tables|eye:ppl, BLEU by system, En→De", "luong_table1"),
])
def test_a_table_opens_in_the_main_panel(work, tmp_path, clicks, table):
    dom = open_report(work, tmp_path, clicks)
    frames = re.findall(r'<iframe[^>]*src="data:text/html;charset=utf8;filename=([^;]+);base64,([^"]+)"', dom)
    assert [name for name, _ in frames] == [f"{table}.html"]
    shown = base64.b64decode(frames[0][1]).decode("utf-8")
    assert shown == (work / RES / "tables" / f"{table}.html").read_text(encoding="utf-8")
    assert "<table>" in shown


def test_a_changed_spec_reruns_the_report_only(work, tmp_path):
    """The spec is not a param any more; its sha256 is, so a change that touches only the spec
    (the report's settings) still reruns make_report, and nothing else."""
    same = snakemake(work, "-n", "--cores", "1", timeout=300)
    assert same.returncode == 0 and "Nothing to be done" in same.stdout + same.stderr
    changed = tmp_path / "changed.yaml"
    changed.write_text(yaml.safe_dump({"report": {"heatmap_sentences": [0, 2]}}), encoding="utf-8")
    run = snakemake(work, "-n", "--cores", "1", extra=(changed,), timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    jobs = re.findall(r"^(?:local)?(?:rule|checkpoint) (\w+):$", run.stdout + run.stderr, re.M)
    assert sorted(set(jobs)) == ["all", "make_report"], jobs
    assert "Params have changed" in run.stdout + run.stderr
