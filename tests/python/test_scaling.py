"""scaling: the maths against a hand-computed table, the CSV files, the Throughput meter
(inactive, one process; two gloo processes: test_distributed.py, whose pair of torch processes
runs that program too)."""

from __future__ import annotations

import json
import os
import textwrap
from pathlib import Path

import pytest

from hpc_helpers import scaling
from hpc_helpers.scaling import Run, summarise


@pytest.fixture(autouse=True)
def no_scaling_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("scaling_run_dir", "scaling_study_dir", "scaling_config", "scaling_repeat"):
        monkeypatch.delenv(name, raising=False)


def ok(nodes: int, gpus: int, repeat: int, x: float | None = None, wall: float = 10.0) -> Run:
    return Run(nodes, gpus, repeat, "COMPLETED", job_id=f"{nodes}{gpus}{repeat}", exit_code=0,
               wall_s=wall, samples_per_s=x, samples=1000 if x else None,
               steps_measured=10 if x else None, warmup_steps=5 if x else None)


def failed(nodes: int, gpus: int, repeat: int, state: str = "FAILED", code: int = 1) -> Run:
    return Run(nodes, gpus, repeat, state, job_id=f"{nodes}{gpus}{repeat}", exit_code=code,
               wall_s=3.0)


# Hand-computed (throughput, strong):
#   config W  values          median min max speedup        ideal efficiency
#   1x1    1  100 110 90      100    90  110 1              1     1
#   1x2    2  190 200         195    190 200 1.95           2     0.975
#   2x1    2  180 (r2 failed) 180    180 180 1.8            2     0.9
#   2x2    4  360 380 370     370    360 380 3.7            4     0.925
THROUGHPUT_RUNS = [
    ok(2, 2, 1, 360), ok(2, 2, 2, 380), ok(2, 2, 3, 370),
    ok(1, 1, 1, 100), ok(1, 1, 2, 110), ok(1, 1, 3, 90),
    ok(2, 1, 1, 180), failed(2, 1, 2),
    ok(1, 2, 1, 190), ok(1, 2, 2, 200),
]


def table(study: scaling.Study) -> list[tuple[object, ...]]:
    return [
        (r.config, r.world_size, r.runs_ok, r.runs_total, r.median, r.min, r.max,
         None if r.speedup is None else round(r.speedup, 6),
         None if r.ideal is None else round(r.ideal, 6),
         None if r.efficiency is None else round(r.efficiency, 6), r.baseline)
        for r in study.rows
    ]


def test_throughput_table() -> None:
    study = summarise(THROUGHPUT_RUNS, "strong")
    assert study.metric == "samples_per_s"
    assert study.baseline == "1x1"
    assert not study.baseline_substituted
    assert table(study) == [
        ("1x1", 1, 3, 3, 100, 90, 110, 1.0, 1.0, 1.0, True),
        ("1x2", 2, 2, 2, 195, 190, 200, 1.95, 2.0, 0.975, False),
        ("2x1", 2, 1, 2, 180, 180, 180, 1.8, 2.0, 0.9, False),
        ("2x2", 4, 3, 3, 370, 360, 380, 3.7, 4.0, 0.925, False),
    ]


def test_weak_mode_does_not_change_throughput_maths() -> None:
    assert table(summarise(THROUGHPUT_RUNS, "weak")) == table(summarise(THROUGHPUT_RUNS))


# Wall time, T: 1x1 100 s, 1x2 60 s, 2x2 40 s.
#   strong: S = T_base / T: 1x2 1.666667, E 0.833333; 2x2 2.5, E 0.625
#   weak:   E = T_base / T: 1x2 1.666667, S 3.333333; 2x2 2.5,  S 10
WALL_RUNS = [ok(1, 1, 1, wall=100), ok(1, 2, 1, wall=60), ok(2, 2, 1, wall=40)]


def test_wall_strong() -> None:
    study = summarise(WALL_RUNS, "strong")
    assert study.metric == "wall_s"
    assert [(r.speedup, r.efficiency) for r in study.rows] == pytest.approx(
        [(1.0, 1.0), (100 / 60, 100 / 60 / 2), (2.5, 0.625)]
    )


def test_wall_weak() -> None:
    study = summarise(WALL_RUNS, "weak")
    assert [(r.speedup, r.efficiency) for r in study.rows] == pytest.approx(
        [(1.0, 1.0), (100 / 60 * 2, 100 / 60), (10.0, 2.5)]
    )


