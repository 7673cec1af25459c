#!/usr/bin/env bats
# Ctrl-C (SIGINT to the submitter's process group, as a terminal sends it) at the submission's
# slow steps, with the PATH stubs of tests/fixtures/submitter/bin (no SLURM): each says what
# happened and what is left, and ends with 130; never "failed (see above)" with nothing above.

bats_require_minimum_version 1.5.0

setup_file() {
  load '../helpers/common'
  load '../helpers/submitter'
  hpc_test_warm_profiles
}

setup() {
  load '../helpers/common'
  # shellcheck source=tests/helpers/submitter.bash
  source "$BATS_TEST_DIRNAME/../helpers/submitter.bash"
  hpc_test_submitter_project "$(hpc_test_tmp)/cache" "$(hpc_test_tmp)/scratch"
  outputs="$SCRATCH/my project/hpc_outputs"
}

# interrupt_when TEXT ARGS...: runs the submitter with ARGS in a process group of its own (as a
# terminal's job: INT not ignored), sends the group SIGINT once its stderr holds TEXT, and waits;
# sets rc, and the output in $tmp/out and $tmp/err.
interrupt_when() {
  local text=$1 pid
  shift
  setsid env --default-signal=INT bash "$submitter" "$@" </dev/null >"$tmp/out" 2>"$tmp/err" &
  pid=$!
  for _ in {1..300}; do
    grep -qF -- "$text" "$tmp/err" && break
    sleep 0.05
  done
  grep -qF -- "$text" "$tmp/err" || fail "never said '$text': $(cat "$tmp/err")"
  kill -s INT -- "-$pid"
  rc=0
  wait "$pid" || rc=$?
}

@test "Ctrl-C while waiting for the venv's install job: says nothing was submitted and that the install job goes on, exit 130" {
  export HPC_STUB_SQUEUE_STATES
  HPC_STUB_SQUEUE_STATES=$(printf 'PENDING %.0s' {1..200})
  interrupt_when "install job 4242: PENDING" -y
  assert_equal "$rc" 130
  assert_equal "$(tail -n 1 "$tmp/err")" "job_submitter.sh: interrupted while waiting for the virtual environment: nothing was submitted; install job 4242 goes on (its log: $outputs/venv_install_4242.out) and points virtual_env to its build when it succeeds (cancel it with: scancel 4242)"
  # The install job (run by the sbatch stub) made the build and pointed virtual_env to it itself.
  assert_equal "$(readlink "$project/virtual_env")" .virtual_env_builds/venv-4242
  # The install job alone was submitted.
  [[ -e $stub_log/sbatch.1.args && ! -e $stub_log/sbatch.2.args ]] || fail "sbatch calls: $(ls "$stub_log")"
}

@test "Ctrl-C while --data is being packed: says so, nothing submitted, no archive left half-made, exit 130" {
  hpc_test_venv_built "$project"
  mkdir -p "$SCRATCH/my project/datasets"
  head -c 100000 /dev/zero >"$SCRATCH/my project/datasets/a.bin"
  # A tar that takes its time, as one of a large dataset does.
  mkdir -p "$BATS_TEST_TMPDIR/bin"
  printf '%s\n' '#!/usr/bin/env bash' 'echo "tar started" >&2' 'sleep 30' 'exec /usr/bin/env -u PATH tar "$@"' >"$BATS_TEST_TMPDIR/bin/tar"
  chmod +x "$BATS_TEST_TMPDIR/bin/tar"
  PATH=$BATS_TEST_TMPDIR/bin:$PATH interrupt_when "tar started" -y --data datasets
  assert_equal "$rc" 130
  assert_equal "$(tail -n 1 "$tmp/err")" "job_submitter.sh: interrupted while packing the data (--data): nothing was submitted"
  run grep -c 'staging the data failed' "$tmp/err"
  assert_output 0
  [[ ! -e $stub_log/sbatch.1.args ]] || fail "submitted"
  run find "$SCRATCH/my project/.staging" -name 'data.tar'
  assert_output ''
}
