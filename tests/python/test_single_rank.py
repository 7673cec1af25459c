"""One rank works as N ranks do: ``distributed.init()`` makes the process group at world size 1
too, so DDP on one GPU (or one CPU process) and a scaling study's 1x1 baseline run the code that
N ranks run (``DistributedDataParallel``, ``all_reduce``, ``barrier``), whatever the source.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from collections.abc import Callable, Mapping

import pytest

from hpc_helpers import ports

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("torch") is None, reason="torch is not installed"
)

DDP_ONE = """
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from hpc_helpers.distributed import cleanup, init

d = init(timeout_s=60)
model = DDP(torch.nn.Linear(2, 1))
model(torch.ones(3, 2)).sum().backward()
total = torch.tensor([5.0])
dist.all_reduce(total)
dist.barrier()
print(d.source, d.world_size, dist.is_initialized(), dist.get_world_size(), dist.get_backend(),
      total.item())
cleanup()
print("after cleanup", dist.is_initialized())
"""


def _run(
    child_env: Callable[[Mapping[str, str] | None], dict[str, str]], extra: dict[str, str]
) -> list[str]:
    proc = subprocess.run(
        [sys.executable, "-c", DDP_ONE],
        env=child_env(extra),
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.strip().splitlines()


def test_one_process_alone_runs_ddp(
    child_env: Callable[[Mapping[str, str] | None], dict[str, str]],
) -> None:
    assert _run(child_env, {}) == ["single 1 True 1 gloo 5.0", "after cleanup False"]


def test_one_torchrun_worker_runs_ddp(
    child_env: Callable[[Mapping[str, str] | None], dict[str, str]],
) -> None:
    # torchrun --nproc_per_node=1 (-W torchrun -g 1).
    extra = {
        "RANK": "0",
        "LOCAL_RANK": "0",
        "WORLD_SIZE": "1",
        "MASTER_ADDR": "127.0.0.1",
        "MASTER_PORT": str(ports.ephemeral_port()),
    }
    assert _run(child_env, extra)[0] == "torchrun 1 True 1 gloo 5.0"


def test_one_slurm_task_runs_ddp(
    child_env: Callable[[Mapping[str, str] | None], dict[str, str]],
) -> None:
    # A scaling study's 1x1 baseline under -W lightning: one srun task.
    extra = {
        "SLURM_JOB_ID": "4321",
        "SLURM_PROCID": "0",
        "SLURM_LOCALID": "0",
        "SLURM_NTASKS": "1",
        "SLURM_NODEID": "0",
        "SLURM_STEP_TASKS_PER_NODE": "1",
        "SLURM_STEP_NODELIST": "localhost",
        "MASTER_PORT": str(ports.ephemeral_port()),
    }
    assert _run(child_env, extra)[0] == "slurm 1 True 1 gloo 5.0"
