"""The report of a scaling test: results.csv, summary.csv, report.md, scaling.png/.svg.

Run by the study's report job (afterany on every run), and by hand on any study folder, a
copied one included::

    python -m hpc_helpers.scaling_report STUDY_DIR [--out DIR]

STUDY_DIR holds ``study.json`` (written at submission: experiment, study_id, command, cluster,
git_commit, git_dirty, mode, repeats, shared_host, configurations: one object per run with key,
nodes, gpus_per_node, repeat, job_id) and ``runs/<key>/`` with each run's status.json (the
follow-up interface, :mod:`hpc_helpers.followup`), wall.json and, when the training loop used
:class:`hpc_helpers.scaling.Throughput`, metrics.json.

The plot and report.md are drawn from summary.csv (and results.csv for the failures), so the
command on a copied folder reproduces summary.csv and report.md byte for byte; a state that
``scontrol`` (or, once the controller forgot the job, ``sacct``) refined once (a LOST run that
SLURM says was CANCELLED) is kept from the results.csv already there. matplotlib is optional:
without it the CSVs and report.md are still written, with one line saying how to draw the plot
later.

What it checks rather than assumes: runs that shared a node at the same time (node lists and
job-side start_s/end_s; any node when study.json's shared_host), efficiency above 100 % beyond
the repeats' noise (superlinear), a run's invalid metric (that run alone); report.md opens with
a verdict (the largest configuration at or above target_efficiency, default 70 %). Every file
of the study (and of --out) is read only as a regular file inside it, never through a link nor
from a FIFO or device (named in a warning, skipped); text from the study is escaped for
Markdown and made inert for spreadsheets (csv_cell).

Exit status: 0 when at least one run succeeded, 1 when none did (after writing everything),
2 when STUDY_DIR is not a study (no readable study.json).
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import io
import json
import math
import os
import re
import stat
import sys
from collections.abc import Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from . import followup
from .followup import read_statuses
from .hostlist import expand
from .scaling import (
    INVALID_METRIC,
    OVERLAP,
    OVERLAP_SLACK_S,
    SUPERLINEAR,
    Run,
    Study,
    format_number,
    results_csv,
    summarise,
    summary_csv,
)

__all__ = ["load_runs", "main", "plot", "report_markdown", "write_report"]

PLOT_HINT = (
    "The plot was not drawn: matplotlib is missing; install it (pip install matplotlib) and "
    "run: bash job_submitter.sh scaling-report {where}"
)


class StudyError(Exception):
    """STUDY_DIR is not a study folder."""


class Unsafe(Exception):
    """A file of a study that is not read: not a regular file, a link, or reached through one."""


#: The most bytes read from one file of a study (a study.json of 1000 runs is ~200 KiB).
MAX_READ = 64 * 1024 * 1024
#: The files a report writes (and replaces) in its folder.
REPORT_FILES = ("results.csv", "summary.csv", "report.md", "scaling.png", "scaling.svg")
#: A configuration's key, as the submitter names its folder: <N>x<G>-r<k>.
KEY = re.compile(r"([0-9]{1,6})x([0-9]{1,6})-r([0-9]{1,6})")
#: A state as SLURM (or the follow-up reader) writes one.
STATE = re.compile(r"[A-Z][A-Z_]{1,30}")
DEFAULT_TARGET = 70.0


def _kind(mode: int) -> str:
    for test, name in ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"),
                       (stat.S_ISDIR, "a folder")):
        if test(mode):
            return name
    return "not a plain file"


def _check_inside(root: Path, rel: str) -> os.stat_result | None:
    """lstat of ROOT/REL, None when it is missing; Unsafe (naming REL) unless it is a regular
    file reached without any link below ROOT (a link could lead out of the study)."""
    path = root / rel
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return None
    except OSError as err:
        raise Unsafe(f"{rel} cannot be read ({err.strerror})") from err
    if stat.S_ISLNK(st.st_mode):
        raise Unsafe(f"{rel} is a symbolic link")
    if not stat.S_ISREG(st.st_mode):
        raise Unsafe(f"{rel} is not a regular file ({_kind(st.st_mode)})")
    if os.path.realpath(path) != os.path.join(os.path.realpath(root), rel):
        raise Unsafe(f"{rel} is reached through a symbolic link")
    return st


def _read_inside(root: Path, rel: str) -> bytes | None:
    """The bytes of ROOT/REL (see _check_inside), None when it is missing. Opened without
    following a link and without blocking (a FIFO swapped in after the check), and read only
    when the opened descriptor is the regular file checked."""
    st = _check_inside(root, rel)
    if st is None:
        return None
    try:
        fd = os.open(root / rel, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as err:
        raise Unsafe(f"{rel} cannot be read ({err.strerror})") from err
    with os.fdopen(fd, "rb") as handle:
        now = os.fstat(fd)
        if not stat.S_ISREG(now.st_mode) or (now.st_dev, now.st_ino) != (st.st_dev, st.st_ino):
            raise Unsafe(f"{rel} was replaced while it was read")
        data = handle.read(MAX_READ + 1)
    if len(data) > MAX_READ:
        raise Unsafe(f"{rel} is larger than {MAX_READ // (1024 * 1024)} MiB")
    return data


def _note(notes: list[str], text: str) -> None:
    if text not in notes:
        notes.append(text)


def _read_json_inside(root: Path, rel: str, notes: list[str]) -> dict[str, Any] | None:
    """ROOT/REL's JSON object; None when missing or skipped (named in NOTES), {} when it is not
    a JSON object."""
    try:
        data = _read_inside(root, rel)
    except Unsafe as err:
        _note(notes, f"{err}: skipped")
        return None
    if data is None:
        return None
    try:
        doc = json.loads(data.decode("utf-8"))
    except (ValueError, RecursionError):
        return {}
    return doc if isinstance(doc, dict) else {}


def load_study(folder: Path) -> dict[str, Any]:
    """study.json of FOLDER; StudyError when it is missing, unsafe or not a study's."""
    try:
        data = _read_inside(folder, "study.json")
    except Unsafe as err:
        raise StudyError(f"{folder}: {err}: not read") from err
    if data is None:
        raise StudyError(f"{folder} is not a scaling study: it has no study.json")
    path = folder / "study.json"
    try:
        doc = json.loads(data.decode("utf-8"))
    except (ValueError, RecursionError):
        doc = None
    if not isinstance(doc, dict):
        raise StudyError(f"{path} is not a scaling study's: it is not a JSON object")
    configs = doc.get("configurations")
    if not isinstance(configs, list) or not configs:
        raise StudyError(f"{path} is not a scaling study's: it lists no configurations")
    for conf in configs:
        # The key names a folder under runs/: only the submitter's own names are read.
        match = KEY.fullmatch(str(conf.get("key", ""))) if isinstance(conf, dict) else None
        if match is None or [_int(conf.get(k)) for k in ("nodes", "gpus_per_node", "repeat")] \
                != [int(g) for g in match.groups()]:
            shown = json.dumps(conf)[:80]
            raise StudyError(f"{path} is not a scaling study's: configuration {shown} is not "
                             "one the submitter writes (key <N>x<G>-r<k> and its numbers)")
    return doc


