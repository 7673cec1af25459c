"""scaling_report checks instead of assuming (issue 27, items 2, 6, 7): runs that shared a node
at the same time, superlinear efficiency, a verdict on the first lines; and it cannot be hung
(FIFOs, devices, links out of the study) or injected into (Markdown, CSV formulas), an invalid
metric is one run's, SLURM's states are kept, the sample-count warning counts the warm-up."""

from __future__ import annotations

import csv
import io
import json
import os
from pathlib import Path
from typing import Any

import pytest

from conftest import CliResult, run_main, without_plot
from hpc_helpers import followup, scaling_report


def write_json(path: Path, doc: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc) + "\n", encoding="utf-8")


# (nodes, gpus, repeat, state, rate or None, node_list, start_s, end_s)
Spec = tuple[int, int, int, str, "float | None", str, float, float]


def make_study(folder: Path, runs: list[Spec], **extra: Any) -> Path:
    configs = []
    for i, (nodes, gpus, repeat, state, rate, node_list, start, end) in enumerate(runs):
        key = f"{nodes}x{gpus}-r{repeat}"
        job = str(100 + i)
        configs.append({"key": key, "nodes": nodes, "gpus_per_node": gpus, "repeat": repeat,
                        "job_id": job})
        run_dir = folder / "runs" / key
        code = 0 if state == "COMPLETED" else 1
        write_json(run_dir / "status.json", {"key": key, "job_id": job, "state": state,
                                             "exit_code": code, "node": node_list,
                                             "start_s": start, "end_s": end})
        write_json(run_dir / "wall.json", {"wall_s": end - start, "exit_code": code,
                                           "job_id": job, "node_list": node_list,
                                           "start_utc": "2026-11-23T12:00:00Z",
                                           "end_utc": "2026-11-23T12:00:20Z",
                                           "start_s": start, "end_s": end})
        if rate is not None:
            write_json(run_dir / "metrics.json", {"schema": 1, "samples_per_s": rate,
                                                  "samples": 640, "steps_measured": 10,
                                                  "warmup_steps": 5})
    doc = {"schema": 1, "experiment": "probe", "study_id": "20261123-120000-100",
           "command": "bash job_submitter.sh --scaling-test -e probe", "cluster": "local",
           "git_commit": "abc123", "git_dirty": False, "mode": "strong", "repeats": 1,
           "shared_host": False, "order": "serial", "configurations": configs, **extra}
    write_json(folder / "study.json", doc)
    return folder


# One after another on distinct times: nothing overlaps.
SERIAL: list[Spec] = [
    (1, 1, 1, "COMPLETED", 100.0, "n1", 1000.0, 1020.0),
    (1, 2, 1, "COMPLETED", 190.0, "n1", 1030.0, 1050.0),
    (2, 1, 1, "COMPLETED", 180.0, "n[1-2]", 1060.0, 1080.0),
    (2, 2, 1, "COMPLETED", 360.0, "n[1-2]", 1090.0, 1110.0),
]


def report(study: Path, *args: str) -> str:
    assert scaling_report.main([str(study), "--no-refine", *args]) in (0, 1)
    return (study / "report.md").read_text(encoding="utf-8")


def rows(path: Path) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(path.read_text(encoding="utf-8"))))


def run_module(*args: str) -> CliResult:
    """The report with a deadline (in this process: matplotlib is started once per worker, not
    once per report): a hang is a failure, not a stuck suite."""
    return run_main(scaling_report.main, "hpc_helpers.scaling_report", *args, "--no-refine")


@pytest.fixture
def no_plot(monkeypatch: pytest.MonkeyPatch) -> None:
    """The report without its plot (conftest.without_plot), for the tests about reading the
    study's files and the report's first lines, whose studies are ordinary ones. The tests whose
    data the plot draws (flags, invalid or missing metrics, text from the JSON in its title) draw
    it, once per distinct input."""
    without_plot(monkeypatch)


# --- overlaps ---------------------------------------------------------------------------------


@pytest.mark.usefixtures("no_plot")
def test_serial_study_has_no_overlap(tmp_path: Path) -> None:
    text = report(make_study(tmp_path / "s", SERIAL))
    assert "overlap" not in text.lower()
    assert all(r["flags"] == "" for r in rows(tmp_path / "s" / "results.csv"))


