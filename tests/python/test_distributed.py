"""distributed.resolve (torchrun, SLURM, single) and init (2 local processes with gloo); one rank
works as N ranks do: ``distributed.init()`` makes the process group at world size 1 too, so DDP on
one GPU (or one CPU process) and a scaling study's 1x1 baseline run the code that N ranks run
(``DistributedDataParallel``, ``all_reduce``, ``barrier``), whatever the source."""

from __future__ import annotations

import importlib.util
import json
import re
import socket
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import pytest

from conftest import clean_environ
from hpc_helpers import ports
from hpc_helpers.distributed import DistEnv, resolve

# One pytest-xdist worker for the module (run.sh: --dist loadgroup): the module fixture runs once.
pytestmark = pytest.mark.xdist_group("distributed")

TORCHRUN = {
    "RANK": "5",
    "LOCAL_RANK": "1",
    "WORLD_SIZE": "8",
    "LOCAL_WORLD_SIZE": "4",
    "GROUP_RANK": "1",
    "MASTER_ADDR": "node-a",
    "MASTER_PORT": "29400",
}

SLURM_STEP = {
    "SLURM_JOB_ID": "123456",
    "SLURM_STEP_ID": "0",
    "SLURM_PROCID": "5",
    "SLURM_LOCALID": "1",
    "SLURM_NTASKS": "8",
    "SLURM_NODEID": "1",
    "SLURM_STEP_TASKS_PER_NODE": "4(x2)",
    "SLURM_TASKS_PER_NODE": "4(x3)",
    "SLURM_STEP_NODELIST": "gpu[07-08]",
    "SLURM_JOB_NODELIST": "gpu[06-08]",
    "SLURMD_NODENAME": "gpu08",
}


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        pytest.param(
            TORCHRUN,
            DistEnv(5, 1, 8, 4, 1, "node-a", 29400, "torchrun"),
            id="torchrun-full",
        ),
        pytest.param(
            {"RANK": "0", "WORLD_SIZE": "1", "MASTER_ADDR": "h", "MASTER_PORT": "1234"},
            DistEnv(0, 0, 1, 1, 0, "h", 1234, "torchrun"),
            id="torchrun-minimal",
        ),
        pytest.param(
            {"RANK": "3", "WORLD_SIZE": "4", "LOCAL_WORLD_SIZE": "2", "SLURM_JOB_ID": "42"},
            DistEnv(3, 1, 4, 2, 1, "127.0.0.1", 20042, "torchrun"),
            id="torchrun-defaults-port-from-job",
        ),
        pytest.param(
            {"RANK": "1", "WORLD_SIZE": "2", "LOCAL_RANK": "1"},
            DistEnv(1, 1, 2, 2, 0, "127.0.0.1", 29500, "torchrun"),
            id="torchrun-no-job",
        ),
        pytest.param(
            {**SLURM_STEP, **TORCHRUN},
            DistEnv(5, 1, 8, 4, 1, "node-a", 29400, "torchrun"),
            id="torchrun-wins-over-slurm",
        ),
        pytest.param(
            SLURM_STEP,
            DistEnv(5, 1, 8, 4, 1, "gpu07", 28544, "slurm"),
            id="slurm-step",
        ),
        pytest.param(
            {**SLURM_STEP, "MASTER_PORT": "31000", "MASTER_ADDR": "gpu07-ib"},
            DistEnv(5, 1, 8, 4, 1, "gpu07-ib", 31000, "slurm"),
            id="slurm-preset-master",
        ),
        pytest.param(
            {
                "SLURM_JOB_ID": "7",
                "SLURM_PROCID": "6",
                "SLURM_LOCALID": "0",
                "SLURM_NTASKS": "7",
                "SLURM_NODEID": "3",
                "SLURM_TASKS_PER_NODE": "2(x3),1",
                "SLURM_JOB_NODELIST": "n[1-4]",
            },
            DistEnv(6, 0, 7, 1, 3, "n1", 20007, "slurm"),
            id="slurm-uneven-job-level",
        ),
        pytest.param(
            {
                "SLURM_JOB_ID": "12769",
                "SLURM_PROCID": "3",
                "SLURM_LOCALID": "1",
                "SLURM_NPROCS": "4",
                "SLURM_NODEID": "1",
                "SLURM_NTASKS_PER_NODE": "2",
                "SLURM_NNODES": "2",
                "SLURM_NODELIST": "n2,n1",
            },
            DistEnv(3, 1, 4, 2, 1, "n2", 20001, "slurm"),
            id="slurm-ntasks-per-node",
        ),
        pytest.param(
            {
                "SLURM_JOB_ID": "99",
                "SLURM_PROCID": "1",
                "SLURM_LOCALID": "1",
                "SLURM_NTASKS": "2",
                "SLURM_NODEID": "0",
            },
            DistEnv(1, 1, 2, 2, 0, "127.0.0.1", 20099, "slurm"),
            id="slurm-single-node-no-nodelist",
        ),
        pytest.param(
            {"SLURM_JOB_ID": "5", "SLURM_PROCID": "0", "SLURM_NODEID": "0"},
            None,
            id="batch-shell-without-ntasks-is-single",
        ),
        pytest.param(
            {**SLURM_STEP, "HPC_DIST_SOURCE": "single", "MASTER_PORT": "29999"},
            DistEnv(0, 0, 1, 1, 0, "127.0.0.1", 29999, "single"),
            id="forced-single",
        ),
        pytest.param(
            {"MASTER_PORT": "29501", "MASTER_ADDR": "10.0.0.1"},
            DistEnv(0, 0, 1, 1, 0, "10.0.0.1", 29501, "single"),
            id="single-preset",
        ),
    ],
)
def test_resolve(env: Mapping[str, str], expected: DistEnv | None) -> None:
    got = resolve(env)
    if expected is None:
        assert got.source == "single"
        assert (got.rank, got.world_size) == (0, 1)
    else:
        assert got == expected


