"""The Slurm cluster as ``run``, ``plan`` and ``doctor`` see it, and whether a request fits it.

Read through the client commands (``scontrol show partition|node --oneliner``, whose
``Key=Value`` form is the same across Slurm versions, and ``scontrol show config``), so
that nothing but the commands on PATH and ``SLURM_CONF`` is needed. A request that no node
of the partition can hold would be refused by ``sbatch`` or, on clusters that do not
enforce partition limits, pend forever: ``check_fits`` says so before anything is
submitted, naming the key to change.
"""

from __future__ import annotations

import math
import os
import re
import shutil
import subprocess
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from bitextmine.errors import BitextmineError

if TYPE_CHECKING:  # the plan's types only: run and doctor read the cluster without the cost model
    from bitextmine.launch.config import PipelineConfig
    from bitextmine.launch.costs import StageEstimate

COMMAND_TIMEOUT_S = 20.0
MB_PER_GB = 1024  # Slurm's (and submitit's --mem) gigabyte
# where the client commands look for slurm.conf when SLURM_CONF is unset (packaged, source, configless)
CONF_PATHS = ("/etc/slurm/slurm.conf", "/etc/slurm-llnl/slurm.conf", "/usr/local/etc/slurm.conf",
              "/run/slurm/conf/slurm.conf")
UNUSABLE_NODE_STATES = ("DOWN", "DRAIN", "FAIL", "INVAL", "NOT_RESPONDING", "FUTURE")


@dataclass
class Node:
    name: str
    cpus: int
    memory_mb: int
    gpus: int
    state: str

    @property
    def usable(self) -> bool:
        return not any(s in self.state.upper() for s in UNUSABLE_NODE_STATES)


@dataclass
class Partition:
    name: str
    default: bool
    state: str
    max_time_min: int | None  # None: unlimited
    max_cpus_per_node: int | None
    max_mem_per_node_mb: int | None
    max_mem_per_cpu_mb: int | None
    nodes: list[Node] = field(default_factory=list)

    def limits(self) -> str:
        """Nodes, CPUs, memory, GPUs and time limit, as one phrase."""
        cpus = sorted({n.cpus for n in self.nodes})
        memory = sorted({n.memory_mb for n in self.nodes})
        gpus = sorted({n.gpus for n in self.nodes})

        def span(values: list, unit: str = "", scale: float = 1) -> str:
            values = [f"{v / scale:.{0 if scale == 1 else 1}f}" for v in values] or ["0"]
            return (values[0] if len(values) == 1 else f"{values[0]}-{values[-1]}") + unit

        usable = sum(n.usable for n in self.nodes)
        time = "unlimited" if self.max_time_min is None else _minutes(self.max_time_min)
        return (f"{len(self.nodes)} node(s) ({usable} up), {span(cpus)} CPUs, "
                f"{span(memory, ' GB', MB_PER_GB)}, {span(gpus) + ' GPUs' if any(gpus) else 'no GPUs'} per node, "
                f"time limit {time}")


@dataclass
class Cluster:
    partitions: dict[str, Partition]
    accounting: str  # AccountingStorageType: "accounting_storage/none" when off
    version: str = ""

    @property
    def accounting_on(self) -> bool:
        return bool(self.accounting) and not self.accounting.endswith("/none")

    def partition(self, name: str | None) -> Partition:
        """The named partition, or the default one."""
        names = ", ".join(self.partitions) or "none"
        if name is None:
            default = [p for p in self.partitions.values() if p.default]
            if not default:
                raise BitextmineError(f"launcher.slurm.partition: not set, and Slurm has no default partition "
                                      f"(sinfo lists: {names}); set launcher.slurm.partition")
            return default[0]
        if name not in self.partitions:
            raise BitextmineError(f"launcher.slurm.partition: no partition {name!r} (sinfo lists: {names})")
        return self.partitions[name]


# --- reading the cluster ------------------------------------------------------------------------