def _number(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if math.isfinite(value) else None


def _int(value: object) -> int | None:
    number = _number(value)
    return int(number) if number is not None else None


def _recorded_states(folder: Path, notes: list[str]) -> dict[str, tuple[str, str]]:
    """key -> (job id, state) of an earlier results.csv (the refined states of a first
    report; a run resubmitted since has another job id, and its own state)."""
    try:
        data = _read_inside(folder, "results.csv")
        text = data.decode("utf-8") if data is not None else ""
    except Unsafe as err:
        _note(notes, f"{err}: skipped")
        return {}
    except ValueError:
        return {}
    try:
        return {
            f"{row['config']}-r{row['repeat']}": (row.get("job_id") or "", row["state"])
            for row in csv.DictReader(io.StringIO(text))
            if row.get("config") and row.get("repeat") and STATE.fullmatch(row.get("state") or "")
        }
    except csv.Error:
        return {}


def _metric(metrics: dict[str, Any] | None, rel: str, notes: list[str]) -> tuple[
        float | None, str]:
    """(samples/s, why it is invalid) of a run's metrics.json (None: no such file, or
    skipped)."""
    if metrics is None:
        return None, ""
    value = metrics.get("samples_per_s")
    number = _number(value)
    if number is not None and number > 0:
        return number, ""
    why = (f"{rel} is not a JSON object" if not metrics
           else f"{rel}: samples_per_s is not a positive number ({json.dumps(value)[:40]})")
    _note(notes, f"{why}: that run's metric is invalid, the run counts without one")
    return None, why


def _refine_cancelled(state: str, job_id: str, refine: bool) -> str:
    """SLURM's own end for a run whose batch shell wrote CANCELLED: the job side says CANCELLED
    whenever it sees its job COMPLETING, which a node failure (or a preemption, a time limit)
    looks like too; SLURM, while it knows the job, tells which."""
    if not refine or state != "CANCELLED" or not job_id.isdigit():
        return state
    slurm = followup._scontrol_state(job_id)
    return slurm if slurm in followup.SLURM_FINAL else state


def load_runs(
    folder: Path, study: dict[str, Any], refine: bool = True, notes: list[str] | None = None
) -> list[Run]:
    """One Run per configuration of STUDY, in study.json's order, from runs/<key>/; files that
    are not read (FIFOs, links...) and invalid metrics are named in NOTES."""
    notes = notes if notes is not None else []
    configs = study["configurations"]
    keys = [str(c["key"]) for c in configs]
    for key in keys:
        # read_statuses opens status.json itself (a link or a FIFO is LOST there): named here.
        for rel in (f"runs/{key}", f"runs/{key}/status.json"):
            try:
                if rel.endswith(".json"):
                    _check_inside(folder, rel)
                elif (folder / rel).is_symlink():
                    raise Unsafe(f"{rel} is a symbolic link")
            except Unsafe as err:
                _note(notes, f"{err}: skipped")
                break
    statuses = read_statuses(folder / "runs", keys, refine=refine)
    recorded = _recorded_states(folder, notes)
    runs: list[Run] = []
    for conf, status in zip(configs, statuses):
        rel = f"runs/{status.key}"
        wall = _read_json_inside(folder, f"{rel}/wall.json", notes) or {}
        metrics = _read_json_inside(folder, f"{rel}/metrics.json", notes)
        job_id = str(wall.get("job_id") or status.fields.get("job_id") or conf.get("job_id", ""))
        state = _refine_cancelled(status.state, job_id, refine)
        recorded_id, recorded_state = recorded.get(status.key, ("", state))
        refined = recorded_state not in ("", state) and recorded_id == job_id
        if state in ("LOST", "FAILED", "CANCELLED") and refined and (
                state != "CANCELLED" or recorded_state in followup.SLURM_FINAL):
            state = recorded_state
        rate, invalid = _metric(metrics, f"{rel}/metrics.json", notes)
        metrics = metrics or {}
        run = Run(
            nodes=int(conf["nodes"]), gpus_per_node=int(conf["gpus_per_node"]),
            repeat=int(conf["repeat"]), state=state, job_id=job_id,
            exit_code=status.exit_code if status.exit_code is not None
            else _int(wall.get("exit_code")),
            node_list=str(wall.get("node_list") or status.fields.get("node") or ""),
            start_utc=str(wall.get("start_utc") or status.fields.get("start_utc") or ""),
            end_utc=str(wall.get("end_utc") or status.fields.get("end_utc") or ""),
            wall_s=_number(wall.get("wall_s")),
            samples_per_s=rate,
            samples=_int(metrics.get("samples")),
            steps_measured=_int(metrics.get("steps_measured")),
            warmup_steps=_int(metrics.get("warmup_steps")),
            log=f"runs/{status.key}/job_{job_id}.out" if job_id else f"runs/{status.key}/",
            start_s=_number(wall.get("start_s")) if _number(wall.get("start_s")) is not None
            else _number(status.fields.get("start_s")),
            end_s=_number(wall.get("end_s")) if _number(wall.get("end_s")) is not None
            else _number(status.fields.get("end_s")),
            metric_invalid=invalid,
        )
        if invalid and run.ok:
            run.flags.append(INVALID_METRIC)
        runs.append(run)
    shared = bool(study.get("shared_host"))
    overlaps = find_overlaps(
        [(r.key, r.node_list, r.start_s, r.end_s, r.start_utc, r.end_utc) for r in runs], shared)
    flagged = {k for pair in overlaps for k in pair[:2]}
    for run in runs:
        if run.key in flagged:
            run.flags.insert(0, OVERLAP)
    return runs


def _epoch(seconds: float | None, utc: str) -> float | None:
    """SECONDS, or else UTC (2026-11-23T12:00:05Z, an older study's only times) in seconds."""
    if seconds is not None:
        return seconds
    try:
        return datetime.strptime(utc, "%Y-%m-%dT%H:%M:%SZ").replace(
            tzinfo=timezone.utc).timestamp()
    except ValueError:
        return None


def _hosts(node_list: str) -> frozenset[str]:
    try:
        return frozenset(expand(node_list)) if node_list else frozenset()
    except ValueError:
        return frozenset()


Span = tuple[str, str, "float | None", "float | None", str, str]


def find_overlaps(spans: Sequence[Span], shared_host: bool) -> list[tuple[str, str, str]]:
    """(run, run, where) for every two runs of SPANS (key, node list, start_s, end_s, start_utc,
    end_utc) that ran at the same time (more than OVERLAP_SLACK_S) on a node of both, or on
    any node when SHARED_HOST (every node is one machine); WHERE names the nodes."""
    timed = []
    for key, nodes, start_s, end_s, start_utc, end_utc in spans:
        start, end = _epoch(start_s, start_utc), _epoch(end_s, end_utc)
        if start is not None and end is not None:
            timed.append((start, end, key, _hosts(nodes)))
    timed.sort(key=lambda t: t[0])
    out: list[tuple[str, str, str]] = []
    for i, (_, end, key, hosts) in enumerate(timed):
        for start2, end2, key2, hosts2 in timed[i + 1:]:
            if start2 >= end - OVERLAP_SLACK_S:
                break
            if min(end, end2) - start2 <= OVERLAP_SLACK_S:
                continue
            common = hosts & hosts2
            if common:
                out.append((key, key2, ", ".join(sorted(common))))
            elif shared_host:
                out.append((key, key2, "one host"))
    return sorted(out, key=lambda pair: (_key_order(pair[0]), _key_order(pair[1])))


def _key_order(key: str) -> tuple[int, ...]:
    match = KEY.fullmatch(key)
    return tuple(int(g) for g in match.groups()) if match else (0,)


def _read_csv(text: str) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(text)))


