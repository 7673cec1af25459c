"""What the toolkit does on a real NVIDIA GPU (skipped where torch sees none, as in CI).

Every other test runs on CPUs (gloo, no nvidia-smi), so the CUDA branches would otherwise meet
a GPU only in a user's job: ``distributed.init`` picking nccl and the device, the scaling
probe's all-reduce on the GPU, the usage sampler reading the real ``nvidia-smi``, Lightning
under the variables of the ``lightning`` launcher's task, and the ``accelerate`` launcher's boot
code with a CUDA torch. Run them on a machine with a GPU::

    PYTHONPATH=python_helpers/src python3 -m pytest -p no:cacheprovider tests/python/test_gpu.py
"""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from conftest import REPO, SRC

# Without an NVIDIA device node torch sees no CUDA device: skipped before importing torch, which
# each pytest-xdist worker would otherwise do at collection (3 CPU-s each) only to skip.
if not any(Path("/dev").glob("nvidia[0-9]*")):
    pytest.skip("no NVIDIA device (/dev/nvidia*): torch sees no CUDA device",
                allow_module_level=True)
torch = pytest.importorskip("torch")
pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="torch sees no CUDA device")


# The sampler's GPU reading, twice (its peak and average over samples), counters as it starts them.
SAMPLE_TWICE = (
    'source "$1"; hpc_usage_gpu_util_sum=0 hpc_usage_gpu_samples=0 hpc_usage_gpu_mem_peak=0;'
    ' hpc_usage_gpu; hpc_usage_gpu; printf "%s\\n" "$hpc_usage_gpu_text"'
)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _run(
    argv: list[str], tmp_path: Path, env: dict[str, str] | None = None, *, with_stderr: bool = False
) -> str:
    full = {**os.environ, "PYTHONPATH": str(SRC), **(env or {})}
    done = subprocess.run(
        argv, cwd=tmp_path, env=full, capture_output=True, text=True, timeout=300, check=False
    )
    assert done.returncode == 0, f"exit {done.returncode}\n{done.stdout}\n{done.stderr}"
    return done.stdout + done.stderr if with_stderr else done.stdout


def _script(tmp_path: Path, name: str, code: str) -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(code))
    return path


def test_init_picks_nccl_and_the_gpu_under_torchrun(tmp_path: Path) -> None:
    script = _script(
        tmp_path,
        "init.py",
        """
        import torch, torch.distributed as dist
        from hpc_helpers import distributed
        env = distributed.init()
        t = torch.full((4,), float(env.rank + 1), device="cuda")
        dist.all_reduce(t)
        print(dist.get_backend(), torch.cuda.current_device(), t.device.type, t.sum().item())
        distributed.cleanup()
        """,
    )
    out = _run(
        [
            sys.executable,
            "-m",
            "torch.distributed.run",
            "--nproc_per_node",
            "1",
            "--master_port",
            str(_free_port()),
            str(script),
        ],
        tmp_path,
    )
    assert out.split()[-4:] == ["nccl", "0", "cuda", "4.0"]


def test_throughput_sums_on_the_gpu_over_nccl(tmp_path: Path) -> None:
    script = _script(
        tmp_path,
        "probe.py",
        """
        import sys, torch
        from hpc_helpers import distributed
        from hpc_helpers.scaling import Throughput
        distributed.init()
        probe = Throughput(warmup_steps=1, run_dir=sys.argv[1])
        x = torch.randn(256, 256, device="cuda")
        for _ in range(4):
            x = x @ x.T / 256
            torch.cuda.synchronize()
            probe.step(8)
        probe.finish()
        distributed.cleanup()
        """,
    )
    run_dir = tmp_path / "run"
    _run(
        [
            sys.executable,
            "-m",
            "torch.distributed.run",
            "--nproc_per_node",
            "1",
            "--master_port",
            str(_free_port()),
            str(script),
            str(run_dir),
        ],
        tmp_path,
        {"gpus_per_node": "1"},
    )
    metrics = json.loads((run_dir / "metrics.json").read_text())
    assert (metrics["backend"], metrics["world_size"], metrics["gpus_per_node"]) == ("nccl", 1, 1)
    assert metrics["samples"] == 24
    assert metrics["steps_measured"] == 3
    assert metrics["samples_per_s"] > 0


