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
    g = p.add_argument_group("LoRA fine-tuning of a pretrained causal LM (docs/lm-lora.md)")
    g.add_argument("--lora", metavar="BASE",
                   help="train a LoRA adapter on this base: a causal-LM folder, a GGUF file or a packaged "
                   "backbone name (smollm2-135m); --max-steps, --max-minutes, --lr, --batch-size, --seed, "
                   "--device, --reference-corpus and --reference-pairs apply")
    g.add_argument("--lora-rank", type=int, default=8, help="adapter rank (default 8)")
    g.add_argument("--lora-alpha", type=float, default=16.0, help="adapter scale alpha (default 16)")
    g.add_argument("--lora-targets", default=",".join(("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj",
                                                        "up_proj", "down_proj")),
                   help="comma-separated module names to adapt (default: attention and MLP projections)")
    g.add_argument("--max-length", type=int, default=96, help="tokens per training sequence (default 96)")
    g.add_argument("--train-pairs", type=int, help="train on a seeded subset of this many pairs")
    g.add_argument("--layout", choices=["plain", "chat"], default="plain",
                   help="sequence frame (default plain: <sep> q <sep> r); chosen on validation likelihood")
    g.add_argument("--lowercase", action="store_true", help="lowercase every utterance (training and scoring)")
    p.set_defaults(func=cmd_train_lm)


def cmd_train_lm(args) -> int:
    import sys

    from dialeval.metrics.lm.train import LMTrainConfig, train_lm

    if args.lora:
        return cmd_train_lora(args)
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


def cmd_train_lora(args) -> int:
    import sys

    from dialeval.metrics.lm.lora import LoraTrainConfig, train_lora

    cfg = LoraTrainConfig(rank=args.lora_rank, alpha=args.lora_alpha,
                          targets=tuple(t.strip() for t in args.lora_targets.split(",") if t.strip()),
                          lr=args.lr or 2e-4, steps=args.max_steps or 2000, max_minutes=args.max_minutes,
                          batch_size=args.batch_size, max_length=args.max_length, train_pairs=args.train_pairs,
                          reference_pairs=min(args.reference_pairs, 500) if args.reference_pairs == 2000 else
                          args.reference_pairs, layout=args.layout, lowercase=args.lowercase, seed=args.seed,
                          device=args.device)
    if args.threads:
        import torch

        torch.set_num_threads(args.threads)
    info = train_lora(args.corpus, args.output, args.lora, cfg, reference_corpus=args.reference_corpus,
                      log=lambda m: print(m, file=sys.stderr))
    from dialeval.data.writers import json_value

    print(json.dumps(json_value({k: info[k] for k in ("base", "steps_done", "stopped_by", "train_seconds",
                                                      "cpu_seconds", "final_loss", "train_tokens_seen") if k in info})))
    return 0
