"""What ``bitextmine doctor`` checks: the environment for GPU and CPU use, Slurm, and advice.

Kept pure (no printing, no exit) so the checks can be tested on hand-built environments:
``collect`` reads the machine, ``diagnose`` turns what it read into findings.
"""

from __future__ import annotations

import os
import platform
import shutil
import subprocess
from dataclasses import asdict, dataclass, field

from bitextmine import __version__
from bitextmine.devices import available_cpus
from bitextmine.errors import BitextmineError
from bitextmine.launch.slurm import conf_problem, read_cluster, slurm_command

LEVELS = ("ok", "warning", "error")
TORCH_CPU_INSTALL = "pip install torch==2.13.0"
GPU_EXTRA_INSTALL = "pip install 'bitextmine[gpu]'"
NVIDIA_SMI_TIMEOUT_S = 5.0


@dataclass
class Finding:
    """One line of the diagnosis; ``advice`` says what to do about it, when anything."""

    level: str  # "ok", "warning" or "error"
    message: str
    advice: str | None = None


@dataclass
class SlurmStatus:
    """What ``run --launcher slurm`` would meet: the commands, the partitions, accounting."""

    commands: dict[str, str | None]  # sbatch, sinfo, sacct: where on PATH, or None
    problem: str | None = None  # why the cluster could not be read (no slurm.conf, no controller)
    version: str = ""
    accounting: str = ""  # AccountingStorageType: accounting_storage/none when off
    sacct_works: bool = False
    partitions: list[dict] = field(default_factory=list)  # name, default, state, limits, and the numbers


@dataclass
class Environment:
    """What the checks need to know about the machine, gathered once by ``collect``."""

    python: str
    platform: str
    bitextmine: str
    torch: str | None = None
    torch_cuda: str | None = None  # torch.version.cuda: None for a CPU-only build
    cuda_available: bool = False
    gpus: list[dict] = field(default_factory=list)  # index, name, memory_gb, capability ("8.0")
    faiss: str | None = None
    faiss_gpu: bool = False
    faiss_gpus: int = 0
    cpu_count: int = 1
    bf16_cpu: bool = False
    cuda_visible_devices: str | None = None
    nvidia_smi_driver: str | None = None
    # Import failures other than "not installed" (e.g. a CUDA library missing), so the
    # advice is not a plain "install it" when the package is there but broken.
    import_errors: dict[str, str] = field(default_factory=dict)
    slurm: SlurmStatus | None = None  # None: not looked at


