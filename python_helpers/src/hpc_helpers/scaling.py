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
  every run (never mixed); a run whose metrics.json holds an invalid value (negative, NaN, not
  a number) is invalid alone and does not switch the study to ``wall_s``;
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
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

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
    "samples", "steps_measured", "warmup_steps", "start_s", "end_s", "flags",
)
SUMMARY_COLUMNS = (
    "config", "nodes", "gpus_per_node", "world_size", "runs_ok", "runs_total", "metric",
    "median", "min", "max", "speedup", "ideal", "efficiency", "baseline", "flags",
)
#: Flags of a run or a configuration (space-separated in the CSV files' last column).
OVERLAP, SUPERLINEAR, INVALID_METRIC = "overlap", "superlinear", "invalid_metric"
#: Seconds two runs on one node may share (the end of one and the start of the next as the
#: job side stamps them: a batch shell's start-up and tear-down) before they count as overlapping.
OVERLAP_SLACK_S = 1.0
#: Efficiency above 1 by more than this (or the repeats' spread, if larger) is superlinear.
SUPERLINEAR_NOISE = 0.05
MODES = ("strong", "weak")


# ---------------------------------------------------------------------------- the meter


def _dist() -> Any:
    """torch.distributed when the program has imported it and a process group is initialised.
    A program that never imported torch has no process group: torch is not imported (seconds)
    only to learn that."""
    dist = sys.modules.get("torch.distributed")
    if dist is not None and dist.is_available() and dist.is_initialized():
        return dist
    return None


def _torch_version() -> str:
    """The version of the torch the program imported, else of the one installed ('' for none),
    read from its metadata without importing it."""
    if "torch" in sys.modules:  # None there: its import is blocked, as if not installed
        torch = sys.modules["torch"]
        return str(torch.__version__) if torch is not None else ""
    import importlib.metadata  # here: not a cost of importing the meter

    try:
        return importlib.metadata.version("torch")
    except importlib.metadata.PackageNotFoundError:
        return ""


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
            import torch  # type: ignore[import-not-found, unused-ignore]  # optional: the torch extra

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
            torch_version = _torch_version()
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
    start_s: float | None = None
    end_s: float | None = None
    #: Why metrics.json's samples_per_s is unusable (negative, NaN, not a number); '' if it is.
    metric_invalid: str = ""
    flags: list[str] = field(default_factory=list)

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
    flags: list[str] = field(default_factory=list)


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
    # A run whose metrics.json holds an invalid value is invalid alone: it does not turn the
    # study to wall time (that is for a study whose program does not measure throughput).
    ok = [r for r in runs if r.ok]
    valid = [r for r in ok if r.samples_per_s is not None and r.samples_per_s > 0]
    if valid and all(r in valid or r.metric_invalid for r in ok):
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
        row.flags = [f for f in (OVERLAP, INVALID_METRIC) if any(f in r.flags for r in group)]
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
        if efficiency > 1 + _noise(row, base, efficiency):
            row.flags.append(SUPERLINEAR)
    return study


def _noise(row: ConfigRow, base: ConfigRow, efficiency: float) -> float:
    """How far above 1 ROW's EFFICIENCY may be by chance: 5 points, or the spread of the repeats
    (ROW's and the baseline's, relative to their medians) if larger."""
    spread = 0.0
    for r in (row, base):
        if r.median and r.min is not None and r.max is not None:
            spread += (r.max - r.min) / r.median
    return max(SUPERLINEAR_NOISE, efficiency * spread)


def format_number(value: float | int | None) -> str:
    """A number as the CSV files write it: up to 6 decimals, no trailing zeros; '' for None."""
    if value is None:
        return ""
    if isinstance(value, int):
        return str(value)
    text = f"{value:.6f}".rstrip("0").rstrip(".")
    return "0" if text in ("", "-0") else text


def csv_cell(text: str) -> str:
    """TEXT made inert for a spreadsheet: a cell that starts with =, +, -, @, a tab or a carriage
    return (a formula to Excel or LibreOffice) is prefixed with ', unless it is a plain number."""
    if text[:1] in ("=", "+", "-", "@", "\t", "\r"):
        try:
            float(text)
        except ValueError:
            return "'" + text
    return text


