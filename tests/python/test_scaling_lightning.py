"""scaling.ThroughputCallback: Lightning's own BoringModel, trained on CPU with the callback,
writes the metrics.json that the Throughput meter writes; the module imports without Lightning.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from hpc_helpers import scaling

# Nearly every test here imports Lightning in this process (7 CPU-s): one pytest-xdist worker for
# the module (run.sh: --dist loadgroup), not each worker that got some of its tests.
pytestmark = pytest.mark.xdist_group("lightning")

SRC = Path(__file__).resolve().parents[2] / "python_helpers" / "src"


def _fit(callback: object, steps: int) -> None:
    pytest.importorskip("lightning")
    from lightning.pytorch import Trainer
    from lightning.pytorch.demos.boring_classes import BoringModel

    trainer = Trainer(
        callbacks=[callback],
        max_steps=steps,
        accelerator="cpu",
        devices=1,
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
    )
    trainer.fit(BoringModel())


def _scaling_env(monkeypatch: pytest.MonkeyPatch, run_dir: Path) -> None:
    monkeypatch.setenv("scaling_run_dir", str(run_dir))
    monkeypatch.setenv("num_nodes", "1")
    monkeypatch.setenv("gpus_per_node", "1")


def test_boring_model_writes_the_meters_metrics(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _scaling_env(monkeypatch, tmp_path / "run")
    callback = scaling.ThroughputCallback(warmup_steps=2)
    _fit(callback, steps=6)
    written = json.loads((tmp_path / "run" / "metrics.json").read_text())
    # BoringModel's loader: 64 samples of 32 features, 1 a batch; 2 warm-up steps, 4 measured.
    assert (
        written["schema"],
        written["world_size"],
        written["nodes"],
        written["gpus_per_node"],
        written["samples"],
        written["steps_measured"],
        written["warmup_steps"],
        written["backend"],
    ) == (1, 1, 1, 1, 4, 4, 2, "none")
    assert written["samples_per_s"] == pytest.approx(4 / written["seconds"])
    assert written["step_time_s_median"] > 0
    assert callback.metrics == written


def test_batch_size_given_counts_that_many_per_step(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _scaling_env(monkeypatch, tmp_path)
    _fit(scaling.ThroughputCallback(warmup_steps=0, batch_size=5), steps=3)
    written = json.loads((tmp_path / "metrics.json").read_text())
    assert (written["samples"], written["steps_measured"], written["warmup_steps"]) == (15, 3, 0)


def test_outside_a_scaling_test_nothing_is_written(tmp_path: Path) -> None:
    os.chdir(tmp_path)
    callback = scaling.ThroughputCallback(warmup_steps=1)
    _fit(callback, steps=3)
    assert callback.metrics is None
    assert sorted(p.name for p in tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    ("batch", "samples"),
    [
        ([[1, 2], [3, 4]], None),
        ({"x": (7, "label")}, None),
        ("text", None),
    ],
)
def test_batches_without_a_tensor_need_batch_size(batch: object, samples: int | None) -> None:
    assert scaling.ThroughputCallback.count_samples(batch) == samples


def test_count_samples_finds_the_first_tensor_dimension() -> None:
    torch = pytest.importorskip("torch")
    count = scaling.ThroughputCallback.count_samples
    assert count(torch.zeros(3, 2)) == 3
    assert count((torch.zeros(5, 1), torch.zeros(2))) == 5
    assert count({"label": "a", "x": [torch.zeros(4, 8)]}) == 4
    assert count(torch.tensor(1.0)) is None


def test_bad_arguments_are_refused() -> None:
    with pytest.raises(ValueError, match="warmup_steps must be >= 0, not -1"):
        scaling.ThroughputCallback(warmup_steps=-1)
    with pytest.raises(ValueError, match="batch_size must be a positive integer or None, not 0"):
        scaling.ThroughputCallback(batch_size=0)


def test_imports_without_lightning_as_a_plain_class() -> None:
    # Lightning and its old name made unimportable: the module still imports, the callback is a
    # plain object with the same hooks.
    code = (
        "import sys\n"
        "sys.modules['lightning'] = None\n"
        "sys.modules['lightning.pytorch'] = None\n"
        "sys.modules['pytorch_lightning'] = None\n"
        "from hpc_helpers import scaling\n"
        "cb = scaling.ThroughputCallback(warmup_steps=1)\n"
        "print(scaling.ThroughputCallback.__mro__[-2:], callable(cb.on_train_end))\n"
    )
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    )
    assert "object" in out.stdout
    assert "Callback" not in out.stdout
    assert out.stdout.strip().endswith("True")


def test_with_lightning_it_is_a_lightning_callback() -> None:
    pytest.importorskip("lightning")
    from lightning.pytorch import Callback

    assert issubclass(scaling.ThroughputCallback, Callback)
