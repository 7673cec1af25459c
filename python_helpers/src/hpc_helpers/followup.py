"""The reader of a follow-up job: what the tasks of a submission wrote, and a policy's verdict.

Each task writes ``DIR/<key>/status.json`` itself (``hpc_files/lib/hpc_followup.bash``:
RUNNING at its start, its final state at its end). The follow-up job, submitted with
``--dependency=afterany:<ids> --kill-on-invalid-dep=yes``, starts with::

    python -m hpc_helpers.followup read --dir DIR --keys KEYS --policy POLICY --out PREFIX \
        [--rerun COMMAND]

which reads every expected key's status (:func:`read_statuses`), writes ``PREFIX.tsv`` and
``PREFIX.json`` (:func:`write_table`), prints the verdict line on stderr and ``name=value``
lines on stdout (``ok``, ``failed``: space-separated keys; ``n_ok``, ``n_failed``, ``count``,
``status_file``), and exits 0 when the policy is met, 1 when it is not, 2 on bad input.

States: a task whose file still says RUNNING after its job ended was killed hard: it is LOST,
or SLURM's own state (CANCELLED, TIMEOUT, NODE_FAIL, ...) while ``scontrol show job`` still
knows the job. A task with no file at all never started (cancelled while pending) or lost its
folder: LOST, refined the same way; once the controller has forgotten the job (``MinJobAge``),
from ``sacct`` where the site keeps accounting (elsewhere it fails: left LOST).

SLURM's word over a file's: the tasks of a map write their files in one folder, so one task can
write another's. For a map (DIR is a map's ``tasks`` folder, whose ``manifest.json`` lists the
map's arrays), every task's file names the array task it came from; while SLURM still knows
that array task (one ``scontrol show job`` per array), a file that claims success where SLURM
says otherwise, names an array that is not the map's, or names an array task another file
names too is INCONSISTENT: named, and never counted as success.

A chunked map (``--chunk K``) runs K items per array task, each item with its own status file
naming the array task that ran it; its ``manifest.json`` says which task of which array runs
which items (``chunks``). There a file names an array task that does not run its item, or claims
success for an array task SLURM still holds PENDING, is INCONSISTENT: a task can write only its
own items' results. SLURM's FAILED or TIMEOUT of a chunk's task contradicts none of its items'
successes (one item of the chunk failed, or the time ran out after them).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = [
    "OK_STATES",
    "Policy",
    "TaskStatus",
    "evaluate",
    "parse_keys",
    "parse_policy",
    "read_statuses",
    "verdict_line",
    "write_table",
]

OK_STATES = frozenset({"COMPLETED"})
#: A status file that SLURM contradicts (never a success).
INCONSISTENT = "INCONSISTENT"
#: SLURM states that say more than the task's own FAILED or RUNNING.
SLURM_FINAL = frozenset(
    {"CANCELLED", "TIMEOUT", "NODE_FAIL", "PREEMPTED", "DEADLINE", "OUT_OF_MEMORY", "BOOT_FAIL"}
)
COLUMNS = (
    "key", "index", "item", "state", "exit_code", "job_id", "array_job_id", "task_id", "node",
    "start_utc", "end_utc", "attempt", "log",
)


@dataclass
class TaskStatus:
    """One task's newest status, as read from its status.json and refined."""

    key: str
    state: str
    exit_code: int | None
    fields: dict[str, Any]

    @property
    def ok(self) -> bool:
        return self.state in OK_STATES

    def row(self) -> dict[str, Any]:
        out = dict(self.fields)
        out["key"] = self.key
        out["state"] = self.state
        out["exit_code"] = self.exit_code
        return out