def conf_problem() -> str | None:
    """Why the client commands cannot work here (no commands, no slurm.conf), or None.

    Without a slurm.conf the commands retry for a minute before failing: this answers at once.
    """
    if shutil.which("sinfo") is None or shutil.which("sbatch") is None:
        return "the Slurm commands (sbatch, sinfo) are not on PATH"
    conf = os.environ.get("SLURM_CONF")
    if conf is not None and not os.path.isfile(conf):
        return f"SLURM_CONF={conf} does not exist"
    if conf is None and not any(os.path.isfile(p) for p in CONF_PATHS):
        return f"no slurm.conf ({CONF_PATHS[0]}, or set SLURM_CONF)"
    return None


def slurm_command(*args: str) -> str:
    """Run a Slurm client command; its output, or an error naming the command and its message."""
    try:
        done = subprocess.run(args, capture_output=True, text=True, timeout=COMMAND_TIMEOUT_S, check=False)
    except FileNotFoundError:
        raise BitextmineError(f"{args[0]}: not found (the Slurm commands are not on PATH)") from None
    except subprocess.TimeoutExpired:
        raise BitextmineError(f"{' '.join(args)}: no answer within {COMMAND_TIMEOUT_S:g} s "
                              "(is slurmctld running? is SLURM_CONF right?)") from None
    if done.returncode != 0:
        lines = [x.strip() for x in done.stderr.splitlines() if x.strip()]
        raise BitextmineError(f"{' '.join(args)} failed: {lines[-1] if lines else f'exit status {done.returncode}'}")
    return done.stdout


def parse_oneliner(line: str) -> dict[str, str]:
    """``Key=Value Key=Value with spaces ...`` (``scontrol --oneliner``) as a dict."""
    key = r"[A-Za-z][\w/:.]*"
    return {m.group(1): m.group(2).strip() for m in re.finditer(rf"(?:^|\s)({key})=(.*?)(?=\s+{key}=|$)", line.strip())}


def parse_time_min(value: str) -> int | None:
    """A Slurm time (``UNLIMITED``, ``MM``, ``MM:SS``, ``HH:MM:SS``, ``D-HH[:MM[:SS]]``) in minutes."""
    value = value.strip()
    if value.upper() in ("UNLIMITED", "INFINITE", "NONE", ""):
        return None
    days, _, clock = value.rpartition("-")
    parts = [int(p) for p in clock.split(":")]
    if days:
        hours, minutes, seconds = (parts + [0, 0])[:3]
    elif len(parts) == 3:
        hours, minutes, seconds = parts
    else:
        hours, (minutes, seconds) = 0, (parts + [0])[:2]
    return int(days or 0) * 1440 + hours * 60 + minutes + math.ceil(seconds / 60)


def parse_gpus(gres: str) -> int:
    """GPUs in a node's ``Gres`` (``gpu:2``, ``gpu:a100:4(S:0-1)``, ``gpu:1,mps:100``, ``(null)``)."""
    total = 0
    for item in re.sub(r"\([^)]*\)", "", gres).split(","):
        fields = item.strip().split(":")
        if fields[0] == "gpu":
            total += int(fields[-1]) if len(fields) > 1 and fields[-1].isdigit() else 1
    return total


def _limit(value: str | None) -> int | None:
    return int(value) if value and value.isdigit() and int(value) > 0 else None


def _minutes(minutes: int) -> str:
    days, rest = divmod(minutes, 1440)
    return (f"{days}-" if days else "") + f"{rest // 60:02d}:{rest % 60:02d}:00"


