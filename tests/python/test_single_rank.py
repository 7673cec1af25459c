"""One rank works as N ranks do: ``distributed.init()`` makes the process group at world size 1
too, so DDP on one GPU (or one CPU process) and a scaling study's 1x1 baseline run the code that
N ranks run (``DistributedDataParallel``, ``all_reduce``, ``barrier``), whatever the source.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys

import pytest

from conftest import clean_environ
from hpc_helpers import ports

# One pytest-xdist worker for the module (run.sh: --dist loadgroup): the module fixture runs once.
pytestmark = [
    pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="torch is not installed"),
    pytest.mark.xdist_group("single_rank"),
]

# The three cases one after another in one process (torch imported once, not once per case),
# each in its own environment: the variables init() exported for the one before removed.
DDP_ONE = """
import json, os, sys
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from hpc_helpers.distributed import cleanup, init

base = dict(os.environ)
for env in json.loads(sys.argv[1]):
    os.environ.clear()
    os.environ.update(base, **env)
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
"""

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


@pytest.fixture(scope="module")
def runs() -> dict[str, list[str]]:
    """Each case's two lines: alone, as torchrun's one worker, as one SLURM task."""
    cases = {
        "alone": {},
        "torchrun": {**TORCHRUN_ONE, "MASTER_PORT": str(ports.ephemeral_port())},
        "slurm": {**SLURM_ONE, "MASTER_PORT": str(ports.ephemeral_port())},
    }
    proc = subprocess.run(
        [sys.executable, "-c", DDP_ONE, json.dumps(list(cases.values()))],
        env=clean_environ(),
        capture_output=True,
        text=True,
        timeout=600,  # a hang guard: three torch cases, on a loaded machine too
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.strip().splitlines()
    assert len(lines) == 2 * len(cases), proc.stdout
    return {name: lines[2 * i : 2 * i + 2] for i, name in enumerate(cases)}


def test_one_process_alone_runs_ddp(runs: dict[str, list[str]]) -> None:
    assert runs["alone"] == ["single 1 True 1 gloo 5.0", "after cleanup False"]


def test_one_torchrun_worker_runs_ddp(runs: dict[str, list[str]]) -> None:
    assert runs["torchrun"] == ["torchrun 1 True 1 gloo 5.0", "after cleanup False"]


def test_one_slurm_task_runs_ddp(runs: dict[str, list[str]]) -> None:
    assert runs["slurm"] == ["slurm 1 True 1 gloo 5.0", "after cleanup False"]
