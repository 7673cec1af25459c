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
``scontrol`` refined once (a LOST run that SLURM says was CANCELLED) is kept from the
results.csv already there. matplotlib is optional: without it the CSVs and report.md are still
written, with one line saying how to draw the plot later.

Exit status: 0 when at least one run succeeded, 1 when none did (after writing everything),
2 when STUDY_DIR is not a study (no readable study.json).
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import math
import os
import stat
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .followup import read_statuses
from .scaling import Run, Study, format_number, results_csv, summarise, summary_csv

__all__ = ["load_runs", "main", "plot", "report_markdown", "write_report"]

PLOT_HINT = (
    "The plot was not drawn: matplotlib is missing; install it (pip install matplotlib) and "
    "run: bash job_submitter.sh scaling-report {where}"
)


class StudyError(Exception):
    """STUDY_DIR is not a study folder."""


def _read_json(path: Path) -> dict[str, Any]:
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return doc if isinstance(doc, dict) else {}


def _read_run_json(path: Path) -> dict[str, Any]:
    """A run's wall.json or metrics.json: {} unless a plain file, read not through a link (a
    FIFO planted there would block the report job until its time limit)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return {}
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(fd).st_mode) or path.parent.is_symlink():
            return {}
        try:
            doc = json.loads(handle.read().decode("utf-8"))
        except (OSError, ValueError):
            return {}
    return doc if isinstance(doc, dict) else {}


def load_study(folder: Path) -> dict[str, Any]:
    """study.json of FOLDER; StudyError when it is missing or not a study's."""
    path = folder / "study.json"
    if not path.is_file():
        raise StudyError(f"{folder} is not a scaling study: it has no study.json")
    doc = _read_json(path)
    if not isinstance(doc.get("configurations"), list) or not doc["configurations"]:
        raise StudyError(f"{path} is not a scaling study's: it lists no configurations")
    return doc


def _number(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if math.isfinite(value) else None


def _int(value: object) -> int | None:
    number = _number(value)
    return int(number) if number is not None else None


def _recorded_states(path: Path) -> dict[str, tuple[str, str]]:
    """key -> (job id, state) of an earlier results.csv (the refined states of a first
    report; a run resubmitted since has another job id, and its own state)."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError:
        return {}
    return {
        f"{row['config']}-r{row['repeat']}": (row.get("job_id") or "", row["state"])
        for row in csv.DictReader(io.StringIO(text))
        if row.get("config") and row.get("repeat") and row.get("state")
    }


def load_runs(folder: Path, study: dict[str, Any], refine: bool = True) -> list[Run]:
    """One Run per configuration of STUDY, in study.json's order, from runs/<key>/."""
    configs = study["configurations"]
    keys = [str(c["key"]) for c in configs]
    statuses = read_statuses(folder / "runs", keys, refine=refine)
    recorded = _recorded_states(folder / "results.csv")
    runs: list[Run] = []
    for conf, status in zip(configs, statuses):
        run_dir = folder / "runs" / status.key
        wall = _read_run_json(run_dir / "wall.json")
        metrics = _read_run_json(run_dir / "metrics.json")
        state = status.state
        job_id = str(wall.get("job_id") or status.fields.get("job_id") or conf.get("job_id", ""))
        recorded_id, recorded_state = recorded.get(status.key, ("", state))
        refined = recorded_state not in ("", state) and recorded_id == job_id
        if state in ("LOST", "FAILED") and refined:
            state = recorded_state
        runs.append(Run(
            nodes=int(conf["nodes"]), gpus_per_node=int(conf["gpus_per_node"]),
            repeat=int(conf["repeat"]), state=state, job_id=job_id,
            exit_code=status.exit_code if status.exit_code is not None
            else _int(wall.get("exit_code")),
            node_list=str(wall.get("node_list") or status.fields.get("node") or ""),
            start_utc=str(wall.get("start_utc") or status.fields.get("start_utc") or ""),
            end_utc=str(wall.get("end_utc") or status.fields.get("end_utc") or ""),
            wall_s=_number(wall.get("wall_s")),
            samples_per_s=_number(metrics.get("samples_per_s")),
            samples=_int(metrics.get("samples")),
            steps_measured=_int(metrics.get("steps_measured")),
            warmup_steps=_int(metrics.get("warmup_steps")),
            log=f"runs/{status.key}/job_{job_id}.out" if job_id else f"runs/{status.key}/",
        ))
    return runs


def _read_csv(text: str) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(text)))


def _float(text: str) -> float | None:
    return float(text) if text else None