def read_cluster() -> Cluster:
    """The partitions, their nodes and limits, and the accounting setting, from ``scontrol``."""
    problem = conf_problem()
    if problem:
        raise BitextmineError(f"--launcher slurm: {problem}")
    nodes: dict[str, tuple[Node, list[str]]] = {}
    for line in slurm_command("scontrol", "show", "node", "--oneliner").splitlines():
        if not line.strip():
            continue
        n = parse_oneliner(line)
        node = Node(n.get("NodeName", "?"), int(n.get("CPUTot", 0) or 0), int(n.get("RealMemory", 0) or 0),
                    parse_gpus(n.get("Gres", "")), n.get("State", ""))
        nodes[node.name] = (node, [p for p in n.get("Partitions", "").split(",") if p])
    partitions = {}
    for line in slurm_command("scontrol", "show", "partition", "--oneliner").splitlines():
        if not line.strip():
            continue
        p = parse_oneliner(line)
        name = p.get("PartitionName", "?")
        partitions[name] = Partition(
            name, p.get("Default") == "YES", p.get("State", ""), parse_time_min(p.get("MaxTime", "UNLIMITED")),
            _limit(p.get("MaxCPUsPerNode")), _limit(p.get("MaxMemPerNode")), _limit(p.get("MaxMemPerCPU")),
            [node for node, member_of in nodes.values() if name in member_of])
    config = dict(re.findall(r"^(\w+)\s*=\s*(.*?)\s*$", slurm_command("scontrol", "show", "config"), re.M))
    return Cluster(partitions, config.get("AccountingStorageType", ""), config.get("SLURM_VERSION", ""))


# --- does a request fit? ------------------------------------------------------------------------

