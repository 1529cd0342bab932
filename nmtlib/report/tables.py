"""Writing tables as CSV (for machines) and Markdown (for people) side by side."""

from __future__ import annotations

import os
from pathlib import Path

import pandas as pd


def write_table(df: pd.DataFrame, path_csv: Path, title: str, notes: str = "") -> None:
    path_csv.parent.mkdir(parents=True, exist_ok=True)
    tmp = path_csv.with_name(f".{path_csv.name}.tmp")
    df.to_csv(tmp, index=False)
    os.replace(tmp, path_csv)
    md = f"# {title}\n\n" + (df.to_markdown(index=False, floatfmt=".2f") if not df.empty else "(no rows)") + "\n"
    if notes:
        md += f"\n{notes}\n"
    path_csv.with_suffix(".md").write_text(md, encoding="utf-8")
