"""ADEM proper (paper eq. 1-2): score = (c^T M r^ + r^T N r^ - alpha) / beta.

c, r and r^ are the encoder vectors of the context, the reference and the candidate response
after a PCA to `pca_dims` dimensions, fitted on the stacked training vectors (contexts,
references and responses together). M and N start as the identity. alpha and beta are
constants fixed before training so that the initial predictions (M = N = I) of the training
rows span the human range 1-5 (min -> 1, max -> 5), computed from *all* training rows (the
released code used only the first n rows; a deliberate deviation). Only M and N are learned.

Loss: the squared error to the human score (1-5) summed over a batch, plus gamma times the L1
norm of M and N (`preset="paper"`, PCA 7, gamma 0.02, lr 0.01, batch 16, the paper's App. D)
or their squared L2 norm (`preset="released"`, PCA 50, as the released code). Adam; early
stopping on the Spearman correlation of a validation split (its own contexts), keeping the best
epoch's M and N.

Training rows are oversampled (paper §5): rows are binned by response length (terciles) and,
inside each bin, every score class (the human score rounded to 1..5) is resampled with
replacement up to the size of the bin's largest class, at most `max_oversample` times its own
size, so that length does not predict the score. Every original row is kept (the original code
silently dropped the rows that did not fill a last batch; we do not).

Variants: `adem` (both terms), `c_adem` (context term only), `r_adem` (reference term only).
With several references the reference vector is their mean, which (the score being linear in r
and the PCA affine) equals the mean of the single-reference scores.

Fine-tuned variant (`finetune_layers` N > 0, encoder `minilm` only): after the fit above (stage
1, with its settings search when asked), the top N MiniLM layers are trained together with M
and N under the same loss, early-stopped on the same validation split (`finetune.py`). The
tuned layers are stored in the folder as `encoder.safetensors` and scoring encodes with them.

This module is the model: its settings, its folder, and the parts a fitted model is made of,
each with its own module and the one owner of its state: `bilinear.py` (`head_`: the PCA, M, N,
alpha, beta and the scoring equation), `copy.py` (`copy_term_`: weight and knee), `encoding.py`
(`encoder_state_`: the encoder's fingerprint and tuned layers; which encoder, the vectors, the
encoder's files in the folder). `training.py` (stage 1), `finetune.py` (stage 2) and `search.py`
(the settings search) return parts for the model to keep. A folder stores the parts under the
flat names (`M_`, `alpha_`, `copy_weight_`, ...) it always had.
"""

from __future__ import annotations

from typing import Any, Callable, Literal, Mapping, Sequence

import numpy as np

from ....errors import DialevalError
from ....models.estimator import Estimator
from . import encoding, training
from .bilinear import BilinearHead
from .copy import CopyTerm
from .data import RatedRow
from .encoding import BUNDLED_ENCODER, EncoderState  # noqa: F401  (part of this module's interface)
from .search import SEARCH_GRID, search_rows, searched_record, validation_spearman, vector_search  # noqa: F401
from .training import (NEGATIVE_SCORE, PreparedRows, negative_rows, pairwise_hinge,  # noqa: F401
                       standardise_per_set)
from ....stats import average_ranks, spearman  # noqa: F401  (part of this module's interface)

KIND = "adem"
VARIANTS = ("adem", "c_adem", "r_adem")
PRESETS = {"paper": {"pca_dims": 7, "gamma": 0.02, "penalty": "l1"},
           "released": {"pca_dims": 50, "gamma": 0.02, "penalty": "l2"}}


