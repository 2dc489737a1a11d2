"""Command line for the MME sub-metrics: `dialeval train mme`. Their score options
(`--mme-model DIR`, `--mme-norm`) are generated from the metric constructors like every other
metric's. Only argparse here; the work is in `dialeval.metrics.mme`."""

from __future__ import annotations

import sys


def cmd_train(args) -> int:
    from dialeval.cli.options import estimator_kwargs
    from dialeval.metrics.mme.model import parse_only, train_mme

    only = parse_only(args.only)
    say = (lambda m: print(m, file=sys.stderr)) if not args.quiet else None
    root = train_mme(args.corpus, args.output, engagement=args.engagement, only=only,
                     encoder_mode="finetune" if args.finetune else "frozen",
                     **estimator_kwargs(args, args._estimator_flags), say=say)
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
    p.add_argument("--finetune", action="store_true",
                   help="fine-tune the top MiniLM layers with the FM, RM and EM heads (default: frozen encoder, "
                        "heads only); the tuned layers are stored in each sub-metric's folder")
    from dialeval.cli.options import add_estimator_flags
    from dialeval.metrics.mme.model import MMETrainer

    # the trainer's settings from its constructor; --only and --finetune spell `only` and `encoder_mode`
    p.set_defaults(_estimator_flags=add_estimator_flags(p, MMETrainer, exclude=["only", "encoder_mode"]))
    p.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    p.set_defaults(func=cmd_train)
