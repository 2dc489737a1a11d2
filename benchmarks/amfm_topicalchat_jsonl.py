"""Write Topical-Chat conversations (its own JSON: id -> {"content": [{"message": ...}]}) as
JSONL dialogues, the corpus format `dialeval train amfm --corpus` reads. Used to build the
AM-FM paper's training substitute (a), DailyDialog train + Topical-Chat valid; the output is
derived data for a scratch folder, never for the repository.

    python3 benchmarks/amfm_topicalchat_jsonl.py ../shared/data/topical-chat/conversations/valid_freq.json \
        ../shared/data/topical-chat/conversations/valid_rare.json -o tc_valid.jsonl
"""

from __future__ import annotations

import argparse
import json


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("files", nargs="+")
    ap.add_argument("-o", "--output", required=True)
    args = ap.parse_args()
    n = 0
    with open(args.output, "w", encoding="utf-8") as out:
        for path in args.files:
            with open(path, encoding="utf-8") as handle:
                conversations = json.load(handle)
            for conv in conversations.values():
                turns = [t["message"].strip() for t in conv["content"] if t["message"].strip()]
                out.write(json.dumps({"turns": turns}, ensure_ascii=False) + "\n")
                n += 1
    print(f"{n} dialogues -> {args.output}")


if __name__ == "__main__":
    main()
