"""Command line for the MME sub-metrics: `dialeval train mme`. Their score options
(`--mme-model DIR`, `--mme-norm`) are generated from the metric constructors like every other
metric's. Only argparse here; the work is in `dialeval.metrics.mme`."""

from __future__ import annotations


from dialeval.models.commands import Argument, Options, TrainCommand


def cmd_train(args) -> int:
    from dialeval.cli.options import estimator_kwargs
    from dialeval.metrics.mme.model import parse_only, train_mme

    only = parse_only(args.only)
    from dialeval.progress import say as say_line

    say = say_line if not args.quiet else None
    root = train_mme(args.corpus, args.output, engagement=args.engagement, only=only,
                     encoder_mode="finetune" if args.finetune else "frozen",
                     **estimator_kwargs(args, args._estimator_flags), say=say,
                     checkpoint=getattr(args, "_checkpoint", None))
    for name in only:
        entry = root["submetrics"][name]
        info = entry["info"]
        size = info.get("examples") or info.get("train_sentences")
        print(f"{name}: {size} examples, {entry['wall_seconds']} s wall / {entry['cpu_seconds']} s CPU, "
              f"held-out {('loss ' + str(info['valid_loss'])) if 'valid_loss' in info else 'mean NCE ' + str(info.get('held_out_mean_nce'))}")
    print(f"MME model written to {args.output} ({', '.join(sorted(root['submetrics']))})")
    return 0


TRAIN_COMMANDS = [TrainCommand(
    "mme", "train the MME-CRS sub-metrics (FM, RM, TCM, EM, SM) into one folder",
    estimator="dialeval.metrics.mme.model:MMETrainer", run="dialeval.cli.mme:cmd_train", arguments=(
        Argument("--corpus", required=True, action="append",
                 help="DailyDialog train (train.zip or dialogues_train.txt), or NAME:FILE for a public corpus "
                      "read by name (topical-chat:, byu-chitchat:, cmu-dog:, dailydialog-pp:, convai2-wild:, "
                      "synthetic-persona-chat:; `dialeval datasets --sources`); repeatable (the corpora are read "
                      "as one); test files, files that are not train-safe, and DailyDialog's valid are refused"),
        Argument("--engagement", help="the predictive-engagement data folder (needed for em)"),
        Argument("-o", "--output", required=True,
                 help="model folder to write (other sub-metrics in it are kept)"),
        Argument("--only", help="comma-separated subset of fm,rm,tcm,em,sm (default: all)"),
        Argument("--finetune", action="store_true",
                 help="fine-tune the top MiniLM layers with the FM, RM and EM heads (default: frozen encoder, "
                      "heads only); the tuned layers are stored in each sub-metric's folder"),
        # the trainer's settings from its constructor; --only and --finetune spell `only` and `encoder_mode`
        Options(exclude=("only", "encoder_mode")),
        Argument("--quiet", action="store_true", help="no progress lines on stderr")))]