@pytest.mark.skipif(shutil.which("nvidia-smi") is None, reason="no nvidia-smi")
def test_usage_sampler_reads_the_real_nvidia_smi(tmp_path: Path) -> None:
    hold = subprocess.Popen(  # a process that holds 2 GiB of the GPU while the sampler reads it
        [
            sys.executable,
            "-c",
            "import torch, time; x = torch.empty(2 << 30, dtype=torch.uint8, device='cuda');"
            " print('held', flush=True); time.sleep(60)",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert hold.stdout is not None
        assert hold.stdout.readline().strip() == "held"
        usage = REPO / "hpc_files" / "lib" / "hpc_usage.bash"
        out = _run(
            ["bash", "-c", SAMPLE_TWICE, "bash", str(usage)],
            tmp_path,
        )
    finally:
        hold.kill()
        hold.wait()
    text = out.strip().splitlines()[-1]
    found = re.fullmatch(r"(\d+) % busy on average, peak memory (\d+) of (\d+) MiB per GPU", text)
    assert found, text
    busy, peak, total = (int(v) for v in found.groups())
    assert 0 <= busy <= 100
    assert 2048 <= peak < total


def test_lightning_trains_on_the_gpu_as_a_lightning_launcher_task(tmp_path: Path) -> None:
    pytest.importorskip("lightning")
    script = _script(
        tmp_path,
        "boring.py",
        """
        import lightning as L
        from lightning.pytorch.demos.boring_classes import BoringModel
        trainer = L.Trainer(max_epochs=1, limit_train_batches=4, limit_val_batches=0,
                            logger=False, enable_checkpointing=False, enable_progress_bar=False)
        trainer.fit(BoringModel())
        print(trainer.strategy.root_device.type, trainer.global_step)
        """,
    )
    # One SLURM task per GPU, as srun gives each task of the lightning launcher.
    slurm = {
        "SLURM_NTASKS": "1",
        "SLURM_NTASKS_PER_NODE": "1",
        "SLURM_PROCID": "0",
        "SLURM_LOCALID": "0",
        "SLURM_NODEID": "0",
        "SLURM_NNODES": "1",
        "SLURM_JOB_ID": "4242",
        "SLURM_JOB_NAME": "train",
        "SLURM_NODELIST": "localhost",
        "SLURM_GPUS_ON_NODE": "1",
    }
    out = _run([sys.executable, str(script)], tmp_path, slurm, with_stderr=True)
    # Lightning took SLURM's variables (its SLURMEnvironment says so), and trained on the GPU.
    assert "SLURM auto-requeueing enabled" in out
    assert "cuda 4" in out.splitlines()


def test_accelerate_launcher_boot_code_keeps_the_gpu(tmp_path: Path) -> None:
    pytest.importorskip("accelerate")
    launcher = REPO / "hpc_files" / "lib" / "launchers" / "accelerate.bash"
    code = subprocess.run(
        ["bash", "-c", '. "$1"; printf %s "$hpc_launcher_accelerate_code"', "-", str(launcher)],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    ).stdout
    script = _script(
        tmp_path,
        "acc.py",
        """
        from accelerate import Accelerator
        acc = Accelerator()
        print(acc.device.type, acc.num_processes, acc.distributed_type)
        """,
    )
    out = _run(
        [
            sys.executable,
            "-c",
            code,
            "--num_machines",
            "1",
            "--machine_rank",
            "0",
            "--num_processes",
            "1",
            "--main_process_ip",
            "127.0.0.1",
            "--main_process_port",
            str(_free_port()),
            "--no_python",
            sys.executable,
            str(script),
        ],
        tmp_path,
    )
    assert out.split()[-3:-1] == ["cuda", "1"], out