def _nvidia_smi_driver() -> str | None:
    """The NVIDIA driver version, or None: tells a CPU-only torch build on a GPU machine apart."""
    binary = shutil.which("nvidia-smi")
    if binary is None:
        return None
    try:
        result = subprocess.run([binary, "--query-gpu=driver_version", "--format=csv,noheader"],
                                capture_output=True, text=True, timeout=NVIDIA_SMI_TIMEOUT_S, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    if result.returncode != 0:
        return None
    lines = [line.strip() for line in result.stdout.splitlines() if line.strip()]
    return lines[0] if lines else None


def _collect_torch(env: Environment) -> None:
    try:
        import torch  # here, not at the top: a missing or broken torch is what doctor reports
    except ImportError:
        return
    except Exception as e:  # a broken install (missing shared library) is not "not installed"
        env.import_errors["torch"] = f"{type(e).__name__}: {e}"
        return
    env.torch = str(torch.__version__)
    env.torch_cuda = getattr(torch.version, "cuda", None)
    try:
        env.cuda_available = bool(torch.cuda.is_available())
        if env.cuda_available:
            for i in range(torch.cuda.device_count()):
                props = torch.cuda.get_device_properties(i)
                env.gpus.append({"index": i, "name": props.name,
                                 "memory_gb": round(props.total_memory / 2**30, 1),
                                 "capability": f"{props.major}.{props.minor}"})
    except Exception as e:  # driver too old, device busy: report rather than crash
        env.import_errors["torch.cuda"] = f"{type(e).__name__}: {e}"
        env.cuda_available = False
        env.gpus = []
    try:
        env.bf16_cpu = bool(torch.ops.mkldnn._is_mkldnn_bf16_supported())
    except Exception:  # private API: absent in some builds
        env.bf16_cpu = False


def _collect_faiss(env: Environment) -> None:
    try:
        import faiss  # here, not at the top: a missing or broken faiss is what doctor reports
    except ImportError:
        return
    except Exception as e:
        env.import_errors["faiss"] = f"{type(e).__name__}: {e}"
        return
    env.faiss = str(getattr(faiss, "__version__", "unknown"))
    env.faiss_gpu = hasattr(faiss, "StandardGpuResources")
    if env.faiss_gpu:
        try:
            env.faiss_gpus = int(faiss.get_num_gpus())
        except Exception as e:
            env.import_errors["faiss.get_num_gpus"] = f"{type(e).__name__}: {e}"
            env.faiss_gpus = 0


def _collect_slurm() -> SlurmStatus:
    status = SlurmStatus({name: shutil.which(name) for name in ("sbatch", "sinfo", "sacct")})
    if not all(status.commands.values()):
        return status
    status.problem = conf_problem()
    if status.problem:
        return status
    try:
        cluster = read_cluster()
    except BitextmineError as e:
        status.problem = e.message
        return status
    status.version, status.accounting = cluster.version, cluster.accounting
    for p in cluster.partitions.values():
        status.partitions.append({
            "name": p.name, "default": p.default, "state": p.state, "limits": p.limits(), "nodes": len(p.nodes),
            "cpus": max((n.cpus for n in p.nodes), default=0), "gpus": max((n.gpus for n in p.nodes), default=0),
            "memory_gb": round(max((n.memory_mb for n in p.nodes), default=0) / 1024, 1),
            "max_time_min": p.max_time_min})
    if cluster.accounting_on:
        try:
            slurm_command("sacct", "-n", "-X", "--starttime", "now", "-o", "JobID")
            status.sacct_works = True
        except BitextmineError as e:
            status.problem = e.message
    return status


def collect() -> Environment:
    """Read the machine. Never raises for a missing or broken torch or faiss: it records None."""

    env = Environment(python=platform.python_version(), platform=platform.platform(), bitextmine=__version__,
                      cpu_count=available_cpus(), cuda_visible_devices=os.environ.get("CUDA_VISIBLE_DEVICES"),
                      nvidia_smi_driver=_nvidia_smi_driver())
    _collect_torch(env)
    _collect_faiss(env)
    env.slurm = _collect_slurm()
    return env


def _visible_devices_hint(env: Environment) -> str:
    if env.cuda_visible_devices is None:
        return ""
    if not env.cuda_visible_devices.strip():
        return "CUDA_VISIBLE_DEVICES is set to an empty string, which hides every GPU"
    return f"CUDA_VISIBLE_DEVICES={env.cuda_visible_devices!r} may hide the GPUs"


def diagnose(env: Environment) -> list[Finding]:
    """The findings for ``env``, most serious first within each topic (torch, faiss, GPU, CPU)."""
    findings: list[Finding] = []
    n_gpus = len(env.gpus)

    # torch
    if env.torch is None:
        error = env.import_errors.get("torch")
        message = f"torch fails to import ({error})" if error else "torch is not installed"
        advice = (f"reinstall torch: {TORCH_CPU_INSTALL} (CPU build)" if error
                  else f"{TORCH_CPU_INSTALL} (CPU build)")
        if env.nvidia_smi_driver:
            advice += f"; NVIDIA driver {env.nvidia_smi_driver} found: install a CUDA build of torch to use the GPU"
        findings.append(Finding("error", message, advice))
    elif env.torch_cuda is None and env.nvidia_smi_driver:
        findings.append(Finding(
            "warning",
            f"torch {env.torch} is a CPU-only build but nvidia-smi reports driver {env.nvidia_smi_driver}: "
            "the GPU is unused",
            "a CUDA build of torch is needed to use the GPU: pick one matching the driver at "
            "https://pytorch.org/get-started/locally/"))
    elif env.torch_cuda is not None and not env.cuda_available:
        hint = _visible_devices_hint(env)
        cuda_error = env.import_errors.get("torch.cuda")
        message = f"torch {env.torch} is built for CUDA {env.torch_cuda} but sees no GPU"
        if cuda_error:
            message += f" ({cuda_error})"
        if hint:
            advice = f"{hint}: unset it or list the GPUs to use"
        elif env.nvidia_smi_driver is None:
            advice = "no NVIDIA driver found (nvidia-smi is missing or fails): install the driver, or run on CPU"
        else:
            advice = (f"driver {env.nvidia_smi_driver} may be too old for CUDA {env.torch_cuda}: "
                      "update the driver or install a torch build for an older CUDA")
        findings.append(Finding("warning", message, advice))

    # faiss
    if env.faiss is None:
        error = env.import_errors.get("faiss")
        message = f"faiss fails to import ({error})" if error else "faiss is not installed"
        advice = GPU_EXTRA_INSTALL + " (faiss-gpu)" if n_gpus else "pip install faiss-cpu"
        findings.append(Finding("error", message, advice))
    elif n_gpus and not env.faiss_gpu:
        findings.append(Finding(
            "warning",
            f"{n_gpus} GPU(s) visible but faiss-gpu is not installed: exact kNN still runs on GPU through torch, "
            "IVF/PQ indexes train and search on CPU",
            f"{GPU_EXTRA_INSTALL} to build large indexes on GPU"))
    elif n_gpus and env.faiss_gpu and env.faiss_gpus == 0:
        findings.append(Finding(
            "warning",
            f"faiss-gpu {env.faiss} sees 0 GPUs while torch sees {n_gpus}: CUDA version mismatch likely "
            f"(torch CUDA {env.torch_cuda}, driver {env.nvidia_smi_driver or 'unknown'})",
            "install the faiss-gpu wheel for the CUDA major version torch uses (faiss-gpu-cu12 for CUDA 12)"))
    elif env.faiss_gpu and env.faiss_gpus > 0:
        findings.append(Finding("ok", f"faiss-gpu {env.faiss} sees {env.faiss_gpus} GPU(s): indexes train on GPU"))

    # devices
    if n_gpus:
        names = ", ".join(f"{g['name']} ({g['memory_gb']:g} GiB)" for g in env.gpus)
        findings.append(Finding("ok", f"GPU mode: {n_gpus} GPU(s) visible to torch: {names}"))
    else:
        findings.append(Finding("ok", f"CPU mode: {env.cpu_count} cores"))
        if env.torch is not None:
            if env.bf16_cpu:
                findings.append(Finding("ok", "CPU has native bf16: embedding uses bf16 matmuls"))
            else:
                findings.append(Finding("ok", "CPU lacks native bf16 (AMX or AVX512-BF16): embedding matmuls run "
                                              "in fp32"))
    if env.slurm is not None:
        findings += _slurm_findings(env.slurm)
    return findings


def _slurm_findings(status: SlurmStatus) -> list[Finding]:
    """Whether ``run --launcher slurm`` can work here, the partitions' limits, and accounting."""
    missing = [name for name, path in status.commands.items() if path is None]
    if len(missing) == len(status.commands):
        return [Finding("ok", "Slurm: not installed here (no sbatch, sinfo, sacct): --launcher local and inline")]
    if missing:
        return [Finding("warning", f"Slurm: {', '.join(missing)} not on PATH: --launcher slurm needs sbatch, sinfo "
                                   "and sacct", "install the Slurm client commands (Debian: slurm-client)")]
    if not status.partitions:
        return [Finding("warning", f"Slurm: {status.problem or 'no partitions'}: --launcher slurm cannot submit",
                        "check SLURM_CONF and that slurmctld runs (scripts/local-slurm.sh start: a local cluster)")]
    findings = [Finding("ok", f"Slurm {status.version}: sbatch, sinfo and sacct answer")]
    findings += [Finding("ok", f"Slurm partition {p['name']!r}{' (default)' if p['default'] else ''}, "
                               f"{p['state'].lower()}: {p['limits']}") for p in status.partitions]
    if not status.accounting or status.accounting.endswith("/none"):
        findings.append(Finding(
            "warning", "Slurm accounting is off: a task killed before it wrote its result (scancel, out of memory) "
                       "leaves `run` waiting, since submitit asks sacct whether a job ended",
            "retries after a kill need accounting (AccountingStorageType=accounting_storage/slurmdbd)"))
    elif not status.sacct_works:
        findings.append(Finding("warning", f"Slurm accounting is on ({status.accounting}) but sacct fails: "
                                           f"{status.problem}", "check slurmdbd: retries after a kill need sacct"))
    else:
        findings.append(Finding("ok", f"Slurm accounting on ({status.accounting}): a killed task is seen and retried"))
    return findings


def has_errors(findings: list[Finding]) -> bool:
    return any(f.level == "error" for f in findings)


def to_dict(env: Environment, findings: list[Finding]) -> dict:
    """The JSON form: ``{"environment": {...}, "findings": [{level, message, advice}, ...]}``."""
    return {"environment": asdict(env), "findings": [asdict(f) for f in findings]}
