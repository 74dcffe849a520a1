"""`bitextmine doctor`: what it reads from this machine, the advice rules, and the command."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest
from typer.testing import CliRunner

from bitextmine import __version__
from bitextmine.cli.doctor import app
from bitextmine.doctor import Environment, Finding, SlurmStatus, collect, diagnose, has_errors, to_dict

H100 = {"index": 0, "name": "NVIDIA H100 80GB HBM3", "memory_gb": 79.1, "capability": "9.0"}


def make_env(**overrides) -> Environment:
    """A healthy CPU machine with torch and faiss-cpu; each test changes what it checks."""
    values = dict(python="3.11.7", platform="Linux-x86_64", bitextmine=__version__, torch="2.13.0+cpu",
                  torch_cuda=None, cuda_available=False, gpus=[], faiss="1.15.1", faiss_gpu=False, faiss_gpus=0,
                  cpu_count=8, bf16_cpu=False, cuda_visible_devices=None, nvidia_smi_driver=None)
    values.update(overrides)
    return Environment(**values)


def levels(findings: list[Finding]) -> list[str]:
    return [f.level for f in findings]


def only(findings: list[Finding], level: str) -> Finding:
    matching = [f for f in findings if f.level == level]
    assert len(matching) == 1, findings
    return matching[0]


def installed_version(*distributions: str) -> str | None:
    """The version pip installed of the first of ``distributions`` that is there."""
    from importlib.metadata import PackageNotFoundError, version

    for name in distributions:
        try:
            return version(name)
        except PackageNotFoundError:
            continue
    return None


def test_collect_reads_this_machine(monkeypatch, tmp_path):
    """What collect reads, against what the machine says by other means: the installed
    distributions' versions, a driver that nvidia-smi reports, the environment."""
    smi = tmp_path / "nvidia-smi"
    smi.write_text("#!/bin/sh\necho 550.54.15\n")
    smi.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    env = collect()
    assert env.bitextmine == installed_version("bitextmine") == __version__
    assert env.torch == installed_version("torch")
    assert env.faiss == installed_version("faiss-cpu", "faiss-gpu-cu12", "faiss-gpu")
    assert env.nvidia_smi_driver == "550.54.15" and env.cuda_visible_devices == ""
    assert env.python.count(".") == 2 and env.import_errors == {}
    if not env.cuda_available:
        assert env.gpus == []


def test_collect_counts_the_cpus_this_process_may_use():
    if shutil.which("taskset") is None:
        pytest.skip("taskset is not installed")
    probe = "from bitextmine.doctor import collect; print(collect().cpu_count)"
    one = subprocess.run(["taskset", "-c", "0", sys.executable, "-c", probe], capture_output=True, text=True,
                         check=True)
    assert one.stdout.split()[-1] == "1"


def test_collect_tells_a_missing_package_from_a_broken_one(monkeypatch):
    """torch not installed: no version, no error recorded; faiss there but failing to load
    its library: no version, and the error kept for the advice."""

    class BrokenFaiss:
        def find_spec(self, name, path=None, target=None):
            if name == "faiss":
                raise OSError("libfaiss.so: cannot open shared object file")
            return None

    monkeypatch.setitem(sys.modules, "torch", None)  # `import torch` raises ImportError
    monkeypatch.delitem(sys.modules, "faiss")
    monkeypatch.setattr(sys, "meta_path", [BrokenFaiss(), *sys.meta_path])
    env = collect()
    assert env.torch is None and "torch" not in env.import_errors
    assert env.faiss is None and "libfaiss.so" in env.import_errors["faiss"]
    messages = [f.message for f in diagnose(env) if f.level == "error"]
    assert any("torch is not installed" in m for m in messages)
    assert any("faiss" in m and "libfaiss.so" in m for m in messages)


def test_healthy_cpu_machine_is_all_ok():
    findings = diagnose(make_env(cpu_count=16, bf16_cpu=True))
    assert set(levels(findings)) == {"ok"}
    messages = [f.message for f in findings]
    assert "CPU mode: 16 cores" in messages
    assert any("bf16" in m and "lacks" not in m for m in messages)