@dataclass(frozen=True)
class Policy:
    """all-ok, always, min-ok=K (count) or min-ok=P% (percent)."""

    text: str
    kind: str
    value: int = 0

    def needed(self, count: int) -> int:
        if self.kind == "all-ok":
            return count
        if self.kind == "always":
            return 0
        if self.kind == "min-ok":
            return self.value
        return -(-self.value * count // 100)  # percent, rounded up


def parse_policy(text: str) -> Policy:
    """The policy of ``--gather-when``; ValueError naming what is accepted otherwise."""
    if text in ("all-ok", "always"):
        return Policy(text, text)
    m = re.fullmatch(r"min-ok=([0-9]{1,6})(%?)", text)
    if m:
        value = int(m.group(1))
        if m.group(2):
            if 1 <= value <= 100:
                return Policy(text, "percent", value)
        elif value >= 1:
            return Policy(text, "min-ok", value)
    raise ValueError(
        f"'{text}' is not accepted; accepted: all-ok, always, min-ok=K (K >= 1) "
        "or min-ok=P% (1-100)"
    )


def parse_keys(text: str) -> list[str]:
    """``A-B`` (whole numbers), or a comma-separated list of keys (folder names)."""
    m = re.fullmatch(r"([0-9]{1,9})-([0-9]{1,9})", text)
    if m and int(m.group(1)) <= int(m.group(2)):
        return [str(i) for i in range(int(m.group(1)), int(m.group(2)) + 1)]
    keys = [k for k in text.split(",") if k]
    if not keys or any(not re.fullmatch(r"[A-Za-z0-9_.+-]+", k) or k in (".", "..") for k in keys):
        raise ValueError(
            f"'{text}' is not accepted; accepted: A-B or a comma-separated list of names"
        )
    return keys


# sacct's lines of each job or array asked (:func:`_sacct_state`), for the process's life.
_SACCT_LINES: dict[str, list[str]] = {}


def _scontrol_show(job: str) -> str | None:
    """``scontrol show job -o JOB``'s output (one line per job or array task) while scontrol
    knows JOB, else None."""
    try:
        out = subprocess.run(
            ["scontrol", "show", "job", "-o", job],
            capture_output=True, text=True, timeout=30, check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout if out.returncode == 0 else None


def _scontrol_state(job: str) -> str | None:
    """SLURM's JobState of JOB (``123`` or ``123_4``) while scontrol knows it; once the
    controller has forgotten it, its final State from the accounting (:func:`_sacct_state`);
    else None."""
    out = _scontrol_show(job)
    if out is None:
        return _sacct_state(job)
    m = re.search(r"\bJobState=([A-Z_]+)", out)
    return m.group(1) if m else None


def _sacct_state(job: str) -> str | None:
    """JOB's State (``CANCELLED by 0``: ``CANCELLED``) as ``sacct`` (SLURM's accounting) keeps it
    for a job the controller has forgotten; None where the cluster keeps no accounting (sacct
    fails) or it does not know JOB. Its latest run only (a requeued job's earlier ones: -D). An
    array task (``123_4``) is looked for in its array's lines: one cancelled while it waited has
    no line of its own, only the array's pending range (``123_[1-5%2]``), which answers for the
    tasks in it that have no line of their own. One sacct per array, kept for this process."""
    array, _, task = job.partition("_")
    query = array if task else job
    if query not in _SACCT_LINES:
        try:
            out = subprocess.run(
                # The user's own (-u): where PrivateData does not hide them, sacct shows every
                # user's job of an id, and ids come again after the controller's state is reset.
                ["sacct", "-n", "-P", "-X", "-u", str(os.getuid()), "-j", query,
                 "-o", "JobID,State"],
                capture_output=True, text=True, timeout=30, check=False,
            )
            _SACCT_LINES[query] = out.stdout.splitlines() if out.returncode == 0 else []
        except (OSError, subprocess.SubprocessError):
            _SACCT_LINES[query] = []
    ranged = None
    for line in _SACCT_LINES[query]:
        jid, _, state = line.partition("|")
        word = state.split(" ")[0]
        if not re.fullmatch(r"[A-Z_]+", word):
            continue
        if jid == job:
            return word
        m = re.fullmatch(re.escape(array) + r"_\[([0-9,%-]+)\]", jid) if task else None
        if m and ranged is None and _in_array_spec(task, m.group(1)):
            ranged = word
    return ranged


def _in_array_spec(task: str, spec: str) -> bool:
    """Whether array task TASK is in SPEC (``0-3,7%2``: ranges and indices, a throttle)."""
    for part in spec.partition("%")[0].split(","):
        low, _, high = part.partition("-")
        if low.isdigit() and (high or low).isdigit() and int(low) <= int(task) <= int(high or low):
            return True
    return False


def _slurm_array_tasks(array_ids: Sequence[str]) -> dict[str, tuple[str, str]]:
    """SLURM's (JobState, ExitCode) of each task of the arrays ARRAY_IDS that ``scontrol show
    job`` still knows, by ``ARRAYID_TASKID``: one call per array."""
    table: dict[str, tuple[str, str]] = {}
    for array in array_ids:
        out = _scontrol_show(array) if re.fullmatch(r"[0-9]+", array) else None
        for line in (out or "").splitlines():
            job = re.search(r"\bArrayJobId=([0-9]+)", line)
            task = re.search(r"\bArrayTaskId=([0-9]+)(?=\s|$)", line)  # not a pending range
            state = re.search(r"\bJobState=([A-Z_]+)", line)
            code = re.search(r"\bExitCode=([0-9]+:[0-9]+)", line)
            if job and task and state:
                table[f"{job.group(1)}_{task.group(1)}"] = (
                    state.group(1), code.group(1) if code else "")
    return table


def _map_array_ids(unit_dir: Path) -> list[str] | None:
    """The arrays of the map whose tasks folder is UNIT_DIR (its manifest.json), else None."""
    if unit_dir.name != "tasks":
        return None
    try:
        doc = json.loads((unit_dir.parent / "manifest.json").read_text(encoding="utf-8"))
        ids = doc["array_ids"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return [str(i) for i in ids] if isinstance(ids, list) else None


def _map_chunks(unit_dir: Path) -> dict[str, dict[str, str]]:
    """The chunked arrays of the map whose tasks folder is UNIT_DIR: for each array id, which
    task id runs each item (key). Its manifest.json's ``chunks``: per array ``chunk`` K and
    either ``first``/``last`` (task t runs first+t*K ..) or ``indices`` (task t the t-th K)."""
    try:
        doc = json.loads((unit_dir.parent / "manifest.json").read_text(encoding="utf-8"))
        chunks = doc.get("chunks") or {}
        if not isinstance(chunks, dict):
            return {}
        out: dict[str, dict[str, str]] = {}
        for array, layout in chunks.items():
            k = int(layout["chunk"])
            if "indices" in layout:
                keys = [str(int(i)) for i in layout["indices"]]
            else:
                keys = [str(i) for i in range(int(layout["first"]), int(layout["last"]) + 1)]
            if k >= 1:
                out[str(array)] = {key: str(n // k) for n, key in enumerate(keys)}
        return out
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return {}


def _contradiction(
    fields: dict[str, Any], state: str, arrays: Sequence[str],
    slurm: dict[str, tuple[str, str]], claims: dict[str, list[str]],
    *, key: str = "", chunks: dict[str, dict[str, str]] | None = None,
) -> str:
    """Why SLURM contradicts a task's status file (empty when it does not): the file's array
    task is not the map's, is named by another file too, or ended otherwise in SLURM; for a
    chunked array, does not run the file's item, or has not started."""
    array, task = str(fields.get("array_job_id") or ""), str(fields.get("task_id") or "")
    if not array or not task:
        return "its status file names no array task" if state in OK_STATES else ""
    claimed = f"{array}_{task}"
    if array not in arrays:
        return f"its status file names job {claimed}, not an array of this map"
    if chunks and array in chunks:
        if chunks[array].get(key) != task:
            return f"its status file names job {claimed}, whose chunk does not hold item {key}"
        known = slurm.get(claimed)
        if known and state in OK_STATES and known[0] == "PENDING":
            return f"its status file says {state}, SLURM says job {claimed} has not started"
        return ""
    if len(claims.get(claimed, [])) > 1:
        others = ", ".join(claims[claimed])
        return f"its status file names job {claimed}, as the files of {others} do"
    known = slurm.get(claimed)
    if known and state in OK_STATES and known[0] != "COMPLETED":
        ended = f"{known[0]} {known[1]}".rstrip()
        return f"its status file says {state}, SLURM says job {claimed} ended {ended}"
    return ""


def _int_or_none(value: object) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and re.fullmatch(r"-?[0-9]+", value):
        return int(value)
    return None


def read_statuses(
    unit_dir: Path, keys: Sequence[str], array_job_id: str | None = None, refine: bool = True
) -> list[TaskStatus]:
    """Each key's status from ``unit_dir/<key>/status.json``, in the order of KEYS; with
    REFINE, SLURM's word over a file's (the module's docstring)."""
    out: list[TaskStatus] = []
    arrays = _map_array_ids(unit_dir) if refine else None
    # A map of one array (its manifest.json): a task that wrote no file is that array's task of
    # its index (or of the chunk that holds it), as SLURM and its accounting name it.
    if not array_job_id and arrays and len(arrays) == 1:
        array_job_id = arrays[0]
    chunks = _map_chunks(unit_dir) if arrays else {}
    slurm_tasks = _slurm_array_tasks(arrays) if arrays else {}
    for key in keys:
        path = unit_dir / key / "status.json"
        fields: dict[str, Any] = {}
        try:
            # A task that replaced its folder or file by a link is not followed: its state
            # would be whatever the link's target says.
            for linked in (path.parent, path):
                if linked.is_symlink():
                    print(f"hpc_helpers.followup: {linked} is a symbolic link: not followed, "
                          f"task {key} counted LOST", file=sys.stderr)
                    raise OSError(f"{linked} is a symbolic link")
            if not path.is_file():  # a FIFO planted there would block the reader
                raise OSError(f"{path} is not a file")
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
            with os.fdopen(fd, "rb") as handle:
                loaded = json.loads(handle.read().decode("utf-8"))
            if isinstance(loaded, dict):
                fields = loaded
        except (OSError, ValueError, RecursionError):
            # Missing, truncated, not UTF-8, or nested beyond the parser: damaged by hand.
            fields = {}
        state = fields.get("state") if isinstance(fields.get("state"), str) else ""
        state = state or "LOST"
        exit_code = _int_or_none(fields.get("exit_code"))
        if not fields:
            state = "LOST"
        if state == "RUNNING":
            state = "LOST"
        # A chunk's item that failed: its task's end (TIMEOUT...) came after it, or not at all.
        if refine and (state == "LOST" or (state == "FAILED" and not fields.get("chunk"))):
            # An array task by its own name: the array's job id shows every task.
            job = str(fields.get("job_id") or "")
            if fields.get("array_job_id") and fields.get("task_id") not in (None, ""):
                job = f"{fields['array_job_id']}_{fields['task_id']}"
            elif not job and array_job_id and key.isdigit():
                # A chunked array's item ran in the task whose chunk holds it, not in task KEY.
                owner = chunks.get(str(array_job_id))
                if owner is None:
                    job = f"{array_job_id}_{key}"
                elif key in owner:
                    job = f"{array_job_id}_{owner[key]}"
            slurm = _scontrol_state(job) if job else None
            if slurm in SLURM_FINAL:
                state = slurm
            elif state == "LOST" and slurm == "FAILED":
                state = "FAILED"
        fields.setdefault("index", int(key) if key.isdigit() else None)
        out.append(TaskStatus(key, state, exit_code, fields))
    if arrays is not None:
        claims: dict[str, list[str]] = {}
        for s in out:
            array, task = s.fields.get("array_job_id"), s.fields.get("task_id")
            if array and task not in (None, ""):
                claims.setdefault(f"{array}_{task}", []).append(s.key)
        for s in out:
            if s.state == "LOST":
                continue
            why = _contradiction(
                s.fields, s.state, arrays, slurm_tasks, claims, key=s.key, chunks=chunks)
            if why:
                print(f"hpc_helpers.followup: task {s.key} is INCONSISTENT: {why}; not counted as "
                      "a success", file=sys.stderr)
                s.fields["inconsistent"] = why
                s.state = INCONSISTENT
    return out


def evaluate(statuses: Sequence[TaskStatus], policy: Policy) -> tuple[bool, int]:
    """(met, tasks needed) of POLICY over STATUSES."""
    needed = policy.needed(len(statuses))
    return sum(1 for s in statuses if s.ok) >= needed, needed


def _failure_text(s: TaskStatus) -> str:
    if s.state == "FAILED" and s.exit_code is not None:
        return f"{s.key} (exit {s.exit_code})"
    return f"{s.key} ({s.state})"


#: The failed tasks a verdict line names; the rest are counted (the table names them all).
VERDICT_NAMED = 20


def verdict_line(
    statuses: Sequence[TaskStatus], policy: Policy, rerun: str = "", what: str = "gather",
    table: str = "",
) -> str:
    """The one line the follow-up job prints: run, or not run and why (the first VERDICT_NAMED
    failed tasks by name, then how many more, and where TABLE, if given, lists them)."""
    met, needed = evaluate(statuses, policy)
    n_ok = sum(1 for s in statuses if s.ok)
    failed = [s for s in statuses if not s.ok]
    text = (
        f"{what} {'runs' if met else 'not run'}: policy {policy.text} needs "
        f"{needed}/{len(statuses)} tasks, {n_ok} ok"
    )
    if failed:
        text += "; failed: " + ", ".join(_failure_text(s) for s in failed[:VERDICT_NAMED])
        if len(failed) > VERDICT_NAMED:
            text += f" and {len(failed) - VERDICT_NAMED} more" + (f" ({table})" if table else "")
        if rerun:
            text += f"; to re-run them: {rerun}"
    return text


def _atomic_write(path: Path, text: str) -> None:
    """Writes TEXT to PATH through a temporary file renamed over it, readable and writable by
    the user alone (0600: the map's and the study's records name what resubmit runs again). A
    write that fails (a full disk) leaves no temporary file behind."""
    tmp = path.with_name(f".{path.name}.tmp.{os.getpid()}")
    tmp.unlink(missing_ok=True)  # an earlier process's of the same pid (a link: only it goes)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(text)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def _tsv(value: object) -> str:
    text = "" if value is None else str(value)
    return text.replace("\\", "\\\\").replace("\t", "\\t").replace("\n", "\\n").replace("\r", "\\r")


def write_table(
    prefix: Path, statuses: Sequence[TaskStatus], policy: Policy, verdict: str
) -> None:
    """PREFIX.tsv (a header line, one row per task) and PREFIX.json, each written atomically."""
    met, needed = evaluate(statuses, policy)
    lines = ["\t".join(COLUMNS)]
    for s in statuses:
        row = s.row()
        lines.append("\t".join(_tsv(row.get(c)) for c in COLUMNS))
    _atomic_write(prefix.with_name(prefix.name + ".tsv"), "\n".join(lines) + "\n")
    doc = {
        "policy": policy.text,
        "needed": needed,
        "met": met,
        "verdict": verdict,
        "tasks": [s.row() for s in statuses],
    }
    _atomic_write(prefix.with_name(prefix.name + ".json"), json.dumps(doc, indent=1) + "\n")


def _read_command(args: argparse.Namespace) -> int:
    try:
        policy = parse_policy(args.policy)
        keys = parse_keys(args.keys)
    except ValueError as err:
        print(f"hpc_helpers.followup: {err}", file=sys.stderr)
        return 2
    unit_dir = Path(args.dir)
    statuses = read_statuses(unit_dir, keys, args.array_job_id)
    prefix = Path(args.out)
    verdict = verdict_line(statuses, policy, args.rerun, args.what,
                           table=str(prefix.with_name(prefix.name + ".tsv")))
    try:
        write_table(prefix, statuses, policy, verdict)
    except OSError as err:
        # Exit 2, the reader failed: a traceback's exit 1 would read as 'policy not met'.
        message = f"cannot write {prefix}.tsv/.json: {err.strerror}"
        print(f"hpc_helpers.followup: {message}", file=sys.stderr)
        return 2
    met, _ = evaluate(statuses, policy)
    ok = [s.key for s in statuses if s.ok]
    failed = [s.key for s in statuses if not s.ok]
    print(verdict, file=sys.stderr)
    sys.stdout.write(
        f"ok={' '.join(ok)}\nfailed={' '.join(failed)}\nn_ok={len(ok)}\nn_failed={len(failed)}\n"
        f"count={len(statuses)}\nstatus_file={prefix.with_name(prefix.name + '.json')}\n"
    )
    return 0 if met else 1


def _map_info_command(args: argparse.Namespace) -> int:
    """name=value lines of a map folder for ``resubmit --failed``: first, last, throttle,
    array_ids, gather_ids, failed (indices whose newest attempt did not succeed), attempt (the
    next attempt's number)."""
    folder = Path(args.dir)
    try:
        manifest = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))
        first, last = int(manifest["first"]), int(manifest["last"])
    except (OSError, ValueError, KeyError, TypeError) as err:
        print(f"hpc_helpers.followup: {folder}/manifest.json is not a map's manifest: {err}",
              file=sys.stderr)
        return 2
    keys = [str(i) for i in range(first, last + 1)]
    statuses = read_statuses(folder / "tasks", keys)
    attempts = [_int_or_none(s.fields.get("attempt")) or 1 for s in statuses]
    chunk = _int_or_none(manifest.get("chunk")) or 0
    array = str(manifest.get("array", ""))
    ids = " ".join(str(i) for i in manifest.get("array_ids", []))
    gathers = " ".join(str(i) for i in manifest.get("gather_ids", []))
    sys.stdout.write(
        f"first={first}\nlast={last}\nthrottle={array.partition('%')[2]}\narray_ids={ids}\n"
        f"gather_ids={gathers}\nfailed={' '.join(s.key for s in statuses if not s.ok)}\n"
        f"attempt={max(attempts, default=1) + 1}\nchunk={chunk}\n"
    )
    return 0


def _map_record_command(args: argparse.Namespace) -> int:
    """Adds a resubmission's array and gather ids to the map's manifest.json (atomically)."""
    path = Path(args.dir) / "manifest.json"
    doc = json.loads(path.read_text(encoding="utf-8"))
    arrays = [a for a in args.array if a]
    if arrays:
        doc["array_ids"] = [*doc.get("array_ids", []), *arrays]
    if args.gather:
        doc["gather_ids"] = [*doc.get("gather_ids", []), args.gather]
    if args.chunk and len(arrays) == 1:
        # A chunked resubmission: which of its tasks runs which item (_map_chunks).
        chunks = doc.get("chunks") if isinstance(doc.get("chunks"), dict) else {}
        chunks[arrays[0]] = {"chunk": args.chunk, "indices": [int(i) for i in args.indices.split()]}
        doc["chunks"] = chunks
    _atomic_write(path, json.dumps(doc) + "\n")
    return 0


def _study_info_command(args: argparse.Namespace) -> int:
    """name=value lines of a scaling study for ``resubmit --failed``: order (serial, exclusive
    or parallel; parallel for a study recorded before the order was), report_ids, then one
    ``run=KEY JOB_ID`` line per run (study.json's order, its newest job), then failed (keys whose
    newest attempt did not succeed, read from runs/<key>/status.json). Exit 2 on a folder
    without a study's study.json."""
    folder = Path(args.dir)
    try:
        doc = json.loads((folder / "study.json").read_text(encoding="utf-8"))
        configs = doc["configurations"]
        keys = [str(c["key"]) for c in configs]
        ids = [str(c.get("job_id", "")) for c in configs]
        parse_keys(",".join(keys))
    except (OSError, ValueError, KeyError, TypeError) as err:
        print(f"hpc_helpers.followup: {folder}/study.json is not a scaling study's: {err}",
              file=sys.stderr)
        return 2
    statuses = read_statuses(folder / "runs", keys)
    reports = doc.get("report_job_ids") or [doc.get("report_job_id", "")]
    order = doc.get("order")
    order = order if order in ("serial", "exclusive", "parallel") else "parallel"
    sys.stdout.write(f"order={order}\n")
    sys.stdout.write(f"report_ids={' '.join(str(i) for i in reports)}\n")
    sys.stdout.write("".join(f"run={k} {i}\n" for k, i in zip(keys, ids)))
    sys.stdout.write(f"failed={' '.join(s.key for s in statuses if not s.ok)}\n")
    return 0


def _study_record_command(args: argparse.Namespace) -> int:
    """Records a resubmission in study.json (atomically): each ``--run KEY=ID`` becomes that
    run's job_id (the earlier one kept in its earlier_job_ids), ``--report ID`` the report_job_id
    (every one kept in report_job_ids)."""
    path = Path(args.dir) / "study.json"
    doc = json.loads(path.read_text(encoding="utf-8"))
    new = dict(item.split("=", 1) for item in args.run)
    for conf in doc["configurations"]:
        if str(conf["key"]) in new:
            conf["earlier_job_ids"] = [*conf.get("earlier_job_ids", []), conf.get("job_id", "")]
            conf["job_id"] = new[str(conf["key"])]
    if args.report:
        earlier = doc.get("report_job_ids") or [doc.get("report_job_id", "")]
        doc["report_job_ids"] = [*earlier, args.report]
        doc["report_job_id"] = args.report
    _atomic_write(path, json.dumps(doc) + "\n")
    return 0


def _gather_command_command(args: argparse.Namespace) -> int:
    """The map's gather command (its templates, as recorded in manifest.json), each word ended
    by a NUL: for ``gather EXP --here``. Exit 2 when the folder holds no map's manifest."""
    path = Path(args.dir) / "manifest.json"
    try:
        words = json.loads(path.read_text(encoding="utf-8"))["gather_command"]
        if not isinstance(words, list) or not all(isinstance(w, str) for w in words):
            raise TypeError("gather_command is not a list of strings")
    except (OSError, ValueError, KeyError, TypeError) as err:
        print(f"hpc_helpers.followup: {path} is not a map's manifest: {err}", file=sys.stderr)
        return 2
    sys.stdout.write("".join(f"{w}\0" for w in words))
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m hpc_helpers.followup")
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("read", help="read the tasks' status files; write PREFIX.tsv/.json")
    p.add_argument("--dir", required=True, help="the folder holding one folder per task")
    p.add_argument("--keys", required=True, help="A-B or a comma-separated list of folder names")
    p.add_argument("--policy", default="all-ok")
    p.add_argument("--out", required=True, help="PREFIX of the .tsv and .json written")
    p.add_argument("--rerun", default="", help="the command that re-runs failed tasks")
    p.add_argument("--array-job-id", default=None, help="for tasks that wrote no file")
    p.add_argument("--what", default="gather", help="the follow-up's name in the verdict")
    p = sub.add_parser("map-info", help="a map folder's ids and failed indices, name=value")
    p.add_argument("--dir", required=True)
    p = sub.add_parser("map-record", help="add a resubmission's ids to the map's manifest.json")
    p.add_argument("--dir", required=True)
    p.add_argument("--array", action="append", default=[], help="once per array (part)")
    p.add_argument("--gather", default="")
    p.add_argument("--chunk", type=int, default=0, help="a chunked array's items per task")
    p.add_argument("--indices", default="", help="a chunked array's items, in order")
    p = sub.add_parser("gather-command", help="the map's gather command, NUL-separated words")
    p.add_argument("--dir", required=True)
    p = sub.add_parser("study-info", help="a scaling study's ids and failed runs, name=value")
    p.add_argument("--dir", required=True)
    p = sub.add_parser("study-record", help="add a resubmission's ids to the study's study.json")
    p.add_argument("--dir", required=True)
    p.add_argument("--run", action="append", default=[], help="KEY=JOB_ID, once per run")
    p.add_argument("--report", default="")
    args = parser.parse_args(argv)
    commands: dict[str, Callable[[argparse.Namespace], int]] = {
        "study-info": _study_info_command,
        "study-record": _study_record_command,
        "gather-command": _gather_command_command,
        "map-info": _map_info_command,
        "map-record": _map_record_command,
    }
    try:
        status = commands.get(args.command, _read_command)(args)
        sys.stdout.flush()
    except BrokenPipeError:
        # The reader went away (its submitter was killed): stop quietly, no traceback.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 1
    return status


if __name__ == "__main__":
    sys.exit(main())
