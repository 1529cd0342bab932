"""Where an experiment's files live, declared once: every path under ``results/<experiment>/`` and
``logs/<experiment>/``.

The workflow's rules (their inputs, outputs, logs and benchmark files), ``nmtlib train --config``,
the report, the model check of :mod:`nmtlib.provenance` and ``nmtlib publish`` all take their
paths from :class:`Layout` and :class:`Logs`; none spells a folder of its own
(``tests/test_layout.py`` fails if a module of ``nmtlib/`` does). Plain strings, no torch: the
workflow reads this module when Snakemake parses the Snakefile.

A layout rooted at a ``str`` gives ``str`` paths, so that an argument may be a Snakemake wildcard
(``layout.model("{variant}", "seed{seed}")`` is the pattern
``results/<experiment>/models/{variant}/seed{seed}/model.pt``); one rooted at a
:class:`~pathlib.Path` gives Paths, for the code that reads the files. ``"*"`` as an argument
gives a glob pattern (:meth:`Layout.found`).

The folder of an experiment::

    corpus/{split}.{side}, test.align, lexicon.tsv,   the raw text: generated, or copied out of the
      dictionary.txt, download.json                 download cache (and the download's manifest)
    data/{split}.{side}, {split}.stats.json         tokenized and cleaned, with what was dropped
    vocab/{side}.txt                                the vocabularies
    models/{variant}/{run}/model.pt, train_log.csv, a trained model, its learning curve and its
      env.json                                      record (nmtlib.provenance)
    models/{variant}/{run}/model.left-behind.json   in place of model.pt where the results were carried
                                                    from another machine without it (nmtlib.carry)
    models/{variant}/decode.json                    the experiment's decoding options of a variant
    translations/{variant}/{run}/test.{setting}     + .txt, .unk.txt, .jsonl (TRANSLATION_SUFFIXES)
    scores/{variant}/{run}/test.{what}.json         what: a setting, ``ppl`` or ``aer``
    attention/{variant}/{run}/test.npz, test.links, forced decoding's attention and links
      test.predicted.links
    tables/{table}.csv|md|html, figures/{figure}.png
    report/landing.html, report/columns/{table}.rst the HTML report's landing page and captions' columns,
      report/captions/{name}.rst                    the paper tables' and figures' captions, and how many
      report/progress.json                          runs the report found scored

``{run}`` is ``seed<k>`` or ``ensemble``; ``{setting}`` is ``beam<K>`` or ``beam<K>.tau<τ>``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Generic, TypeVar, cast

#: the folders, relative to where the workflow runs, that hold every experiment's results and logs
RESULTS, LOGS = "results", "logs"

#: the files ``nmtlib translate --out PREFIX`` writes: the output as decoded, after unknown-word
#: replacement, and the per-sentence details
RAW_TEXT, REPLACED_TEXT, DETAILS = ".txt", ".unk.txt", ".jsonl"
TRANSLATION_SUFFIXES = (RAW_TEXT, REPLACED_TEXT, DETAILS)

#: the split whose translations are scored, the only one the workflow decodes
TEST = "test"

#: the ``{run}`` of an ensemble's outputs; a model's is its seed's (:func:`seed_run`)
ENSEMBLE_RUN = "ensemble"


def seed_run(seed: int | str) -> str:
    """The ``{run}`` of the model trained with ``seed``: ``seed3`` (``"{seed}"`` gives the wildcard)."""
    return f"seed{seed}"


def run_seed(run: str) -> int | None:
    """The seed of a ``{run}`` that :func:`seed_run` named (None: an ensemble's, or any other)."""
    number = run.removeprefix("seed")
    return int(number) if number != run and number.isdigit() else None


def run_order(run: str) -> tuple[int, str]:
    """Runs in the order of their seeds (``seed2`` before ``seed10``), any other run after them."""
    seed = run_seed(run)
    return (1 << 30 if seed is None else seed, run)


#: the files of a model folder (``nmtlib train --out``): the weights, the learning curve and the
#: record of how the model was trained (:mod:`nmtlib.provenance`)
MODEL, TRAIN_LOG, RECORD = "model.pt", "train_log.csv", "env.json"
#: what a model folder holds in place of the weights where its results were carried to another machine
#: without them (:mod:`nmtlib.carry`): the weights' digest and what the reports read of them
LEFT_BEHIND = "model.left-behind.json"
#: the experiment's decoding options of a variant, beside its model folders
DECODE_SETTINGS = "decode.json"
#: the key of a model's perplexity scores (``nmtlib evaluate perplexity``) that holds each test
#: sentence's ``[NLL, tokens]``: the sums the findings' bootstrap resamples
PPL_SENTENCES = "sentence_nll"

P = TypeVar("P", str, Path)


class _Folder(Generic[P]):
    def __init__(self, root: P):
        self.root = root

    def _at(self, *parts: str) -> P:
        """``root/parts``: joined with "/" for a ``str`` root (wildcards are kept as they are)."""
        if isinstance(self.root, Path):
            return cast(P, self.root.joinpath(*parts))
        return cast(P, "/".join((self.root, *parts)))

    def found(self, pattern: P) -> list[tuple[Path, tuple[str, ...]]]:
        """The existing files that match ``pattern``, a path of this layout with ``"*"`` for some
        of its arguments (``layout.train_log("*", "*")``), sorted, each with the names its ``*``
        folders stand for there (``("base", "seed1")``)."""
        root = Path(self.root)
        relative = Path(pattern).relative_to(root)
        stars = [i for i, part in enumerate(relative.parts) if part == "*"]
        return [(path, tuple(path.relative_to(root).parts[i] for i in stars))
                for path in sorted(root.glob(str(relative)))]

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.root!r})"