def fits_on(node: Node, partition: Partition, cpus: int, mem_mb: int, gpus: int) -> int:
    """How many such tasks one node can run at once (0: none)."""
    cpu_cap = min(node.cpus, partition.max_cpus_per_node or node.cpus)
    mem_cap = min(node.memory_mb, partition.max_mem_per_node_mb or node.memory_mb)
    if partition.max_mem_per_cpu_mb and mem_mb > partition.max_mem_per_cpu_mb * cpus:
        return 0
    counts = [cpu_cap // max(cpus, 1), mem_cap // max(mem_mb, 1)]
    if gpus:
        counts.append(node.gpus // gpus)
    return max(0, min(counts))


def concurrent_tasks(partition: Partition, cpus: int, mem_gb: float, gpus: int) -> int:
    """Tasks of this size the partition's usable nodes can run at once."""
    mem_mb = math.ceil(mem_gb * MB_PER_GB)
    return sum(fits_on(n, partition, cpus, mem_mb, gpus) for n in partition.nodes if n.usable)


@dataclass
class Misfit:
    """One resource of a stage's request that no node of the partition has."""

    message: str  # "resources.embed.gpus: 1 GPU per task, but partition 'debug' nodes have none (sinfo)"
    fix: str | None  # the setting that fits, as --set takes it: "resources.embed.gpus=0"

    def __str__(self) -> str:
        return self.message + (f"; set {self.fix.replace('=', ': ', 1)}" if self.fix else "")


def _plural(count: float, unit: str) -> str:
    return f"{count:g} {unit}" + ("" if count == 1 else "s")


def misfits(partition: Partition, stage: str, cpus: int, mem_gb: float, gpus: int, timeout_min: int) -> list[Misfit]:
    """What of ``resources.STAGE`` no node of the partition can give, each with the setting that would."""
    key, where = f"resources.{stage}", f"partition {partition.name!r}"
    nodes = partition.nodes
    if not nodes:
        return [Misfit(f"{key}: {where} has no nodes (sinfo)", None)]
    found = []
    most_cpus = max(min(n.cpus, partition.max_cpus_per_node or n.cpus) for n in nodes)
    if cpus > most_cpus:
        found.append(Misfit(f"{key}.cpus: {_plural(cpus, 'CPU')} per task, but {where} nodes have at most "
                            f"{most_cpus} (sinfo)", f"{key}.cpus={most_cpus}"))
    most_mb = max(min(n.memory_mb, partition.max_mem_per_node_mb or n.memory_mb) for n in nodes)
    if partition.max_mem_per_cpu_mb:
        most_mb = min(most_mb, partition.max_mem_per_cpu_mb * cpus)
    if math.ceil(mem_gb * MB_PER_GB) > most_mb:
        found.append(Misfit(f"{key}.mem_gb: {mem_gb:g} GB per task, but {where} nodes have at most "
                            f"{most_mb / MB_PER_GB:.1f} GB (sinfo)", f"{key}.mem_gb={most_mb // MB_PER_GB}"))
    most_gpus = max(n.gpus for n in nodes)
    if gpus > most_gpus:
        found.append(Misfit(f"{key}.gpus: {_plural(gpus, 'GPU')} per task, but {where} nodes have "
                            f"{f'at most {most_gpus}' if most_gpus else 'none'} (sinfo)", f"{key}.gpus={most_gpus}"))
    if partition.max_time_min is not None and timeout_min > partition.max_time_min:
        found.append(Misfit(f"{key}.timeout_min: {timeout_min} minutes per task, but {where} allows at most "
                            f"{partition.max_time_min} (MaxTime)", f"{key}.timeout_min={partition.max_time_min}"))
    if not found and not any(fits_on(n, partition, cpus, math.ceil(mem_gb * MB_PER_GB), gpus) for n in nodes):
        found.append(Misfit(f"{key}: {_plural(cpus, 'CPU')}, {mem_gb:g} GB and {_plural(gpus, 'GPU')} per task, "
                            f"but no node of {where} has them all (sinfo)", None))
    return found


def check_fits(cluster: Cluster, partition_name: str | None, requests: dict[str, tuple[int, float, int, int]],
               source=None) -> Partition:
    """Raise one error line naming every stage request (cpus, mem_gb, gpus, timeout_min) that cannot run.

    The line ends with the settings that would fit; returns the partition the jobs go to.
    """
    try:
        partition = cluster.partition(partition_name)
    except BitextmineError as e:
        raise BitextmineError(e.message, path=source) from None
    found = [m for stage, request in requests.items() for m in misfits(partition, stage, *request)]
    if found:
        fixes = [m.fix for m in found if m.fix]
        message = "; ".join(m.message for m in found)
        if fixes:
            message += "; set " + ", ".join(f.replace("=", ": ", 1) for f in fixes) + " (" + \
                " ".join(f"--set {f}" for f in fixes) + ")"
        if any(m.fix and m.fix.endswith(".gpus=0") for m in found):
            message += " or run with --launcher local"
        raise BitextmineError(message, path=source)
    return partition


# --- plan on Slurm ----------------------------------------------------------------------------

@dataclass
class SlurmStageEstimate:
    stage: str
    tasks: int
    arrays: int  # job arrays of at most launcher.slurm.max_array tasks
    cpus: int  # per task, as asked in resources.STAGE
    gpus: int
    mem_gb: float
    timeout_min: int
    concurrent: int  # tasks of this size the partition runs at once; 0: none fits
    task_seconds: float  # one task, as estimated on this machine
    seconds: float | None  # queue-free wall time: waves of `concurrent` tasks; None when nothing fits


def slurm_estimates(cfg: PipelineConfig, estimates: list[StageEstimate], partition) -> list[SlurmStageEstimate]:
    """Array sizes, resources per task and queue-free wall time of each stage on a Slurm partition.

    A stage's wall time is ceil(tasks / concurrent) x the time of one task, where
    ``concurrent`` is how many tasks of its size the partition's usable nodes hold at
    once (at most ``launcher.slurm.max_array``) and one task's time is the stage's
    estimate spread over its tasks (the estimate ran ``launcher.workers`` at a time).
    """
    workers = max(1, cfg.launcher.workers or 1)
    out = []
    for e in estimates:
        r = cfg.resources_for(e.stage)
        concurrent = min(concurrent_tasks(partition, r.cpus, r.mem_gb, r.gpus), cfg.launcher.slurm.max_array)
        task_seconds = e.seconds * min(workers, e.tasks) / max(e.tasks, 1)
        waves = -(-e.tasks // concurrent) if concurrent else None
        out.append(SlurmStageEstimate(e.stage, e.tasks, -(-e.tasks // cfg.launcher.slurm.max_array), r.cpus, r.gpus,
                                      r.mem_gb, r.timeout_min, concurrent, task_seconds,
                                      waves * task_seconds if waves is not None else None))
    return out