class Adem(Estimator):
    """ADEM, a scikit-learn-shaped estimator: `fit(rows)`, `predict(...)`, `save`/`load`.

    Options:
        encoder: minilm (frozen all-MiniLM-L6-v2), minilm:DIR (a sentence-transformers folder) or
            hred:DIR (a `train dialogue-encoder` folder)
        variant: adem (context and reference), c_adem (context term only) or r_adem (reference
            term only)
        preset: paper (L1 on M, N, PCA 7) or released (squared L2, PCA 50)
        pca_dims: PCA dimensions (default: 7 paper, 50 released; 0: all)
        gamma: weight of the penalty on M, N (default 0.02)
        lr: Adam step size for M and N
        batch_size: rows per training step
        max_epochs: most passes over the training rows
        patience: epochs without a better validation Spearman before stopping (the best epoch's
            M and N are kept)
        val_fraction: share of the rows (split by context) held out for early stopping and the
            settings search
        context_turns: minilm: the last k context turns, joined
        oversample: length-binned oversampling by score class (paper section 5)
        max_oversample: a score class is resampled to at most this many times its own size
        seed: random seed
        finetune_layers: minilm only: after the frozen fit, fine-tune the top N of MiniLM's 6
            layers with M and N under the ADEM loss, early-stopped on the same validation split
            (default 0: frozen, as the paper)
        finetune_lr: AdamW step size of the tuned layers (M and N keep lr)
        finetune_epochs: passes over the (oversampled) training rows when fine-tuning
        finetune_minutes: stop fine-tuning after this many minutes, keeping the best validation
            state (default: no limit)
        rank_weight: weight of a pairwise hinge loss beside the squared error, over the pairs of
            a batch from the same rated set whose human scores differ (default 0: squared error
            only, as the paper); rewards ordering a set's responses, which is what Spearman on
            a new set measures, rather than matching each set's absolute scale
        rank_margin: the hinge's margin on the 1-5 score scale
        standardise: train on each rated set's scores standardised within the set (3 + z-score),
            so sets whose raters used the scale differently do not pull M and N apart
        centre: subtract the PCA mean before the bilinear terms (default, the paper's PCA); with
            centre false and all dimensions kept, M = N = I scores cos(r^, r) + cos(r^, c) for
            L2-normalised encoders, so training starts from (and can fall back on) sent_cosine
        hard_negatives: comma-separated probe families (`dialeval probe`: parrot, generic,
            other_item, ...) whose variants of each training row join the training rows at the
            bottom of the scale (1), so that the ranking loss puts them below every real
            response of their set; validation rows get none. The families left out are what the
            probes then test for generalisation (default: none)
        copy_term: after the fit, learn what a reply loses for repeating the context's last
            turn (word-set F1 above a knee, weight and knee chosen on the validation rows with a
            copy of each row's last turn at the bottom of its set; see `adem/copy.py`). The term
            reads the last turn for every variant, r_adem's too, whose bilinear part still reads
            only the reference and the response (default: off)
        device: torch device of training's MiniLM passes (the rows' vectors and stage 2's tuned
            layers), cpu or cuda[:N]; the PCA and stage 1's bilinear fit stay on the CPU. Not
            saved: a model trained on a GPU scores anywhere (with `--adem-device`)
    """

    kind = KIND
    runtime_params = ("device",)
    # the fitted parts (see the module's docstring) and the records beside them
    fitted_parts = ("head_", "copy_term_", "encoder_state_", "scale_mapping_", "training_")
    schema = 3
    since = {"hard_negatives": 2, "copy_term": 3}

    def __init__(self, encoder: str = "minilm", variant: Literal["adem", "c_adem", "r_adem"] = "adem",
                 preset: Literal["paper", "released"] = "paper", pca_dims: int | None = None,
                 gamma: float | None = None, lr: float = 0.01, batch_size: int = 16, max_epochs: int = 100,
                 patience: int = 10, val_fraction: float = 0.15, context_turns: int = 3,
                 oversample: bool = True, max_oversample: float = 10.0, seed: int = 0,
                 finetune_layers: int = 0, finetune_lr: float = 1e-4, finetune_epochs: int = 1,
                 finetune_minutes: float | None = None, rank_weight: float = 0.0, rank_margin: float = 0.5,
                 standardise: bool = False, centre: bool = True, hard_negatives: str = "",
                 copy_term: bool = False, device: str = "cpu"):
        self.encoder = encoder
        self.variant = variant
        self.preset = preset
        self.pca_dims = pca_dims
        self.gamma = gamma
        self.lr = lr
        self.batch_size = batch_size
        self.max_epochs = max_epochs
        self.patience = patience
        self.val_fraction = val_fraction
        self.context_turns = context_turns
        self.oversample = oversample
        self.max_oversample = max_oversample
        self.seed = seed
        self.finetune_layers = finetune_layers
        self.finetune_lr = finetune_lr
        self.finetune_epochs = finetune_epochs
        self.finetune_minutes = finetune_minutes
        self.rank_weight = rank_weight
        self.rank_margin = rank_margin
        self.standardise = standardise
        self.centre = centre
        self.hard_negatives = hard_negatives
        self.copy_term = copy_term
        self.device = device

    # -- settings ------------------------------------------------------------------------
    def _check(self) -> None:
        from ....backbones.runtime import check_device

        check_device("device", self.device)
        if self.variant not in VARIANTS:
            raise DialevalError(f"ADEM variant {self.variant!r}: choose from {', '.join(VARIANTS)}")
        if self.preset not in PRESETS:
            raise DialevalError(f"ADEM preset {self.preset!r}: choose from {', '.join(PRESETS)}")
        if int(self.finetune_layers or 0):
            if not str(self.encoder).startswith("minilm"):
                raise DialevalError(f"finetune_layers needs the minilm encoder; {self.encoder} is not a "
                                    "transformer to fine-tune (use finetune_layers=0)")
            if not 0 <= int(self.finetune_layers) <= 6:
                raise DialevalError(f"finetune_layers {self.finetune_layers}: MiniLM has 6 layers; choose 0..6")

    def n_dims(self) -> int:
        """PCA dimensions; `pca_dims=0` keeps them all (the PCA then only centres and rotates)."""
        if self.pca_dims == 0:
            return 1 << 30
        return int(self.pca_dims or PRESETS[self.preset]["pca_dims"])

    def penalty(self) -> str:
        """The preset's norm on M and N: "l1" (paper) or "l2" (released, squared)."""
        return PRESETS[self.preset]["penalty"]

    def gamma_value(self) -> float:
        return float(PRESETS[self.preset]["gamma"] if self.gamma is None else self.gamma)

    def needs_references(self) -> bool:
        return self.variant != "c_adem"

    # -- encoding (encoding.py) ------------------------------------------------------------
    def _encoder_state(self) -> EncoderState:
        """This model's encoder state; an unfitted model reads with the frozen encoder."""
        return self.__dict__.get("encoder_state_") or EncoderState()

    def encoder_object(self, device: str | None = None, precision: str = "fp32"):
        """The encoder this model reads with, on `device` (default: the model's) and `precision`,
        refused when it is not the one it was trained with."""
        return self._encoder_state().encoder(self.encoder, int(self.context_turns), device or self.device,
                                             precision)

    def encode(self, contexts: Sequence[Sequence[str]], references: Sequence[Sequence[str]],
               responses: Sequence[str]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Full-size vectors: contexts, mean reference vectors (NaN rows without references),
        responses."""
        return encoding.encode(self.encoder_object(), contexts, references, responses)

    def encode_rows(self, rows: Sequence[RatedRow]):
        return self.encode([r.context for r in rows], [r.references for r in rows], [r.response for r in rows])

    def set_tuned_layers(self, tensors: Mapping[str, Any] | None) -> "Adem":
        """Make `tensors` (`encoder.layer.{i}.{name}` -> torch tensor, the top layers) the
        encoder's tuned layers, or go back to the frozen encoder with None; records their
        indices, content hash and the encoder fingerprint that scoring checks."""
        self.encoder_state_ = EncoderState.with_layers(tensors, self.encoder, int(self.context_turns))
        return self

    def is_tuned(self) -> bool:
        """Whether scoring goes through fine-tuned MiniLM layers (a stage-2 state won)."""
        return self._encoder_state().tuned

    # -- fitting (training.py, finetune.py, search.py) -------------------------------------
    def fit(self, rows: Sequence[RatedRow], *, progress: Callable[[str], None] | None = None,
            checkpoint=None) -> "Adem":
        """Encode `rows`, split off a validation part by context, and train (stage 1, then stage
        2 when `finetune_layers` > 0). A settings search is `dialeval.models.search.SettingsSearch`
        over `fit_vectors` on `prepare(rows)`, then `finish` on its best estimator (what
        `train adem --search` does, see `search_rows`)."""
        prepared = self.prepare(rows)
        self.fit_vectors(*prepared.train, val=prepared.val, progress=progress)
        return self.finish(prepared, progress=progress, checkpoint=checkpoint)

    def prepare(self, rows: Sequence[RatedRow]) -> PreparedRows:
        """The usable rows, their training/validation split (by context) and their encoder
        vectors: what every stage-1 fit on `rows` starts from, computed once."""
        self._check()
        self.__dict__.pop("encoder_state_", None)      # a refit starts from the frozen encoder
        return training.prepare(self, rows)

    def finish(self, prepared: PreparedRows, *, progress: Callable[[str], None] | None = None,
               checkpoint=None) -> "Adem":
        """After stage 1 on `prepared`: stage 2 when asked (its tuning loop saved to and continued
        from `checkpoint`, models.resume), then the provenance record."""
        if int(self.finetune_layers or 0):
            self.finetune_rows(prepared.rows, prepared.train_idx, prepared.val_idx, progress=progress,
                               checkpoint=checkpoint)
        if self.copy_term:
            self.fit_copy_term([prepared.rows[i] for i in prepared.val_idx], progress=progress)
        self.record_provenance(prepared.rows)
        self.training_["rows_split"] = {"train": len(prepared.train_idx), "validation": len(prepared.val_idx)}
        return self

    def finetune_rows(self, rows: Sequence[RatedRow], train_idx: Sequence[int], val_idx: Sequence[int], *,
                      progress: Callable[[str], None] | None = None, checkpoint=None) -> "Adem":
        """Stage 2 (`finetune.py`) on a model fitted by `fit_vectors`/`search_vectors` on the same
        training and validation rows: the top `finetune_layers` MiniLM layers with M and N.
        Keeps the stage-1 model when no stage-2 state beats its validation Spearman."""
        from .finetune import finetune_rows

        self._check()
        if int(self.finetune_layers or 0) < 1:
            raise DialevalError("finetune_rows needs finetune_layers >= 1")
        self.check_fitted()
        info, self.head_, layers = finetune_rows(self, self.head_, rows, train_idx, val_idx, progress=progress,
                                                 checkpoint=checkpoint)
        self.training_["finetune"] = info
        return self.set_tuned_layers(layers)

    def fit_copy_term(self, rows: Sequence[RatedRow], *, progress: Callable[[str], None] | None = None) -> "Adem":
        """The copy term's weight and knee (`adem/copy.py`) on validation `rows` of a fitted
        model, each beside a copy of its context's last turn rated at its set's bottom."""
        from . import copy

        rows = [r for r in rows if r.context and (r.references or not self.needs_references())]
        self.copy_term_ = CopyTerm()                                  # scores without the term
        ctx = [r.context for r in rows]
        refs = [r.references for r in rows]
        responses = [r.response for r in rows]
        parrots = [c[-1] for c in ctx]
        chosen = self.set_copy_term(copy.choose(
            self.predict(ctx, refs, responses), copy.overlap(ctx, responses),
            np.array([r.score for r in rows], dtype=float), np.array([r.dataset for r in rows]),
            self.predict(ctx, refs, parrots), copy.overlap(ctx, parrots)))
        if progress:
            progress(f"copy term: weight {self.copy_term_.weight}, knee {self.copy_term_.knee} "
                     f"(validation Spearman with copies {chosen['val_spearman_with_copies']})")
        return self

    def set_copy_term(self, chosen: dict) -> dict:
        """Keep `copy.choose`'s weight and knee, and its record in `training_`."""
        self.copy_term_ = CopyTerm.chosen(chosen)
        self.training_["copy_term"] = chosen
        return chosen

    def has_copy_term(self) -> bool:
        term = self.__dict__.get("copy_term_")
        return term is not None and term.active

    def copy_overlap(self, contexts: Sequence[Sequence[str]], responses: Sequence[str]) -> np.ndarray | None:
        """What `predict_vectors(..., copy=)` takes for these rows (None: the model has no term)."""
        if not self.has_copy_term():
            return None
        from .copy import overlap

        return overlap(contexts, responses)

    def record_provenance(self, rows: Sequence[RatedRow]) -> None:
        """Store the per-dataset scale mapping of `rows` and the encoder's fingerprint (called by
        `fit`; callers of `fit_vectors` call it themselves)."""
        self.scale_mapping_ = training.scale_mapping(rows, self.needs_references())
        self.encoder_state_ = self._encoder_state().with_fingerprint(self.encoder_object().fingerprint())

    def fit_vectors(self, C: np.ndarray, R: np.ndarray, H: np.ndarray, y: np.ndarray,
                    lengths: np.ndarray | None = None, groups: np.ndarray | None = None, *,
                    val: tuple | None = None, progress: Callable[[str], None] | None = None) -> "Adem":
        """Fit on full-size encoder vectors (the benchmark encodes once and calls this);
        `groups` names each row's rated set (for `standardise` and `rank_weight`; None: one set)."""
        self._check()
        self.head_, self.training_ = training.fit_bilinear(self, C, R, H, y, lengths, groups, val=val,
                                                           progress=progress)
        return self

    def search_vectors(self, grid: Mapping[str, Sequence], C: np.ndarray, R: np.ndarray, H: np.ndarray,
                       y: np.ndarray, lengths: np.ndarray | None = None, groups: np.ndarray | None = None, *,
                       val: tuple, progress: Callable[[str], None] | None = None) -> "Adem":
        """Shorthand kept for the benchmark: run `vector_search` and become its best model (its
        settings included), with the table of candidates in `training_["search"]`."""
        search = vector_search(self, grid, val, progress=progress).fit(C, R, H, y, lengths, groups, val=val)
        self.set_params(**search.best_params_)
        self._take_parts(search.best_estimator_)
        self.training_ = searched_record(search)
        return self

    # -- prediction ----------------------------------------------------------------------
    def predict_vectors(self, C, R, H, copy: np.ndarray | None = None) -> np.ndarray:
        """Scores on the 1-5 scale from full-size vectors; NaN where a needed reference is missing.
        `copy`: each row's overlap with its context's last turn (`adem/copy.py::overlap`), for a
        model with a copy term."""
        self.check_fitted()
        out = self.head_.predict(C, R, H)
        if copy is not None and self.has_copy_term():
            out = self.copy_term_.apply(out, copy)
        return out

    def predict(self, contexts: Sequence[Sequence[str]], references: Sequence[Sequence[str]],
                responses: Sequence[str]) -> np.ndarray:
        return self.predict_vectors(*self.encode(contexts, references, responses),
                                    copy=self.copy_overlap(contexts, responses))

    def at_initialisation(self) -> "Adem":
        """The same PCA, alpha and beta with M = N = I (the paper's 'ADEM at initialisation')."""
        other = Adem(**self.get_params())
        other._take_parts(self)
        other.head_ = self.head_.at_initialisation()
        return other

    # -- fitted state --------------------------------------------------------------------
    def fitted_attributes(self) -> list[str]:
        """The fitted parts and records this model holds. A part is replaced, never edited, so a
        model made from another (ADEM at initialisation, a search's winner) may share it."""
        return [name for name in self.fitted_parts if name in self.__dict__]

    def _take_parts(self, other: "Adem") -> None:
        for name in other.fitted_attributes():
            setattr(self, name, getattr(other, name))

    # -- persistence ---------------------------------------------------------------------
    def _state(self):
        """The parts flattened to the names a folder has always had: the head's arrays (M_, N_,
        pca_components_, pca_mean_) to the npz, the rest to config.json; the tuned layers'
        tensors go to `encoder.safetensors` (their indices and content hash stay in config.json)."""
        values: dict[str, Any] = {}
        arrays: dict[str, np.ndarray] = {}
        if "head_" in self.__dict__:
            head_values, arrays = self.head_.state()
            values.update(head_values)
        if "copy_term_" in self.__dict__:
            values.update(self.copy_term_.state())
        if "encoder_state_" in self.__dict__:
            values.update(self.encoder_state_.state())
        for name in ("scale_mapping_", "training_"):
            if name in self.__dict__:
                values[name] = getattr(self, name)
        return dict(sorted(values.items())), dict(sorted(arrays.items()))

    def _write_files(self, staging_dir: str) -> None:
        self._encoder_state().write_files(self.encoder, staging_dir)

    def _set_state(self, values: Mapping[str, Any], arrays: Mapping[str, np.ndarray], directory: str) -> None:
        self.head_ = BilinearHead.from_state(self.variant, values, arrays, directory)
        term = CopyTerm.from_state(values)
        if term is not None:
            self.copy_term_ = term
        for name in ("scale_mapping_", "training_"):
            if name in values:
                setattr(self, name, values[name])
        self.encoder_state_ = EncoderState.read(self.encoder, int(self.context_turns), values, directory)
        self.encoder = encoding.bundled_spec(self.encoder, directory)
        self._check()


# Where these lived before the split; `train adem`, the benchmarks and the tests import them here.
__all__ = ["Adem", "KIND", "VARIANTS", "PRESETS", "BUNDLED_ENCODER", "SEARCH_GRID", "search_rows", "vector_search",
           "validation_spearman", "PreparedRows", "NEGATIVE_SCORE", "negative_rows", "pairwise_hinge",
           "standardise_per_set", "average_ranks", "spearman"]