def _csv(rows: Sequence[Sequence[str]]) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerows([[csv_cell(cell) for cell in row] for row in rows])
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
            format_number(r.start_s), format_number(r.end_s), " ".join(r.flags),
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
            format_number(c.efficiency), "yes" if c.baseline else "", " ".join(c.flags),
        ])
    return _csv(rows)


# ---------------------------------------------------------------------------- Lightning


class _ThroughputHooks:
    """The meter as a Lightning callback (one line in the Trainer); see ThroughputCallback."""

    def __init__(self, warmup_steps: int = 5, batch_size: int | None = None) -> None:
        if warmup_steps < 0:
            raise ValueError(f"warmup_steps must be >= 0, not {warmup_steps}")
        if batch_size is not None and (isinstance(batch_size, bool) or batch_size < 1):
            raise ValueError(f"batch_size must be a positive integer or None, not {batch_size}")
        self.warmup_steps = warmup_steps
        self.batch_size = batch_size
        self.meter: Throughput | None = None
        #: What the measurement wrote (rank 0 of a scaling test's run), else None.
        self.metrics: dict[str, Any] | None = None

    @staticmethod
    def count_samples(batch: Any) -> int | None:
        """The first dimension of the batch's first tensor (in lists, tuples, dicts), else None."""
        pending = [batch]
        while pending:
            item = pending.pop(0)
            shape = getattr(item, "shape", None)
            if shape is not None and not isinstance(item, (str, bytes)):
                if len(shape) > 0:
                    return int(shape[0])
                continue
            if isinstance(item, dict):
                pending[:0] = list(item.values())
            elif isinstance(item, (list, tuple)):
                pending[:0] = list(item)
        return None

    def on_train_start(self, trainer: Any, pl_module: Any) -> None:
        # Made here, not in __init__: the process group exists now, so a warm-up of 0 opens the
        # window on every rank together, and the Trainer's set-up is not measured.
        self.meter = Throughput(warmup_steps=self.warmup_steps)
        self.metrics = None

    def on_train_batch_end(
        self, trainer: Any, pl_module: Any, outputs: Any, batch: Any, batch_idx: int
    ) -> None:
        meter = self.meter
        if meter is None or not meter.active:
            return
        samples = self.batch_size if self.batch_size is not None else self.count_samples(batch)
        if samples is None:
            raise ValueError(
                "ThroughputCallback: no tensor in a batch of type "
                f"{type(batch).__name__} to count its samples; give batch_size="
            )
        meter.step(samples)

    def on_train_end(self, trainer: Any, pl_module: Any) -> None:
        # Every rank ends training, so every rank reaches finish()'s barrier and all-reduce.
        if self.meter is not None:
            self.metrics = self.meter.finish()


def _throughput_callback() -> type[_ThroughputHooks]:
    """_ThroughputHooks that is also Lightning's Callback where Lightning imports, else as is."""
    import importlib

    for name in ("lightning.pytorch", "pytorch_lightning"):
        try:
            callback: type = importlib.import_module(name).Callback
        except ImportError:
            continue
        made: type[_ThroughputHooks] = type(
            "ThroughputCallback",
            (_ThroughputHooks, callback),
            {"__module__": __name__, "__qualname__": "ThroughputCallback", "__doc__": _DOC},
        )
        return made
    return _ThroughputHooks


_DOC = """Lightning callback: the Throughput meter of a Trainer's fit, in one line::

    trainer = Trainer(callbacks=[scaling.ThroughputCallback(warmup_steps=5)], ...)

Each training batch is one step of this rank, of batch_size samples, or (None) the first
dimension of the batch's first tensor; the first WARMUP_STEPS are not measured; on_train_end
finishes the measurement: rank 0 writes metrics.json in a scaling test's run, as Throughput does.
Outside a scaling test it does nothing. A lightning.pytorch Callback (else pytorch_lightning's)
where Lightning imports; a plain class otherwise, so this module never needs Lightning.
"""
__all__.append("ThroughputCallback")

if TYPE_CHECKING:
    ThroughputCallback = _ThroughputHooks
else:

    def __getattr__(name: str) -> Any:
        # ThroughputCallback is made on first use: importing Lightning (and torch, torch._dynamo)
        # takes seconds that a program which only uses the meter, or nothing, must not pay.
        if name == "ThroughputCallback":
            made = _throughput_callback()
            globals()[name] = made
            return made
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
