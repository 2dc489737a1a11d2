"""Written negatives (`--rm-written-share`): replies people wrote to be wrong for a dialogue's last
turn (DailyDialog++'s adversarial negatives, read by the `dailydialog-pp:` corpus reader) join
RM's training rows as negatives of the pair that ends that dialogue, and only of that pair."""

from __future__ import annotations

import json


def test_written_negatives_follow_the_dialogue_and_end_pair_only(tmp_path):
    from dialeval.metrics.mme.data import pair_places, written_negatives
    from dialeval.metrics.mme.relevance import RelevanceModel

    item = {"id": 1, "context": ["Do you like tea ?", "Yes , a lot ."], "positive_responses": ["Me too !"],
            "adversarial_negative_responses": ["Tea leaves are dried in the sun .", "A lot of tea is grown ."]}
    path = tmp_path / "dev.train-safe.json"
    path.write_text(json.dumps(item) + "\n")
    written = written_negatives([f"dailydialog-pp:{path}", str(tmp_path / "plain.txt")])
    dialogue = ["Do you like tea ?", "Yes , a lot .", "Me too !"]
    assert written == {tuple(dialogue): item["adversarial_negative_responses"]}
    other = ["hello", "hi", "how are you"]
    dialogues = [other, dialogue]
    places = pair_places(dialogues)                  # (0,1) (0,2) (1,1) (1,2): only (1,2) ends a written dialogue
    rm = RelevanceModel(seed=0, written_share=1.0)
    made = rm._written_negatives(places, dialogues, written)
    assert [i for i, _ in made] == [places.index((1, 2))]
    assert made[0][1] in item["adversarial_negative_responses"]
    assert RelevanceModel(seed=0, written_share=0.0)._written_negatives(places, dialogues, written) == []
    assert "written_share" not in RelevanceModel().recorded_params()     # quiet: earlier folders rebuild
