"""Command line for the language-model metrics: `dialeval train lm` and `score --lm-model`."""

from __future__ import annotations

import json




def add_train_commands(train_sub) -> None:
    p = train_sub.add_parser("lm", help="train a small GPT-2-style LM (or fine-tune one with --init)")
    p.add_argument("--corpus", required=True, help="DailyDialog file/zip, JSONL dialogues or plain text")
    p.add_argument("--corpus-format", choices=["dailydialog", "jsonl", "text"], help="default: guessed")
    p.add_argument("-o", "--output", required=True, help="model folder to write")
    p.add_argument("--init", help="fine-tune this causal-LM checkpoint folder instead of training from scratch")
    p.add_argument("--reference-corpus", help="pairs for the normalisation bounds (default: a held-out share)")
    from dialeval.cli.options import add_estimator_flags
    from dialeval.metrics.lm.train import LMTrainer

    # the training settings from LMTrainer's constructor; the older short names stay as aliases
    p.set_defaults(_estimator_flags=add_estimator_flags(p, LMTrainer, aliases={
        "n_layer": ["--layers"], "n_embd": ["--dim"], "n_head": ["--heads"], "n_positions": ["--context-length"]}))
    p.add_argument("--eval-corpus", help="report per-token perplexity on this corpus's pairs after training")
    p.set_defaults(func=cmd_train_lm)


def cmd_train_lm(args) -> int:
    import sys

    from dialeval.metrics.lm.train import LMTrainConfig, train_lm

    cfg = LMTrainConfig(**{name: getattr(args, name) for name in args._estimator_flags})
    info = train_lm(args.corpus, args.output, cfg, init=args.init, corpus_format=args.corpus_format,
                    reference_corpus=args.reference_corpus, log=lambda m: print(m, file=sys.stderr))
    if args.eval_corpus:
        from dialeval.data.corpus import pairs, read_corpus
        from dialeval.metrics.lm.checkpoint import load_lm
        from dialeval.metrics.lm.logprob import perplexity

        lm = load_lm(args.output, args.device)
        info["eval_perplexity"] = perplexity(lm, pairs(read_corpus(args.eval_corpus)))
        info["eval_corpus"] = args.eval_corpus
    from dialeval.data.writers import json_value

    print(json.dumps(json_value({k: info[k] for k in ("parameters", "steps", "stopped_by", "train_seconds", "train_cpu_seconds",
                                            "reference_perplexity", "eval_perplexity") if k in info})))
    return 0