def test_runs_sharing_a_node_at_the_same_time_are_flagged(tmp_path: Path) -> None:
    runs = list(SERIAL)
    runs[1] = (1, 2, 1, "COMPLETED", 190.0, "n1", 1010.0, 1030.0)   # on n1 while 1x1 runs
    runs[2] = (2, 1, 1, "COMPLETED", 180.0, "n[2-3]", 1005.0, 1025.0)  # same time, other nodes
    runs[3] = (2, 2, 1, "COMPLETED", 360.0, "n[3-4]", 1024.5, 1040.0)  # 0.5 s with 2x1: noise
    study = make_study(tmp_path / "s", runs, order="parallel")
    text = report(study)
    head = "\n".join(text.splitlines()[:8])
    assert "parallel" in head
    assert "overlap" in head.lower()
    assert "- Overlapping runs: 1x1-r1 and 1x2-r1 shared n1 at the same time" in text
    flags = {r["config"]: r["flags"] for r in rows(study / "results.csv")}
    assert "overlap" in flags["1x1"]
    assert "overlap" in flags["1x2"]
    assert flags["2x1"] == ""
    assert flags["2x2"] == ""
    summary = {r["config"]: r["flags"] for r in rows(study / "summary.csv")}
    assert "overlap" in summary["1x2"]
    assert summary["2x1"] == ""
    assert "| 1x2 | 1 | 2 | 2 | 1/1 | 190 [190-190] | 1.9 | 2 | 95.0 % | overlap |" in text


def test_shared_host_makes_any_node_a_shared_one(tmp_path: Path) -> None:
    runs = list(SERIAL)
    runs[2] = (2, 1, 1, "COMPLETED", 180.0, "n[2-3]", 1005.0, 1025.0)
    study = make_study(tmp_path / "s", runs, shared_host=True)
    text = report(study)
    assert "- Overlapping runs: 1x1-r1 and 2x1-r1 shared one host at the same time" in text


# --- superlinear, verdict ---------------------------------------------------------------------


def test_superlinear_efficiency_is_flagged_beyond_noise(tmp_path: Path) -> None:
    runs = list(SERIAL)
    runs[1] = (1, 2, 1, "COMPLETED", 250.0, "n1", 1030.0, 1050.0)  # 125 %
    runs[3] = (2, 2, 1, "COMPLETED", 416.0, "n[1-2]", 1090.0, 1110.0)  # 104 %: noise
    study = make_study(tmp_path / "s", runs)
    text = report(study)
    assert "superlinear: contention, caching or unequal work" in text
    summary = {r["config"]: r["flags"] for r in rows(study / "summary.csv")}
    assert summary["1x2"] == "superlinear"
    assert summary["2x2"] == ""


@pytest.mark.parametrize(("target", "verdict"), [
    (None, "**Verdict: 2x2 (world size 4) is the largest configuration at or above the 70 % "
           "efficiency target (90.0 %): speedup 3.6x over the baseline 1x1, 360 vs 100 "
           "samples/s.**"),
    (92, "**Verdict: 1x2 (world size 2) is the largest configuration at or above the 92 % "
         "efficiency target (95.0 %): speedup 1.9x over the baseline 1x1, 190 vs 100 "
         "samples/s.**"),
    (99, "**Verdict: no configuration beyond the baseline 1x1 reaches the 99 % efficiency "
         "target; the best is 1x2 at 95.0 %.**"),
])
@pytest.mark.usefixtures("no_plot")
def test_verdict_on_the_first_line(tmp_path: Path, target: float | None, verdict: str) -> None:
    extra = {} if target is None else {"target_efficiency": target}
    text = report(make_study(tmp_path / "s", SERIAL, **extra))
    assert text.splitlines()[0] == verdict


@pytest.mark.usefixtures("no_plot")
def test_first_lines_name_order_and_dirty_commit(tmp_path: Path) -> None:
    study = make_study(tmp_path / "s", SERIAL, git_dirty=True)
    doc = json.loads((study / "study.json").read_text())
    del doc["order"]
    write_json(study / "study.json", doc)
    head = report(study).split("# Scaling test")[0]
    assert "abc123 (dirty)" in head
    assert "order: unknown" in head


# --- robustness -------------------------------------------------------------------------------


def test_fifo_study_json_is_refused_not_waited_on(tmp_path: Path) -> None:
    study = tmp_path / "s"
    study.mkdir()
    os.mkfifo(study / "study.json")
    done = run_module(str(study))
    assert done.status == 2
    assert done.stderr.count("\n") == 1, done.stderr
    assert "study.json" in done.stderr
    assert "not a regular file" in done.stderr