class Layout(_Folder[P]):
    """The results folder of one experiment (``results/<experiment>``)."""

    @staticmethod
    def of(experiment: str) -> Layout[str]:
        """Where the workflow writes experiment ``experiment``'s results, relative to where it runs."""
        return Layout(f"{RESULTS}/{experiment}")

    # -- the corpus: generated, or copied out of the download cache --------------------------------

    def corpus_dir(self) -> P:
        return self._at("corpus")

    def corpus(self, split: str, side: str) -> P:
        """The untokenized text of a split, one segment per line."""
        return self._at("corpus", f"{split}.{side}")

    def download_manifest(self) -> P:
        """What the download job fetched and verified (``nmtlib download``'s last line)."""
        return self._at("corpus", "download.json")

    def generated_alignments(self) -> P:
        """The synthetic corpus's gold alignments of the test split."""
        return self._at("corpus", f"{TEST}.align")

    def lexicon(self) -> P:
        """The synthetic corpus's word-for-word dictionary."""
        return self._at("corpus", "lexicon.tsv")

    def dictionary(self) -> P:
        """A data set's unknown-word dictionary, copied out of the cache."""
        return self._at("corpus", "dictionary.txt")

    # -- prepared text and vocabularies ------------------------------------------------------------

    def data_dir(self) -> P:
        return self._at("data")

    def data(self, split: str, side: str) -> P:
        """A split tokenized and cleaned (``nmtlib prepare``)."""
        return self._at("data", f"{split}.{side}")

    def data_stats(self, split: str) -> P:
        return self._at("data", f"{split}.stats.json")

    def vocab(self, side: str) -> P:
        return self._at("vocab", f"{side}.txt")

    def train_inputs(self) -> dict[str, P]:
        """The files a training reads, by role, in :data:`nmtlib.provenance.ROLES` order (as
        ``nmtlib train`` names its flags)."""
        return {"train_src": self.data("train", "src"), "train_tgt": self.data("train", "tgt"),
                "dev_src": self.data("dev", "src"), "dev_tgt": self.data("dev", "tgt"),
                "src_vocab": self.vocab("src"), "tgt_vocab": self.vocab("tgt")}

    # -- models ------------------------------------------------------------------------------------

    def model_dir(self, variant: str, run: str) -> P:
        """One trained model's folder (``nmtlib train --out``); ``run`` is ``seed<k>``."""
        return self._at("models", variant, run)

    def model(self, variant: str, run: str) -> P:
        return self._at("models", variant, run, MODEL)

    def left_behind(self, variant: str, run: str) -> P:
        """The record of a trained model whose weights stayed on the machine its results were carried
        from (:mod:`nmtlib.carry`), in its folder in place of ``model.pt``."""
        return self._at("models", variant, run, LEFT_BEHIND)

    def trained(self, variant: str, run: str) -> bool:
        """Whether the model finished training: its ``model.pt`` is here, or the record of one left
        behind where its results were carried from (:meth:`left_behind`). The one test of a finished
        model for everything that reads results; a model still training has neither."""
        return Path(self.model(variant, run)).exists() or Path(self.left_behind(variant, run)).exists()

    def resume_state(self, variant: str, run: str) -> P:
        """The state a training resumes from (weights, optimiser, RNG states, position in the epoch),
        there while it has not ended. The trainer spells the same path (``TrainPaths.last``:
        training code, which reads nothing from here); tests/test_layout.py holds the two equal."""
        return self._at("models", variant, run, "checkpoints", "last.pt")

    def train_log(self, variant: str, run: str) -> P:
        return self._at("models", variant, run, TRAIN_LOG)

    def record(self, variant: str, run: str) -> P:
        """The model's record: its options, seed and data (:mod:`nmtlib.provenance`)."""
        return self._at("models", variant, run, RECORD)

    def decode_settings(self, variant: str) -> P:
        """The experiment's decoding options of a variant, beside its seeds' folders (``nmtlib
        translate --model`` finds them there: ``model.pt``'s folder's parent)."""
        return self._at("models", variant, DECODE_SETTINGS)

    # -- translations, scores, attention -----------------------------------------------------------

    def translations_dir(self) -> P:
        return self._at("translations")

    def translation(self, variant: str, run: str, setting: str, suffix: str = "") -> P:
        """The test translation of one run at one decoding setting: the prefix ``nmtlib translate
        --out`` takes, or with ``suffix`` (:data:`TRANSLATION_SUFFIXES`) one of its files."""
        return self._at("translations", variant, run, f"{TEST}.{setting}{suffix}")

    def translation_files(self, variant: str, run: str, setting: str) -> list[P]:
        return [self.translation(variant, run, setting, s) for s in TRANSLATION_SUFFIXES]

    def scores(self, variant: str, run: str, what: str) -> P:
        """The scores of one result: ``what`` is a translation's decoding setting, ``ppl`` (test
        perplexity of a model) or ``aer`` (its alignments)."""
        return self._at("scores", variant, run, f"{TEST}.{what}.json")

    def attention(self, variant: str, run: str) -> P:
        """The attention matrices of forced decoding of the test set, one per sentence id."""
        return self._at("attention", variant, run, f"{TEST}.npz")

    def links(self, variant: str, run: str) -> P:
        """Their links, by Luong's footnote-14 convention."""
        return self._at("attention", variant, run, f"{TEST}.links")

    def predicted_links(self, variant: str, run: str) -> P:
        """Their links, every step aligned to the word it predicts."""
        return self._at("attention", variant, run, f"{TEST}.predicted.links")

    # -- the report --------------------------------------------------------------------------------

    def tables_dir(self) -> P:
        return self._at("tables")

    def table(self, name: str, ext: str = "csv") -> P:
        """A table (``csv``), or its rendering (``md``, ``html``)."""
        return self._at("tables", f"{name}.{ext}")

    def figures_dir(self) -> P:
        return self._at("figures")

    def figure(self, name: str) -> P:
        return self._at("figures", f"{name}.png")

    def landing(self) -> P:
        """The HTML report's landing page (``workflow/report/workflow.rst`` embeds it)."""
        return self._at("report", "landing.html")

    def progress(self) -> P:
        """How many of the experiment's runs the report found scored, and when it was made
        (``nmtlib report``; ``nmtlib publish`` reads it: a page of a run still going says so)."""
        return self._at("report", "progress.json")

    def columns(self, table: str) -> P:
        """A table's metric columns, for its caption (``workflow/report/<table>.rst`` includes it; a
        paper table's caption, :meth:`caption`, ends with them)."""
        return self._at("report", "columns", f"{table}.rst")

    def caption(self, name: str) -> P:
        """A paper table's or figure's caption in the HTML report, written from its declaration
        (:meth:`nmtlib.report.paper.PaperTable.caption_rst`, :meth:`nmtlib.report.paper.PaperFigure.caption_rst`)."""
        return self._at("report", "captions", f"{name}.rst")


