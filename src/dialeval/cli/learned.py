"""Command line for the learned evaluators: `dialeval train dialogue-encoder` and `train adem`.

Scoring needs no code here: `--adem-model DIR` is generated from the metrics' constructors.
"""

from __future__ import annotations

import json

from dialeval.models.commands import Argument, Options, TrainCommand


from dialeval.progress import say as _log


TRAIN_COMMANDS = [
    TrainCommand(
        "dialogue-encoder", "pre-train the hierarchical GRU dialogue encoder (VHRED) for ADEM",
        estimator="dialeval.metrics.learned.adem.hred:DialogueEncoder", fit="fit_corpus",
        arguments=(
            Argument("--corpus", action="append", required=True,
                     help="DailyDialog file/zip, JSONL dialogues, plain text, or NAME:FILE for a public "
                          "corpus read by name (`dialeval datasets --sources`); repeatable"),
            Argument("-o", "--output", required=True, help="encoder folder to write"),
            Argument("--eval-corpus", help="report next-utterance perplexity on this corpus after training"),
            Argument("--eval-limit", type=int, help="only the first N dialogues of --eval-corpus"),
            Options())),
    TrainCommand(
        "adem", "train ADEM on rated data sets (NAME:PATH, see `dialeval datasets`)",
        estimator="dialeval.metrics.learned.adem.model:Adem", run="dialeval.cli.learned:cmd_train_adem",
        arguments=(
            Argument("--data", action="append", required=True,
                     help="rated set as NAME:FOLDER (e.g. usr-tc:$DATA/usr), or a JSONL/CSV file "
                          "with a 1-5 rating (repeatable)"),
            Argument("--quality",
                     help="the rated quality to train on (default: a registered set's own, e.g. overall; a file's "
                          "only quality or `score`; a file with several others must name one)"),
            Argument("-o", "--output", required=True, help="ADEM model folder to write"),
            Argument("--search", action="store_true",
                     help="train one model per PCA size (7, 50, all) and learning rate (0.01, 0.001) and keep "
                          "the best on the validation split (overrides --pca-dims and --lr)"),
            Options(aliases={"finetune_minutes": ["--max-minutes"]}))),
]


def cmd_train_adem(args) -> int:
    import time

    from dialeval.cli.options import estimator_kwargs
    from dialeval.metrics.learned.adem.data import load_rated
    from dialeval.metrics.learned.adem.model import SEARCH_GRID, Adem, search_rows

    model = Adem(**estimator_kwargs(args, args._estimator_flags))
    model._check()        # a setting error (e.g. fine-tuning hred) before the data is read
    rows = [r for spec in args.data for r in load_rated(spec, quality=args.quality)]
    started = time.time()
    if args.search:
        _search, model = search_rows(model, rows, SEARCH_GRID, progress=_log,
                                     checkpoint=getattr(args, "_checkpoint", None))
    else:
        model.fit(rows, progress=_log, checkpoint=getattr(args, "_checkpoint", None))
    model.save(args.output)
    print(json.dumps({"output": args.output, "rows": len(rows), "total_seconds": round(time.time() - started, 1),
                      **{k: v for k, v in model.training_.items() if k != "curve"}}))
    return 0
