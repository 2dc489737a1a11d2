"""Rewrite docs/models/NAME.md from the built default models, keeping each card's hand-written
notes (the paragraphs after the generated first paragraph of "## Numbers").

    python3 tools/model_cards.py [NAME ...]      # default: every default that has a card
"""

from __future__ import annotations

import os
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "src"))


def notes_of(text: str) -> str:
    if "## Numbers" not in text:
        return ""
    after = text.split("## Numbers", 1)[1].strip().split("\n\n")
    return "\n\n".join(after[1:]).strip()


def main(names: list[str]) -> None:
    from dialeval.cli.models_build import ORDER, card_markdown
    from dialeval.models.defaults import default_model_dir

    unknown = [n for n in names if n not in ORDER]
    if unknown:
        sys.exit(f"model_cards.py: no default named {unknown[0]!r}; choose from {', '.join(ORDER)}")
    for name in names or ORDER:
        path = os.path.join(REPO, "docs", "models", f"{name}.md")
        old = open(path, encoding="utf-8").read() if os.path.exists(path) else ""
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(card_markdown(name, default_model_dir(name), notes_of(old)))
        print(f"wrote {os.path.relpath(path, REPO)}")


if __name__ == "__main__":
    main(sys.argv[1:])
