"""Multi-process training (one process per GPU, started by ``torchrun``).

Each process embeds its own slice of the batch; embeddings are gathered with their
gradients, so every device's loss sees the negatives of the global batch (LaBSE's
cross-accelerator negatives), and gradients are averaged after backward. A single
process (the CPU path) passes everything through unchanged.
"""

from __future__ import annotations

import os

import torch
import torch.distributed as dist
from torch.distributed.nn.functional import all_gather


def world() -> tuple[int, int]:
    """(rank, world size): from torch.distributed when initialised, else (0, 1)."""

    if dist.is_available() and dist.is_initialized():
        return dist.get_rank(), dist.get_world_size()
    return 0, 1


def init_from_environment() -> str | None:
    """Join the process group ``torchrun`` describes; return this process's device."""
    if int(os.environ.get("WORLD_SIZE", "1")) <= 1:
        return None

    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    if torch.cuda.is_available():
        torch.cuda.set_device(local_rank)
        dist.init_process_group("nccl")
        return f"cuda:{local_rank}"
    dist.init_process_group("gloo")
    return "cpu"


def gather_with_grad(x: torch.Tensor) -> torch.Tensor:
    """Concatenate ``x`` from every process, keeping the gradient path to the local part."""
    rank, size = world()
    if size == 1:
        return x

    return torch.cat(all_gather(x), dim=0)


def gather(x: torch.Tensor) -> torch.Tensor:
    """Concatenate ``x`` from every process (no gradient): labels and keys of the global batch."""
    rank, size = world()
    if size == 1:
        return x

    parts = [torch.empty_like(x) for _ in range(size)]
    dist.all_gather(parts, x.contiguous())
    return torch.cat(parts, dim=0)


def average_gradients(params) -> None:
    rank, size = world()
    if size == 1:
        return

    for p in params:
        if p.grad is not None:
            dist.all_reduce(p.grad)
            p.grad /= size


def collective_device() -> torch.device:
    """Where tensors for a collective must live: NCCL moves CUDA tensors only."""

    if dist.get_backend() == "nccl":
        return torch.device("cuda", torch.cuda.current_device())
    return torch.device("cpu")


def share_from_rank0(value: int) -> int:
    """Rank 0's ``value``, on every process; ``value`` itself when alone."""
    rank, size = world()
    if size == 1:
        return value

    tensor = torch.tensor([value], dtype=torch.int64, device=collective_device())
    dist.broadcast(tensor, src=0)
    return int(tensor.item())


def agree(flag: bool) -> bool:
    """Rank 0's decision (stop, save) shared with every process; itself when alone."""
    return bool(share_from_rank0(int(flag)))
