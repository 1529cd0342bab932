"""Names of the building blocks, without importing torch.

The workflow validates configs when Snakemake parses the Snakefile — on every cluster job
too — so config checking must not pay for importing PyTorch. The model modules register their
classes under exactly these names (tests/test_workflow.py checks both stay in sync).
"""

from __future__ import annotations

#: attention mechanisms (Luong §3.1–3.2, Shu & Nakayama §3); ``none`` = no attention
ATTENTION_NAMES: tuple[str, ...] = ("global", "local-m", "local-p", "flexible")
#: score functions (Luong Eq. 8–9, Bahdanau Eq. 7)
SCORE_NAMES: tuple[str, ...] = ("dot", "general", "concat", "additive", "location")