def test_study_json_linked_out_of_the_study_is_refused(tmp_path: Path) -> None:
    make_study(tmp_path / "other", SERIAL)
    study = tmp_path / "s"
    study.mkdir()
    (study / "study.json").symlink_to(tmp_path / "other" / "study.json")
    done = run_module(str(study))
    assert done.status == 2
    assert "link" in done.stderr


@pytest.mark.parametrize("name", ["results.csv", "runs/1x2-r1/wall.json",
                                  "runs/1x2-r1/metrics.json", "runs/1x2-r1/status.json"])
@pytest.mark.usefixtures("no_plot")
def test_fifo_or_outward_link_in_the_study_is_named_and_skipped(tmp_path: Path, name: str) -> None:
    study = make_study(tmp_path / "s", SERIAL)
    assert run_module(str(study)).status == 0
    target = study / name
    target.unlink()
    os.mkfifo(target)
    done = run_module(str(study))
    assert done.status == 0, done.stderr
    text = (study / "report.md").read_text(encoding="utf-8")
    assert f"{name} is not a regular file (a FIFO): skipped" in text
    target.unlink()
    (tmp_path / "elsewhere").write_text("{}\n")
    target.symlink_to(tmp_path / "elsewhere")
    done = run_module(str(study))
    assert done.status == 0, done.stderr
    text = (study / "report.md").read_text(encoding="utf-8")
    assert f"{name} is a symbolic link: skipped" in text


def test_fifo_summary_in_out_is_refused_in_one_line(tmp_path: Path) -> None:
    study = make_study(tmp_path / "s", SERIAL)
    out = tmp_path / "out"
    out.mkdir()
    (out / "report.md").write_text("old\n")
    os.mkfifo(out / "summary.csv")
    done = run_module(str(study), "--out", str(out))
    assert done.status == 2
    assert done.stderr.count("\n") == 1, done.stderr
    assert done.stderr.startswith(f"scaling-report: --out: '{out}/summary.csv' is not a regular")


@pytest.mark.skipif(os.geteuid() != 0, reason="making another user's folder needs root")
@pytest.mark.usefixtures("no_plot")
def test_out_of_another_user_is_refused_in_one_line(tmp_path: Path) -> None:
    study = make_study(tmp_path / "s", SERIAL)
    nobody = 65534
    out = tmp_path / "theirs"
    out.mkdir(mode=0o777)
    os.chown(out, nobody, nobody)
    done = run_module(str(study), "--out", str(out))
    assert done.status == 2
    assert done.stderr == f"scaling-report: --out: '{out}' is another user's folder; " \
        "accepted: a new folder, an empty one, or one holding an earlier scaling report\n"
    assert list(out.iterdir()) == []
    # Mine, but holding another user's report file.
    mine = tmp_path / "mine"
    assert run_module(str(study), "--out", str(mine)).status == 0
    os.chown(mine / "report.md", nobody, nobody)
    done = run_module(str(study), "--out", str(mine))
    assert done.status == 2
    assert "report.md' is another user's file" in done.stderr


def test_text_from_json_is_escaped_for_markdown_and_csv(tmp_path: Path) -> None:
    study = make_study(tmp_path / "s", [
        *SERIAL[:2], (2, 1, 1, "FAILED", None, '=HYPERLINK("x")', 1060.0, 1080.0)])
    doc = json.loads((study / "study.json").read_text())
    doc["experiment"] = "x<img src=y onerror=z>\n# owned | `c` & d"
    doc["cluster"] = "- item\n| a | b |"
    doc["command"] = "run `rm` \n# head"
    write_json(study / "study.json", doc)
    status = study / "runs" / "2x1-r1" / "status.json"
    fields = json.loads(status.read_text())
    fields["state"] = "FAILED<b>|x\n# y"
    fields["job_id"] = "+cmd|' /C calc'!A0"
    write_json(status, fields)
    write_json(study / "runs" / "2x1-r1" / "wall.json", {"job_id": "+cmd|' /C calc'!A0",
                                                          "node_list": "=HYPERLINK(\"x\")"})
    text = report(study)
    assert "<img" not in text
    assert "<b>" not in text
    for line in text.splitlines():
        assert not line.startswith(("# owned", "# head", "# y", "- item", "| a |")), line
    assert "&lt;img src=y onerror=z&gt;" in text
    failure = next(line for line in text.splitlines() if line.startswith("| 2x1 | 1 |"))
    assert failure.count(" | ") == 5, failure  # six cells: no cell injected
    results = rows(study / "results.csv")
    bad = next(r for r in results if r["config"] == "2x1")
    assert bad["node_list"].startswith("'=")
    assert bad["job_id"].startswith("'+")
    assert bad["state"].startswith("FAILED")


