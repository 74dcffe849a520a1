"""`run --launcher slurm`, `plan --launcher slurm` and `doctor` on a real Slurm cluster, and the
arithmetic and messages behind them without one.

The cluster tests (marked ``slurm``) run on the one-node cluster of scripts/local-slurm.sh
(or the one SLURM_CONF names) and skip where it cannot be installed or started. They run
the example pipelines over small copies of their shards, so that a task is mostly the
start of its process.
"""

from __future__ import annotations

import json
import math
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from bitextmine.errors import BitextmineError
from bitextmine.launch.config import LauncherSettings, PipelineConfig, Resources, load_config
from bitextmine.launch.costs import StageEstimate
from bitextmine.launch.slurm import (
    Cluster,
    Node,
    Partition,
    check_fits,
    concurrent_tasks,
    misfits,
    parse_gpus,
    parse_oneliner,
    parse_time_min,
    slurm_estimates,
)
from tests.conftest import REPO, read_lines, start_local_slurm, stop_local_slurm, wait_for

EXAMPLE_PIPELINES = sorted((REPO / "examples").glob("pipeline-*.yaml"))
LABSE = REPO / "examples" / "pipeline-labse-commoncrawl.yaml"  # its index and mine requests fit a small node
RUN_TIMEOUT_S = 600


def on_cluster(test):
    """A test through the session's Slurm cluster (slow: every task is a process start-up)."""
    return pytest.mark.slurm(pytest.mark.slow(pytest.mark.usefixtures("slurm_conf")(test)))


def small_copy(tmp_path: Path, example: Path, lines: int = 30, shards: int = 2) -> Path:
    """The example pipeline over ``shards`` shards of ``lines`` lines per language (output: tmp_path/out);
    a pipeline that starts from documents keeps its one file of documents per language."""
    data = yaml.safe_load(example.read_text(encoding="utf-8"))
    for lang, source in data["languages"].items():
        if data.get("prepare", {}).get("enabled"):
            data["languages"][lang] = str(example.parent / source)
            continue
        text = translations_first(example, data, lang, source)
        paths = []
        for i in range(shards):
            shard = tmp_path / "corpus" / f"{lang}.{i}.txt"
            shard.parent.mkdir(exist_ok=True)
            shard.write_text("".join(x + "\n" for x in text[i * lines : (i + 1) * lines]), encoding="utf-8")
            paths.append(str(shard))
        data["languages"][lang] = paths
    data["output"] = str(tmp_path / "out")
    path = tmp_path / example.name
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    return path


def translations_first(example: Path, data: dict, lang: str, source: str) -> list[str]:
    """A language's lines, those of the gold pairs first (in gold order, so that both sides' first
    lines translate each other): mine finds translations in a few lines, and keeps them."""
    text = read_lines(example.parent / source)
    gold = (example.parent / source).parent / "gold.tsv"
    if not gold.is_file():
        return text
    side = data["pairs"][0].index(lang)
    first = [int(line.split("\t")[side]) - 1 for line in read_lines(gold)]
    taken = set(first)
    return [text[i] for i in first] + [x for i, x in enumerate(text) if i not in taken]


def bitextmine(*args) -> subprocess.CompletedProcess:
    """The CLI in a process of its own, run from the repository (jobs import bitextmine from there)."""
    return subprocess.run([sys.executable, "-m", "bitextmine", *map(str, args)], cwd=REPO, capture_output=True,
                          text=True, timeout=RUN_TIMEOUT_S)


def start_bitextmine(*args) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "bitextmine", *map(str, args)], cwd=REPO,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def one_line_error(done: subprocess.CompletedProcess, *fragments: str) -> str:
    lines = [x for x in done.stderr.splitlines() if x.strip()]
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    assert len(lines) == 1 and lines[0].startswith("bitextmine: error: "), done.stderr
    for fragment in fragments:
        assert fragment in lines[0], (fragment, lines[0])
    return lines[0]


