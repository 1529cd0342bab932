"""Decoding: batched beam search, ensembles, unknown-word replacement, forced decoding."""