def _float(text: str) -> float | None:
    return float(text) if text else None


_MD_ENTITIES = {"&": "&amp;", "<": "&lt;", ">": "&gt;"}
_CONTROLS = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _visible(text: str) -> str:
    """TEXT on one line: control characters written as escapes (a newline could start a
    heading, a list or a table row)."""
    return "".join(
        _CONTROLS.get(c, f"\\x{ord(c):02x}") if ord(c) < 32 or ord(c) == 127 else c
        for c in text)


def md(value: object) -> str:
    """VALUE (text read from a study) as inert Markdown inline text: no HTML (< > & as
    entities), no table cell, code span, emphasis or link of its own, no block start."""
    text = "".join(_MD_ENTITIES.get(c, "\\" + c if c in "\\`*[]|~" else c) for c in str(value))
    text = _visible(text)
    if text[:1] in ("#", "-", "+", "=", ">"):
        text = "\\" + text
    return re.sub(r"^([0-9]+)([.)])", r"\1\\\2", text)


def md_code(value: object) -> str:
    """VALUE as one Markdown code span: fenced by more backticks than it holds in a row."""
    text = _visible(str(value))
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if text[:1] in ("`", " ") or text[-1:] in ("`", " ") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


METRIC_WORDS = {
    "samples_per_s": "throughput in samples/s (metrics.json of the training loop, warm-up "
                     "excluded, summed over ranks)",
    "wall_s": "wall time in s (time to solution, start-up and rendezvous included)",
}
ORDER_WORDS = {
    "serial": "serial (one run after another)",
    "exclusive": "exclusive (released together, each run on nodes of its own: --exclusive)",
    "parallel": "parallel (released together, runs may share nodes: --scale-parallel)",
}
FLAG_WORDS = {
    OVERLAP: "overlap",
    SUPERLINEAR: "superlinear",
    INVALID_METRIC: "invalid metric",
}


