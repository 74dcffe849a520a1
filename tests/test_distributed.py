"""Cross-device negatives: embeddings gathered with their gradients (gloo on CPU)."""

import os

import torch
import torch.multiprocessing as mp

from bitextmine.train.distributed import average_gradients, gather, gather_with_grad, world


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
        results[rank] = (everything.detach().tolist(), local.grad.tolist(), weight.grad.item(), keys.tolist())
    finally:
        dist.destroy_process_group()


def test_two_processes_see_the_global_batch_and_get_their_gradients():
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    results = mp.Manager().dict()
    mp.spawn(_worker, args=(2, port, results), nprocs=2, join=True)
    gathered, grad0, avg0, keys0 = results[0]
    assert keys0 == results[1][3] == [0, 1, 10, 11]
    assert gathered == [[1.0] * 3, [1.0] * 3, [2.0] * 3, [2.0] * 3]
    # rank 0 owns rows 0 and 1 of the global batch; each rank's loss sends gradient to
    # them, so they receive the sum over ranks (2x), which average_gradients divides back
    assert grad0 == [[0.0] * 3, [2.0] * 3]
    assert results[1][1] == [[4.0] * 3, [6.0] * 3]
    assert avg0 == results[1][2] == 0.5
