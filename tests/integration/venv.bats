#!/usr/bin/env bats
# The project's virtual environment on the local cluster: rebuilt while a job runs from it, a
# failed rebuild, an empty requirements.txt. Packages come from wheels made here (pip has no
# internet): hpcmark 1 and 2, whose module `late` is imported only when the job is told to.
# Set by hpc_run_job or hpc_submit_job (helpers/cluster.bash); declared for shellcheck.
declare -g job_id job_out job_state

setup_file() {
  load '../helpers/common'
  load '../helpers/cluster'
  hpc_test_project "venv project"
  export WHEELS=$BATS_FILE_TMPDIR/wheels
  make_wheel 1
  make_wheel 2
  # hpcmark 1 under a comment: a requirements.txt of its own text (a build of its own, not one of
  # the file with the wheel alone), the last build of the first test and the old build of the
  # second, which then runs from it as it finds it instead of building it again.
  export OLD_REQUIREMENTS="# hpcmark 1 again
$WHEELS/hpcmark-1-py3-none-any.whl"
  cp "$HPC_ROOT/tests/fixtures/project/venv_job.py" "$PROJECT/"
}

setup() {
  load '../helpers/common'
  load '../helpers/cluster'
  builds=$PROJECT/.virtual_env_builds
}

# make_wheel VERSION: $WHEELS/hpcmark-VERSION-py3-none-any.whl, a package hpcmark whose VERSION
# is VERSION, with a module hpcmark.late whose VERSION is VERSION too.
make_wheel() {
  mkdir -p "$WHEELS"
  python3 - "$WHEELS" "$1" <<'EOF'
import base64, hashlib, sys, zipfile
out, version = sys.argv[1], sys.argv[2]
files = {
    "hpcmark/__init__.py": f"VERSION = {version}\n",
    "hpcmark/late.py": f"import os\nVERSION = {version}\nWHERE = os.path.dirname(os.path.abspath(__file__))\n",
    f"hpcmark-{version}.dist-info/METADATA": f"Metadata-Version: 2.1\nName: hpcmark\nVersion: {version}\n",
    f"hpcmark-{version}.dist-info/WHEEL": "Wheel-Version: 1.0\nGenerator: venv.bats\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
}
record = f"hpcmark-{version}.dist-info/RECORD"
lines = []
with zipfile.ZipFile(f"{out}/hpcmark-{version}-py3-none-any.whl", "w") as whl:
    for name, text in files.items():
        data = text.encode()
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        lines.append(f"{name},sha256={digest},{len(data)}")
        whl.writestr(name, data)
    lines.append(f"{record},,")
    whl.writestr(record, "\n".join(lines) + "\n")
EOF
}

# wait_for_line FILE PATTERN [TIMEOUT_S]: waits until FILE has a line matching PATTERN (grep -E).
wait_for_line() {
  local start=$SECONDS
  until grep -qE "$2" "$1" 2>/dev/null; do
    ((SECONDS - start < ${3:-60})) || fail "no line '$2' in $1 within ${3:-60}s: $(cat "$1" 2>/dev/null)"
    sleep 0.2
  done
}

# submit ARGS...: runs the project's submitter -y, output and status in $output/$status.
submit() {
  run bash "$PROJECT/hpc_files/job_submitter.sh" -y -g 0 "$@"
}