def test_single_picks_a_free_port() -> None:
    d = resolve({})
    assert d.source == "single"
    assert d.master_addr == "127.0.0.1"
    assert 1 <= d.master_port <= 65535
    assert not d.is_distributed
    assert d.is_main


def test_one_slurm_task_alone_takes_a_free_port_not_the_derived_one() -> None:
    # The batch step of a job without a launcher (one task, SLURM's variables, no MASTER_PORT):
    # nobody else must find its port, and the derived one (20000 + id % 20000) may be taken on
    # the node (another job's whose id is 20000 apart, or a client's ephemeral port: 32768 up).
    env = {"SLURM_JOB_ID": "19184", "SLURM_PROCID": "0", "SLURM_NTASKS": "1", "SLURM_NODEID": "0",
           "SLURM_LOCALID": "0", "SLURM_JOB_NODELIST": "n1"}
    taken = socket.socket()
    try:
        taken.bind(("127.0.0.1", ports.derive_port(19184)))
        taken.listen()
        d = resolve(env)
        assert d.source == "slurm"
        assert d.world_size == 1
        assert d.master_port != ports.derive_port(19184)
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", d.master_port))
    finally:
        taken.close()
    # A preset MASTER_PORT still wins.
    assert resolve({**env, "MASTER_PORT": "31000"}).master_port == 31000


