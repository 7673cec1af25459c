"""hpc_helpers.followup (the follow-up job's reader) and hpc_helpers.mapreduce (a map's results)."""

from __future__ import annotations

import errno
import json
import os
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from hpc_helpers import followup, mapreduce


def write_status(
    map_dir: Path, index: int, state: str, exit_code: int | None, **extra: object
) -> None:
    folder = map_dir / "tasks" / str(index)
    folder.mkdir(parents=True, exist_ok=True)
    doc = {
        "key": str(index),
        "index": index,
        "item": f"item {index}",
        "state": state,
        "exit_code": exit_code,
        "log": f"/logs/task_{index}.out",
        **extra,
    }
    (folder / "status.json").write_text(json.dumps(doc))


@pytest.fixture
def no_scontrol(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A PATH whose scontrol knows no job (as after MinJobAge), on a cluster without accounting
    (sacct fails)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "scontrol"
    fake.write_text(
        "#!/bin/sh\necho 'slurm_load_jobs error: Invalid job id specified' >&2\nexit 1\n"
    )
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    fake = bin_dir / "sacct"
    fake.write_text("#!/bin/sh\necho 'Slurm accounting storage is disabled' >&2\nexit 1\n")
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    return bin_dir


@pytest.fixture
def scontrol_says(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    """scontrol_says(STATE): a PATH whose scontrol shows every job in STATE."""
    bin_dir = tmp_path / "bin2"
    bin_dir.mkdir()

    def make(state: str) -> None:
        fake = bin_dir / "scontrol"
        fake.write_text(f'#!/bin/sh\necho "JobId=9 ArrayJobId=8 JobState={state} Reason=None"\n')
        fake.chmod(0o755)
        monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")

    return make


def test_policies_parse_and_refuse() -> None:
    assert followup.parse_policy("all-ok").needed(10) == 10
    assert followup.parse_policy("always").needed(10) == 0
    assert followup.parse_policy("min-ok=3").needed(10) == 3
    assert followup.parse_policy("min-ok=25%").needed(10) == 3  # rounded up
    assert followup.parse_policy("min-ok=100%").needed(7) == 7
    for bad in ("sometimes", "min-ok=0", "min-ok=0%", "min-ok=101%", "min-ok=", "min-ok=-1"):
        with pytest.raises(ValueError, match="accepted: all-ok, always"):
            followup.parse_policy(bad)


def test_keys() -> None:
    assert followup.parse_keys("2-4") == ["2", "3", "4"]
    assert followup.parse_keys("1x1-r1,2x1-r1") == ["1x1-r1", "2x1-r1"]
    with pytest.raises(ValueError, match="accepted: A-B or a comma-separated list"):
        followup.parse_keys("../x")


def test_running_left_is_lost_missing_is_lost_and_verdict_names_failures(
    tmp_path: Path, no_scontrol: Path
) -> None:
    write_status(tmp_path, 0, "COMPLETED", 0)
    write_status(tmp_path, 1, "FAILED", 7)
    write_status(tmp_path, 2, "RUNNING", None, job_id="5", array_job_id="4", task_id="2")
    statuses = followup.read_statuses(tmp_path / "tasks", ["0", "1", "2", "3"], "4")
    assert [s.state for s in statuses] == ["COMPLETED", "FAILED", "LOST", "LOST"]
    line = followup.verdict_line(
        statuses, followup.parse_policy("all-ok"), "bash job_submitter.sh resubmit trak --failed"
    )
    assert line == (
        "gather not run: policy all-ok needs 4/4 tasks, 1 ok; failed: 1 (exit 7), 2 (LOST), "
        "3 (LOST); to re-run them: bash job_submitter.sh resubmit trak --failed"
    )


def test_scontrol_refines_running_and_failed(tmp_path: Path, scontrol_says) -> None:  # type: ignore[no-untyped-def]
    write_status(tmp_path, 0, "RUNNING", None, job_id="9", array_job_id="8", task_id="0")
    write_status(tmp_path, 1, "FAILED", 143, job_id="10", array_job_id="8", task_id="1")
    scontrol_says("TIMEOUT")
    statuses = followup.read_statuses(tmp_path / "tasks", ["0", "1"])
    assert [s.state for s in statuses] == ["TIMEOUT", "TIMEOUT"]
    # A job SLURM says COMPLETED but whose file still says RUNNING lost its final write: LOST.
    scontrol_says("COMPLETED")
    assert followup.read_statuses(tmp_path / "tasks", ["0"])[0].state == "LOST"


def test_sacct_refines_once_the_controller_forgot(tmp_path: Path, no_scontrol: Path) -> None:
    # The controller forgot array 8 (MinJobAge); the site's accounting (sacct) still knows each
    # task's end: a task killed by its time limit, one cancelled while pending (no file at all).
    # The one cancelled while pending has no line of its own: the array's pending range answers
    # for it (SLURM leaves the range's text as it was, task 0 in it too: its own line wins).
    fake = no_scontrol / "sacct"
    fake.write_text(
        "#!/bin/sh\n"
        'echo "$*" >>"$(dirname "$0")/sacct.calls"\n'
        'case "$*" in\n'
        '  *"-j 8 "*) printf "8_0|TIMEOUT\\n8_[0-1%%1]|CANCELLED by 0\\n8_3|COMPLETED\\n" ;;\n'
        "esac\n"
    )
    followup._SACCT_LINES.clear()
    write_status(tmp_path, 0, "RUNNING", None, job_id="9", array_job_id="8", task_id="0")
    statuses = followup.read_statuses(tmp_path / "tasks", ["0", "1", "2"], "8")
    assert [s.state for s in statuses] == ["TIMEOUT", "CANCELLED", "LOST"]
    # One sacct for the whole array.
    calls = (no_scontrol / "sacct.calls").read_text().splitlines()
    assert calls == [f"-n -P -X -u {os.getuid()} -j 8 -o JobID,State"]
    followup._SACCT_LINES.clear()
    # A map's tasks folder (the gather's reader is given no array id): its manifest.json's one
    # array names the task that wrote no file.
    (tmp_path / "manifest.json").write_text(json.dumps({"array_ids": ["8"]}))
    statuses = followup.read_statuses(tmp_path / "tasks", ["0", "1", "2"])
    assert [s.state for s in statuses] == ["TIMEOUT", "CANCELLED", "LOST"]
    followup._SACCT_LINES.clear()


def test_cli_writes_tables_and_exports(
    tmp_path: Path, no_scontrol: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_status(tmp_path, 0, "COMPLETED", 0)
    write_status(tmp_path, 1, "FAILED", 7)
    rc = followup.main(
        [
            "read",
            "--dir",
            str(tmp_path / "tasks"),
            "--keys",
            "0-1",
            "--policy",
            "min-ok=1",
            "--out",
            str(tmp_path / "map_status"),
        ]
    )
    assert rc == 0
    out, err = capsys.readouterr()
    assert "ok=0\nfailed=1\nn_ok=1\nn_failed=1\ncount=2\n" in out
    assert err.startswith("gather runs: policy min-ok=1 needs 1/2 tasks, 1 ok; failed: 1 (exit 7)")
    doc = json.loads((tmp_path / "map_status.json").read_text())
    assert doc["met"] is True
    assert [t["state"] for t in doc["tasks"]] == ["COMPLETED", "FAILED"]
    rows = (tmp_path / "map_status.tsv").read_text().splitlines()
    assert rows[0].split("\t")[:5] == ["key", "index", "item", "state", "exit_code"]
    assert rows[2].split("\t")[:5] == ["1", "1", "item 1", "FAILED", "7"]
    rc = followup.main(
        [
            "read",
            "--dir",
            str(tmp_path / "tasks"),
            "--keys",
            "0-1",
            "--out",
            str(tmp_path / "map_status"),
        ]
    )
    assert rc == 1
    assert (
        followup.main(
            [
                "read",
                "--dir",
                str(tmp_path),
                "--keys",
                "0-1",
                "--policy",
                "x",
                "--out",
                str(tmp_path / "s"),
            ]
        )
        == 2
    )


def test_a_report_of_named_runs(
    tmp_path: Path, no_scontrol: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # A scaling study's report (issue 17) names its runs by folder and itself by name.
    for key in ("1x1-r1", "2x1-r1"):
        (tmp_path / "runs" / key).mkdir(parents=True)
        state = "COMPLETED" if key[0] == "1" else "TIMEOUT"
        (tmp_path / "runs" / key / "status.json").write_text(json.dumps({"state": state}))
    argv = ["read", "--dir", str(tmp_path / "runs"), "--keys", "1x1-r1,2x1-r1"]
    argv += ["--policy", "always", "--out", str(tmp_path / "runs_status"), "--what", "report"]
    assert followup.main(argv) == 0
    assert capsys.readouterr().err == (
        "report runs: policy always needs 0/2 tasks, 1 ok; failed: 2x1-r1 (TIMEOUT)\n"
    )
    assert (tmp_path / "runs_status.tsv").is_file()


def test_save_result_tasks_results_and_task_failed(
    tmp_path: Path, no_scontrol: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for i in range(3):
        (tmp_path / "tasks" / str(i)).mkdir(parents=True)
        monkeypatch.setenv("task_dir", str(tmp_path / "tasks" / str(i)))
        if i != 1:
            path = mapreduce.save_result({"score": i / 10})
            assert path == tmp_path / "tasks" / str(i) / "result.json"
        write_status(tmp_path, i, "FAILED" if i == 1 else "COMPLETED", 3 if i == 1 else 0)
    # No leftover temporary files.
    assert sorted(p.name for p in (tmp_path / "tasks" / "0").iterdir()) == [
        "result.json",
        "status.json",
    ]
    (tmp_path / "manifest.json").write_text(json.dumps({"first": 0, "last": 2}))
    monkeypatch.setenv("map_dir", str(tmp_path))
    tasks = list(mapreduce.tasks())
    assert [(t.index, t.item, t.state, t.exit_code) for t in tasks] == [
        (0, "item 0", "COMPLETED", 0),
        (1, "item 1", "FAILED", 3),
        (2, "item 2", "COMPLETED", 0),
    ]
    assert tasks[1].dir == tmp_path / "tasks" / "1"
    assert mapreduce.results(allow_failed=True) == [{"score": 0.0}, None, {"score": 0.2}]
    with pytest.raises(mapreduce.TaskFailed) as failed:
        mapreduce.results()
    assert str(failed.value) == (
        "map task 1 ('item 1') did not succeed: state FAILED, exit code 3; log: /logs/task_1.out"
    )
    # In the gather, map_status.json (written by its first step) is what counts.
    followup.main(
        [
            "read",
            "--dir",
            str(tmp_path / "tasks"),
            "--keys",
            "0-2",
            "--policy",
            "always",
            "--out",
            str(tmp_path / "map_status"),
        ]
    )
    assert [t.state for t in mapreduce.tasks()] == ["COMPLETED", "FAILED", "COMPLETED"]


def test_outside_a_map_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("task_dir", raising=False)
    with pytest.raises(RuntimeError, match=r"\$task_dir is not set"):
        mapreduce.save_result(1)


def test_gather_command_prints_the_recorded_words_nul_separated(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    words = ["python", "gather.py", "--name", "two words", "${map_dir}"]
    (tmp_path / "manifest.json").write_text(json.dumps({"gather_command": words}), encoding="utf-8")
    assert followup.main(["gather-command", "--dir", str(tmp_path)]) == 0
    assert capsys.readouterr().out.split("\0") == [*words, ""]
    manifest = tmp_path / "manifest.json"
    manifest.write_text(json.dumps({"gather_command": "python x"}), encoding="utf-8")
    assert followup.main(["gather-command", "--dir", str(tmp_path)]) == 2
    assert "is not a map's manifest" in capsys.readouterr().err


def test_a_status_file_damaged_by_hand_is_lost_not_a_crash(
    tmp_path: Path, no_scontrol: Path
) -> None:
    write_status(tmp_path, 0, "COMPLETED", 0)
    damaged = {
        "1": '{"state": "COMPLETED", "exit_code": 0',  # truncated
        "2": "[" * 100000 + "]" * 100000,  # nested beyond Python's recursion limit
        "3": '{"state": ["COMPLETED"], "exit_code": {"x": 1}, "index": "x"}',
        "4": "\x00\xff not json",
    }
    for key, text in damaged.items():
        folder = tmp_path / "tasks" / key
        folder.mkdir(parents=True)
        (folder / "status.json").write_text(text, encoding="latin-1")
    statuses = followup.read_statuses(tmp_path / "tasks", ["0", "1", "2", "3", "4"])
    assert [s.state for s in statuses] == ["COMPLETED", "LOST", "LOST", "LOST", "LOST"]


def test_the_reader_that_cannot_write_its_table_fails_with_one_line(
    tmp_path: Path, no_scontrol: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # A full disk or a folder gone: exit 2 (the gather says 'could not be read'), never the
    # traceback's exit 1, which the gather takes for 'policy not met'.
    write_status(tmp_path, 0, "COMPLETED", 0)
    rc = followup.main(
        ["read", "--dir", str(tmp_path / "tasks"), "--keys", "0-0", "--policy", "always",
         "--out", str(tmp_path / "gone" / "map_status")]
    )
    assert rc == 2
    _, err = capsys.readouterr()
    lines = err.strip().splitlines()
    assert lines[-1].startswith("hpc_helpers.followup: cannot write ")
    assert "map_status" in lines[-1]


def test_a_task_folder_or_status_file_replaced_by_a_link_is_not_followed(
    tmp_path: Path, no_scontrol: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_status(tmp_path, 0, "COMPLETED", 0)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "status.json").write_text('{"state": "COMPLETED", "exit_code": 0}\n')
    (tmp_path / "tasks" / "1").symlink_to(elsewhere)
    (tmp_path / "tasks" / "2").mkdir()
    (tmp_path / "tasks" / "2" / "status.json").symlink_to(elsewhere / "status.json")
    statuses = followup.read_statuses(tmp_path / "tasks", ["0", "1", "2"])
    assert [s.state for s in statuses] == ["COMPLETED", "LOST", "LOST"]
    err = capsys.readouterr().err
    says = "is a symbolic link: not followed, task"
    assert f"hpc_helpers.followup: {tmp_path}/tasks/1 {says} 1 counted LOST\n" in err
    assert f"hpc_helpers.followup: {tmp_path}/tasks/2/status.json {says} 2 counted LOST\n" in err
    assert (elsewhere / "status.json").read_text() == '{"state": "COMPLETED", "exit_code": 0}\n'


def test_save_result_on_a_full_disk_raises_and_leaves_no_temporary_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    task = tmp_path / "tasks" / "0"
    task.mkdir(parents=True)
    mapreduce.save_result({"score": 1}, task)
    real_write_text = Path.write_text

    def full_disk(self: Path, data: str, *args: Any, **kwargs: Any) -> int:
        real_write_text(self, data[:10], *args, **kwargs)  # a part written, then the disk is full
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(Path, "write_text", full_disk)
    with pytest.raises(OSError, match="No space left"):
        mapreduce.save_result({"score": 2, "pad": "x" * 1000}, task)
    assert sorted(p.name for p in task.iterdir()) == ["result.json"]
    assert json.loads((task / "result.json").read_text()) == {"score": 1}


def test_records_are_the_users_alone_and_a_failed_write_leaves_no_temporary_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The map's and the study's records (manifest.json, study.json, map_status) name what
    # resubmit runs again: 0600 whatever the umask, and never a leftover on a full disk.
    old = os.umask(0o002)
    try:
        followup._atomic_write(tmp_path / "manifest.json", "{}\n")
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "manifest.json").stat().st_mode) == 0o600

    real_fdopen = os.fdopen

    class FullDisk:
        def __init__(self, fd: int, *args: Any, **kwargs: Any) -> None:
            self.file = real_fdopen(fd, *args, **kwargs)

        def __enter__(self) -> FullDisk:
            return self

        def __exit__(self, *exc: object) -> None:
            self.file.close()

        def write(self, text: str) -> int:
            self.file.write(text[:10])  # a part written, then the disk is full
            self.file.flush()
            raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "fdopen", FullDisk)
    with pytest.raises(OSError, match="No space left"):
        followup._atomic_write(tmp_path / "manifest.json", "x" * 100000)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["manifest.json"]
    assert (tmp_path / "manifest.json").read_text() == "{}\n"


def test_a_task_forging_anothers_status_is_inconsistent_never_a_success(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A map of arrays 40 and 50 (a part); SLURM (scontrol, one call per array) knows each task.
    (tmp_path / "manifest.json").write_text(json.dumps({"array_ids": ["40", "50"]}))
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "scontrol"
    line = "JobId={} ArrayJobId={} ArrayTaskId={} JobState={} Reason=None ExitCode={}"
    fake.write_text(
        "#!/bin/sh\n"
        'echo "$*" >>"$0.calls"\n'
        'case "$4" in\n'
        f'40) echo "{line.format(41, 40, 0, "FAILED", "5:0")}"\n'
        f'    echo "{line.format(42, 40, 1, "COMPLETED", "0:0")}"\n'
        f'    echo "{line.format(40, 40, "2-3", "PENDING", "0:0")}";;\n'
        f'50) echo "{line.format(51, 50, 0, "COMPLETED", "0:0")}";;\n'
        "esac\n"
    )
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    # Task 0 exited 5; task 1 rewrote its file as COMPLETED. Task 2 names an array not the
    # map's; tasks 3 and 4 name the same array task; task 5 is honest (the part's array 50).
    write_status(tmp_path, 0, "COMPLETED", 0, job_id="41", array_job_id="40", task_id="0")
    write_status(tmp_path, 1, "COMPLETED", 0, job_id="42", array_job_id="40", task_id="1")
    write_status(tmp_path, 2, "COMPLETED", 0, job_id="99", array_job_id="99", task_id="2")
    write_status(tmp_path, 3, "COMPLETED", 0, job_id="51", array_job_id="50", task_id="0")
    write_status(tmp_path, 4, "COMPLETED", 0, job_id="51", array_job_id="50", task_id="0")
    write_status(tmp_path, 5, "COMPLETED", 0, job_id="51", array_job_id="50", task_id="0")
    keys = ["0", "1", "2", "3", "4", "5"]
    statuses = followup.read_statuses(tmp_path / "tasks", keys[:3])
    assert [s.state for s in statuses] == ["INCONSISTENT", "COMPLETED", "INCONSISTENT"]
    assert statuses[0].fields["inconsistent"] == (
        "its status file says COMPLETED, SLURM says job 40_0 ended FAILED 5:0"
    )
    assert statuses[2].fields["inconsistent"] == (
        "its status file names job 99_2, not an array of this map"
    )
    assert (bin_dir / "scontrol.calls").read_text() == "show job -o 40\nshow job -o 50\n"
    statuses = followup.read_statuses(tmp_path / "tasks", keys[3:])
    assert [s.state for s in statuses] == ["INCONSISTENT"] * 3
    assert statuses[0].fields["inconsistent"] == (
        "its status file names job 50_0, as the files of 3, 4, 5 do"
    )
    line = followup.verdict_line(
        followup.read_statuses(tmp_path / "tasks", keys[:2]), followup.parse_policy("all-ok")
    )
    assert line == "gather not run: policy all-ok needs 2/2 tasks, 1 ok; failed: 0 (INCONSISTENT)"
    # The reader of the results (mapreduce.results) reads the files as they are: no SLURM.
    assert followup.read_statuses(tmp_path / "tasks", ["0"], refine=False)[0].state == "COMPLETED"


def test_a_reader_gone_away_stops_it_quietly(tmp_path: Path) -> None:
    """A killed submitter's helper writes into a pipe nobody reads: exit 1, no traceback."""
    manifest = json.dumps({"first": 0, "last": 50000})
    (tmp_path / "manifest.json").write_text(manifest, encoding="utf-8")
    (tmp_path / "tasks").mkdir()
    src = Path(followup.__file__).resolve().parents[1]
    read_end, write_end = os.pipe()
    os.close(read_end)
    proc = subprocess.run(
        [sys.executable, "-m", "hpc_helpers.followup", "map-info", "--dir", str(tmp_path)],
        stdout=write_end, stderr=subprocess.PIPE, env={**os.environ, "PYTHONPATH": str(src)},
        check=False,
    )
    os.close(write_end)
    assert proc.stderr.decode() == ""
    assert proc.returncode == 1


def test_a_lost_chunk_item_is_asked_of_the_task_that_ran_its_chunk(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An item of a chunked map without a status file: SLURM is asked about the array task whose
    chunk holds it (manifest.json's chunks), never about the task whose id equals the item's."""
    doc = {"array_ids": ["70"], "chunks": {"70": {"chunk": 3, "first": 0, "last": 5}}}
    (tmp_path / "manifest.json").write_text(json.dumps(doc))
    (tmp_path / "tasks").mkdir()
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "scontrol"
    # Task 0 (items 0-2) was cancelled; task 1 (items 3-5) completed: item 2 is task 0's.
    fake.write_text(
        "#!/bin/sh\n"
        'echo "$*" >>"$0.calls"\n'
        'case "$4" in\n'
        '70) echo "JobId=71 ArrayJobId=70 ArrayTaskId=0 JobState=CANCELLED ExitCode=0:15"\n'
        '    echo "JobId=72 ArrayJobId=70 ArrayTaskId=1 JobState=COMPLETED ExitCode=0:0";;\n'
        '70_0) echo "JobId=71 ArrayJobId=70 ArrayTaskId=0 JobState=CANCELLED Reason=None";;\n'
        '70_1) echo "JobId=72 ArrayJobId=70 ArrayTaskId=1 JobState=COMPLETED Reason=None";;\n'
        '70_2) echo "JobId=73 ArrayJobId=70 ArrayTaskId=2 JobState=COMPLETED Reason=None";;\n'
        "esac\n"
    )
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    statuses = followup.read_statuses(tmp_path / "tasks", ["2", "4"], "70")
    assert [s.state for s in statuses] == ["CANCELLED", "LOST"]
    calls = (bin_dir / "scontrol.calls").read_text().splitlines()
    assert "show job -o 70_2" not in calls
    assert "show job -o 70_4" not in calls
    assert "show job -o 70_0" in calls
