"""Small MLP heads over frozen features, trained with torch and kept as plain arrays.

Training needs torch; scoring is a numpy forward pass over the stored arrays (`w0, b0, w1,
b1`), so a saved head loads without torch and without pickle. The head is
Linear(d, hidden) -> GELU -> Linear(hidden, 1): a logit for classifiers (binary cross-entropy),
a value passed through a sigmoid for the [0, 1] engagement regressor. Inputs are standardised
with the training mean and standard deviation, stored beside the weights.
"""

from __future__ import annotations

import math
import time

import numpy as np

from ..rowwise import rows_times


class EarlyStopping:
    """The MME networks' one stopping rule: keep the weights of the epoch with the lowest
    validation loss, and stop after `patience` epochs in a row without a gain of 1e-5."""

    def __init__(self, patience: int):
        self.patience = patience
        self.best = math.inf
        self.state = None
        self.bad = 0
        self.history: list[float] = []

    def update(self, net, loss: float) -> bool:
        """Record this epoch's validation loss; True when training should stop."""
        self.history.append(round(loss, 5))
        if loss < self.best - 1e-5:
            self.best, self.bad = loss, 0
            self.state = {k: v.detach().clone() for k, v in net.state_dict().items()}
            return False
        self.bad += 1
        return self.bad >= self.patience

    def restore(self, net) -> None:
        if self.state is not None:
            net.load_state_dict(self.state)


def _gelu(x: np.ndarray) -> np.ndarray:
    from scipy.special import erf

    return 0.5 * x * (1.0 + erf(x / math.sqrt(2.0)))


def head_forward(arrays: dict[str, np.ndarray], x: np.ndarray) -> np.ndarray:
    """Logits (n,) of a stored head for raw features x (n, d)."""
    z = (np.asarray(x, dtype=np.float64) - arrays["mu"]) / arrays["sd"]
    # row by row (metrics/rowwise.py): a sample's logit must not depend on its batch companions
    h = _gelu(rows_times(z, arrays["w0"].T) + arrays["b0"])
    return (rows_times(h, arrays["w1"].T) + arrays["b1"])[:, 0]


def sigmoid(x: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-np.clip(x, -50, 50)))


def train_head(x: np.ndarray, y: np.ndarray, *, hidden: int = 256, epochs: int = 30, lr: float = 1e-3,
               weight_decay: float = 1e-4, dropout: float = 0.1, batch_size: int = 128, seed: int = 0,
               valid_fraction: float = 0.1, patience: int = 4, deadline: float | None = None
               ) -> tuple[dict[str, np.ndarray], dict]:
    """Fit a head to targets y in [0, 1] with binary cross-entropy (hard or soft labels).

    A seeded `valid_fraction` of the rows is held out; the epoch with the lowest held-out loss
    is kept (the paper keeps the checkpoint of lowest evaluation loss). Returns (arrays, info);
    info holds the held-out rows' indices, losses, accuracy and the epochs run."""
    import torch

    from ...backbones import apply_thread_policy

    apply_thread_policy()
    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)
    x = np.asarray(x, dtype=np.float32)
    y = np.asarray(y, dtype=np.float32)
    n = len(x)
    order = rng.permutation(n)
    n_valid = max(1, int(round(n * valid_fraction))) if n >= 10 else 0
    valid_idx, train_idx = order[:n_valid], order[n_valid:]
    mu = x[train_idx].mean(0)
    sd = x[train_idx].std(0) + 1e-6
    xt = torch.from_numpy((x - mu) / sd)
    yt = torch.from_numpy(y)
    net = torch.nn.Sequential(torch.nn.Dropout(dropout), torch.nn.Linear(x.shape[1], hidden),
                              torch.nn.GELU(), torch.nn.Dropout(dropout), torch.nn.Linear(hidden, 1))
    opt = torch.optim.AdamW(net.parameters(), lr=lr, weight_decay=weight_decay)
    loss_fn = torch.nn.BCEWithLogitsLoss()
    stopping = EarlyStopping(patience)
    tr = torch.from_numpy(train_idx)
    va = torch.from_numpy(valid_idx)
    gen = torch.Generator().manual_seed(seed)
    epoch = 0
    for epoch in range(1, epochs + 1):
        net.train()
        perm = tr[torch.randperm(len(tr), generator=gen)]
        for start in range(0, len(perm), batch_size):
            b = perm[start:start + batch_size]
            opt.zero_grad()
            loss = loss_fn(net(xt[b])[:, 0], yt[b])
            loss.backward()
            opt.step()
        net.eval()
        with torch.no_grad():
            vloss = float(loss_fn(net(xt[va])[:, 0], yt[va])) if len(va) else float(loss)
        if stopping.update(net, vloss):
            break
        if deadline is not None and time.monotonic() > deadline:
            break
    stopping.restore(net)
    sd_ = net.state_dict()
    arrays = {"mu": mu.astype(np.float64), "sd": sd.astype(np.float64),
              "w0": sd_["1.weight"].numpy().astype(np.float64), "b0": sd_["1.bias"].numpy().astype(np.float64),
              "w1": sd_["4.weight"].numpy().astype(np.float64), "b1": sd_["4.bias"].numpy().astype(np.float64)}
    info = {"train_rows": int(len(train_idx)), "valid_rows": int(len(valid_idx)), "epochs": epoch,
            "valid_loss": round(stopping.best, 5), "valid_loss_history": stopping.history}
    if len(valid_idx):
        p = sigmoid(head_forward(arrays, x[valid_idx]))
        info["valid_accuracy"] = round(float(((p >= 0.5) == (y[valid_idx] >= 0.5)).mean()), 4)
    return arrays, {**info, "_valid_idx": valid_idx}