def test_cpu_without_bf16_says_fp32():
    findings = diagnose(make_env(bf16_cpu=False))
    assert set(levels(findings)) == {"ok"}
    assert any("fp32" in f.message for f in findings)


def test_missing_torch_is_an_error_with_the_pinned_cpu_install():
    findings = diagnose(make_env(torch=None))
    error = only(findings, "error")
    assert "torch is not installed" in error.message
    assert "pip install torch==2.13.0" in error.advice


def test_broken_torch_import_is_not_reported_as_missing():
    findings = diagnose(make_env(torch=None, import_errors={"torch": "OSError: libcudnn.so.9: cannot open"}))
    error = only(findings, "error")
    assert "fails to import" in error.message and "libcudnn" in error.message


def test_missing_faiss_is_an_error():
    findings = diagnose(make_env(faiss=None))
    error = only(findings, "error")
    assert "faiss is not installed" in error.message and "faiss-cpu" in error.advice
    on_gpu = diagnose(make_env(faiss=None, torch_cuda="12.8", cuda_available=True, gpus=[H100]))
    assert "bitextmine[gpu]" in only(on_gpu, "error").advice


def test_cpu_torch_build_on_a_gpu_machine_warns():
    findings = diagnose(make_env(torch_cuda=None, nvidia_smi_driver="570.86.15"))
    warning = only(findings, "warning")
    assert "CPU-only build" in warning.message and "570.86.15" in warning.message
    assert "CUDA build of torch" in warning.advice


def test_cuda_torch_without_gpu_mentions_an_empty_cuda_visible_devices():
    findings = diagnose(make_env(torch="2.13.0+cu128", torch_cuda="12.8", cuda_visible_devices="",
                                 nvidia_smi_driver="570.86.15"))
    warning = only(findings, "warning")
    assert "sees no GPU" in warning.message
    assert "CUDA_VISIBLE_DEVICES" in warning.advice and "empty string" in warning.advice
    no_driver = only(diagnose(make_env(torch="2.13.0+cu128", torch_cuda="12.8")), "warning")
    assert "CUDA_VISIBLE_DEVICES" not in no_driver.advice and "driver" in no_driver.advice


def test_gpus_without_faiss_gpu_warn_that_indexes_train_on_cpu():
    findings = diagnose(make_env(torch="2.13.0+cu128", torch_cuda="12.8", cuda_available=True, gpus=[H100]))
    warning = only(findings, "warning")
    assert "faiss-gpu" in warning.message and "torch" in warning.message and "CPU" in warning.message
    assert warning.advice == "pip install 'bitextmine[gpu]' to build large indexes on GPU"
    assert any(f.level == "ok" and "GPU mode: 1 GPU(s)" in f.message and "79.1 GiB" in f.message for f in findings)
    assert not any("CPU mode" in f.message for f in findings)


def test_faiss_gpu_seeing_no_gpu_points_at_a_cuda_mismatch():
    findings = diagnose(make_env(torch="2.13.0+cu128", torch_cuda="12.8", cuda_available=True, gpus=[H100, H100],
                                 faiss_gpu=True, faiss_gpus=0, nvidia_smi_driver="570.86.15"))
    warning = only(findings, "warning")
    assert "0 GPUs while torch sees 2" in warning.message and "mismatch" in warning.message
    assert "12.8" in warning.message and "570.86.15" in warning.message


def test_faiss_gpu_seeing_gpus_is_ok():
    findings = diagnose(make_env(torch="2.13.0+cu128", torch_cuda="12.8", cuda_available=True, gpus=[H100],
                                 faiss_gpu=True, faiss_gpus=1))
    assert set(levels(findings)) == {"ok"}
    assert any("faiss-gpu 1.15.1 sees 1 GPU(s)" in f.message for f in findings)