INVALID_METRICS = [float("nan"), float("inf"), -5.0, "fast", 0]


@pytest.mark.parametrize("value", INVALID_METRICS)
def test_invalid_metric_is_that_runs_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, value: object
) -> None:
    if value is not INVALID_METRICS[0]:
        # Every invalid value gives the plot the same input (1x2 without a median): drawn once.
        without_plot(monkeypatch)
    study = make_study(tmp_path / "s", SERIAL)
    path = study / "runs" / "1x2-r1" / "metrics.json"
    doc = json.loads(path.read_text())
    doc["samples_per_s"] = value
    path.write_text(json.dumps(doc))
    text = report(study)
    summary = {r["config"]: r for r in rows(study / "summary.csv")}
    assert summary["2x2"]["metric"] == "samples_per_s"
    assert summary["2x2"]["efficiency"] == "0.9"
    assert summary["1x2"]["runs_ok"] == "1"
    assert summary["1x2"]["median"] == ""
    bad = next(r for r in rows(study / "results.csv") if r["config"] == "1x2")
    assert bad["state"] == "COMPLETED"
    assert "invalid_metric" in bad["flags"]
    assert "runs/1x2-r1/metrics.json: samples_per_s is not a positive number" in text


def test_node_fail_is_never_shown_cancelled(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The job side writes CANCELLED when it sees its job COMPLETING (a node failure looks the
    same from the batch shell); SLURM's NODE_FAIL wins, and stays once SLURM forgets the job."""
    study = make_study(tmp_path / "s", [
        *SERIAL[:1], (1, 2, 1, "CANCELLED", None, "n1", 1030.0, 1050.0), *SERIAL[2:]])
    asked: list[str] = []

    def scontrol_state(job: str) -> str | None:
        asked.append(job)
        return "NODE_FAIL" if job == "101" else "COMPLETED"

    monkeypatch.setattr(followup, "_scontrol_state", scontrol_state)
    assert scaling_report.main([str(study)]) == 0
    assert "101" in asked
    state = {r["config"]: r["state"] for r in rows(study / "results.csv")}
    assert state["1x2"] == "NODE_FAIL"
    monkeypatch.setattr(followup, "_scontrol_state", lambda job: None)
    without_plot(monkeypatch)  # the same study again: the same plot, drawn above
    assert scaling_report.main([str(study)]) == 0
    state = {r["config"]: r["state"] for r in rows(study / "results.csv")}
    assert state["1x2"] == "NODE_FAIL"
    assert "| 1x2 | 1 | 101 | NODE_FAIL |" in (study / "report.md").read_text()


def set_samples(study: Path, key: str, samples: int, steps: int, warmup: int) -> None:
    path = study / "runs" / key / "metrics.json"
    doc = json.loads(path.read_text())
    doc.update(samples=samples, steps_measured=steps, warmup_steps=warmup)
    path.write_text(json.dumps(doc))


@pytest.mark.usefixtures("no_plot")
def test_sample_count_warning_counts_the_warm_up(tmp_path: Path) -> None:
    # One epoch of 6400 samples, 64 per rank per step, 5 warm-up steps excluded: the measured
    # samples differ by world size, the work does not.
    study = make_study(tmp_path / "s", SERIAL)
    for key, world in (("1x1-r1", 1), ("1x2-r1", 2), ("2x1-r1", 2), ("2x2-r1", 4)):
        steps = 6400 // (64 * world)
        set_samples(study, key, 64 * world * (steps - 5), steps - 5, 5)
    assert "different global sample counts" not in report(study)
    set_samples(study, "2x2-r1", 64 * 4 * 40, 40, 5)  # 11520 samples in all: more work
    text = report(study)
    assert ("- The configurations processed different global sample counts (warm-up "
            "included): 6400 in 1x1, 1x2, 2x1; 11520 in 2x2.") in text
