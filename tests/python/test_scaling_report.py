"""scaling_report: a study folder as the runs leave it -> results.csv, summary.csv, report.md,
the plot; a copied folder reproduces the CSVs and report.md byte for byte; without matplotlib
the report still comes; a folder that is no study is refused."""

from __future__ import annotations

import builtins
import json
import shutil
import struct
import textwrap
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from conftest import run_main, without_plot
from hpc_helpers import scaling_report


def write_json(path: Path, doc: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc) + "\n", encoding="utf-8")


def make_study(
    folder: Path, runs: list[tuple[int, int, int, str, int, float | None]], **extra: Any
) -> Path:
    """RUNS: (nodes, gpus, repeat, state, exit code, samples/s or None for no metrics.json)."""
    configs = []
    for i, (nodes, gpus, repeat, state, code, rate) in enumerate(runs):
        key = f"{nodes}x{gpus}-r{repeat}"
        job = str(100 + i)
        configs.append({"key": key, "nodes": nodes, "gpus_per_node": gpus, "repeat": repeat,
                        "job_id": job})
        run_dir = folder / "runs" / key
        if state == "NOFILE":
            continue
        write_json(run_dir / "status.json", {"key": key, "job_id": job, "state": state,
                                             "exit_code": code, "node": "n1"})
        write_json(run_dir / "wall.json", {"wall_s": 20.0 / nodes, "exit_code": code,
                                           "job_id": job, "node_list": f"n[1-{nodes}]",
                                           # one after another: no overlap
                                           "start_utc": f"2026-11-23T12:{i:02d}:00Z",
                                           "end_utc": f"2026-11-23T12:{i:02d}:20Z"})
        if rate is not None:
            write_json(run_dir / "metrics.json", {"schema": 1, "samples_per_s": rate,
                                                  "samples": 640, "steps_measured": 10,
                                                  "warmup_steps": 5})
    doc = {"schema": 1, "experiment": "probe", "study_id": "20261123-120000-100",
           "command": "bash job_submitter.sh --scaling-test -e probe", "cluster": "local",
           "git_commit": "abc123", "git_dirty": True, "mode": "strong", "repeats": 1,
           "shared_host": True, "configurations": configs, **extra}
    write_json(folder / "study.json", doc)
    return folder


FOUR = [(1, 1, 1, "COMPLETED", 0, 100.0), (1, 2, 1, "COMPLETED", 0, 190.0),
        (2, 1, 1, "FAILED", 3, None), (2, 2, 1, "COMPLETED", 0, 360.0)]


