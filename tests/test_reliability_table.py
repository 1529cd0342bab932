"""docs/reliability.md's summary counts its own table: rows, and how many were right when first
tested (**ok**) or were bugs now fixed (**fixed**), read from each row's Outcome cell."""

from __future__ import annotations

import re
from collections import Counter

from conftest import ROOT


def test_the_summary_counts_the_rows_and_their_outcomes() -> None:
    text = (ROOT / "docs" / "reliability.md").read_text(encoding="utf-8")
    rows = [line for line in text.splitlines() if re.match(r"\| [A-Z]\d+ \|", line)]
    outcomes = Counter(line.rstrip().rstrip("|").rsplit("|", 1)[-1].split()[0] for line in rows)
    assert set(outcomes) <= {"ok", "fixed"}, outcomes
    summary = re.search(r"\*\*Summary: (\d+) rows, and every one behaves as asked\.\*\* (\d+) were right when "
                        r"first\s+tested \(\*\*ok\*\*\); (\d+) were bugs", text)
    assert summary is not None
    assert tuple(map(int, summary.groups())) == (len(rows), outcomes["ok"], outcomes["fixed"])