def arrays(output: Path) -> dict[str, list[str]]:
    """The jobs the last run of this output submitted, as sacct lists them: array id -> task ids ('' alone)."""
    ids = (output / "logs" / "slurm-jobs.txt").read_text().split()
    listed = subprocess.run(["sacct", "-n", "-X", "-P", "-o", "JobID", *(f"--jobs={i}" for i in ids)],
                            capture_output=True, text=True, check=True).stdout.split()
    found: dict[str, list[str]] = {}
    for job in listed:
        array, _, task = job.partition("_")
        found.setdefault(array, []).append(task)
    return {array: sorted(tasks) for array, tasks in found.items()}


def ran(output: Path) -> dict[str, int]:
    return {s["stage"]: s["ran"] for s in json.loads((output / "summary.json").read_text())["stages"]}


def markers(output: Path, stage: str = "embed") -> list[Path]:
    return sorted((output / stage).glob("*/*/.task.json"))


ONE_CPU_EMBED = tuple(x for setting in ("resources.embed.gpus=0", "resources.embed.cpus=1", "resources.embed.mem_gb=1")
                      for x in ("--set", setting))


# --- through the cluster ------------------------------------------------------------------------

@on_cluster
@pytest.mark.parametrize("example", EXAMPLE_PIPELINES, ids=lambda p: p.stem)
def test_an_example_stops_before_submitting_or_completes_with_the_inline_pairs(tmp_path, example):
    """Unchanged, an example either runs or stops at once naming what does not fit; the settings
    the message names make it run, in job arrays, to the pairs of --launcher inline."""
    config = small_copy(tmp_path, example, lines=60, shards=1)
    out = tmp_path / "out"
    done = bitextmine("run", config, "--launcher", "slurm", "-q")
    if done.returncode != 0:
        line = one_line_error(done, f"{config}: resources.", "(sinfo)")
        assert not out.exists()  # stopped before submitting anything
        fixes = re.findall(r"--set ([\w.]+=[^\s)]+)", line)
        assert fixes, line
        done = bitextmine("run", config, "--launcher", "slurm", "-q", *(x for f in fixes for x in ("--set", f)))
    assert done.returncode == 0, done.stderr
    documents = load_config(config).prepare.enabled
    if documents:  # a language's documents are one prepare task, its sentences one shard; mined exactly
        assert ran(out) == {"prepare": 2, "embed": 2, "index": 0, "mine": 1, "filter": 1}
        assert sorted(arrays(out).values()) == [[""], [""], ["0", "1"], ["0", "1"]]
    else:
        assert ran(out) == {"embed": 2, "index": 2, "mine": 1, "filter": 1}
        # a submission per stage: the embedding tasks (a shard each) in one array, the index tasks (a language
        # each) in another, mining and filtering (one language pair) as single jobs
        assert sorted(arrays(out).values()) == [[""], [""], ["0", "1"], ["0", "1"]]

    inline = bitextmine("run", config, "--launcher", "inline", "-q", "--set", f"output={tmp_path / 'inline'}")
    assert inline.returncode == 0, inline.stderr
    pairs = sorted(p.name for p in (out / "pairs").glob("*.tsv"))
    assert pairs and pairs == sorted(p.name for p in (tmp_path / "inline" / "pairs").glob("*.tsv"))
    for name in pairs:
        assert (out / "pairs" / name).read_bytes() == (tmp_path / "inline" / "pairs" / name).read_bytes()
    assert (out / "pairs" / pairs[0]).stat().st_size > 0


