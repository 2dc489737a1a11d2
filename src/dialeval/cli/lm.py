"""Command line for the language-model metrics: `dialeval train lm` and `score --lm-model`."""

from __future__ import annotations

import json

from dialeval.models.commands import Argument, Options, TrainCommand


LORA = "LoRA fine-tuning of a pretrained causal LM (docs/lm-lora.md)"

TRAIN_COMMANDS = [TrainCommand(
    "lm", "train a small GPT-2-style LM (or fine-tune one with --init)",
    estimator="dialeval.metrics.lm.train:LMTrainer", run="dialeval.cli.lm:cmd_train_lm", arguments=(
        Argument("--corpus", required=True, action="append",
                 help="DailyDialog file/zip, JSONL dialogues, plain text, or NAME:FILE for a public corpus "
                      "read by name (`dialeval datasets --sources`); repeatable (read as one corpus)"),
        Argument("--corpus-format", choices=["dailydialog", "jsonl", "text"], help="default: guessed"),
        Argument("-o", "--output", required=True, help="model folder to write"),
        Argument("--init", help="fine-tune this causal-LM checkpoint folder instead of training from scratch"),
        Argument("--reference-corpus", help="pairs for the normalisation bounds (default: a held-out share)"),
        # the training settings from LMTrainer's constructor; the older short names stay as aliases
        Options(aliases={"n_layer": ["--layers"], "n_embd": ["--dim"], "n_head": ["--heads"],
                         "n_positions": ["--context-length"]}),
        Argument("--eval-corpus", help="report per-token perplexity on this corpus's pairs after training"),
        Argument("--lora", metavar="BASE", group=LORA,
                 help="train a LoRA adapter on this base: a causal-LM folder, a GGUF file or a packaged "
                      "backbone name (smollm2-135m); --max-steps, --max-minutes, --lr, --batch-size, "
                      "--warmup-steps, --seed, --threads, --device, --reference-corpus and --reference-pairs "
                      "apply, each with LoRA's own default when not given"),
        # LoraTrainer's settings: a flag LMTrainer has too (--lr, --max-steps ...) is one flag
        Options("dialeval.metrics.lm.lora:LoraTrainer", key="lora", title=LORA, exclude=("extra",),
                flags={"rank": "--lora-rank", "alpha": "--lora-alpha", "targets": "--lora-targets",
                       "steps": "--max-steps"}, switches=("lowercase",)),
    ))]


def _corpus(args):
    """One spec as given (the record names it as before), several as a list."""
    return args.corpus[0] if len(args.corpus) == 1 else list(args.corpus)


def cmd_train_lm(args) -> int:

    from dialeval.cli.options import estimator_kwargs
    from dialeval.metrics.lm.train import LMTrainer
    from dialeval.progress import say

    if args.lora:
        return cmd_train_lora(args)
    trainer = LMTrainer(**estimator_kwargs(args, args._estimator_flags))
    trainer.fit(_corpus(args), init=args.init, corpus_format=args.corpus_format,
                reference_corpus=args.reference_corpus, log=say,
                checkpoint=getattr(args, "_checkpoint", None))
    trainer.save(args.output)
    info = trainer.info_
    if args.eval_corpus:
        from dialeval.data.corpus import pairs, read_corpus_spec
        from dialeval.metrics.lm.checkpoint import load_lm
        from dialeval.metrics.lm.logprob import perplexity

        lm = load_lm(args.output, trainer.device)
        info["eval_perplexity"] = perplexity(lm, pairs(read_corpus_spec(args.eval_corpus)))
        info["eval_corpus"] = args.eval_corpus
    from dialeval.data.writers import json_value

    print(json.dumps(json_value({k: info[k] for k in ("parameters", "steps", "stopped_by", "train_seconds", "train_cpu_seconds",
                                            "reference_perplexity", "eval_perplexity") if k in info})))
    return 0


def cmd_train_lora(args) -> int:
    """`train lm --lora BASE`: every LoRA flag given is honoured as given; one not given is
    LoraTrainer's own default (not LMTrainer's, whose flags it shares)."""

    from dialeval.cli.options import option_set_kwargs
    from dialeval.metrics.lm.lora import LoraTrainer
    from dialeval.progress import say as log

    trainer = LoraTrainer(**option_set_kwargs(args, "lora"))
    trainer.fit(_corpus(args), args.lora, reference_corpus=args.reference_corpus, log=log,
                checkpoint=getattr(args, "_checkpoint", None))
    trainer.save(args.output)
    info = trainer.info_
    log(f"train lm --lora: wrote {args.output} ({info['wall_seconds']:.0f} s wall, {info['cpu_seconds']:.0f} s CPU)")
    from dialeval.data.writers import json_value

    print(json.dumps(json_value({k: info[k] for k in ("base", "steps_done", "stopped_by", "train_seconds",
                                                      "cpu_seconds", "final_loss", "train_tokens_seen") if k in info})))
    return 0
