"""Results of a map (``job_submitter.sh --map-range/--map-over``) and their gather, as JSON.

In a task::

    from hpc_helpers import mapreduce
    mapreduce.save_result({"score": 0.93})       # atomic write of ${task_dir}/result.json

In the gather (``--gather``), in index order::

    for t in mapreduce.tasks():
        t.index, t.item, t.state, t.exit_code, t.dir
        t.result()                               # raises TaskFailed for a task that did not succeed
    mapreduce.results(allow_failed=True)         # a list with None where a task failed

The tasks' states come from ``${map_dir}/map_status.json``, which the gather job's first step
writes (:mod:`hpc_helpers.followup`); outside a gather (no such file yet) from the tasks' own
``tasks/<i>/status.json``. Nothing is pickled: results are JSON values.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hpc_helpers import followup

__all__ = ["Task", "TaskFailed", "map_dir", "results", "save_result", "tasks"]

RESULT = "result.json"


class TaskFailed(RuntimeError):
    """A task's result was asked for, but the task did not succeed."""

    def __init__(self, task: Task) -> None:
        log = task.log or "(no log recorded)"
        code = "none" if task.exit_code is None else str(task.exit_code)
        super().__init__(
            f"map task {task.index} ({task.item!r}) did not succeed: state {task.state}, "
            f"exit code {code}; log: {log}"
        )
        self.task = task


@dataclass(frozen=True)
class Task:
    """One task of the map, as its status says."""

    index: int
    item: str
    state: str
    exit_code: int | None
    dir: Path
    log: str

    @property
    def ok(self) -> bool:
        return self.state in followup.OK_STATES

    def result(self) -> Any:
        """The JSON value the task saved; TaskFailed when the task did not succeed."""
        if not self.ok:
            raise TaskFailed(self)
        path = self.dir / RESULT
        try:
            return json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise FileNotFoundError(
                f"map task {self.index} succeeded but saved no result ({path})"
            ) from None


def _env_path(name: str) -> Path:
    value = os.environ.get(name, "")
    if not value:
        raise RuntimeError(f"${name} is not set: run this inside a map task or its gather job")
    return Path(value)


def map_dir(path: str | os.PathLike[str] | None = None) -> Path:
    """The map's folder: PATH, else ``$map_dir``."""
    return Path(path) if path is not None else _env_path("map_dir")


def save_result(value: Any, task_dir: str | os.PathLike[str] | None = None) -> Path:
    """Writes VALUE (JSON) as the task's result, atomically; returns the file's path. A write
    that fails (a full disk) raises and leaves no temporary file behind."""
    folder = Path(task_dir) if task_dir is not None else _env_path("task_dir")
    text = json.dumps(value)
    path = folder / RESULT
    tmp = folder / f".{RESULT}.tmp.{os.getpid()}"
    try:
        tmp.write_text(text + "\n", encoding="utf-8")
        os.replace(tmp, path)
    except BaseException:
        # A full disk: no partial temporary file left to keep it full.
        tmp.unlink(missing_ok=True)
        raise
    return path


def _rows(folder: Path) -> list[dict[str, Any]]:
    status = folder / "map_status.json"
    if status.is_file():
        doc = json.loads(status.read_text(encoding="utf-8"))
        rows = doc.get("tasks", [])
        return [r for r in rows if isinstance(r, dict)]
    manifest = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))
    keys = [str(i) for i in range(int(manifest["first"]), int(manifest["last"]) + 1)]
    return [s.row() for s in followup.read_statuses(folder / "tasks", keys, refine=False)]


def tasks(path: str | os.PathLike[str] | None = None) -> Iterator[Task]:
    """The map's tasks, in index order."""
    folder = map_dir(path)
    def index_of(row: dict[str, Any]) -> int:
        value = row.get("index")
        return int(value if value is not None else row.get("key", 0))

    for row in sorted(_rows(folder), key=index_of):
        index = index_of(row)
        code = row.get("exit_code")
        yield Task(
            index=index,
            item=str(row.get("item", index)),
            state=str(row.get("state", "LOST")),
            exit_code=code if isinstance(code, int) and not isinstance(code, bool) else None,
            dir=folder / "tasks" / str(index),
            log=str(row.get("log") or ""),
        )


def results(allow_failed: bool = False, path: str | os.PathLike[str] | None = None) -> list[Any]:
    """Every task's result in index order; None for a failed task when ALLOW_FAILED, else the
    first failed task raises TaskFailed."""
    out: list[Any] = []
    for task in tasks(path):
        if not task.ok and allow_failed:
            out.append(None)
        else:
            out.append(task.result())
    return out