@on_cluster
def test_a_killed_run_resumes_without_resubmitting_finished_tasks(tmp_path):
    from bitextmine.launch.slurm import read_cluster

    cpus = max(n.cpus for n in read_cluster().partition(None).nodes)
    config = small_copy(tmp_path, LABSE, shards=1)
    out = tmp_path / "out"
    args = ("run", config, "--launcher", "slurm", "--stage", "embed", "-q", *ONE_CPU_EMBED,
            "--set", f"resources.embed.cpus={cpus}")  # a whole node each: one task after the other
    killed = start_bitextmine(*args)
    wait_for(lambda: markers(out) or killed.poll() is not None, seconds=300)
    killed.kill()  # SIGKILL: it cannot cancel its jobs
    killed.communicate()
    finished = {p: p.stat().st_mtime_ns for p in markers(out)}
    assert len(finished) == 1, "the run should have been killed part-way through embedding"
    left = (out / "logs" / "slurm-jobs.txt").read_text().split()

    rerun = bitextmine(*args)
    assert rerun.returncode == 0, rerun.stderr
    assert "Slurm job(s) that an earlier run of this pipeline left queued" in rerun.stderr
    assert all(p.stat().st_mtime_ns == stamp for p, stamp in finished.items()), "a finished task ran again"
    assert len(markers(out)) == 2
    # on a loaded machine the task left may finish in the moment scancel takes to reach it:
    # then nothing is left to run; otherwise it runs again, alone
    assert ran(out)["embed"] in (0, 1)
    if ran(out)["embed"]:
        [(job, tasks)] = arrays(out).items()
        assert job not in left and tasks == [""]  # the one task left, alone
    queued = subprocess.run(["squeue", "-h", "-o", "%i", *(f"--jobs={i}" for i in left)], capture_output=True,
                            text=True)
    assert queued.stdout.strip() == ""  # the killed run's jobs were cancelled, not left to race this one


def _submitted_tasks(folder: Path) -> dict[str, int]:
    """The running tasks' processes under ``folder``: array task id -> pid."""
    found = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().decode().split("\0")
            environ = (entry / "environ").read_bytes().split(b"\0")
        except OSError:
            continue
        # the task's Python, not the srun that started it
        if Path(argv[0]).name.startswith("python") and "submitit.core._submit" in argv and str(folder) in argv:
            task = next((v.split(b"=", 1)[1].decode() for v in environ if v.startswith(b"SLURM_ARRAY_TASK_ID=")), "")
            found[task] = int(entry.name)
    return found


@on_cluster
@pytest.mark.skipif(not Path("/proc/self/environ").exists(), reason="finds the tasks' processes through /proc")
def test_a_task_killed_by_scancel_or_sigkill_is_retried_and_the_run_completes(tmp_path):
    config = small_copy(tmp_path, LABSE, lines=40, shards=1)
    out = tmp_path / "out"
    run = start_bitextmine("run", config, "--launcher", "slurm", "--stage", "embed", "-q", *ONE_CPU_EMBED,
                           "--set", "launcher.retries=1")
    tasks = wait_for(lambda: "0" in (found := _submitted_tasks(out / "logs" / "embed")) and found, seconds=300)
    array = (out / "logs" / "slurm-jobs.txt").read_text().split()[0]
    os.kill(tasks["0"], signal.SIGKILL)  # as the out-of-memory killer would
    subprocess.run(["scancel", f"{array}_1"], check=True)  # running or still pending
    _, stderr = run.communicate(timeout=RUN_TIMEOUT_S)
    assert run.returncode == 0, stderr
    crashes = [line for line in stderr.splitlines() if "crashed (attempt 1 of 2)" in line]
    assert len(crashes) == 2 and all("Slurm state" in line for line in crashes), stderr
    assert any("CANCELLED" in line for line in crashes), crashes
    assert len(markers(out)) == 2 and ran(out)["embed"] == 2


@on_cluster
def test_an_input_error_is_not_retried_and_ends_the_run_with_its_message(tmp_path):
    config = small_copy(tmp_path, LABSE, lines=20, shards=1)
    bad = tmp_path / "corpus" / "bad.txt"
    bad.write_bytes(b"gut\nschlecht \xc3\x28\n")
    data = yaml.safe_load(config.read_text())
    data["languages"]["de"].append(str(bad))
    config.write_text(yaml.safe_dump(data))
    done = bitextmine("run", config, "--launcher", "slurm", "--stage", "embed", "-q", *ONE_CPU_EMBED,
                      "--set", "launcher.retries=2")
    one_line_error(done, f"{bad}:2: invalid UTF-8", "(embed task de/bad)")
    assert list(arrays(tmp_path / "out").values()) == [["0", "1", "2"]]  # one array, nothing resubmitted


