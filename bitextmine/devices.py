"""Device and precision choices, shared by every stage that runs a model."""

from __future__ import annotations

import contextlib
import os
import signal
import sys
from collections.abc import Iterator

from bitextmine.choices import PRECISIONS
from bitextmine.errors import BitextmineError

DEVICE_SPECS = "auto, cpu, cuda or cuda:N"


def available_cpus() -> int:
    """CPUs this process may use (the affinity mask under a scheduler), not the whole machine's."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def ignore_interrupts(parent: int | None = None) -> None:
    """A worker process's first step: Ctrl-C reaches the whole process group, and the parent
    ends its workers itself, so a worker must not print a KeyboardInterrupt traceback of its own;
    SIGTERM (which the parent turns into a clean exit, and a pool sends to stop its workers)
    ends a worker at once, as by default. Given the parent's pid, the worker also dies with it:
    a parent killed outright (SIGKILL, out of memory) would otherwise leave workers waiting
    for work forever, holding the output's lock they inherited."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    if parent is not None:
        _die_with_parent(parent)


def _die_with_parent(parent: int) -> None:
    if sys.platform.startswith("linux"):
        import ctypes  # Linux's prctl: no portable way, and elsewhere the workers are left as before

        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent:  # the parent died before the request took hold
        os._exit(1)


_PR_SET_PDEATHSIG = 1  # <linux/prctl.h>


@contextlib.contextmanager
def interrupts_blocked_for_children() -> Iterator[None]:
    """SIGINT blocked while inside: processes started there (such as submitit's local
    controllers, which this code does not start itself) inherit it blocked and never see
    Ctrl-C, so whoever started them must stop them (SIGTERM); a Ctrl-C meanwhile reaches this
    process, and its handler, when the block ends."""
    if not hasattr(signal, "pthread_sigmask"):
        yield
        return
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


def cuda_device_count() -> int:
    import torch  # torch: 2.5 s, loaded where used (ARCHITECTURE.md, start-up)

    return torch.cuda.device_count() if torch.cuda.is_available() else 0


def check_device_spec(spec: str) -> str:
    """``spec`` normalised, or an error when it names no device kind (no torch needed)."""
    normalised = spec.strip().lower()
    kind, _, index = normalised.partition(":")
    if normalised in ("auto", "cpu", "cuda") or (kind == "cuda" and index.isdigit()):
        return normalised
    raise BitextmineError(f"unknown device {spec!r}: use {DEVICE_SPECS}")


def resolve_devices(spec: str) -> list[str]:
    """The torch devices a ``--device`` value stands for.

    ``auto`` is every visible GPU (one worker each), or the CPU when there is none;
    ``cuda`` is every visible GPU; ``cuda:N`` and ``cpu`` are themselves.
    """
    spec = check_device_spec(spec)
    if spec == "cpu":
        return ["cpu"]
    count = cuda_device_count()
    if spec == "auto":
        return [f"cuda:{i}" for i in range(count)] or ["cpu"]
    if count == 0:
        visible = os.environ.get("CUDA_VISIBLE_DEVICES")
        hint = f" (CUDA_VISIBLE_DEVICES={visible!r})" if visible is not None else ""
        raise BitextmineError(f"device {spec!r} requested but torch sees no GPU{hint}; run `bitextmine doctor`")
    if spec == "cuda":
        return [f"cuda:{i}" for i in range(count)]
    if int(spec.split(":", 1)[1]) >= count:
        raise BitextmineError(f"device {spec!r} does not exist: {count} GPU(s) visible")
    return [spec]


def resolve_device(spec: str) -> str:
    """The one torch device a single-process stage runs on: the first that ``spec`` stands for."""
    return resolve_devices(spec)[0]


def matmul_dtype(device: str, precision: str):
    """The torch dtype for the heavy matmuls, or None for plain fp32."""
    import torch  # torch: 2.5 s, loaded where used (ARCHITECTURE.md, start-up)

    if precision not in PRECISIONS:
        raise BitextmineError(f"unknown precision {precision!r}: use one of {', '.join(PRECISIONS)}")
    if precision == "fp32":
        return None
    if precision == "bf16":
        return torch.bfloat16
    if precision == "fp16":
        return torch.float16
    if device.startswith("cuda"):
        return torch.float16
    return torch.bfloat16 if cpu_has_native_bf16() else None


def precision_name(device: str, precision: str) -> str:
    """What ``precision`` resolves to on ``device``: fp32, bf16 or fp16 (for a figure's signature)."""
    dtype = matmul_dtype(device, precision)
    return "fp32" if dtype is None else str(dtype).removeprefix("torch.").replace("bfloat", "bf").replace("float", "fp")


def cpu_has_native_bf16() -> bool:
    """Whether this CPU multiplies bf16 natively (AMX or AVX512-BF16).

    Elsewhere bf16 matmuls are emulated and slower than fp32, so ``auto`` keeps fp32.
    """
    import torch  # torch: 2.5 s, loaded where used (ARCHITECTURE.md, start-up)

    return bool(torch.ops.mkldnn._is_mkldnn_bf16_supported())
