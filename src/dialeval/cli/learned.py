"""Command line for the learned evaluators: `dialeval train dialogue-encoder` and `train adem`.

Scoring needs no code here: `--adem-model DIR` is generated from the metrics' constructors.
"""

from __future__ import annotations

import json
import sys


def _log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def add_train_commands(train_sub) -> None:
    p = train_sub.add_parser("dialogue-encoder",
                             help="pre-train the hierarchical GRU dialogue encoder (VHRED) for ADEM")
    p.add_argument("--corpus", action="append", required=True,
                   help="DailyDialog file/zip, JSONL dialogues, plain text, or topical-chat:FILE.json "
                        "(repeatable)")
    p.add_argument("-o", "--output", required=True, help="encoder folder to write")
    p.add_argument("--eval-corpus", help="report next-utterance perplexity on this corpus after training")
    p.add_argument("--eval-limit", type=int, help="only the first N dialogues of --eval-corpus")
    p.add_argument("--max-minutes", type=float, default=60.0, help="stop training after this long (default 60)")
    p.add_argument("--max-steps", type=int, help="stop after this many batches")
    p.add_argument("--epochs", type=float, default=3.0, help="passes over the corpus (default 3)")
    p.add_argument("--device", default="cpu", help="cpu or cuda[:N]")
    p.add_argument("--threads", type=int, default=0,
                   help="CPU threads (default: $OMP_NUM_THREADS, else the idle cores)")
    p.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    from dialeval.metrics.learned.adem.hred import DialogueEncoder

    defaults = DialogueEncoder().get_params()
    for name in ("vocab_size", "emb_dim", "utt_dim", "ctx_dim", "latent_dim", "dec_dim", "max_turns", "max_len",
                 "word_drop", "kl_anneal_steps", "lr", "batch_size"):
        kind = float if isinstance(defaults[name], float) else int
        p.add_argument("--" + name.replace("_", "-"), type=kind, default=defaults[name],
                       help=f"default {defaults[name]}")
    p.set_defaults(func=cmd_train_encoder)

    p = train_sub.add_parser("adem", help="train ADEM on rated data sets (NAME:PATH, see `dialeval datasets`)")
    p.add_argument("--data", action="append", required=True,
                   help="rated set as NAME:FOLDER (e.g. usr-tc:../shared/data/usr), or a JSONL/CSV file "
                        "with a 1-5 rating (repeatable)")
    p.add_argument("--quality",
                   help="the rated quality to train on (default: a registered set's own, e.g. overall; a file's "
                        "only quality or `score`; a file with several others must name one)")
    p.add_argument("--encoder", default="minilm",
                   help="minilm (all-MiniLM-L6-v2), minilm:DIR (a sentence-transformers folder) or hred:DIR "
                        "(a `train dialogue-encoder` folder)")
    p.add_argument("-o", "--output", required=True, help="ADEM model folder to write")
    p.add_argument("--variant", default="adem", choices=["adem", "c_adem", "r_adem"],
                   help="adem (context and reference), c_adem (context only) or r_adem (reference only)")
    p.add_argument("--preset", default="paper", choices=["paper", "released"],
                   help="paper: L1 on M, N, PCA 7; released: L2, PCA 50")
    p.add_argument("--pca-dims", type=int, help="PCA dimensions (default: 7 paper, 50 released; 0: all)")
    p.add_argument("--search", action="store_true",
                   help="train one model per PCA size (7, 50, all) and learning rate (0.01, 0.001) and keep "
                        "the best on the validation split (overrides --pca-dims and --lr)")
    p.add_argument("--gamma", type=float, help="regularisation weight (default 0.02)")
    p.add_argument("--lr", type=float, default=0.01, help="learning rate of M and N (default 0.01)")
    p.add_argument("--batch-size", type=int, default=16, help="rows per training step (default 16)")
    p.add_argument("--max-epochs", type=int, default=100, help="most passes over the training rows (default 100)")
    p.add_argument("--patience", type=int, default=10,
                   help="epochs without a better validation loss before stopping (default 10)")
    p.add_argument("--context-turns", type=int, default=3, help="minilm: the last k context turns, joined")
    p.add_argument("--no-oversample", action="store_true", help="no length-binned oversampling by score class")
    p.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    from dialeval.metrics.learned.adem.model import Adem

    ft = Adem().get_params()
    p.add_argument("--finetune-layers", type=int, default=ft["finetune_layers"],
                   help="minilm only: after the frozen fit, fine-tune the top N of MiniLM's 6 layers with M and N "
                        "under the ADEM loss, early-stopped on the same validation split (default 0: frozen, "
                        "as the paper)")
    p.add_argument("--finetune-lr", type=float, default=ft["finetune_lr"],
                   help=f"step size of the tuned layers (default {ft['finetune_lr']:g}; M and N keep --lr)")
    p.add_argument("--finetune-epochs", type=int, default=ft["finetune_epochs"],
                   help=f"passes over the training rows when fine-tuning (default {ft['finetune_epochs']})")
    p.add_argument("--max-minutes", type=float,
                   help="stop fine-tuning after this many minutes, keeping the best validation state")
    p.set_defaults(func=cmd_train_adem)