@on_cluster
def test_requests_that_no_node_can_hold_stop_before_submitting(tmp_path):
    from bitextmine.launch.pipeline import embed_tasks
    from bitextmine.launch.runner import Launcher
    from bitextmine.launch.slurm import read_cluster, slurm_command

    partition = read_cluster().partition(None)
    cpus = max(n.cpus for n in partition.nodes)
    config = small_copy(tmp_path, LABSE, lines=10, shards=1)
    run = ("run", config, "--launcher", "slurm", "-q", "--set", "resources.embed.gpus=0")
    one_line_error(bitextmine(*run, "--set", f"resources.embed.cpus={cpus + 1}"),
                   f"{config}: resources.embed.cpus: {cpus + 1} CPUs per task, but partition '{partition.name}' "
                   f"nodes have at most {cpus} (sinfo); set resources.embed.cpus: {cpus}",
                   f"(--set resources.embed.cpus={cpus})")
    one_line_error(bitextmine(*run, "--set", "resources.mine.mem_gb=100000"), "resources.mine.mem_gb: 100000 GB per ")
    one_line_error(bitextmine(*run, "--set", "launcher.slurm.partition=nosuch"),
                   "launcher.slurm.partition: no partition 'nosuch' (sinfo lists: ")
    if not any(n.gpus for n in partition.nodes):
        one_line_error(bitextmine("run", config, "--launcher", "slurm", "-q"),
                       f"resources.embed.gpus: 1 GPU per task, but partition '{partition.name}' nodes have none "
                       "(sinfo); set resources.embed.gpus: 0 (--set resources.embed.gpus=0) or run with --launcher "
                       "local")
    assert not (tmp_path / "out").exists()
    # what sinfo cannot tell (a feature no node has) is sbatch's refusal, in one line
    one_line_error(bitextmine(*run, "--set", "launcher.slurm.constraint=nosuchfeature"),
                   "embed: sbatch refused the job array: ", "Invalid feature specification")

    if "EnforcePartLimits       = ALL" in slurm_command("scontrol", "show", "config"):
        # past the check, the cluster itself refuses the job rather than leaving it pending forever
        cfg = load_config(config, ["resources.embed.gpus=0", f"resources.embed.cpus={cpus + 1}"])
        with pytest.raises(BitextmineError, match="^embed: sbatch refused the job array: "):
            Launcher(cfg, "slurm").run("embed", embed_tasks(cfg))


@on_cluster
def test_doctor_and_plan_read_the_partition(cli, tmp_path):
    from bitextmine.launch.slurm import read_cluster

    partition = read_cluster().partition(None)
    doctor = cli("doctor", "--json", tmp_path / "doctor.json")
    slurm = json.loads((tmp_path / "doctor.json").read_text())["environment"]["slurm"]
    assert slurm["sacct_works"] and partition.name in [p["name"] for p in slurm["partitions"]]
    assert f"[ok] Slurm partition '{partition.name}' (default), up: {partition.limits()}" in doctor.stdout
    assert "[ok] Slurm accounting on" in doctor.stdout

    config = small_copy(tmp_path, LABSE)
    plan = cli("plan", config, "--launcher", "slurm", "--device", "cpu", "-q", "--json", tmp_path / "plan.json",
               *ONE_CPU_EMBED)
    assert plan.exit_code == 0, plan.stderr
    embed = json.loads((tmp_path / "plan.json").read_text())["slurm"]["stages"][0]
    at_once = concurrent_tasks(partition, 1, embed["mem_gb"], 0)
    assert (embed["tasks"], embed["arrays"], embed["cpus"], embed["gpus"], embed["concurrent"]) == (4, 1, 1, 0, at_once)
    assert embed["seconds"] == pytest.approx(math.ceil(4 / at_once) * embed["task_seconds"])
    assert "wall time" in plan.stdout and not (tmp_path / "out").exists()


@pytest.fixture(scope="module")
def slurm_with_two_gpus(tmp_path_factory):
    directory = tmp_path_factory.mktemp("slurm-gpus") / "cluster"
    conf = start_local_slurm(directory, gpus=2)
    yield conf
    stop_local_slurm(directory)