@test "the venv rebuilt while a job runs from it: the job keeps its build and ends COMPLETED" {
  printf '%s\n' "$WHEELS/hpcmark-1-py3-none-any.whl" >"$PROJECT/requirements.txt"
  hpc_configs "$PROJECT" "python venv_job.py \"$BATS_TEST_TMPDIR/go\""
  hpc_submit_job "$PROJECT" -g 0 -e first
  first_id=$job_id first_out=$job_out
  wait_for_line "$first_out" '^VENVJOB started version=1 '
  first_build=$(sed -n 's/^VENVJOB started version=1 prefix=//p' "$first_out")

  # requirements.txt changes while it runs: a new build, and the link switches to it.
  printf '%s\n' "$WHEELS/hpcmark-2-py3-none-any.whl" >"$PROJECT/requirements.txt"
  hpc_configs "$PROJECT" "python venv_job.py --now"
  hpc_run_job "$PROJECT" -g 0 -e second
  assert_equal "$job_state" "COMPLETED 0:0"
  second_build=$(sed -n 's/^VENVJOB started version=2 prefix=//p' "$job_out")
  # The first job imports a module of its venv only now: its build is still whole.
  touch "$BATS_TEST_TMPDIR/go"
  hpc_wait_job "$first_id" 120
  assert_equal "$(hpc_job_state "$first_id")" "COMPLETED 0:0"
  grep -qx "VENVJOB late version=1 late_version=1 where=$first_build/lib/python3.*/site-packages/hpcmark" "$first_out" ||
    fail "$(cat "$first_out")"
  # Each build in its own folder; virtual_env leads to the newest.
  [[ $first_build == "$builds"/venv-* && $second_build == "$builds"/venv-* && $first_build != "$second_build" ]] ||
    fail "builds: $first_build and $second_build"
  assert_equal "$(readlink -f "$PROJECT/virtual_env")" "$second_build"

  # The first job is over: the next build removes the first build, which nothing uses any more.
  # (Its job finds the cluster's torch without importing it: what is asserted is the builds'.)
  printf '%s\n' "$OLD_REQUIREMENTS" >"$PROJECT/requirements.txt"
  hpc_configs "$PROJECT" 'python -c "import importlib.util, sys; sys.exit(importlib.util.find_spec(\"torch\") is None)"'
  hpc_run_job "$PROJECT" -g 0 -e third
  assert_equal "$job_state" "COMPLETED 0:0"
  assert_equal "$(cd "$builds" && echo venv-*)" "$(basename -- "$(readlink -f "$PROJECT/virtual_env")")"
  [[ ! -e $first_build && ! -e $second_build ]] || fail "unused builds are still there: $(ls "$builds")"
}