def target_efficiency(study: dict[str, Any]) -> float:
    """study.json's target_efficiency (percent, above 0 and at most 100), else 70."""
    value = _number(study.get("target_efficiency"))
    return value if value is not None and 0 < value <= 100 else DEFAULT_TARGET


def _pct(efficiency: str) -> str:
    return f"{float(efficiency) * 100:.1f} %"


def _flags(row: dict[str, str]) -> list[str]:
    return [f for f in (row.get("flags") or "").split() if f in FLAG_WORDS]


def _verdict(
    rows: Sequence[dict[str, str]], metric: str, target: float
) -> str:
    """The first line: the largest configuration that meets TARGET and what it gains."""
    base = next((r for r in rows if r["baseline"] == "yes"), None)
    if base is None:
        return "**Every run failed: no speedup or efficiency can be computed.**"
    done = [r for r in rows if r["efficiency"]]
    others = [r for r in done if r is not base]
    t = format_number(target)
    if not others:
        return (f"**Verdict: only the baseline {base['config']} has a result: nothing to "
                "compare it with.**")
    meets = [r for r in others if float(r["efficiency"]) * 100 >= target - 1e-9]
    if not meets:
        best = max(others, key=lambda r: (float(r["efficiency"]), int(r["world_size"])))
        return (f"**Verdict: no configuration beyond the baseline {base['config']} reaches the "
                f"{t} % efficiency target; the best is {best['config']} at "
                f"{_pct(best['efficiency'])}.**")
    top = max(meets, key=lambda r: (int(r["world_size"]), float(r["efficiency"])))
    unit = "samples/s" if metric == "samples_per_s" else "s of wall time"
    flagged = ", ".join(FLAG_WORDS[f] for f in _flags(top))
    return (f"**Verdict: {top['config']} (world size {top['world_size']}) is the largest "
            f"configuration at or above the {t} % efficiency target ({_pct(top['efficiency'])}):"
            f" speedup {_short(top['speedup'])}x over the baseline {base['config']}, "
            f"{top['median']} vs "
            f"{base['median']} {unit}" + (f"; flagged: {flagged}" if flagged else "") + ".**")


def _short(number: str) -> str:
    """A speedup for a sentence: two decimals at most."""
    return f"{float(number):.2f}".rstrip("0").rstrip(".")


def _head(
    study: dict[str, Any], rows: Sequence[dict[str, str]], metric: str,
    overlaps: Sequence[tuple[str, str, str]],
) -> list[str]:
    """report.md's first lines: what the study says, and what to distrust."""
    lines: list[str] = []
    base = next((r for r in rows if r["baseline"] == "yes"), None)
    smallest = rows[0] if rows else None
    if base is not None and smallest is not None and base["config"] != smallest["config"]:
        lines.append(
            f"**The smallest configuration {smallest['config']} failed; the baseline is "
            f"{base['config']} instead.**"
        )
    target = target_efficiency(study)
    lines.append(_verdict(rows, metric, target))
    order = str(study.get("order") or "")
    if order == "parallel":
        lines.append("**The runs shared nodes by request (order: parallel, --scale-parallel): "
                     "each one's numbers include the others' load.**")
    if overlaps:
        runs = len({k for pair in overlaps for k in pair[:2]})
        lines.append(f"**Overlaps: {runs} runs shared a node with another at the same time "
                     f"({len(overlaps)} pair{'s' if len(overlaps) > 1 else ''}, see Warnings): "
                     "their numbers are not "
                     "independent.**")
    superlinear = [r["config"] for r in rows if SUPERLINEAR in _flags(r)]
    if superlinear:
        lines.append(f"**Superlinear efficiency (contention, caching or unequal work?): "
                     f"{', '.join(superlinear)}.**")
    commit = md(study.get("git_commit") or "unknown")
    if study.get("git_dirty"):
        commit += " (dirty)"
    lines.append(
        f"Commit {commit}; order: {ORDER_WORDS.get(order, 'unknown (not recorded)')}; "
        f"target efficiency {format_number(target)} %.")
    return lines


