"""The rated file of issue 21: three chatbots answering the same 15 items (45 rows).

bot_c's contexts carry a trailing "!" on 13 of the 15 items (a data-entry difference that
makes pairing by context fail), so a comparison paired by context pairs bot_c with the other
bots on 2 items only, while bot_a and bot_b share all 15. Items also carry `dialogue_id` and
`turn` (5 dialogues of 3 turns) so that the explicit keys can be tested; `records(keys=False)`
leaves them out, as the issue's file had none.
"""

from __future__ import annotations

import json
from pathlib import Path

CONTEXTS = [
    "hi how are you today", "what did you do this weekend", "do you like cooking",
    "where should we eat tonight", "i am tired of my job", "any plans for the holidays",
    "what music do you listen to", "is it going to rain", "my cat is sick",
    "can you recommend a book", "i just moved to a new city", "what is your favourite film",
    "how do i learn to swim", "i lost my keys again", "tell me something funny",
]
REFERENCES = [
    ["i am fine thanks and you", "i am doing well thank you"],
    ["i went hiking with my friends", "we went hiking in the hills"],
    ["yes i love cooking pasta", "i like to cook pasta at home"],
    ["let us try the new thai place", "the thai place downtown is good"],
    ["maybe it is time to look for a new one", "you could look for another job"],
    ["i will visit my family", "we plan to visit family"],
    ["mostly jazz and some rock", "i listen to jazz a lot"],
    ["the forecast says rain tomorrow", "yes rain is expected tomorrow"],
    ["i hope your cat gets better soon", "take the cat to the vet"],
    ["you should read the old man and the sea", "try the old man and the sea"],
    ["welcome do you like the city", "how do you like the new city"],
    ["i love the matrix", "the matrix is my favourite"],
    ["start in shallow water with a teacher", "take lessons with a teacher"],
    ["check your coat pockets", "look in your coat pockets again"],
    ["why did the chicken cross the road", "a chicken crossed the road to be funny"],
]
RESPONSES = {
    # close to the references
    "bot_a": [
        "i am fine thank you", "i went hiking with friends", "yes i love cooking",
        "let us try the thai place", "look for a new job", "i will visit my family",
        "i listen to jazz", "rain is expected tomorrow", "take your cat to the vet",
        "read the old man and the sea", "do you like the new city", "the matrix is my favourite",
        "take lessons with a teacher", "check your pockets", "why did the chicken cross the road",
    ],
    # generic
    "bot_b": [
        "i do not know", "nothing much", "maybe", "i do not know where", "that is sad",
        "not really", "all kinds", "maybe it will", "oh no", "i do not read", "nice",
        "i like films", "just try", "oh no", "i am not funny",
    ],
    # in between
    "bot_c": [
        "i am fine", "hiking with my friends", "i like to cook pasta", "the thai place is good",
        "you could look for a job", "visit family", "jazz a lot", "the forecast says rain",
        "i hope your cat gets better", "try the old man", "welcome to the city",
        "the matrix", "start in shallow water", "look in your coat", "a chicken crossed the road",
    ],
}
RATINGS = {"bot_a": [4, 5, 4, 4, 3, 4, 4, 5, 4, 4, 3, 5, 4, 4, 4],
           "bot_b": [2, 1, 2, 1, 2, 1, 2, 2, 1, 1, 2, 2, 1, 2, 1],
           "bot_c": [3, 4, 3, 3, 3, 2, 3, 4, 4, 3, 3, 3, 3, 3, 4]}
BANG = set(range(2, 15))        # bot_c's contexts end in "!" on these 13 items


def records(keys: bool = True) -> list[dict]:
    out = []
    for bot, responses in RESPONSES.items():
        for i, response in enumerate(responses):
            context = CONTEXTS[i] + ("!" if bot == "bot_c" and i in BANG else "")
            row = {"system": bot, "context": [context], "response": response,
                   "references": REFERENCES[i], "ratings": {"overall": [RATINGS[bot][i]]}}
            if keys:
                row["dialogue_id"] = f"d{i // 3}"
                row["turn"] = i % 3
            out.append(row)
    return out


def write(path: Path, keys: bool = True) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records(keys)), encoding="utf-8")
    return path