@pytest.mark.slurm
@pytest.mark.slow
def test_each_embedding_task_gets_a_gpu_of_its_own(tmp_path, slurm_with_two_gpus, monkeypatch):
    monkeypatch.setenv("SLURM_CONF", slurm_with_two_gpus)
    config = small_copy(tmp_path, LABSE, lines=30, shards=1)  # gpus: 1 per embedding task
    done = bitextmine("run", config, "--launcher", "slurm", "--stage", "embed", "-q",
                      "--set", "resources.embed.cpus=1", "--set", "resources.embed.mem_gb=1")
    assert done.returncode == 0, done.stderr
    seen = [re.search(r"embed task \S+ on \S+, 1 thread\(s\), CUDA_VISIBLE_DEVICES=(\S+)", p.read_text()).group(1)
            for p in sorted((tmp_path / "out" / "logs" / "embed").glob("*_log.err"))]
    assert sorted(seen) == ["0", "1"]  # the two tasks ran at once, each on a GPU of its own


# --- without a cluster: reading Slurm, fitting requests, settings ---------------------------------

def test_scontrol_oneliners_times_and_gres_are_read():
    node = parse_oneliner("NodeName=gpu01 Arch=x86_64 CPUTot=64 RealMemory=515000 Gres=gpu:a100:4(S:0-1) "
                          "OS=Linux 6.1.0-18-amd64 #1 SMP PREEMPT_DYNAMIC Debian 6.1.76-1 (2024-02-01) State=MIXED")
    assert node["CPUTot"] == "64" and node["State"] == "MIXED" and node["OS"].startswith("Linux 6.1.0-18")
    assert parse_gpus(node["Gres"]) == 4 and parse_gpus("gpu:1,mps:100") == 1 and parse_gpus("(null)") == 0
    assert [parse_time_min(t) for t in ("UNLIMITED", "30", "30:30", "2:00:00", "1-00:00:00", "2-12", "1-2:30")] == \
        [None, 30, 31, 120, 1440, 3600, 1590]


def partition(*nodes: Node, **limits) -> Partition:
    values = dict(max_time_min=None, max_cpus_per_node=None, max_mem_per_node_mb=None, max_mem_per_cpu_mb=None)
    values.update(limits)
    return Partition("debug", True, "UP", nodes=list(nodes), **values)


SMALL_NODE = Node("vm", 2, 24105, 0, "IDLE")


def test_a_request_beyond_every_node_names_the_key_and_the_setting_that_fits():
    found = misfits(partition(SMALL_NODE), "index", 4, 32, 0, 480)
    assert [str(m) for m in found] == [
        "resources.index.cpus: 4 CPUs per task, but partition 'debug' nodes have at most 2 (sinfo); "
        "set resources.index.cpus: 2",
        "resources.index.mem_gb: 32 GB per task, but partition 'debug' nodes have at most 23.5 GB (sinfo); "
        "set resources.index.mem_gb: 23"]
    timed = misfits(partition(SMALL_NODE, max_time_min=60), "mine", 1, 1, 0, 480)
    assert [m.fix for m in timed] == ["resources.mine.timeout_min=60"]
    assert misfits(partition(SMALL_NODE), "embed", 2, 8, 0, 120) == []
    # each resource exists somewhere, but on no node together
    split = partition(Node("cpu", 64, 8000, 0, "IDLE"), Node("gpu", 4, 500000, 8, "IDLE"))
    [both] = misfits(split, "embed", 16, 100, 1, 60)
    assert both.fix is None and "no node of partition 'debug' has them all" in both.message