def report_markdown(
    study: dict[str, Any], summary: str, results: str, plotted: bool, where: str,
    *, notes: Sequence[str] = (),
) -> str:
    """report.md, from study.json, summary.csv and results.csv (texts), and the NOTES of the
    reading (files skipped, invalid metrics)."""
    rows = _read_csv(summary)
    runs = _read_csv(results)
    metric = rows[0]["metric"] if rows else "wall_s"
    mode = str(study.get("mode", "strong"))
    repeats = _int(study.get("repeats")) or 1
    base = next((r for r in rows if r["baseline"] == "yes"), None)
    overlaps = _overlaps_of(study, runs)
    lines = _head(study, rows, metric, overlaps)
    commit = md(study.get("git_commit") or "unknown")
    if study.get("git_dirty"):
        commit += " (dirty: uncommitted changes)"
    lines += [
        "",
        f"# Scaling test: {md(study.get('experiment', ''))}",
        "",
        f"- Study: {md(study.get('study_id', ''))}",
        f"- Cluster: {md(study.get('cluster', '') or 'unknown')}",
        f"- Git commit: {commit}",
        f"- Command: {md_code(study.get('command', ''))}",
        "",
        "## Method",
        "",
        f"Metric: {METRIC_WORDS.get(metric, md(metric))}; warm-up: "
        f"{_warmup_text(runs, metric)}; repeats: {repeats}; mode: {md(mode)}"
        + ("" if metric == "wall_s" else " (throughput: the mode does not change the maths)")
        + f"; baseline: {base['config'] if base else 'none'}. Per configuration the median over "
        "successful repeats, [min-max]; speedup S, ideal I = W / W_base, efficiency E = S / I.",
        "",
        "## Results",
        "",
        "| config | nodes | GPUs/node | world | runs ok | median [min-max] | speedup | ideal "
        "| efficiency | flags |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        spread = f"{r['median']} [{r['min']}-{r['max']}]" if r["median"] else "-"
        eff = _pct(r["efficiency"]) if r["efficiency"] else "-"
        flags = ", ".join(FLAG_WORDS[f] for f in _flags(r)) or "-"
        lines.append(
            f"| {r['config']}{' (baseline)' if r['baseline'] == 'yes' else ''} | {r['nodes']} "
            f"| {r['gpus_per_node']} | {r['world_size']} | {r['runs_ok']}/{r['runs_total']} "
            f"| {spread} | {r['speedup'] or '-'} | {r['ideal'] or '-'} | {eff} | {flags} |"
        )
    failures = [r for r in runs if r["state"] != "COMPLETED"]
    lines += ["", "## Failures", ""]
    if failures:
        lines += ["| config | repeat | job id | state | exit code | log |",
                  "|---|---|---|---|---|---|"]
        for r in failures:
            log = f"runs/{r['config']}-r{r['repeat']}/job_{r['job_id']}.out"
            lines.append(
                f"| {r['config']} | {r['repeat']} | {md(r['job_id']) or '-'} | {md(r['state'])} "
                f"| {md(r['exit_code']) or '-'} | {md(log)} |"
            )
    else:
        lines.append("None.")
    flagged = [r for r in runs if _flags(r)]
    if flagged:
        lines += ["", "## Flagged runs", "", "| run | job id | nodes | state | flags |",
                  "|---|---|---|---|---|"]
        for r in flagged:
            lines.append(
                f"| {r['config']}-r{r['repeat']} | {md(r['job_id']) or '-'} "
                f"| {md(r['node_list']) or '-'} | {md(r['state'])} "
                f"| {', '.join(FLAG_WORDS[f] for f in _flags(r))} |")
    warnings = _warnings(study, rows, runs, repeats=repeats, mode=mode, metric=metric)
    warnings += [f"Overlapping runs: {a} and {b} shared {md(where_)} at the same time."
                 for a, b, where_ in overlaps]
    warnings += [md(n) for n in notes]
    lines += ["", "## Warnings", ""]
    lines += [f"- {w}" for w in warnings] if warnings else ["None."]
    lines += ["", "## Plot", ""]
    if plotted:
        lines.append("![speedup, efficiency and throughput vs world size](scaling.png)")
    else:
        lines.append(PLOT_HINT.format(where=md(where)))
    return "\n".join(lines) + "\n"


def _overlaps_of(
    study: dict[str, Any], runs: Sequence[dict[str, str]]
) -> list[tuple[str, str, str]]:
    """The overlapping pairs of results.csv's runs (their node lists and times)."""
    spans: list[Span] = []
    for r in runs:
        if not (r.get("config") and r.get("repeat")):
            continue
        spans.append((f"{r['config']}-r{r['repeat']}", r.get("node_list") or "",
                      _safe_float(r.get("start_s")), _safe_float(r.get("end_s")),
                      r.get("start_utc") or "", r.get("end_utc") or ""))
    return find_overlaps(spans, bool(study.get("shared_host")))


def _safe_float(text: str | None) -> float | None:
    try:
        return _number(float(text)) if text else None
    except ValueError:
        return None


def _warmup_text(runs: Sequence[dict[str, str]], metric: str) -> str:
    if metric != "samples_per_s":
        return "none (the whole launcher command is timed)"
    steps = sorted({r["warmup_steps"] for r in runs if r["warmup_steps"]}, key=float)
    return f"{', '.join(md(s) for s in steps)} steps excluded" if steps else "unknown"


def _work(run: dict[str, str]) -> tuple[float, float] | None:
    """(global samples of the whole run, warm-up included, one step's samples) of a results.csv
    row: the measured samples cover steps_measured steps; warmup_steps more came before."""
    samples, steps = _safe_float(run.get("samples")), _safe_float(run.get("steps_measured"))
    warmup = _safe_float(run.get("warmup_steps")) or 0.0
    if samples is None:
        return None
    if not steps or steps <= 0:
        return samples, samples
    per_step = samples / steps
    return samples + warmup * per_step, per_step


def _warnings(
    study: dict[str, Any], rows: Sequence[dict[str, str]], runs: Sequence[dict[str, str]],
    *, repeats: int, mode: str, metric: str,
) -> list[str]:
    out: list[str] = []
    if study.get("shared_host"):
        out.append("All nodes of this cluster share one host: the speedups are not physical.")
    short = [r["config"] for r in rows if 0 < int(r["runs_ok"]) < repeats]
    if short:
        out.append(
            f"Fewer successful repeats than the {repeats} asked: {', '.join(short)}."
        )
    for r in rows:
        if SUPERLINEAR in _flags(r):
            out.append(f"{r['config']}: efficiency {_pct(r['efficiency'])} is above 100 % beyond "
                       "the noise of its repeats: superlinear: contention, caching or unequal "
                       "work.")
    if metric == "samples_per_s" and mode == "strong":
        work = [(r["config"], w) for r in runs
                if r["state"] == "COMPLETED" and (w := _work(r)) is not None]
        totals = [w[0] for _, w in work]
        # Work differs when the totals differ by more than a step's samples (a last partial
        # batch) and 1 %: not when only the warm-up steps excluded differ.
        if totals and max(totals) - min(totals) > max(
                *(w[1] for _, w in work), 0.01 * max(totals)):
            counts: dict[str, set[str]] = {}
            for config, (total, _) in work:
                counts.setdefault(format_number(round(total)), set()).add(config)
            text = "; ".join(f"{n} in {', '.join(sorted(c))}" for n, c in sorted(
                counts.items(), key=lambda kv: float(kv[0])))
            out.append("The configurations processed different global sample counts (warm-up "
                       f"included): {text}.")
    return out


def _spread(
    mid: Sequence[float], low: Sequence[float], high: Sequence[float]
) -> list[list[float]]:
    """matplotlib's yerr: distances below and above, never negative (rounding of equal values)."""
    return [[max(m - lo, 0.0) for m, lo in zip(mid, low)],
            [max(hi - m, 0.0) for m, hi in zip(mid, high)]]


def plot_title(study: dict[str, Any], results: str) -> str:
    """The plot's title: experiment, cluster and date (the study's id, else its first run's)."""
    study_id = str(study.get("study_id") or "")
    date = ""
    if re.match(r"[0-9]{8}-", study_id):
        date = f"{study_id[:4]}-{study_id[4:6]}-{study_id[6:8]}"
    else:
        starts = sorted(r.get("start_utc") or "" for r in _read_csv(results))
        date = next((s[:10] for s in starts if re.match(r"[0-9]{4}-[0-9]{2}-[0-9]{2}", s)), "")
    text = f"Scaling test {_visible(str(study.get('experiment') or ''))[:60]}"
    text += f" on {_visible(str(study.get('cluster') or 'unknown cluster'))[:40]}"
    if date:
        text += f", {date}"
    # matplotlib reads $...$ as mathematics.
    return text.replace("$", r"\$")


def _open_new(path: Path) -> int:
    """A new file at PATH for writing: an existing one (a stale temporary file, or a link
    planted there) is removed first, and O_EXCL|O_NOFOLLOW never writes through a link."""
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)
    return os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                   0o666)


