"""Optimisers for the training loop: AdamW for the network, lazy Adam for sparse tables.

A piece-embedding table of 128k rows gets a gradient in a few thousand rows per batch.
Dense AdamW would still read and write all 65M weights and both moment buffers every
step (about 1 GB of memory traffic, most of a CPU step); with a sparse gradient,
``torch.optim.SparseAdam`` updates only the rows the batch used.
"""

from __future__ import annotations

import torch


class Optimizers:
    """Several optimisers stepped, zeroed, scheduled and saved as one."""

    def __init__(self, optimizers: list[torch.optim.Optimizer]):
        self.optimizers = optimizers

    def set_lr(self, lr: float) -> None:
        """Every group to ``lr`` times its own ``lr_scale``."""
        for opt in self.optimizers:
            for group in opt.param_groups:
                group["lr"] = lr * group.get("lr_scale", 1.0)

    def step(self) -> None:
        for opt in self.optimizers:
            opt.step()

    def zero_grad(self) -> None:
        for opt in self.optimizers:
            opt.zero_grad(set_to_none=True)

    def state_dict(self) -> list[dict]:
        return [opt.state_dict() for opt in self.optimizers]

    def load_state_dict(self, states: list[dict]) -> None:
        for opt, st in zip(self.optimizers, states, strict=True):
            opt.load_state_dict(st)


def build_optimizers(module: torch.nn.Module, lr: float, weight_decay: float,
                     embedding_lr_scale: float = 1.0) -> Optimizers:
    """AdamW over the dense parameters, SparseAdam over sparse embedding tables.

    No weight decay on biases and norms, nor on piece embeddings: decay would shrink every
    row, also those of the languages the training data does not touch. Embedding tables
    learn at ``embedding_lr_scale`` times the network's rate.
    """
    sparse = {id(m.weight) for m in module.modules() if isinstance(m, torch.nn.Embedding) and m.sparse}
    named = [(n, p) for n, p in module.named_parameters() if p.requires_grad]
    groups = {
        "decay": {"params": [], "weight_decay": weight_decay},
        "no_decay": {"params": [], "weight_decay": 0.0},
        "embedding": {"params": [], "weight_decay": 0.0, "lr_scale": embedding_lr_scale},
        "sparse": {"params": [], "lr_scale": embedding_lr_scale},
    }
    for n, p in named:
        kind = ("sparse" if id(p) in sparse else "embedding" if "piece_embedding" in n
                else "decay" if p.dim() >= 2 else "no_decay")
        groups[kind]["params"].append(p)
    dense = [g for k, g in groups.items() if k != "sparse" and g["params"]]
    optimizers: list[torch.optim.Optimizer] = []
    if dense:
        optimizers.append(torch.optim.AdamW(dense, lr=lr))
    if groups["sparse"]["params"]:
        optimizers.append(torch.optim.SparseAdam([groups["sparse"]], lr=lr))
    return Optimizers(optimizers)


def clip_gradients(params: list[torch.nn.Parameter], max_norm: float) -> float:
    """``clip_grad_norm_`` that also counts sparse gradients (torch's refuses them)."""
    squares = []
    for p in params:
        if p.grad is None:
            continue
        g = p.grad.coalesce().values() if p.grad.is_sparse else p.grad
        squares.append(g.float().pow(2).sum())
    if not squares:
        return 0.0
    norm = torch.stack(squares).sum().sqrt()
    coef = max_norm / (float(norm) + 1e-6)
    if coef < 1.0:
        for p in params:
            if p.grad is not None:
                p.grad.mul_(coef)
    return float(norm)
