"""Command line for the MME sub-metrics: `dialeval train mme`. Their score options
(`--mme-model DIR`, `--mme-norm`) are generated from the metric constructors like every other
metric's. Only argparse here; the work is in `dialeval.metrics.mme`."""

from __future__ import annotations

import sys


def cmd_train(args) -> int:
    from dialeval.metrics.mme.model import parse_only, train_mme

    only = parse_only(args.only)
    say = (lambda m: print(m, file=sys.stderr)) if not args.quiet else None
    root = train_mme(args.corpus, args.output, engagement=args.engagement, only=only,
                     max_minutes=args.max_minutes, max_examples=args.max_examples, sm_sentences=args.sm_sentences, seed=args.seed,
                     device=args.device, encoder=args.encoder,
                     encoder_mode="finetune" if args.finetune else "frozen", finetune_layers=args.finetune_layers,
                     finetune_epochs=args.finetune_epochs, finetune_lr=args.finetune_lr, say=say)
    for name in only:
        entry = root["submetrics"][name]
        info = entry["info"]
        size = info.get("examples") or info.get("train_sentences")
        print(f"{name}: {size} examples, {entry['wall_seconds']} s wall / {entry['cpu_seconds']} s CPU, "
              f"held-out {('loss ' + str(info['valid_loss'])) if 'valid_loss' in info else 'mean NCE ' + str(info.get('held_out_mean_nce'))}")
    print(f"MME model written to {args.output} ({', '.join(sorted(root['submetrics']))})")
    return 0


def add_train_commands(sub) -> None:
    p = sub.add_parser("mme", help="train the MME-CRS sub-metrics (FM, RM, TCM, EM, SM) into one folder")
    p.add_argument("--corpus", required=True,
                   help="DailyDialog train (train.zip or dialogues_train.txt; valid/test are refused)")
    p.add_argument("--engagement", help="the predictive-engagement data folder (needed for em)")
    p.add_argument("-o", "--output", required=True, help="model folder to write (other sub-metrics in it are kept)")
    p.add_argument("--only", help="comma-separated subset of fm,rm,tcm,em,sm (default: all)")
    p.add_argument("--max-minutes", type=float, help="time budget for the whole run, shared among the sub-metrics")
    p.add_argument("--max-examples", type=int, default=3000,
                   help="DailyDialog train utterances sampled for FM/RM/TCM (default 3000)")
    p.add_argument("--sm-sentences", type=int, default=10000,
                   help="DailyDialog train sentences the specificity masked LM trains on (default 10000)")
    p.add_argument("--device", default="cpu", help="cpu (the only one implemented)")
    p.add_argument("--finetune", action="store_true",
                   help="fine-tune the top MiniLM layers with the FM, RM and EM heads (default: frozen encoder, "
                        "heads only); the tuned layers are stored in each sub-metric's folder")
    p.add_argument("--finetune-layers", type=int, default=2,
                   help="with --finetune: how many top MiniLM layers to train, 1..6 (default 2)")
    p.add_argument("--finetune-epochs", type=int, default=3,
                   help="with --finetune: epochs over the training rows after the head-only stage (default 3)")
    p.add_argument("--finetune-lr", type=float, default=3e-5,
                   help="with --finetune: AdamW learning rate of the MiniLM layers; the head gets 10x (default 3e-5)")
    p.add_argument("--encoder", help="sentence-transformers folder to use instead of all-MiniLM-L6-v2")
    p.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    p.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    p.set_defaults(func=cmd_train)