def plot(summary: str, out_dir: Path, results: str = "", title: str = "") -> bool:
    """scaling.png and scaling.svg from summary.csv's text (and results.csv's, for the flagged
    configurations); False when matplotlib is missing."""
    try:
        import matplotlib  # type: ignore[import-not-found, unused-ignore]  # optional: the plot extra

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt  # type: ignore[import-not-found, unused-ignore]  # optional: the plot extra
    except ImportError:
        return False
    del results  # the flags are summary.csv's, one per configuration
    rows = _read_csv(summary)
    metric = rows[0]["metric"] if rows else "wall_s"
    # 2:1 and fonts large enough to read when shown 800 x 400.
    with plt.rc_context({"font.size": 13, "axes.titlesize": 14, "legend.fontsize": 11}):
        fig, axes = plt.subplots(1, 3, figsize=(15, 7.5), dpi=100)
        _draw(fig, axes, rows, metric, title)
        # Saved beside and renamed over: a link planted at scaling.png is replaced, never
        # followed.
        for name, fmt, meta in (("scaling.png", "png", {"Software": None}),
                                ("scaling.svg", "svg", {"Date": None, "Creator": None})):
            path = out_dir / name
            tmp = path.with_name(f".{name}.tmp.{os.getpid()}{path.suffix}")
            with os.fdopen(_open_new(tmp), "wb") as handle:
                fig.savefig(handle, format=fmt, metadata=meta)
            os.replace(tmp, path)
        plt.close(fig)
    return True