def test_check_fits_raises_one_line_with_every_setting_to_change():
    cluster = Cluster({"debug": partition(SMALL_NODE)}, "accounting_storage/slurmdbd")
    requests = {"embed": (2, 8.0, 1, 120), "mine": (4, 8.0, 0, 60), "filter": (1, 4.0, 0, 60)}
    with pytest.raises(BitextmineError) as raised:
        check_fits(cluster, None, requests, source="p.yaml")
    assert str(raised.value) == (
        "p.yaml: resources.embed.gpus: 1 GPU per task, but partition 'debug' nodes have none (sinfo); "
        "resources.mine.cpus: 4 CPUs per task, but partition 'debug' nodes have at most 2 (sinfo); "
        "set resources.embed.gpus: 0, resources.mine.cpus: 2 (--set resources.embed.gpus=0 --set resources.mine.cpus=2)"
        " or run with --launcher local")
    assert check_fits(cluster, "debug", {"filter": (1, 4.0, 0, 60)}).name == "debug"
    with pytest.raises(BitextmineError, match=r"^p.yaml: launcher.slurm.partition: no partition 'gpu' \(sinfo "
                                              r"lists: debug\)$"):
        check_fits(cluster, "gpu", requests, source="p.yaml")
    no_default = Cluster({"a": partition(SMALL_NODE)}, "")
    no_default.partitions["a"].default = False
    with pytest.raises(BitextmineError, match="not set, and Slurm has no default partition"):
        check_fits(no_default, None, requests)


def test_concurrent_tasks_count_what_every_usable_node_holds():
    gpu_nodes = partition(*(Node(f"g{i}", 32, 256 * 1024, 4, "IDLE") for i in range(3)),
                          Node("down", 32, 256 * 1024, 4, "DOWN+DRAIN"))
    assert concurrent_tasks(gpu_nodes, 4, 32, 1) == 12  # the GPUs limit: 4 a node, the drained node left out
    assert concurrent_tasks(gpu_nodes, 4, 100, 0) == 6  # memory: 2 a node
    assert concurrent_tasks(partition(SMALL_NODE, max_mem_per_cpu_mb=1024), 1, 2, 0) == 0  # 2 GB > 1 GB a CPU


def test_slurm_estimates_are_waves_of_what_the_partition_runs_at_once():
    cfg = PipelineConfig(output=Path("out"), languages={"de": ("x",)}, pairs=(("de", "de"),),
                         launcher=LauncherSettings(workers=2),
                         resources={"embed": Resources(cpus=1, gpus=0, mem_gb=2, timeout_min=10),
                                    "mine": Resources(cpus=4, gpus=0, mem_gb=2, timeout_min=10)})
    estimates = [StageEstimate("embed", 5, 1, 0, 0, seconds=30.0, basis=""),
                 StageEstimate("mine", 1, 1, 0, 0, seconds=7.0, basis="")]
    embed, mine = slurm_estimates(cfg, estimates, partition(SMALL_NODE))
    # the local estimate ran launcher.workers (2) at a time: a task is 30 s x 2 / 5
    assert (embed.tasks, embed.arrays, embed.concurrent, embed.task_seconds) == (5, 1, 2, 12.0)
    assert embed.seconds == pytest.approx(3 * 12.0)
    assert (mine.concurrent, mine.seconds) == (0, None)  # 4 CPUs: no node holds it


def test_set_changes_the_file_settings_and_is_checked_like_them(tmp_path):
    config = small_copy(tmp_path, LABSE, lines=5, shards=1)
    cfg = load_config(config, ["resources.embed.gpus=0", "launcher.slurm.partition=gpu", "mine.threshold=null",
                               "output=elsewhere"])
    assert cfg.resources_for("embed").gpus == 0 and cfg.launcher.slurm.partition == "gpu"
    assert cfg.mine.threshold is None and cfg.output == (tmp_path / "elsewhere").resolve()
    assert cfg.resources_for("embed").cpus == yaml.safe_load(config.read_text())["resources"]["embed"]["cpus"]
    # a bad value given by --set is named as such, not blamed on the file
    with pytest.raises(BitextmineError, match=r"^--set resources.embed.gpus=one: must be an integer"):
        load_config(config, ["resources.embed.gpus=one"])
    with pytest.raises(BitextmineError, match=r"^--set resources.embed.gpu=0: unknown key"):
        load_config(config, ["resources.embed.gpu=0"])
    with pytest.raises(BitextmineError, match=r"^--set mine.k.x=1: mine.k is not a mapping$"):
        load_config(config, ["mine.k.x=1"])


def test_set_without_an_equals_sign_is_a_usage_error(cli, tmp_path):
    result = cli("run", tmp_path / "p.yaml", "--set", "resources.embed.gpus")
    assert result.exit_code == 2 and "is not KEY=VALUE" in result.stderr