def png_size(path: Path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", data[16:24])
    return width, height


def test_report_of_a_study_with_a_failed_configuration(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from matplotlib.figure import Figure

    # The figure drawn once per file (scaling.png, scaling.svg), not once more before each to lay
    # it out again (a tight_layout that leaves a layout engine behind): most of a report's CPU.
    draws: list[str] = []
    draw = Figure.draw

    def counted(fig: Figure, renderer: Any) -> None:
        draws.append(type(renderer).__name__)
        draw(fig, renderer)

    monkeypatch.setattr(Figure, "draw", counted)
    study = make_study(tmp_path / "s", FOUR)
    assert scaling_report.main([str(study), "--no-refine"]) == 0
    assert len(draws) == 2, draws
    assert (study / "summary.csv").read_text().splitlines() == [
        "config,nodes,gpus_per_node,world_size,runs_ok,runs_total,metric,median,min,max,"
        "speedup,ideal,efficiency,baseline,flags",
        "1x1,1,1,1,1,1,samples_per_s,100,100,100,1,1,1,yes,",
        "1x2,1,2,2,1,1,samples_per_s,190,190,190,1.9,2,0.95,,",
        "2x1,2,1,2,0,1,samples_per_s,,,,,,,,",
        "2x2,2,2,4,1,1,samples_per_s,360,360,360,3.6,4,0.9,,",
    ]
    results = (study / "results.csv").read_text().splitlines()
    assert results[3] == ("20261123-120000-100,2x1,2,1,2,1,102,FAILED,3,n[1-2],"
                          "2026-11-23T12:02:00Z,2026-11-23T12:02:20Z,,samples_per_s,,,,,,,")
    report = (study / "report.md").read_text()
    # The verdict first, then the order (unknown: an old study), then the heading.
    assert report.startswith(
        "**Verdict: 2x2 (world size 4) is the largest configuration at or above the 70 % "
        "efficiency target (90.0 %): speedup 3.6x over the baseline 1x1, 360 vs 100 "
        "samples/s.**\nCommit abc123 (dirty); order: unknown (not recorded); target efficiency "
        "70 %.\n\n# Scaling test: probe\n")
    assert "- Git commit: abc123 (dirty: uncommitted changes)\n" in report
    assert "| 1x2 | 1 | 2 | 2 | 1/1 | 190 [190-190] | 1.9 | 2 | 95.0 % | - |" in report
    assert "| 2x1 | 1 | 102 | FAILED | 3 | runs/2x1-r1/job_102.out |" in report
    assert "- All nodes of this cluster share one host: the speedups are not physical." in report
    assert "![speedup, efficiency and throughput vs world size](scaling.png)" in report
    width, height = png_size(study / "scaling.png")
    assert width >= 800
    assert height >= 400
    assert ET.parse(study / "scaling.svg").getroot().tag.endswith("svg")


def test_copied_folder_reproduces_the_report(tmp_path: Path) -> None:
    study = make_study(tmp_path / "s", FOUR)
    assert scaling_report.main([str(study), "--no-refine"]) == 0
    copy = tmp_path / "copy"
    shutil.copytree(study, copy)
    out = tmp_path / "out"
    assert scaling_report.main([str(copy), "--out", str(out), "--no-refine"]) == 0
    for name in ("results.csv", "summary.csv", "report.md"):
        assert (out / name).read_bytes() == (study / name).read_bytes(), name


def test_failed_baseline_is_named_first(tmp_path: Path) -> None:
    study = make_study(tmp_path / "s", [(1, 1, 1, "TIMEOUT", 0, None),
                                        (1, 2, 1, "COMPLETED", 0, 200.0),
                                        (2, 2, 1, "COMPLETED", 0, 300.0)])
    assert scaling_report.main([str(study), "--no-refine"]) == 0
    first = (study / "report.md").read_text().splitlines()[0]
    assert first == ("**The smallest configuration 1x1 failed; the baseline is 1x2 instead.**")


def test_every_run_failed_exits_1_after_writing(tmp_path: Path) -> None:
    study = make_study(tmp_path / "s", [(1, 1, 1, "FAILED", 1, None),
                                        (2, 1, 1, "NOFILE", 0, None)])
    assert scaling_report.main([str(study), "--no-refine"]) == 1
    report = (study / "report.md").read_text()
    assert report.splitlines()[0] == (
        "**Every run failed: no speedup or efficiency can be computed.**")
    assert "| 2x1 | 1 | 101 | LOST | - | runs/2x1-r1/job_101.out |" in report


def test_wall_time_when_a_run_has_no_metrics(tmp_path: Path) -> None:
    study = make_study(tmp_path / "s", [(1, 1, 1, "COMPLETED", 0, 100.0),
                                        (2, 1, 1, "COMPLETED", 0, None)])
    assert scaling_report.main([str(study), "--no-refine"]) == 0
    assert (study / "summary.csv").read_text().splitlines()[1:] == [
        "1x1,1,1,1,1,1,wall_s,20,20,20,1,1,1,yes,",
        "2x1,2,1,2,1,1,wall_s,10,10,10,2,2,1,,",
    ]
    assert "Metric: wall time in s (time to solution, start-up and rendezvous included)" in (
        study / "report.md").read_text()


def test_warnings_for_short_repeats_and_sample_counts(tmp_path: Path) -> None:
    study = make_study(tmp_path / "s", [(1, 1, 1, "COMPLETED", 0, 100.0),
                                        (1, 1, 2, "FAILED", 1, None),
                                        (1, 2, 1, "COMPLETED", 0, 150.0),
                                        (1, 2, 2, "COMPLETED", 0, 150.0)], repeats=2)
    metrics = study / "runs" / "1x2-r1" / "metrics.json"
    doc = json.loads(metrics.read_text())
    doc["samples"] = 1280
    metrics.write_text(json.dumps(doc))
    assert scaling_report.main([str(study), "--no-refine"]) == 0
    report = (study / "report.md").read_text()
    assert "- Fewer successful repeats than the 2 asked: 1x1.\n" in report
    # 640 samples measured over 10 steps after 5 warm-up steps: 960 in all; 1280: 1920.
    assert ("- The configurations processed different global sample counts (warm-up "
            "included): 960 in 1x1, 1x2; 1920 in 1x2.\n") in report


def test_without_matplotlib(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real_import = builtins.__import__

    def no_matplotlib(name: str, *args: Any, **kwargs: Any) -> Any:
        if name.startswith("matplotlib"):
            raise ImportError(name)
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_matplotlib)
    study = make_study(tmp_path / "s", FOUR)
    assert scaling_report.main([str(study), "--no-refine"]) == 0
    assert not (study / "scaling.png").exists()
    assert (study / "summary.csv").is_file()
    assert (study / "report.md").read_text().splitlines()[-1] == (
        "The plot was not drawn: matplotlib is missing; install it (pip install matplotlib) "
        "and run: bash job_submitter.sh scaling-report probe")


def test_not_a_study(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert scaling_report.main([str(tmp_path)]) == 2
    assert capsys.readouterr().err == (
        f"scaling-report: {tmp_path} is not a scaling study: it has no study.json\n")
    assert list(tmp_path.iterdir()) == []



def test_spread_of_equal_values_is_never_negative(tmp_path: Path) -> None:
    # A real study's summary: min == median == max, yet speedup * min / median rounds below
    # the speedup; the error bars must not go negative (matplotlib refuses them).
    summary = textwrap.dedent("""\
        config,nodes,gpus_per_node,world_size,runs_ok,runs_total,metric,median,min,max,speedup,ideal,efficiency,baseline
        1x1,1,1,1,1,1,samples_per_s,8.871946,8.871946,8.871946,1,1,1,yes
        1x2,1,2,2,1,1,samples_per_s,15.873962,15.873962,15.873962,1.789231,2,0.894616,
        2x1,2,1,2,1,1,samples_per_s,15.892814,15.892814,15.892814,1.791356,2,0.895678,
        2x2,2,2,4,1,1,samples_per_s,25.911923,25.911923,25.911923,2.920658,4,0.730165,
        """)
    assert scaling_report.plot(summary, tmp_path) is True
    width, height = png_size(tmp_path / "scaling.png")
    assert width == 2 * height >= 800  # 2:1, readable shown at 800 x 400


@pytest.mark.parametrize("kind", ["file", "symlink", "foreign"])
def test_out_that_is_not_a_report_folder_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], kind: str
) -> None:
    """--out never overwrites the user's files: a file, a link, a folder holding other things."""
    study = make_study(tmp_path / "s", FOUR)
    target = tmp_path / "mine"
    target.mkdir()
    (target / "report.md").write_text("my own notes\n", encoding="utf-8")
    out = {"file": target / "report.md", "symlink": tmp_path / "link", "foreign": target}[kind]
    if kind == "symlink":
        (tmp_path / "empty").mkdir()
        out.symlink_to(tmp_path / "empty")
    assert scaling_report.main([str(study), "--out", str(out), "--no-refine"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"scaling-report: --out: '{out}' "), err
    assert err.count("\n") == 1, err
    assert "accepted: a new folder, an empty one, or one holding an earlier scaling report" in err
    assert (target / "report.md").read_text(encoding="utf-8") == "my own notes\n"
    assert sorted(p.name for p in target.iterdir()) == ["report.md"]
    assert not any((tmp_path / "empty").iterdir()) if kind == "symlink" else True


def test_out_holding_an_earlier_report_is_rewritten(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    study = make_study(tmp_path / "s", FOUR)
    out = tmp_path / "out"
    assert scaling_report.main([str(study), "--out", str(out), "--no-refine"]) == 0
    # Over the first report, its scaling.png and scaling.svg included.
    assert scaling_report.main([str(study), "--out", str(out), "--no-refine"]) == 0
    without_plot(monkeypatch)  # the same plot as above: not drawn twice more
    (tmp_path / "empty").mkdir()
    assert scaling_report.main([str(study), "--out", str(tmp_path / "empty"), "--no-refine"]) == 0
    # --out the study folder itself, before its first report: as without --out.
    fresh = make_study(tmp_path / "fresh", FOUR)
    assert scaling_report.main([str(fresh), "--out", str(fresh), "--no-refine"]) == 0


def test_plot_is_never_written_through_a_planted_link(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    study = make_study(tmp_path / "s", FOUR)
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n", encoding="utf-8")
    for name in ("scaling.png", "scaling.svg"):
        (study / name).symlink_to(victim)
    assert scaling_report.main([str(study), "--no-refine"]) == 0
    assert victim.read_text(encoding="utf-8") == "precious\n"
    for name in ("scaling.png", "scaling.svg"):
        assert not (study / name).is_symlink()
        assert (study / name).stat().st_size > 1000


def test_planted_fifo_or_links_in_runs_are_not_followed(tmp_path: Path) -> None:
    """A FIFO as metrics.json would block the report job until its time limit; a link as a run's
    metrics.json or as a run's folder is not read (never through a link): that run counts as one
    without metrics, its status read as the follow-up reader reads it."""
    import os

    study = make_study(tmp_path / "s", FOUR)
    os.unlink(study / "runs" / "1x1-r1" / "metrics.json")
    os.mkfifo(study / "runs" / "1x1-r1" / "metrics.json")
    os.unlink(study / "runs" / "2x1-r1" / "status.json")
    os.mkfifo(study / "runs" / "2x1-r1" / "status.json")
    fake = tmp_path / "fake.json"
    fake.write_text(json.dumps({"samples_per_s": 1e9, "samples": 640}) + "\n", encoding="utf-8")
    os.unlink(study / "runs" / "1x2-r1" / "metrics.json")
    (study / "runs" / "1x2-r1" / "metrics.json").symlink_to(fake)
    # With a deadline: a FIFO read would hang.
    done = run_main(scaling_report.main, "hpc_helpers.scaling_report", str(study), "--no-refine")
    assert done.status == 0, done.stderr
    results = (study / "results.csv").read_text(encoding="utf-8")
    assert "1000000000" not in results
    # Two of three successful runs lack metrics.json now: wall time for all, never mixed.
    assert "scaling report: metric wall_s" in done.stderr


CORRUPTED = ['{"samples_per_s": 19', '{"samples_per_s": NaN}', '{"samples_per_s": "fast"}',
             "[1, 2]", "\xff\xfe"]


@pytest.mark.parametrize("text", CORRUPTED)
def test_metrics_corrupted_by_hand_is_no_number(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, text: str
) -> None:
    if text != CORRUPTED[0]:
        # Every corrupted text gives the plot the same input (1x2 without a median): drawn once.
        without_plot(monkeypatch)
    study = make_study(tmp_path / "s", FOUR)
    (study / "runs" / "1x2-r1" / "metrics.json").write_text(text, encoding="latin-1")
    assert scaling_report.main([str(study), "--no-refine"]) == 0
    rows = (study / "results.csv").read_text(encoding="utf-8").splitlines()
    row = next(r for r in rows if ",1x2," in r)
    # The run itself completed: its wall time stands; its metric is invalid, that run's alone
    # (the study keeps samples/s: issue 27).
    assert ",COMPLETED,0," in row
    assert row.endswith(",20,samples_per_s,,,,,,,invalid_metric"), row
    report = (study / "report.md").read_text(encoding="utf-8")
    assert "runs/1x2-r1/metrics.json" in report
    assert "that run's metric is invalid" in report