def settings_beside(model: Path) -> Path:
    """The experiment's decoding options (:meth:`Layout.decode_settings`) of the model file
    ``model`` of a results folder: beside the folder of its run."""
    return model.parent.parent / DECODE_SETTINGS


#: the workflow's rule that trains a model (workflow/rules/train.smk): its job log says whether training
#: resumed, its benchmark file the CPU time; a job's files are named ``<variant>.<run>``
TRAINING_RULE = "train_model"


class Logs(_Folder[P]):
    """The log folder of one experiment (``logs/<experiment>``): one log per job, and the
    benchmark file (Snakemake's ``benchmark:``) of each job that does real work."""

    @staticmethod
    def of(experiment: str) -> Logs[str]:
        return Logs(f"{LOGS}/{experiment}")

    def job(self, rule: str, job: str = "") -> P:
        """The log of a job of ``rule``: ``<rule>/<job>.log``, or ``<rule>.log`` for a rule of one job."""
        return self._at(rule, f"{job}.log") if job else self._at(f"{rule}.log")

    def benchmark(self, rule: str, job: str = "") -> P:
        """The benchmark file of a job of ``rule`` (wall and CPU time, memory)."""
        return self._at("benchmark", rule, f"{job}.tsv") if job else self._at("benchmark", f"{rule}.tsv")
