"""Encoders, attention mechanisms × score functions, decoders and the model builder."""