def _draw(fig: Any, axes: Any, rows: Sequence[dict[str, str]], metric: str, title: str) -> None:
    # optional: the plot extra
    from matplotlib.layout_engine import TightLayoutEngine  # type: ignore[import-not-found, unused-ignore]

    ax_s, ax_e, ax_x = axes
    ok = [r for r in rows if r["median"] and r["speedup"]]
    worlds = sorted({int(r["world_size"]) for r in rows})
    markers = "osD^v<>"
    points: list[tuple[dict[str, str], float, float, float, float]] = []
    for number, gpus in enumerate(sorted({r["gpus_per_node"] for r in ok}, key=int)):
        marker = markers[number % len(markers)]
        series = sorted((r for r in ok if r["gpus_per_node"] == gpus),
                        key=lambda r: (int(r["world_size"]), int(r["nodes"])))
        w = [int(r["world_size"]) for r in series]
        s = [float(r["speedup"]) for r in series]
        e = [float(r["efficiency"]) * 100 for r in series]
        med = [float(r["median"]) for r in series]
        lo = [float(r["min"]) for r in series]
        hi = [float(r["max"]) for r in series]
        # The spread of the median carried over to speedup and efficiency: a higher throughput
        # (or a shorter time) is a higher speedup.
        if metric == "samples_per_s":
            s_lo = [si * li / mi for si, li, mi in zip(s, lo, med)]
            s_hi = [si * hi_ / mi for si, hi_, mi in zip(s, hi, med)]
        else:
            s_lo = [si * mi / hi_ for si, hi_, mi in zip(s, hi, med)]
            s_hi = [si * mi / li for si, li, mi in zip(s, lo, med)]
        label = f"{gpus} GPU/node" if gpus != "0" else "CPU only"
        ax_s.errorbar(w, s, yerr=_spread(s, s_lo, s_hi),
                      marker=marker, capsize=4, label=label)
        e_lo = [ei * sl / si for ei, sl, si in zip(e, s_lo, s)]
        e_hi = [ei * sh / si for ei, sh, si in zip(e, s_hi, s)]
        ax_e.errorbar(w, e, yerr=_spread(e, e_lo, e_hi),
                      marker=marker, capsize=4, label=label)
        ax_x.errorbar(w, med, yerr=_spread(med, lo, hi),
                      marker=marker, capsize=4, label=label)
        points += list(zip(series, w, s, e, med))
    # Each point named by its configuration; a flagged one ringed (overlap) or starred
    # (superlinear), once in the legend.
    styles: dict[str, tuple[str, dict[str, Any]]] = {
        OVERLAP: ("runs overlapped on a node", {
            "marker": "o", "s": 260, "facecolors": "none", "edgecolors": "red",
            "linewidths": 2}),
        SUPERLINEAR: ("superlinear (> 100 % beyond noise)", {
            "marker": "*", "s": 320, "color": "orange", "edgecolors": "black",
            "linewidths": 0.5}),
    }
    labelled: set[str] = set()
    for row, w_, s_, e_, m_ in points:
        for ax, y in ((ax_s, s_), (ax_e, e_), (ax_x, m_)):
            ax.annotate(row["config"], (w_, y), textcoords="offset points", xytext=(6, 6),
                        fontsize=12)
            for flag in _flags(row):
                if flag in styles:
                    text, style = styles[flag]
                    # In the efficiency panel's legend, once.
                    first = ax is ax_e and flag not in labelled
                    ax.scatter([w_], [y], zorder=5, label=text if first else None, **style)
                    if first:
                        labelled.add(flag)
    rows_base = next((r for r in rows if r["baseline"] == "yes"), None)
    if rows_base is not None and worlds:
        w0 = int(rows_base["world_size"])
        ideal_w = [w for w in worlds if w >= w0]
        ax_s.plot(ideal_w, [w / w0 for w in ideal_w], "k--", label="ideal")
    ax_s.set_xscale("log", base=2)
    ax_s.set_yscale("log", base=2)
    ax_s.set_title("Speedup")
    ax_s.set_ylabel("speedup (median, min-max)")
    ax_e.axhline(100, color="k", linestyle="--", label="100 %")
    ax_e.set_xscale("log", base=2)
    ax_e.set_title("Efficiency")
    ax_e.set_ylabel("efficiency (%)")
    ax_e.set_ylim(bottom=0)
    ax_x.set_xscale("log", base=2)
    if metric == "samples_per_s":
        ax_x.set_title("Throughput")
        ax_x.set_ylabel("samples/s (global)")
    else:
        ax_x.set_title("Time to solution")
        ax_x.set_ylabel("wall time (s)")
    for ax in axes:
        ax.set_xlabel("world size (GPUs or processes)")
        if worlds:
            ax.set_xticks(worlds, [str(w) for w in worlds])
        ax.grid(True, which="both", alpha=0.3)
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize="small")
    if title:
        fig.suptitle(title)
    failed = [r["config"] for r in rows if not r["median"]]
    if failed:
        fig.text(0.5, 0.01, f"No successful run, not plotted: {', '.join(failed)}",
                 ha="center", color="firebrick")
    # tight_layout's geometry applied once, without the placeholder layout engine that
    # fig.tight_layout() leaves behind: with one, each savefig draws the figure once more first.
    TightLayoutEngine(rect=(0, 0.05, 1, 1)).execute(fig)