def test_one_run_without_metrics_means_wall_time_for_all() -> None:
    runs = [ok(1, 1, 1, 100, wall=50), ok(1, 2, 1, None, wall=30)]
    study = summarise(runs)
    assert study.metric == "wall_s"
    assert [r.median for r in study.rows] == [50, 30]


def test_failed_runs_do_not_decide_the_metric() -> None:
    runs = [ok(1, 1, 1, 100), ok(1, 2, 1, 150), failed(2, 2, 1)]
    assert summarise(runs).metric == "samples_per_s"


def test_failed_baseline_is_substituted() -> None:
    runs = [failed(1, 1, 1), ok(1, 2, 1, 200), ok(2, 2, 1, 300)]
    study = summarise(runs)
    assert (study.baseline, study.smallest, study.baseline_substituted) == ("1x2", "1x1", True)
    assert table(study) == [
        ("1x1", 1, 0, 1, None, None, None, None, None, None, False),
        ("1x2", 2, 1, 1, 200, 200, 200, 1.0, 1.0, 1.0, True),
        ("2x2", 4, 1, 1, 300, 300, 300, 1.5, 2.0, 0.75, False),
    ]


def test_nothing_succeeded() -> None:
    study = summarise([failed(1, 1, 1), failed(2, 1, 1, "TIMEOUT", 0)])
    assert study.baseline is None
    assert all(r.median is None and r.speedup is None for r in study.rows)


def test_unknown_mode() -> None:
    with pytest.raises(ValueError, match="'fast' is not accepted; accepted: strong, weak"):
        summarise(WALL_RUNS, "fast")


def test_csv_files_by_hand() -> None:
    runs = [ok(1, 1, 1, 100), failed(1, 2, 1, "LOST", 0), ok(1, 2, 2, 150.5)]
    runs[0].node_list = "n1"
    study = summarise(runs)
    assert scaling.results_csv("S1", runs, study.metric) == textwrap.dedent("""\
        study_id,config,nodes,gpus_per_node,world_size,repeat,job_id,state,exit_code,node_list,start_utc,end_utc,wall_s,metric,metric_value,samples,steps_measured,warmup_steps,start_s,end_s,flags
        S1,1x1,1,1,1,1,111,COMPLETED,0,n1,,,10,samples_per_s,100,1000,10,5,,,
        S1,1x2,1,2,2,1,121,LOST,0,,,,,samples_per_s,,,,,,,
        S1,1x2,1,2,2,2,122,COMPLETED,0,,,,10,samples_per_s,150.5,1000,10,5,,,
        """)
    assert scaling.summary_csv(study) == textwrap.dedent("""\
        config,nodes,gpus_per_node,world_size,runs_ok,runs_total,metric,median,min,max,speedup,ideal,efficiency,baseline,flags
        1x1,1,1,1,1,1,samples_per_s,100,100,100,1,1,1,yes,
        1x2,1,2,2,1,2,samples_per_s,150.5,150.5,150.5,1.505,2,0.7525,,
        """)


@pytest.mark.parametrize(
    ("value", "text"), [(None, ""), (3, "3"), (2.0, "2"), (1 / 3, "0.333333"), (-0.0000001, "0")]
)
def test_format_number(value: float | None, text: str) -> None:
    assert scaling.format_number(value) == text


# ---------------------------------------------------------------------------- the meter


def test_meter_is_a_no_op_outside_a_scaling_test(tmp_path: Path) -> None:
    os.chdir(tmp_path)
    meter = scaling.Throughput(warmup_steps=1)
    for _ in range(3):
        meter.step(samples=4)
    assert meter.finish() is None
    assert list(tmp_path.iterdir()) == []


def test_meter_single_process(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("scaling_run_dir", str(tmp_path))
    monkeypatch.setenv("num_nodes", "1")
    monkeypatch.setenv("gpus_per_node", "1")
    meter = scaling.Throughput(warmup_steps=2)
    for _ in range(6):  # 2 warm-up steps, then 4 measured
        meter.step(samples=8)
    metrics = meter.finish()
    assert metrics is not None
    written = json.loads((tmp_path / "metrics.json").read_text())
    assert written == metrics
    assert (written["schema"], written["world_size"], written["samples"],
            written["steps_measured"], written["warmup_steps"], written["backend"]) == (
        1, 1, 32, 4, 2, "none")
    assert written["samples_per_s"] == pytest.approx(32 / written["seconds"])


def test_meter_rejects_negative_warmup() -> None:
    with pytest.raises(ValueError, match="warmup_steps must be >= 0, not -1"):
        scaling.Throughput(warmup_steps=-1)
