"""nmtlib: attention-based NMT of Luong et al. 2015, Bahdanau et al. 2015 and Shu & Nakayama 2017.

A library first (data, models, training, decoding, metrics, reports); the ``nmtlib`` command
line is a thin layer over it, one sub-command per pipeline step, called by the Snakemake rules.
"""

__version__ = "0.1.0"
