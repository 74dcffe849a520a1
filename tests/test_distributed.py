"""Cross-device negatives: embeddings gathered with their gradients (gloo on CPU)."""

import os

import pytest
import torch
import torch.multiprocessing as mp

from bitextmine.train.distributed import (
    agree,
    average_gradients,
    collective_device,
    gather,
    gather_with_grad,
    share_from_rank0,
    world,
)


def test_single_process_passes_through():
    x = torch.randn(3, 4, requires_grad=True)
    assert world() == (0, 1)
    assert gather_with_grad(x) is x and gather(x) is x


def _worker(rank, size, port, results):
    import torch.distributed as dist

    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", rank=rank, world_size=size)
    try:
        local = torch.full((2, 3), float(rank + 1), requires_grad=True)
        everything = gather_with_grad(local)  # (4, 3): rows of rank 0, then rank 1
        loss = (everything * torch.arange(4.0)[:, None]).sum()
        loss.backward()
        weight = torch.nn.Parameter(torch.ones(1))
        weight.grad = torch.tensor([float(rank)])
        average_gradients([weight])
        keys = gather(torch.tensor([10 * rank, 10 * rank + 1]))  # text keys of the global batch
        decisions = (agree(rank == 0), agree(rank == 1), share_from_rank0(3 + rank))  # rank 0's, everywhere
        results[rank] = (everything.detach().tolist(), local.grad.tolist(), weight.grad.item(), keys.tolist(),
                         decisions, str(collective_device()))
    finally:
        dist.destroy_process_group()


@pytest.mark.slow
def test_two_processes_see_the_global_batch_and_get_their_gradients():
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    results = mp.Manager().dict()
    mp.spawn(_worker, args=(2, port, results), nprocs=2, join=True)
    gathered, grad0, avg0, keys0, *_ = results[0]
    assert keys0 == results[1][3] == [0, 1, 10, 11]
    assert gathered == [[1.0] * 3, [1.0] * 3, [2.0] * 3, [2.0] * 3]
    # rank 0 owns rows 0 and 1 of the global batch; each rank's loss sends gradient to
    # them, so they receive the sum over ranks (2x), which average_gradients divides back
    assert grad0 == [[0.0] * 3, [2.0] * 3]
    assert results[1][1] == [[4.0] * 3, [6.0] * 3]
    assert avg0 == results[1][2] == 0.5
    assert results[0][4] == results[1][4] == (True, False, 3)
    assert results[0][5] == results[1][5] == "cpu"  # gloo collectives take CPU tensors


def test_collectives_under_nccl_use_the_process_gpu(monkeypatch):
    import torch.distributed as dist

    # no second GPU here: the choice alone, as a process of a NCCL group on GPU 1 makes it
    monkeypatch.setattr(dist, "get_backend", lambda group=None: "nccl")
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 1)
    assert collective_device() == torch.device("cuda", 1)
