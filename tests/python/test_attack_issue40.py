"""Attacks on issue 40's sacct fallback of hpc_helpers.followup: what the accounting answers for
a job the controller has forgot must be the user's own job's."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from hpc_helpers import followup


def test_sacct_fallback_asks_for_the_users_own_jobs_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Where PrivateData does not hide them, sacct shows every user's job of an id, and ids come
    # again after the controller's state is reset: another user's job 8 ended TIMEOUT; the
    # user's own job 8 (a task that wrote no file) has no line: it stays LOST.
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "scontrol").write_text("#!/bin/sh\nexit 1\n")
    uid, name = str(os.getuid()), os.environ.get("USER", "")
    (bin_dir / "sacct").write_text(
        "#!/bin/bash\n"
        "me=''\n"
        'while (($#)); do case $1 in -u|--user|--uid) me=$2; shift;; esac; shift; done\n'
        f'[[ $me == "{uid}" || ( -n "{name}" && $me == "{name}" ) ]] || echo "8_1|TIMEOUT"\n'
    )
    for fake in bin_dir.iterdir():
        fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    followup._SACCT_LINES.clear()
    statuses = followup.read_statuses(tmp_path / "tasks", ["1"], "8")
    followup._SACCT_LINES.clear()
    assert [s.state for s in statuses] == ["LOST"]
