"""Reports: tables (CSV + Markdown) and figures regenerated from an experiment's results."""