def test_to_dict_is_json_ready():
    env = make_env(gpus=[H100])
    data = json.loads(json.dumps(to_dict(env, diagnose(env))))
    assert data["environment"]["gpus"][0]["capability"] == "9.0"
    assert {"level", "message", "advice"} <= set(data["findings"][0])


def test_cli_prints_versions_and_findings_and_writes_json(tmp_path):
    out = tmp_path / "sub" / "doctor.json"
    result = CliRunner().invoke(app, ["--json", str(out)])
    assert result.exit_code == 0, result.output
    assert "torch" in result.output and installed_version("torch") in result.output
    assert installed_version("faiss-cpu", "faiss-gpu-cu12", "faiss-gpu") in result.output and "[ok]" in result.output
    data = json.loads(out.read_text())
    assert set(data) == {"environment", "findings"}
    assert data["environment"]["torch"] == installed_version("torch")
    assert all(f["level"] in ("ok", "warning", "error") for f in data["findings"])


def test_cli_exits_1_on_an_error_and_indents_advice(monkeypatch):
    import bitextmine.doctor as doctor

    monkeypatch.setattr(doctor, "collect", lambda: make_env(torch=None))
    result = CliRunner().invoke(app, [])
    assert result.exit_code == 1
    lines = result.output.splitlines()
    at = lines.index("[error] torch is not installed")
    assert lines[at + 1].startswith("    pip install torch==2.13.0")
    assert "not installed" in next(line for line in lines if line.startswith("torch "))


# --- Slurm ---------------------------------------------------------------------------------

def slurm_status(**overrides) -> SlurmStatus:
    """Slurm's commands answer, one partition, accounting on; each test changes what it checks."""
    values = dict(commands={"sbatch": "/usr/bin/sbatch", "sinfo": "/usr/bin/sinfo", "sacct": "/usr/bin/sacct"},
                  version="22.05.8", accounting="accounting_storage/slurmdbd", sacct_works=True,
                  partitions=[{"name": "gpu", "default": True, "state": "UP", "nodes": 4, "cpus": 64, "gpus": 8,
                               "memory_gb": 500.0, "max_time_min": 2880,
                               "limits": "4 node(s) (4 up), 64 CPUs, 500.0 GB, 8 GPUs per node, "
                                         "time limit 2-00:00:00"}])
    values.update(overrides)
    return SlurmStatus(**values)


def slurm_findings(status: SlurmStatus) -> list[Finding]:
    return [f for f in diagnose(make_env(slurm=status)) if "Slurm" in f.message]


def test_slurm_partitions_and_accounting_are_reported():
    findings = slurm_findings(slurm_status())
    assert set(levels(findings)) == {"ok"}
    assert [f.message for f in findings] == [
        "Slurm 22.05.8: sbatch, sinfo and sacct answer",
        "Slurm partition 'gpu' (default), up: 4 node(s) (4 up), 64 CPUs, 500.0 GB, 8 GPUs per node, time limit "
        "2-00:00:00",
        "Slurm accounting on (accounting_storage/slurmdbd): a killed task is seen and retried"]


def test_slurm_without_accounting_warns_that_retries_after_a_kill_need_it():
    warning = only(slurm_findings(slurm_status(accounting="accounting_storage/none", sacct_works=False)), "warning")
    assert "accounting is off" in warning.message and "retries after a kill need accounting" in warning.advice


def test_slurm_absent_is_fine_and_unreachable_is_a_warning():
    absent = slurm_findings(slurm_status(commands=dict.fromkeys(("sbatch", "sinfo", "sacct")), partitions=[]))
    assert [(f.level, f.message) for f in absent] == [
        ("ok", "Slurm: not installed here (no sbatch, sinfo, sacct): --launcher local and inline")]
    down = only(slurm_findings(slurm_status(partitions=[], problem="scontrol show node --oneliner failed: Unable to "
                                                                    "contact slurm controller")), "warning")
    assert "Unable to contact slurm controller" in down.message and "SLURM_CONF" in down.advice
    assert not has_errors(diagnose(make_env(slurm=slurm_status(partitions=[], problem="x"))))