def cmd_train_encoder(args) -> int:
    from dialeval.metrics.learned.adem.data import read_dialogue_corpus
    from dialeval.metrics.learned.adem.hred import DialogueEncoder

    dialogues = [d for path in args.corpus for d in read_dialogue_corpus(path)]
    eval_dialogues = read_dialogue_corpus(args.eval_corpus) if args.eval_corpus else None
    if eval_dialogues is not None and args.eval_limit:
        eval_dialogues = eval_dialogues[: args.eval_limit]
    enc = DialogueEncoder(vocab_size=args.vocab_size, emb_dim=args.emb_dim, utt_dim=args.utt_dim,
                          ctx_dim=args.ctx_dim, latent_dim=args.latent_dim, dec_dim=args.dec_dim,
                          max_turns=args.max_turns, max_len=args.max_len, word_drop=args.word_drop,
                          kl_anneal_steps=args.kl_anneal_steps, lr=args.lr, batch_size=args.batch_size,
                          epochs=args.epochs, max_minutes=args.max_minutes, max_steps=args.max_steps,
                          seed=args.seed, threads=args.threads, device=args.device)
    _log(f"training on {len(dialogues)} dialogues")
    enc.fit(dialogues, eval_dialogues=eval_dialogues, progress=_log)
    enc.save(args.output)
    info = {k: v for k, v in enc.training_.items() if k != "log"}
    info["output"] = args.output
    print(json.dumps(info))
    return 0


def cmd_train_adem(args) -> int:
    import time

    from dialeval.metrics.learned.adem.data import load_rated
    from dialeval.metrics.learned.adem.model import SEARCH_GRID, Adem, search_rows

    model = Adem(encoder=args.encoder, variant=args.variant, preset=args.preset, pca_dims=args.pca_dims,
                 gamma=args.gamma, lr=args.lr, batch_size=args.batch_size, max_epochs=args.max_epochs,
                 patience=args.patience, context_turns=args.context_turns, oversample=not args.no_oversample,
                 seed=args.seed, finetune_layers=args.finetune_layers, finetune_lr=args.finetune_lr,
                 finetune_epochs=args.finetune_epochs, finetune_minutes=args.max_minutes)
    model._check()        # a setting error (e.g. fine-tuning hred) before the data is read
    rows = [r for spec in args.data for r in load_rated(spec, quality=args.quality)]
    started = time.time()
    if args.search:
        _search, model = search_rows(model, rows, SEARCH_GRID, progress=_log)
    else:
        model.fit(rows, progress=_log)
    model.save(args.output)
    print(json.dumps({"output": args.output, "rows": len(rows), "total_seconds": round(time.time() - started, 1),
                      **{k: v for k, v in model.training_.items() if k != "curve"}}))
    return 0
