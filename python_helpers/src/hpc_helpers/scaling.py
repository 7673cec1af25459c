"""Scaling test: the throughput meter of a training loop, and the maths of the report.

In the training loop (three lines; it does nothing outside a scaling test)::

    from hpc_helpers import scaling
    meter = scaling.Throughput(warmup_steps=5)
    for batch in loader:
        ...                                   # the training step
        meter.step(samples=len(batch))        # samples processed by THIS rank in this step
    meter.finish()                            # all-reduces samples; rank 0 writes metrics.json

A scaling test's job exports ``scaling_run_dir`` (the run's own folder); ``metrics.json``
(schema 1) lands there: world_size, nodes, gpus_per_node, samples (global, after warm-up),
seconds (the measured window, barrier to barrier), samples_per_s, step_time_s_median,
steps_measured, warmup_steps, backend, torch_version.

The maths (one implementation, used by :mod:`hpc_helpers.scaling_report`):

* metric: ``samples_per_s`` when every successful run wrote metrics.json, else ``wall_s`` for
  every run (never mixed);
* world size W = N x G; per configuration the median over successful repeats, min and max kept;
* baseline: the successful configuration with the smallest W (ties: fewer nodes first);
* throughput: speedup S = X / X_base, ideal I = W / W_base, efficiency E = S / I;
  wall time, strong: S = T_base / T; weak: E = T_base / T and S = E x I;
* a run that did not end COMPLETED has its state and exit code and no numbers.
"""

from __future__ import annotations

import csv
import io
import json
import os
import statistics
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = [
    "RESULT_COLUMNS",
    "SUMMARY_COLUMNS",
    "ConfigRow",
    "Run",
    "Study",
    "Throughput",
    "choose_metric",
    "format_number",
    "results_csv",
    "summarise",
    "summary_csv",
]

SCHEMA = 1
METRICS_FILE = "metrics.json"
RESULT_COLUMNS = (
    "study_id", "config", "nodes", "gpus_per_node", "world_size", "repeat", "job_id", "state",
    "exit_code", "node_list", "start_utc", "end_utc", "wall_s", "metric", "metric_value",
    "samples", "steps_measured", "warmup_steps",
)
SUMMARY_COLUMNS = (
    "config", "nodes", "gpus_per_node", "world_size", "runs_ok", "runs_total", "metric",
    "median", "min", "max", "speedup", "ideal", "efficiency", "baseline",
)
MODES = ("strong", "weak")


# ---------------------------------------------------------------------------- the meter


def _dist() -> Any:
    """torch.distributed when torch is importable and a process group is initialised."""
    try:
        import torch.distributed as dist
    except ImportError:
        return None
    if dist.is_available() and dist.is_initialized():
        return dist
    return None


def _env_int(name: str, default: int) -> int:
    value = os.environ.get(name, "")
    return int(value) if value.isdigit() else default