def test_resolve_reads_os_environ(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in SLURM_STEP.items():
        monkeypatch.setenv(name, value)
    assert resolve() == DistEnv(5, 1, 8, 4, 1, "gpu07", 28544, "slurm")


def test_array_tasks_differ_in_port() -> None:
    base = {"SLURM_PROCID": "0", "SLURM_NTASKS": "1", "SLURM_JOB_NODELIST": "n1"}
    a = resolve({**base, "SLURM_JOB_ID": "500", "SLURM_ARRAY_TASK_ID": "0"})
    b = resolve({**base, "SLURM_JOB_ID": "501", "SLURM_ARRAY_TASK_ID": "1"})
    assert a.master_port != b.master_port


@pytest.mark.parametrize(
    ("env", "words"),
    [
        ({"RANK": "0"}, "RANK is set but WORLD_SIZE is not"),
        ({"WORLD_SIZE": "2"}, "WORLD_SIZE is set but RANK is not"),
        ({"RANK": "2", "WORLD_SIZE": "2"}, "rank 2 is not below the world size 2"),
        ({"RANK": "x", "WORLD_SIZE": "2"}, "RANK must be an integer >= 0, got 'x'"),
        ({"RANK": "0", "WORLD_SIZE": "0"}, "WORLD_SIZE must be an integer >= 1, got '0'"),
        ({"RANK": "0", "WORLD_SIZE": "2", "MASTER_PORT": "http"}, "got 'http'"),
        (
            {"RANK": "0", "WORLD_SIZE": "2", "LOCAL_RANK": "2", "LOCAL_WORLD_SIZE": "2"},
            "local rank 2 is not below the local world size 2",
        ),
        ({"HPC_DIST_SOURCE": "mpi"}, "HPC_DIST_SOURCE must be one of torchrun, slurm, single"),
        ({"HPC_DIST_SOURCE": "torchrun"}, "RANK is not set"),
        (
            {"SLURM_PROCID": "0", "SLURM_NTASKS": "2", "SLURM_JOB_NODELIST": "n[1-2]"},
            "set SLURM_JOB_ID or MASTER_PORT",
        ),
        (
            {"SLURM_JOB_ID": "1", "SLURM_PROCID": "0", "SLURM_NTASKS": "4", "SLURM_NNODES": "2"},
            "set SLURM_JOB_NODELIST or MASTER_ADDR",
        ),
        (
            {"SLURM_JOB_ID": "1", "SLURM_PROCID": "0", "SLURM_NTASKS": "3", "SLURM_NNODES": "2"},
            "cannot tell the tasks on this node",
        ),
        (
            {
                "SLURM_JOB_ID": "1",
                "SLURM_PROCID": "0",
                "SLURM_NTASKS": "2",
                "SLURM_NODEID": "2",
                "SLURM_TASKS_PER_NODE": "1(x2)",
            },
            "SLURM_NODEID 2 is beyond the tasks-per-node list [1, 1]",
        ),
        (
            {
                "SLURM_JOB_ID": "1",
                "SLURM_PROCID": "0",
                "SLURM_NTASKS": "2",
                "SLURM_JOB_NODELIST": "n[2-1]",
            },
            "SLURM_JOB_NODELIST: invalid hostlist 'n[2-1]'",
        ),
        ({"SLURM_PROCID": "a", "SLURM_NTASKS": "2"}, "SLURM_PROCID must be an integer >= 0"),
    ],
)
def test_resolve_errors(env: Mapping[str, str], words: str) -> None:
    with pytest.raises(ValueError, match=re.escape(words)):
        resolve(env)


def test_as_env_round_trips() -> None:
    d = resolve(SLURM_STEP)
    again = resolve(d.as_env())
    assert again == DistEnv(5, 1, 8, 4, 1, "gpu07", 28544, "torchrun")


# --- init: real process groups -------------------------------------------------------------

needs_torch = pytest.mark.skipif(
    importlib.util.find_spec("torch") is None, reason="torch is not installed"
)

# One worker process runs several cases one after another, each in the environment of its case
# (the variables init() exported for the one before removed): init, an all-reduce, cleanup. So
# a pair of processes serves both two-process groups and the scaling meter's (a user's program:
# its own process group and loop, test_meter_two_gloo_processes), and the first of them then both
# single-process modes and DDP at world size 1 (alone, as torchrun's one worker, as one SLURM
# task): each process imports torch (3 CPU-s) once, not once per case.
WORKER = """
import json, os, sys, time
import torch
import torch.distributed as dist
from hpc_helpers import scaling
from hpc_helpers.distributed import cleanup, init

base = dict(os.environ)
for mode, env in json.loads(sys.argv[1]):
    os.environ.clear()
    os.environ.update(base, **env)
    if mode == "meter":
        # Rank r processes r + 1 samples a step; the case's start and end on the monotonic clock.
        started = time.monotonic()
        dist.init_process_group("gloo")
        meter = scaling.Throughput(warmup_steps=3)
        for step in range(13):
            time.sleep(0.01)
            t = torch.ones(1)
            dist.all_reduce(t)
            meter.step(samples=dist.get_rank() + 1)
        print("rank", dist.get_rank(), "metrics", meter.finish() is not None, flush=True)
        dist.destroy_process_group()
        print(started, time.monotonic(), flush=True)
        continue
    if mode == "ddp":
        from torch.nn.parallel import DistributedDataParallel as DDP

        d = init(timeout_s=60)
        model = DDP(torch.nn.Linear(2, 1))
        model(torch.ones(3, 2)).sum().backward()
        total = torch.tensor([5.0])
        dist.all_reduce(total)
        dist.barrier()
        print(d.source, d.world_size, dist.is_initialized(), dist.get_world_size(),
              dist.get_backend(), total.item(), flush=True)
        cleanup()
        print("after cleanup", dist.is_initialized(), flush=True)
        continue
    d = init(timeout_s=60, force_init=mode == "force")
    if dist.is_initialized():
        t = torch.tensor([float(d.rank + 1)])
        dist.all_reduce(t)
        total, backend = t.item(), dist.get_backend()
    else:
        total, backend = None, None
    print(d.source, d.rank, d.world_size, d.local_rank, total, backend,
          os.environ["MASTER_ADDR"], os.environ["MASTER_PORT"], os.environ["RANK"],
          os.environ["WORLD_SIZE"], os.environ["LOCAL_RANK"], flush=True)
    cleanup()
    assert not dist.is_initialized()
"""

Case = tuple[str, dict[str, str]]

# torchrun --nproc_per_node=1 (-W torchrun -g 1).
TORCHRUN_ONE = {"RANK": "0", "LOCAL_RANK": "0", "WORLD_SIZE": "1", "MASTER_ADDR": "127.0.0.1"}
# A scaling study's 1x1 baseline under -W lightning: one srun task.
SLURM_ONE = {
    "SLURM_JOB_ID": "4321",
    "SLURM_PROCID": "0",
    "SLURM_LOCALID": "0",
    "SLURM_NTASKS": "1",
    "SLURM_NODEID": "0",
    "SLURM_STEP_TASKS_PER_NODE": "1",
    "SLURM_STEP_NODELIST": "localhost",
}


def _run_group(tmp_path: Path, procs_cases: list[list[Case]]) -> list[list[list[str]]]:
    """One process per list of cases, all at once; each process's output, a line split per case."""
    script = tmp_path / "worker.py"
    script.write_text(WORKER)
    procs = [
        subprocess.Popen(
            [sys.executable, str(script), json.dumps(cases)],
            env=clean_environ(),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for cases in procs_cases
    ]
    outputs = []
    for proc in procs:
        out, err = proc.communicate(timeout=600)  # a hang guard, loaded machine too
        assert proc.returncode == 0, err
        outputs.append([line.split() for line in out.splitlines()])
    return outputs


def _free_job_id() -> int | None:
    for job_id in range(4321, 20000, 131):
        if ports.is_free(ports.derive_port(job_id)):
            return job_id
    return None


@dataclass(frozen=True)
class Groups:
    """The lines of the two-process groups' ranks (slurm: None when no derived port was free),
    of the single process, plain then forced, and of the meter's group: each rank's line, then
    its start and end (seconds on the monotonic clock), and the run folder it measured in; the
    two lines of each DDP case at world size 1 (alone, torchrun, slurm)."""

    slurm_port: str | None
    slurm: list[list[str]] | None
    torchrun: list[list[str]]
    single: list[list[str]]
    meter: list[list[str]]
    meter_times: list[list[str]]
    meter_run_dir: Path
    ddp: dict[str, list[str]]


@pytest.fixture(scope="module")
def groups(tmp_path_factory: pytest.TempPathFactory) -> Groups:
    if importlib.util.find_spec("torch") is None:
        pytest.skip("torch is not installed")
    job_id = _free_job_id()
    port = str(ports.ephemeral_port())
    torchrun_env = {"WORLD_SIZE": "2", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": port}
    ranks: list[list[Case]] = [[] for _ in range(2)]
    if job_id is not None:
        common = {
            "SLURM_JOB_ID": str(job_id),
            "SLURM_NTASKS": "2",
            "SLURM_NODEID": "0",
            "SLURM_STEP_TASKS_PER_NODE": "2",
            "SLURM_STEP_NODELIST": "localhost",
        }
        for r in range(2):
            ranks[r].append(("plain", {**common, "SLURM_PROCID": str(r), "SLURM_LOCALID": str(r)}))
    for r in range(2):
        ranks[r].append(("plain", {**torchrun_env, "RANK": str(r), "LOCAL_RANK": str(r)}))
    meter_run_dir = tmp_path_factory.mktemp("meter") / "runs" / "1x2-r1"
    meter_port = port
    while meter_port == port:  # a port of its own: the two groups' stores are not the same
        meter_port = str(ports.ephemeral_port())
    meter_env = {
        "WORLD_SIZE": "2", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": meter_port,
        "scaling_run_dir": str(meter_run_dir), "num_nodes": "1", "gpus_per_node": "2",
    }
    for r in range(2):
        ranks[r].append(("meter", {**meter_env, "RANK": str(r)}))
    # The meter's case prints two lines.
    pair_cases = len(ranks[1]) + 1
    # Rank 0 goes on alone once its groups are cleaned up: the single process, plain then forced,
    # then DDP at world size 1 in each source's environment.
    ranks[0] += [("plain", {}), ("force", {})]
    ddp_cases = {
        "alone": {},
        "torchrun": {**TORCHRUN_ONE, "MASTER_PORT": str(ports.ephemeral_port())},
        "slurm": {**SLURM_ONE, "MASTER_PORT": str(ports.ephemeral_port())},
    }
    ranks[0] += [("ddp", env) for env in ddp_cases.values()]
    rank0, rank1 = _run_group(tmp_path_factory.mktemp("dist"), ranks)
    single = rank0[pair_cases : pair_cases + 2]
    ddp_lines = [" ".join(words) for words in rank0[pair_cases + 2 :]]
    assert len(ddp_lines) == 2 * len(ddp_cases), ddp_lines
    ddp = {name: ddp_lines[2 * i : 2 * i + 2] for i, name in enumerate(ddp_cases)}
    pairs = [list(pair) for pair in zip(rank0[:pair_cases], rank1, strict=True)]
    slurm = pairs.pop(0) if job_id is not None else None
    return Groups(
        str(ports.derive_port(job_id)) if job_id is not None else None, slurm, pairs[0], single,
        pairs[1], pairs[2], meter_run_dir, ddp,
    )


@needs_torch
def test_init_two_slurm_tasks_all_reduce(groups: Groups) -> None:
    if groups.slurm is None:
        pytest.skip("no free derived port")
    port = groups.slurm_port
    assert groups.slurm == [
        ["slurm", "0", "2", "0", "3.0", "gloo", "localhost", port, "0", "2", "0"],
        ["slurm", "1", "2", "1", "3.0", "gloo", "localhost", port, "1", "2", "1"],
    ]


@needs_torch
def test_init_two_torchrun_processes_all_reduce(groups: Groups) -> None:
    assert [line[:6] for line in groups.torchrun] == [
        ["torchrun", "0", "2", "0", "3.0", "gloo"],
        ["torchrun", "1", "2", "1", "3.0", "gloo"],
    ]


@needs_torch
def test_init_single_process_makes_the_group_forced_or_not(groups: Groups) -> None:
    # One rank works as N ranks do (the DDP tests below); force_init changes nothing.
    plain, forced = groups.single
    assert plain[:6] == ["single", "0", "1", "0", "1.0", "gloo"]
    assert forced[:6] == ["single", "0", "1", "0", "1.0", "gloo"]


@needs_torch
def test_meter_two_gloo_processes(groups: Groups) -> None:
    """scaling.Throughput in a user's program of two gloo processes (its own process group)."""
    assert groups.meter == [["rank", "0", "metrics", "True"], ["rank", "1", "metrics", "False"]]
    run_dir = groups.meter_run_dir
    assert sorted(p.name for p in run_dir.iterdir()) == ["metrics.json"]
    metrics = json.loads((run_dir / "metrics.json").read_text())
    # 10 measured steps, 1 + 2 samples per step over the two ranks.
    assert (metrics["world_size"], metrics["nodes"], metrics["gpus_per_node"], metrics["samples"],
            metrics["steps_measured"], metrics["backend"]) == (2, 1, 2, 30, 10, "gloo")
    # Bounds that hold whatever the load: each step sleeps 0.01 s, and the meter's time lies
    # within the case's life in the two processes (from the first start to the last end).
    (start0, end0), (start1, end1) = ([float(t) for t in line] for line in groups.meter_times)
    wall = max(end0, end1) - min(start0, start1)
    assert 0.1 <= metrics["seconds"] <= wall
    assert 0.0099 <= metrics["step_time_s_median"] <= metrics["seconds"]


@needs_torch
def test_one_process_alone_runs_ddp(groups: Groups) -> None:
    assert groups.ddp["alone"] == ["single 1 True 1 gloo 5.0", "after cleanup False"]


@needs_torch
def test_one_torchrun_worker_runs_ddp(groups: Groups) -> None:
    assert groups.ddp["torchrun"] == ["torchrun 1 True 1 gloo 5.0", "after cleanup False"]


@needs_torch
def test_one_slurm_task_runs_ddp(groups: Groups) -> None:
    assert groups.ddp["slurm"] == ["slurm 1 True 1 gloo 5.0", "after cleanup False"]
