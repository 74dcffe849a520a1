"""``bitextmine doctor``: report the environment for GPU and CPU use, with advice."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from bitextmine.cli.options import check_json_output, command, echo, json_option, json_to_stdout
from bitextmine.io.atomic import write_json

if TYPE_CHECKING:
    from bitextmine.doctor import Environment, Finding, SlurmStatus

app = typer.Typer()


def _table(env: Environment) -> list[str]:
    """The environment as aligned ``name  value`` rows: what a bug report needs first."""
    torch = "not installed" if env.torch is None else (
        f"{env.torch} (CUDA {env.torch_cuda})" if env.torch_cuda else f"{env.torch} (CPU build)")
    faiss = "not installed" if env.faiss is None else (
        f"{env.faiss} (GPU build, {env.faiss_gpus} GPU(s))" if env.faiss_gpu else f"{env.faiss} (CPU build)")
    visible = "(unset)" if env.cuda_visible_devices is None else repr(env.cuda_visible_devices)
    rows = [("python", env.python), ("platform", env.platform), ("bitextmine", env.bitextmine),
            ("torch", torch), ("faiss", faiss),
            ("cpus", f"{env.cpu_count} (native bf16: {'yes' if env.bf16_cpu else 'no'})"),
            ("nvidia driver", env.nvidia_smi_driver or "none"), ("CUDA_VISIBLE_DEVICES", visible)]
    rows += [(f"gpu {g['index']}", f"{g['name']}, {g['memory_gb']:g} GiB, compute {g['capability']}")
             for g in env.gpus]
    if not env.gpus:
        rows.append(("gpus", "none visible to torch"))
    if env.slurm is not None:
        rows.append(("slurm", _slurm_summary(env.slurm)))
    width = max(len(name) for name, _ in rows)
    return [f"{name:<{width}}  {value}" for name, value in rows]


def _slurm_summary(slurm: SlurmStatus) -> str:
    if not any(slurm.commands.values()):
        return "not installed"
    if not slurm.partitions:
        return slurm.problem or "no partitions"
    accounting = "on" if slurm.sacct_works else "off"
    return f"{slurm.version}, partitions: {', '.join(p['name'] for p in slurm.partitions)}, accounting {accounting}"


def _finding_lines(finding: Finding) -> list[str]:
    lines = [f"[{finding.level}] {finding.message}"]
    if finding.advice:
        lines.append(f"    {finding.advice}")
    return lines


@command(app, epilog="""\b
Example:
    bitextmine doctor --json doctor.json""")
def doctor(
    json_out: json_option("Also write the environment and findings as JSON (- for standard output).") = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="Print only warnings and errors.")] = False,
) -> None:
    """Check torch, faiss, GPUs, the CPU and Slurm, and say what to fix to use them.

    Exits with status 1 when something needed is missing.
    """
    from bitextmine.doctor import collect, diagnose, has_errors, to_dict

    check_json_output(json_out, [])
    env = collect()
    findings = diagnose(env)
    lines = [] if quiet else _table(env) + [""]
    for finding in findings:
        if not (quiet and finding.level == "ok"):
            lines += _finding_lines(finding)
    if lines:
        echo("\n".join(lines), err=json_to_stdout(json_out))
    if json_out is not None:
        if json_out != "-":
            Path(json_out).parent.mkdir(parents=True, exist_ok=True)
        write_json(json_out, to_dict(env, findings))
    if has_errors(findings):
        raise typer.Exit(code=1)