class Throughput:
    """Samples per second of a training loop, warm-up excluded, summed over every rank.

    Active only in a scaling test's job (``scaling_run_dir`` set) or when RUN_DIR is given;
    anything else makes every method a no-op, so the lines stay in the user's code.
    """

    def __init__(self, warmup_steps: int = 5, run_dir: str | os.PathLike[str] | None = None):
        if warmup_steps < 0:
            raise ValueError(f"warmup_steps must be >= 0, not {warmup_steps}")
        environ = os.environ  # the job's lower-case variables, as the toolkit exports them
        folder = run_dir if run_dir is not None else environ.get("scaling_run_dir", "")
        self.run_dir = Path(folder) if folder else None
        self.warmup_steps = warmup_steps
        self.steps = 0
        self.samples = 0
        self.step_times: list[float] = []
        self._start: float | None = None
        self._last = 0.0
        self.finished = False
        if self.active and warmup_steps == 0:
            self._open_window()

    @property
    def active(self) -> bool:
        return self.run_dir is not None

    def _open_window(self) -> None:
        # Every rank starts the window together: a barrier, then the clock.
        dist = _dist()
        if dist is not None:
            dist.barrier()
        self._start = self._last = time.perf_counter()

    def step(self, samples: int) -> None:
        """One training step of this rank, that processed SAMPLES samples."""
        if not self.active or self.finished:
            return
        self.steps += 1
        if self._start is None:
            if self.steps >= self.warmup_steps:
                self._open_window()
            return
        now = time.perf_counter()
        self.step_times.append(now - self._last)
        self._last = now
        self.samples += int(samples)

    def finish(self) -> dict[str, Any] | None:
        """Closes the window (a barrier), sums samples over ranks; rank 0 writes metrics.json.

        Every rank must call it. Returns the metrics on rank 0, None elsewhere or when inactive.
        """
        if not self.active or self.finished:
            return None
        self.finished = True
        dist = _dist()
        if dist is not None:
            dist.barrier()
        end = time.perf_counter()
        seconds = end - self._start if self._start is not None else 0.0
        samples, steps = self.samples, len(self.step_times)
        world, rank, backend = 1, 0, "none"
        torch_version = ""
        if dist is not None:
            import torch

            torch_version = str(torch.__version__)
            world, rank, backend = dist.get_world_size(), dist.get_rank(), str(dist.get_backend())
            device = torch.device("cpu")
            if backend == "nccl":
                device = torch.device("cuda", torch.cuda.current_device())
            total = torch.tensor([float(samples), seconds], dtype=torch.float64, device=device)
            summed = total.clone()
            dist.all_reduce(summed, op=dist.ReduceOp.SUM)
            longest = total.clone()
            dist.all_reduce(longest, op=dist.ReduceOp.MAX)
            samples, seconds = round(float(summed[0])), float(longest[1])
        else:
            try:
                import torch

                torch_version = str(torch.__version__)
            except ImportError:
                torch_version = ""
        if rank != 0:
            return None
        metrics: dict[str, Any] = {
            "schema": SCHEMA,
            "world_size": world,
            "nodes": _env_int("num_nodes", 1),
            "gpus_per_node": _env_int("gpus_per_node", 0),
            "samples": samples,
            "seconds": seconds,
            "samples_per_s": samples / seconds if seconds > 0 and steps > 0 else None,
            "step_time_s_median": statistics.median(self.step_times) if steps else None,
            "steps_measured": steps,
            "warmup_steps": self.warmup_steps,
            "backend": backend,
            "torch_version": torch_version,
        }
        assert self.run_dir is not None
        self.run_dir.mkdir(parents=True, exist_ok=True)
        target = self.run_dir / METRICS_FILE
        tmp = target.with_name(f".{METRICS_FILE}.tmp.{os.getpid()}")
        tmp.write_text(json.dumps(metrics, indent=1) + "\n", encoding="utf-8")
        os.replace(tmp, target)
        return metrics


# ---------------------------------------------------------------------------- the maths


@dataclass
class Run:
    """One (configuration, repeat): its final state and what it measured."""

    nodes: int
    gpus_per_node: int
    repeat: int
    state: str
    job_id: str = ""
    exit_code: int | None = None
    node_list: str = ""
    start_utc: str = ""
    end_utc: str = ""
    wall_s: float | None = None
    samples_per_s: float | None = None
    samples: int | None = None
    steps_measured: int | None = None
    warmup_steps: int | None = None
    log: str = ""

    @property
    def config(self) -> str:
        return f"{self.nodes}x{self.gpus_per_node}"

    @property
    def key(self) -> str:
        return f"{self.config}-r{self.repeat}"

    @property
    def world_size(self) -> int:
        # A CPU-only run (0 GPUs per node) still runs one process per node.
        return self.nodes * max(self.gpus_per_node, 1)

    @property
    def ok(self) -> bool:
        return self.state == "COMPLETED"


@dataclass
class ConfigRow:
    """One configuration of summary.csv; numbers are None where no repeat succeeded."""

    config: str
    nodes: int
    gpus_per_node: int
    world_size: int
    runs_ok: int
    runs_total: int
    metric: str
    median: float | None = None
    min: float | None = None
    max: float | None = None
    speedup: float | None = None
    ideal: float | None = None
    efficiency: float | None = None
    baseline: bool = False


@dataclass
class Study:
    """The summary of a study: metric, baseline, one row per configuration, notes."""

    metric: str
    mode: str
    baseline: str | None
    smallest: str
    rows: list[ConfigRow] = field(default_factory=list)

    @property
    def baseline_substituted(self) -> bool:
        return self.baseline is not None and self.baseline != self.smallest


