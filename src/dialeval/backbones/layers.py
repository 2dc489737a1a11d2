"""A BERT-style encoder split at a layer: embeddings, a run of layers, and the attention mask in
the form those layers expect. The tuner trains the top layers of this split, and the lower
layers' output is computed once per text (see tuning.py)."""

from __future__ import annotations


def encoder_layers(model):
    """The model's list of transformer layers (BERT, MiniLM, MPNet, RoBERTa keep it at
    `encoder.layer`)."""
    from ..errors import DialevalError

    try:
        return model.encoder.layer
    except AttributeError:
        raise DialevalError(f"{type(model).__name__}: no encoder.layer list; top-layer tuning needs a "
                            "BERT-style encoder") from None


def _mask(model, hidden, attention_mask):
    """The attention mask in the form the model's layers expect (eager, sdpa, ...)."""
    from transformers.masking_utils import create_bidirectional_mask

    return create_bidirectional_mask(config=model.config, inputs_embeds=hidden, attention_mask=attention_mask)


def run_layers(model, layers, hidden, attention_mask):
    mask = _mask(model, hidden, attention_mask)
    for layer in layers:
        hidden = layer(hidden, mask)
        if isinstance(hidden, tuple):          # older transformers return (hidden, ...)
            hidden = hidden[0]
    return hidden


def embed(model, input_ids, token_type_ids=None):
    if token_type_ids is None:
        return model.embeddings(input_ids=input_ids)
    return model.embeddings(input_ids=input_ids, token_type_ids=token_type_ids)


def pad_states(states):
    """Token-state tensors of different lengths as one zero-padded batch and its mask."""
    import torch

    width = max(s.shape[0] for s in states)
    device = states[0].device
    hidden = torch.zeros(len(states), width, states[0].shape[1], device=device)
    att = torch.zeros(len(states), width, dtype=torch.long, device=device)
    for r, s in enumerate(states):
        hidden[r, :s.shape[0]] = s
        att[r, :s.shape[0]] = 1
    return hidden, att


def truncated(model, n_layers: int):
    """`model` cut after its first `n_layers` transformer layers, sharing every weight, so that
    reading hidden state `n_layers` never runs the layers above it (BERTScore reads layer 4 of 6,
    8 of 12). The copy is shallow (new module lists, the same parameters): the cached model that
    other families share is left whole. The pooler is dropped: nothing reads it. A model without
    an `encoder.layer` list, or a cut at its full depth or at 0 (transformers records no state for
    an empty layer list), comes back as it is."""
    import copy

    import torch

    layers = getattr(getattr(model, "encoder", None), "layer", None)
    if not isinstance(layers, torch.nn.ModuleList) or not 1 <= n_layers < len(layers):
        return model
    try:        # transformers >= 5 records hidden states with hooks on the (shared) layers, installed
        # once per model object: installed on the whole model first, the view inherits the mark
        # instead of hooking the same layers twice (which would record every state twice)
        from transformers.utils.output_capturing import maybe_install_capturing_hooks
    except ImportError:
        pass
    else:
        maybe_install_capturing_hooks(model)
    view = copy.copy(model)
    view._modules = dict(model._modules)
    encoder = copy.copy(model.encoder)
    encoder._modules = dict(model.encoder._modules)
    encoder._modules["layer"] = torch.nn.ModuleList(list(layers)[:n_layers])
    view._modules["encoder"] = encoder
    if view._modules.get("pooler") is not None:
        view._modules["pooler"] = None
    return view


def states_reader(model, deepest: int | None, whole: bool = False):
    """A function from one tokenised batch to its hidden states 0..`deepest` (at least) that
    computes no layer above `deepest`: the layers BERTScore never looks at are a third of its
    pass at the default layer. Layer 0 alone is the embedding module's output, which is what the
    whole model records as its state 0 (transformers cannot run an empty layer list). `whole`, or
    a depth not known (None), runs every layer: the reference the cut is measured and tested
    against, bit for bit."""
    if whole or deepest is None:
        return lambda enc: model(**enc, output_hidden_states=True).hidden_states
    if deepest == 0 and getattr(model, "embeddings", None) is not None:
        return lambda enc: (embed(model, enc["input_ids"], enc.get("token_type_ids")),)
    cut = truncated(model, deepest)
    return lambda enc: cut(**enc, output_hidden_states=True).hidden_states
