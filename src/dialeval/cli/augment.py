"""`dialeval augment` (WordNet substitution or CTG) and `dialeval diversity` (eq. 5-6, distinct-n)."""

from __future__ import annotations

import json
import os


def add_commands(sub) -> None:
    p = sub.add_parser("augment", help="augment queries: WordNet substitution or a conditional text generator")
    p.add_argument("input", help="JSONL of {\"query\", \"context\"} or a corpus (each dialogue's last turn is the query)")
    p.add_argument("--method", required=True, choices=["wordnet", "ctg"],
                   help="wordnet: synonym substitution; ctg: a conditional generator (--lm-model)")
    p.add_argument("-o", "--output", help="JSONL output (default: stdout)")
    p.add_argument("-k", type=int, default=4, help="augmented queries per query (default 4)")
    p.add_argument("--limit", type=int, help="first N queries only")
    p.add_argument("--corpus-format", choices=["dailydialog", "jsonl", "text"],
                   help="format of a corpus INPUT (default: guessed)")
    p.add_argument("--lm-model", help="ctg: causal-LM folder from `dialeval train lm`")
    p.add_argument("--history-turns", type=int, default=1, help="ctg: history turns given to the generator")
    p.add_argument("--treebank", help="wordnet: UD English-EWT folder to train the POS tagger on first use")
    p.add_argument("--tagger", help="wordnet: POS tagger artifact folder (default: the user cache)")
    p.add_argument("--device", default="cpu", help="torch device for ctg (default cpu)")
    p.set_defaults(func=cmd_augment)

    p = sub.add_parser("diversity", help="n-gram entropy and distinct-n of groups of responses")
    p.add_argument("input", help="groups: CSV (Answer Group column), JSONL {\"responses\": [...]}, or text; "
                                 "with --system, the output of `dialeval augment`")
    p.add_argument("--format", choices=["csv", "jsonl", "text"], help="input format (default: by extension)")
    p.add_argument("--group-size", type=int, help="text: every N lines form a group (default: blank-line separated)")
    p.add_argument("--encoding", help="input encoding (default: UTF-8, else cp1252)")
    p.add_argument("--system", help="module:function(context_turns, query) -> response, asked for every augmented query")
    p.add_argument("--orders", default="1,2,3", help="n-gram orders, comma-separated (default 1,2,3)")
    p.add_argument("--keep-case", action="store_true", help="do not lower-case tokens")
    p.add_argument("-o", "--output", help="write the groups with their responses as JSONL")
    p.add_argument("--json", action="store_true", help="one JSON object instead of a table")
    p.set_defaults(func=cmd_diversity)


def read_queries(path: str, corpus_format: str | None = None) -> list[dict]:
    """Queries with their history, from a queries JSONL or from a dialogue corpus."""
    from dialeval.data.corpus import read_corpus
    from dialeval.errors import InputError

    if path.lower().endswith(".jsonl") and corpus_format is None:
        with open(path, encoding="utf-8") as handle:
            first = next((line for line in handle if line.strip()), "")
        try:
            is_queries = isinstance(json.loads(first), dict) and "query" in json.loads(first)
        except ValueError:
            is_queries = False
        if is_queries:
            out = []
            with open(path, encoding="utf-8") as handle:
                for number, line in enumerate(handle, 1):
                    if not line.strip():
                        continue
                    obj = json.loads(line)
                    if not isinstance(obj.get("query"), str):
                        raise InputError("expected a string", path=path, line=number, field="query")
                    ctx = obj.get("context", [])
                    ctx = [ctx] if isinstance(ctx, str) else list(ctx)
                    out.append({"id": obj.get("id", str(len(out))), "context": ctx, "query": obj["query"]})
            return out
    dialogues = read_corpus(path, corpus_format)
    return [{"id": str(i), "context": d[:-1], "query": d[-1]} for i, d in enumerate(dialogues) if d]


def cmd_augment(args) -> int:
    from dialeval.data.writers import atomic_write
    from dialeval.errors import DialevalError

    queries = read_queries(args.input, args.corpus_format)[: args.limit]
    if args.method == "wordnet":
        from dialeval.augment.postagger import ewt_tagger, load_tagger
        from dialeval.augment.wordnet import WordNetAugmenter

        tagger = load_tagger(args.tagger) if args.tagger else ewt_tagger(args.treebank)
        augmenter = WordNetAugmenter(tagger)
    else:
        if not args.lm_model:
            raise DialevalError("--method ctg needs --lm-model DIR (a generator from `dialeval train lm`)")
        from dialeval.metrics.lm.checkpoint import load_lm
        from dialeval.augment.ctg import CTGAugmenter

        augmenter = CTGAugmenter(load_lm(args.lm_model, args.device), history_turns=args.history_turns)
    rows = []
    for q in queries:
        augmented = augmenter.augment(q["query"], q["context"], args.k)
        rows.append({**q, "method": args.method, "queries": [q["query"]] + augmented})
    lines = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)
    if args.output:
        with atomic_write(args.output) as handle:
            handle.write(lines)
    else:
        print(lines, end="")
    return 0


def load_callable(spec: str):
    import importlib
    import sys

    from dialeval.errors import DialevalError

    module_name, _, name = spec.partition(":")
    if not name:
        raise DialevalError(f"--system {spec!r}: expected module:function")
    sys.path.insert(0, os.getcwd())
    try:
        module = importlib.import_module(module_name)
        return getattr(module, name)
    except (ImportError, AttributeError) as exc:
        raise DialevalError(f"--system {spec!r}: cannot import ({exc})") from None


def cmd_diversity(args) -> int:
    from dialeval.data.writers import atomic_write
    from dialeval.report.tables import format_table
    from dialeval.metrics.diversity.entropy import diversity_report, responses_of_system
    from dialeval.metrics.diversity.groups import read_groups

    orders = [int(n) for n in args.orders.split(",") if n.strip()]
    if args.system:
        with open(args.input, encoding="utf-8") as handle:
            augmented = [json.loads(line) for line in handle if line.strip()]
        responses = responses_of_system(load_callable(args.system), augmented)
        groups = [{**g, "responses": r} for g, r in zip(augmented, responses)]
    else:
        groups = read_groups(args.input, args.format, args.group_size, args.encoding)
    report = diversity_report([g["responses"] for g in groups], orders, lower=not args.keep_case)
    if args.output:
        with atomic_write(args.output) as handle:
            for g in groups:
                handle.write(json.dumps(g, ensure_ascii=False) + "\n")
    if args.json:
        print(json.dumps(report))
    else:
        print(format_table(["measure", "value"], [[k, v] for k, v in report.items()]))
    return 0