def choose_metric(runs: Sequence[Run]) -> str:
    """samples_per_s when every successful run measured it, else wall_s (never mixed)."""
    ok = [r for r in runs if r.ok]
    if ok and all(r.samples_per_s is not None and r.samples_per_s > 0 for r in ok):
        return "samples_per_s"
    return "wall_s"


def metric_value(run: Run, metric: str) -> float | None:
    """RUN's value of METRIC, None for a run that did not succeed or did not measure it."""
    if not run.ok:
        return None
    value = run.samples_per_s if metric == "samples_per_s" else run.wall_s
    return value if value is not None and value > 0 else None


def _order(nodes: int, gpus: int) -> tuple[int, int]:
    return nodes * max(gpus, 1), nodes


def summarise(runs: Sequence[Run], mode: str = "strong") -> Study:
    """One row per configuration (by world size, then nodes), speedup and efficiency."""
    if mode not in MODES:
        raise ValueError(f"'{mode}' is not accepted; accepted: strong, weak")
    metric = choose_metric(runs)
    configs: dict[tuple[int, int], list[Run]] = {}
    for run in runs:
        configs.setdefault((run.nodes, run.gpus_per_node), []).append(run)
    rows: list[ConfigRow] = []
    for (nodes, gpus) in sorted(configs, key=lambda c: _order(*c)):
        group = configs[(nodes, gpus)]
        values = [v for v in (metric_value(r, metric) for r in group) if v is not None]
        row = ConfigRow(
            f"{nodes}x{gpus}", nodes, gpus, group[0].world_size,
            sum(1 for r in group if r.ok), len(group), metric,
        )
        if values:
            row.median, row.min, row.max = statistics.median(values), min(values), max(values)
        rows.append(row)
    base = next((r for r in rows if r.median is not None), None)
    study = Study(metric, mode, base.config if base else None, rows[0].config if rows else "",
                  rows)
    if base is None or base.median is None:
        return study
    base.baseline = True
    for row in rows:
        if row.median is None:
            continue
        ideal = row.world_size / base.world_size
        if metric == "samples_per_s":
            speedup = row.median / base.median
            efficiency = speedup / ideal
        elif mode == "strong":
            speedup = base.median / row.median
            efficiency = speedup / ideal
        else:
            efficiency = base.median / row.median
            speedup = efficiency * ideal
        row.speedup, row.ideal, row.efficiency = speedup, ideal, efficiency
    return study


def format_number(value: float | int | None) -> str:
    """A number as the CSV files write it: up to 6 decimals, no trailing zeros; '' for None."""
    if value is None:
        return ""
    if isinstance(value, int):
        return str(value)
    text = f"{value:.6f}".rstrip("0").rstrip(".")
    return "0" if text in ("", "-0") else text


def _csv(rows: Sequence[Sequence[str]]) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerows(rows)
    return out.getvalue()


def results_csv(study_id: str, runs: Sequence[Run], metric: str) -> str:
    """results.csv: one row per run, in the order given; a failed run has no numbers."""
    rows: list[list[str]] = [list(RESULT_COLUMNS)]
    for r in runs:
        value = metric_value(r, metric)
        numbers = r.ok
        rows.append([
            study_id, r.config, str(r.nodes), str(r.gpus_per_node), str(r.world_size),
            str(r.repeat), r.job_id, r.state, format_number(r.exit_code), r.node_list,
            r.start_utc, r.end_utc, format_number(r.wall_s if numbers else None), metric,
            format_number(value), format_number(r.samples if numbers else None),
            format_number(r.steps_measured if numbers else None),
            format_number(r.warmup_steps if numbers else None),
        ])
    return _csv(rows)


def summary_csv(study: Study) -> str:
    """summary.csv: one row per configuration."""
    rows: list[list[str]] = [list(SUMMARY_COLUMNS)]
    for c in study.rows:
        rows.append([
            c.config, str(c.nodes), str(c.gpus_per_node), str(c.world_size), str(c.runs_ok),
            str(c.runs_total), c.metric, format_number(c.median), format_number(c.min),
            format_number(c.max), format_number(c.speedup), format_number(c.ideal),
            format_number(c.efficiency), "yes" if c.baseline else "",
        ])
    return _csv(rows)