def _atomic_write(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.tmp.{os.getpid()}")
    with os.fdopen(_open_new(tmp), "w", encoding="utf-8") as handle:
        handle.write(text)
    os.replace(tmp, path)


def check_out(out: Path) -> None:
    """StudyError unless OUT is a folder the report may write into: new, empty, or holding an
    earlier report (its summary.csv); never a link, a file, or a folder of other things; a
    report file there that is no regular file (a FIFO) is neither read nor replaced."""
    accepted = "accepted: a new folder, an empty one, or one holding an earlier scaling report"
    if out.is_symlink():
        raise StudyError(f"--out: '{out}' is a symbolic link; {accepted}")
    if out.exists() and not out.is_dir():
        raise StudyError(f"--out: '{out}' is not a folder; {accepted}")
    if not out.is_dir():
        return
    # Another user's folder, or report files there that are another user's: not written into
    # (they could read, or swap, what lands there).
    if os.stat(out).st_uid != os.getuid():
        raise StudyError(f"--out: '{out}' is another user's folder; {accepted}")
    for name in REPORT_FILES:
        try:
            info = os.lstat(out / name)
        except FileNotFoundError:
            continue
        mode = info.st_mode
        if info.st_uid != os.getuid():
            raise StudyError(f"--out: '{out / name}' is another user's file; {accepted}")
        if not (stat.S_ISREG(mode) or stat.S_ISLNK(mode)):
            raise StudyError(f"--out: '{out / name}' is not a regular file ({_kind(mode)}); "
                             f"{accepted}")
    if any(out.iterdir()):
        try:
            data = _read_inside(out, "summary.csv")
            first = (data or b"").decode("utf-8", "replace").partition("\n")[0]
        except Unsafe:
            first = ""
        if not first.startswith(SUMMARY_HEAD):
            raise StudyError(f"--out: '{out}' holds other files; {accepted}")


SUMMARY_HEAD = "config,nodes,gpus_per_node,world_size,"


def write_report(folder: Path, out_dir: Path | None = None, refine: bool = True) -> Study:
    """Every file of the report of the study in FOLDER, into OUT_DIR (default FOLDER)."""
    study_doc = load_study(folder)
    if out_dir is not None and not (out_dir.is_dir() and out_dir.samefile(folder)):
        check_out(out_dir)
    out = out_dir or folder
    out.mkdir(parents=True, exist_ok=True)
    notes: list[str] = []
    runs = load_runs(folder, study_doc, refine=refine, notes=notes)
    study = summarise(runs, str(study_doc.get("mode", "strong")))
    results = results_csv(str(study_doc.get("study_id", "")), runs, study.metric)
    summary = summary_csv(study)
    _atomic_write(out / "results.csv", results)
    _atomic_write(out / "summary.csv", summary)
    plotted = plot(summary, out, results, plot_title(study_doc, results))
    where = str(study_doc.get("experiment") or folder)
    _atomic_write(out / "report.md",
                  report_markdown(study_doc, summary, results, plotted, where, notes=notes))
    return study


def _first_line(study: Study) -> str:
    if study.baseline is None:
        return "scaling report: every run failed"
    rows = {r.config: r for r in study.rows}
    text = f"scaling report: metric {study.metric}, baseline {study.baseline}"
    if study.baseline_substituted:
        text += f" (the smallest configuration {study.smallest} failed)"
    effs = ", ".join(
        f"{c} {format_number(r.efficiency)}" for c, r in rows.items() if r.efficiency is not None
    )
    return f"{text}; efficiency: {effs}"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m hpc_helpers.scaling_report")
    parser.add_argument("study_dir", help="the study's folder (holding study.json)")
    parser.add_argument("--out", default=None, help="where the report goes (default: STUDY_DIR)")
    parser.add_argument("--no-refine", action="store_true",
                        help="do not ask scontrol about runs that left no final status")
    args = parser.parse_args(argv)
    folder = Path(args.study_dir)
    try:
        study = write_report(folder, Path(args.out) if args.out else None, not args.no_refine)
    except StudyError as err:
        print(f"scaling-report: {_visible(str(err))}", file=sys.stderr)
        return 2
    out = Path(args.out) if args.out else folder
    print(_first_line(study), file=sys.stderr)
    print(f"report={out / 'report.md'}")
    return 0 if study.baseline is not None else 1


if __name__ == "__main__":
    sys.exit(main())