@test "a failed rebuild leaves the old venv in use, says so with exit 1, and jobs still run from it" {
  # The old build: the first test's last one when it ran (the same file), else built here.
  printf '%s\n' "$OLD_REQUIREMENTS" >"$PROJECT/requirements.txt"
  hpc_configs "$PROJECT" "python venv_job.py --now"
  hpc_run_job "$PROJECT" -g 0 -e before
  assert_equal "$job_state" "COMPLETED 0:0"
  build=$(readlink -f "$PROJECT/virtual_env")

  printf '%s\n' "$OLD_REQUIREMENTS" 'this-package-does-not-exist-anywhere==0.0.0' >"$PROJECT/requirements.txt"
  submit -e broken
  assert_failure 1
  assert_line --regexp "^job_submitter.sh: the virtual environment's install job [0-9]+ failed; nothing was submitted, and jobs keep using $PROJECT/virtual_env as it was. Its log: .*/venv_install_[0-9]+\.out$"
  refute_output --partial "Submitted job"
  assert_equal "$(readlink -f "$PROJECT/virtual_env")" "$build"
  [[ -f $build/.hpc_deps ]]
  # The failed install removed what it made.
  assert_equal "$(find "$builds" -mindepth 1 -maxdepth 1 ! -name "${build##*/}" -name 'venv-*')" ""

  printf '%s\n' "$OLD_REQUIREMENTS" >"$PROJECT/requirements.txt"
  hpc_run_job "$PROJECT" -g 0 -e after
  assert_equal "$job_state" "COMPLETED 0:0"
  grep -qx "VENVJOB started version=1 prefix=$build" "$job_out" || fail "$(cat "$job_out")"
}

@test "an empty requirements.txt (the cluster's own torch) builds once; the next submission submits no install job" {
  : >"$PROJECT/requirements.txt"
  hpc_configs "$PROJECT" 'python -c "import torch, sys; print(\"TORCH\", sys.prefix)"'
  submit -e empty1
  assert_success
  assert_output --partial "install job"
  assert_output --partial "the virtual environment is ready"
  # What is asserted is the submissions': their jobs (an import of torch each) need not run.
  hpc_cancel_submitted "$output"
  submit -e empty2
  assert_success
  refute_output --partial "install job"
  refute_output --partial "building"
  hpc_cancel_submitted "$output"
}

@test "a plain virtual_env of an older toolkit: a job running from it keeps it through a rebuild; then it becomes a link" {
  legacy="$BATS_TEST_TMPDIR/legacy project"
  hpc_project_make "$legacy"
  cp "$HPC_ROOT/tests/fixtures/project/venv_job.py" "$legacy/"
  printf '%s\n' "$WHEELS/hpcmark-1-py3-none-any.whl" >"$legacy/requirements.txt"
  # As the older toolkit left it: a venv in place, with its stamp. Made without a pip of its own
  # (ensurepip costs CPU-seconds): the system's pip, which the venv sees, installs into it.
  python3 -m venv --without-pip --system-site-packages "$legacy/virtual_env"
  "$legacy/virtual_env/bin/python" -m pip install -q "$WHEELS/hpcmark-1-py3-none-any.whl" >/dev/null
  [[ -f $(echo "$legacy"/virtual_env/lib/python3*/site-packages/hpcmark/__init__.py) ]] ||
    fail "hpcmark 1 is not in the legacy venv: $(ls -R "$legacy/virtual_env/lib")"
  printf 'requirements.txt\n%s\n' "$WHEELS/hpcmark-1-py3-none-any.whl" >"$legacy/virtual_env/.hpc_deps"

  hpc_configs "$legacy" "python venv_job.py \"$BATS_TEST_TMPDIR/go\""
  run bash "$legacy/hpc_files/job_submitter.sh" -y -g 0 -e old
  assert_success
  refute_output --partial "install job"
  old_id=$(sed -n 's/^Submitted job \([0-9][0-9]*\).*/\1/p' <<<"$output")
  old_out=$(sed -n 's/^Output: *//p' <<<"$output")
  wait_for_line "$old_out" "^VENVJOB started version=1 prefix=$legacy/virtual_env$"

  printf '%s\n' "$WHEELS/hpcmark-2-py3-none-any.whl" >"$legacy/requirements.txt"
  hpc_configs "$legacy" "python venv_job.py --now"
  run bash "$legacy/hpc_files/job_submitter.sh" -y -g 0 -e new
  assert_success
  assert_line --regexp "^job_submitter.sh: a queued or running job runs from $legacy/virtual_env: it stays as it is; new jobs use $legacy/\.virtual_env_builds/venv-[0-9]+$"
  new_id=$(sed -n 's/^Submitted job \([0-9][0-9]*\).*/\1/p' <<<"$output")
  hpc_wait_job "$new_id" 120
  assert_equal "$(hpc_job_state "$new_id")" "COMPLETED 0:0"
  touch "$BATS_TEST_TMPDIR/go"
  hpc_wait_job "$old_id" 120
  assert_equal "$(hpc_job_state "$old_id")" "COMPLETED 0:0"
  grep -qx "VENVJOB late version=1 late_version=1 where=$legacy/virtual_env/lib/python3.*/site-packages/hpcmark" "$old_out" ||
    fail "$(cat "$old_out")"
  [[ -d $legacy/virtual_env && ! -L $legacy/virtual_env ]]

  # No job names it any more: the next build turns it into a link, and the old folders go.
  printf '# the cluster'"'"'s torch only\n' >"$legacy/requirements.txt"
  hpc_configs "$legacy" 'python -c "import sys"'
  run bash "$legacy/hpc_files/job_submitter.sh" -y -g 0 -e newer
  assert_success
  # What is asserted is the submission's and the folders': its job need not run.
  hpc_cancel_submitted "$output"
  [[ -L $legacy/virtual_env ]] || fail "virtual_env is not a link: $(ls -la "$legacy")"
  assert_equal "$(cd "$legacy/.virtual_env_builds" && echo *)" "$(basename -- "$(readlink "$legacy/virtual_env")")"
}
