"""The one causal-LM training loop (`models/training.py`) that the LM and LoRA trainers share.

It replaced two copies of the same loop; these tests hold it to that loop written out step by
step (pad with the separator, loss from each sequence's head on, backward, clip at 1, AdamW,
schedule, gradients cleared), bit for bit, so a change to the shared loop that would move a
trained number shows here before it shows in a rebuilt model."""

from __future__ import annotations

import math
import random

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from dialeval.models.training import causal_lm_batch, train_causal_lm  # noqa: E402

SEQUENCES = [([0, 5, 6, 7, 0, 8, 9, 0], 0), ([0, 3, 4, 0, 5, 0], 4), ([0, 9, 8, 7, 6, 0, 1, 2, 3, 0], 5),
             ([0, 2, 0, 4, 4, 0], 3), ([0, 1, 1, 1, 0, 7, 0], 0)]


def _model(seed=0):
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.manual_seed(seed)
    return GPT2LMHeadModel(GPT2Config(vocab_size=12, n_positions=16, n_embd=16, n_layer=1, n_head=2))


def _schedule(step):
    return min(1.0, (step + 1) / 3) * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * min(1.0, step / 7))))


def _passes(seed):
    rng = random.Random(seed)

    def one():
        order = list(range(len(SEQUENCES)))
        rng.shuffle(order)
        return [order[k:k + 2] for k in range(0, len(order), 2)]
    return one


def _by_hand(model, steps, seed):
    params = list(model.parameters())
    optimizer = torch.optim.AdamW(params, lr=1e-2, weight_decay=0.01)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, _schedule)
    passes, step, losses, tokens = _passes(seed), 0, [], 0
    model.train()
    while step < steps:
        for rows in passes():
            if step >= steps:
                break
            width = max(len(SEQUENCES[i][0]) for i in rows)
            ids = torch.full((len(rows), width), 0, dtype=torch.long)
            mask = torch.zeros((len(rows), width), dtype=torch.long)
            labels = torch.full((len(rows), width), -100, dtype=torch.long)
            for k, i in enumerate(rows):
                seq, head = SEQUENCES[i]
                ids[k, :len(seq)] = torch.tensor(seq)
                mask[k, :len(seq)] = 1
                labels[k, head:len(seq)] = torch.tensor(seq[head:])
            out = model(input_ids=ids, attention_mask=mask, labels=labels)
            out.loss.backward()
            torch.nn.utils.clip_grad_norm_(params, 1.0)
            optimizer.step()
            scheduler.step()
            optimizer.zero_grad(set_to_none=True)
            losses.append(out.loss.item())
            tokens += int(mask.sum())
            step += 1
    return losses, tokens


def test_the_shared_loop_is_the_loop_written_out():
    a, b = _model(), _model()
    torch.manual_seed(11)          # dropout is on: both runs draw the same masks
    hand, tokens = _by_hand(a, 7, seed=3)
    torch.manual_seed(11)
    state = train_causal_lm(b, b.parameters(), SEQUENCES, pad_id=0, passes=_passes(3), total_steps=7, lr=1e-2,
                            weight_decay=0.01, schedule=_schedule)
    assert state.steps == 7 and not state.out_of_time
    assert state.losses == hand and state.tokens == tokens
    for (name, x), (_, y) in zip(a.state_dict().items(), b.state_dict().items()):
        assert torch.equal(x, y), name


def test_labels_start_at_each_sequences_head():
    ids, mask, labels = causal_lm_batch(SEQUENCES, [1, 2], pad_id=0)
    assert ids.shape == (2, 10) and mask.sum().item() == 6 + 10
    assert labels[0].tolist() == [-100] * 4 + [5, 0] + [-100] * 4
    assert labels[1, :5].tolist() == [-100] * 5 and labels[1, 5:].tolist() == [0, 1, 2, 3, 0]


def test_out_of_time_stops_before_the_next_step_and_says_so():
    model = _model()
    calls = []

    def after(state):
        calls.append(state.steps)

    state = train_causal_lm(model, model.parameters(), SEQUENCES, pad_id=0, passes=_passes(1), total_steps=50,
                            lr=1e-3, weight_decay=0.0, schedule=lambda s: 1.0,
                            out_of_time=lambda: len(calls) >= 4, after_step=after)
    assert state.steps == 4 and state.out_of_time and calls == [1, 2, 3, 4]


def test_a_pass_without_batches_ends_the_loop():
    model = _model()
    state = train_causal_lm(model, model.parameters(), SEQUENCES, pad_id=0, passes=lambda: [], total_steps=5,
                            lr=1e-3, weight_decay=0.0, schedule=lambda s: 1.0)
    assert state.steps == 0 and not state.out_of_time