METRIC_WORDS = {
    "samples_per_s": "throughput in samples/s (metrics.json of the training loop, warm-up "
                     "excluded, summed over ranks)",
    "wall_s": "wall time in s (time to solution, start-up and rendezvous included)",
}


def report_markdown(
    study: dict[str, Any], summary: str, results: str, plotted: bool, where: str
) -> str:
    """report.md, from study.json, summary.csv and results.csv (texts) alone."""
    rows = _read_csv(summary)
    runs = _read_csv(results)
    metric = rows[0]["metric"] if rows else "wall_s"
    mode = str(study.get("mode", "strong"))
    repeats = _int(study.get("repeats")) or 1
    base = next((r for r in rows if r["baseline"] == "yes"), None)
    smallest = rows[0] if rows else None
    lines: list[str] = []
    if base is None:
        lines.append("**Every run failed: no speedup or efficiency can be computed.**")
    elif smallest is not None and base["config"] != smallest["config"]:
        lines.append(
            f"**The smallest configuration {smallest['config']} failed; the baseline is "
            f"{base['config']} instead.**"
        )
    commit = str(study.get("git_commit") or "unknown")
    if study.get("git_dirty"):
        commit += " (dirty: uncommitted changes)"
    if lines:
        lines.append("")
    lines += [
        f"# Scaling test: {study.get('experiment', '')}",
        "",
        f"- Study: {study.get('study_id', '')}",
        f"- Cluster: {study.get('cluster', '') or 'unknown'}",
        f"- Git commit: {commit}",
        f"- Command: `{study.get('command', '')}`",
        "",
        "## Method",
        "",
        f"Metric: {METRIC_WORDS.get(metric, metric)}; warm-up: "
        f"{_warmup_text(runs, metric)}; repeats: {repeats}; mode: {mode}"
        + ("" if metric == "wall_s" else " (throughput: the mode does not change the maths)")
        + f"; baseline: {base['config'] if base else 'none'}. Per configuration the median over "
        "successful repeats, [min-max]; speedup S, ideal I = W / W_base, efficiency E = S / I.",
        "",
        "## Results",
        "",
        "| config | nodes | GPUs/node | world | runs ok | median [min-max] | speedup | ideal "
        "| efficiency |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        spread = f"{r['median']} [{r['min']}-{r['max']}]" if r["median"] else "-"
        eff = f"{float(r['efficiency']) * 100:.1f} %" if r["efficiency"] else "-"
        lines.append(
            f"| {r['config']}{' (baseline)' if r['baseline'] == 'yes' else ''} | {r['nodes']} "
            f"| {r['gpus_per_node']} | {r['world_size']} | {r['runs_ok']}/{r['runs_total']} "
            f"| {spread} | {r['speedup'] or '-'} | {r['ideal'] or '-'} | {eff} |"
        )
    failures = [r for r in runs if r["state"] != "COMPLETED"]
    lines += ["", "## Failures", ""]
    if failures:
        lines += ["| config | repeat | job id | state | exit code | log |",
                  "|---|---|---|---|---|---|"]
        for r in failures:
            log = f"runs/{r['config']}-r{r['repeat']}/job_{r['job_id']}.out"
            lines.append(
                f"| {r['config']} | {r['repeat']} | {r['job_id'] or '-'} | {r['state']} "
                f"| {r['exit_code'] or '-'} | {log} |"
            )
    else:
        lines.append("None.")
    warnings = _warnings(study, rows, runs, repeats=repeats, mode=mode, metric=metric)
    lines += ["", "## Warnings", ""]
    lines += [f"- {w}" for w in warnings] if warnings else ["None."]
    lines += ["", "## Plot", ""]
    if plotted:
        lines.append("![speedup, efficiency and throughput vs world size](scaling.png)")
    else:
        lines.append(PLOT_HINT.format(where=where))
    return "\n".join(lines) + "\n"


def _warmup_text(runs: Sequence[dict[str, str]], metric: str) -> str:
    if metric != "samples_per_s":
        return "none (the whole launcher command is timed)"
    steps = sorted({r["warmup_steps"] for r in runs if r["warmup_steps"]})
    return f"{', '.join(steps)} steps excluded" if steps else "unknown"


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
    if metric == "samples_per_s" and mode == "strong":
        counts: dict[str, set[str]] = {}
        for r in runs:
            if r["state"] == "COMPLETED" and r["samples"]:
                counts.setdefault(r["samples"], set()).add(r["config"])
        if len(counts) > 1:
            text = "; ".join(f"{n} in {', '.join(sorted(c))}" for n, c in sorted(
                counts.items(), key=lambda kv: float(kv[0])))
            out.append(f"The configurations processed different global sample counts: {text}.")
    return out


def _spread(
    mid: Sequence[float], low: Sequence[float], high: Sequence[float]
) -> list[list[float]]:
    """matplotlib's yerr: distances below and above, never negative (rounding of equal values)."""
    return [[max(m - lo, 0.0) for m, lo in zip(mid, low)],
            [max(hi - m, 0.0) for m, hi in zip(mid, high)]]


def plot(summary: str, out_dir: Path) -> bool:
    """scaling.png and scaling.svg from summary.csv's text; False when matplotlib is missing."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    rows = _read_csv(summary)
    metric = rows[0]["metric"] if rows else "wall_s"
    fig, axes = plt.subplots(1, 3, figsize=(15, 5), dpi=100)
    ax_s, ax_e, ax_x = axes
    ok = [r for r in rows if r["median"] and r["speedup"]]
    worlds = sorted({int(r["world_size"]) for r in rows})
    markers = "osD^v<>"
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
    base = next((r for r in rows if r["baseline"] == "yes"), None)
    if base is not None and worlds:
        w0 = int(base["world_size"])
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
        ax.set_xlabel("world size (GPUs, or processes)")
        if worlds:
            ax.set_xticks(worlds, [str(w) for w in worlds])
        ax.grid(True, which="both", alpha=0.3)
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize="small")
    failed = [r["config"] for r in rows if not r["median"]]
    if failed:
        fig.text(0.5, 0.01, f"No successful run, not plotted: {', '.join(failed)}",
                 ha="center", color="firebrick")
    fig.tight_layout(rect=(0, 0.05, 1, 1))
    # Saved beside and renamed over: a link planted at scaling.png is replaced, never followed.
    for name, meta in (("scaling.png", {"Software": None}),
                       ("scaling.svg", {"Date": None, "Creator": None})):
        path = out_dir / name
        tmp = path.with_name(f".{name}.tmp.{os.getpid()}{path.suffix}")
        fig.savefig(tmp, metadata=meta)
        os.replace(tmp, path)
    plt.close(fig)
    return True


def _atomic_write(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.tmp.{os.getpid()}")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def check_out(out: Path) -> None:
    """StudyError unless OUT is a folder the report may write into: new, empty, or holding an
    earlier report (its summary.csv); never a link, a file, or a folder of other things."""
    accepted = "accepted: a new folder, an empty one, or one holding an earlier scaling report"
    if out.is_symlink():
        raise StudyError(f"--out: '{out}' is a symbolic link; {accepted}")
    if out.exists() and not out.is_dir():
        raise StudyError(f"--out: '{out}' is not a folder; {accepted}")
    if out.is_dir() and any(out.iterdir()):
        try:
            with open(out / "summary.csv", encoding="utf-8") as handle:
                first = handle.readline()
        except OSError:
            first = ""
        if (out / "summary.csv").is_symlink() or not first.startswith(SUMMARY_HEAD):
            raise StudyError(f"--out: '{out}' holds other files; {accepted}")


SUMMARY_HEAD = "config,nodes,gpus_per_node,world_size,"


def write_report(folder: Path, out_dir: Path | None = None, refine: bool = True) -> Study:
    """Every file of the report of the study in FOLDER, into OUT_DIR (default FOLDER)."""
    study_doc = load_study(folder)
    if out_dir is not None and not (out_dir.is_dir() and out_dir.samefile(folder)):
        check_out(out_dir)
    out = out_dir or folder
    out.mkdir(parents=True, exist_ok=True)
    runs = load_runs(folder, study_doc, refine=refine)
    study = summarise(runs, str(study_doc.get("mode", "strong")))
    results = results_csv(str(study_doc.get("study_id", "")), runs, study.metric)
    summary = summary_csv(study)
    _atomic_write(out / "results.csv", results)
    _atomic_write(out / "summary.csv", summary)
    plotted = plot(summary, out)
    where = str(study_doc.get("experiment") or folder)
    _atomic_write(out / "report.md", report_markdown(study_doc, summary, results, plotted, where))
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
        print(f"scaling-report: {err}", file=sys.stderr)
        return 2
    out = Path(args.out) if args.out else folder
    print(_first_line(study), file=sys.stderr)
    print(f"report={out / 'report.md'}")
    return 0 if study.baseline is not None else 1


if __name__ == "__main__":
    sys.exit(main())
