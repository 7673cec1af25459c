#!/usr/bin/env bats
# The batch shell's waits on the guards (hpc_job.bash), without SLURM: PATH stubs of srun, squeue
# and scontrol written per test. Every wait must be bounded and say in the log what it gave up on.

setup() {
  load '../helpers/common'
  stubs=$BATS_TEST_TMPDIR/bin
  mkdir -p "$stubs"
  # squeue -o %L: the time left; scontrol show hostnames: the two nodes.
  printf '#!/bin/bash\necho 10:00\n' >"$stubs/squeue"
  printf '#!/bin/bash\nprintf "n1\\nn2\\n"\n' >"$stubs/scontrol"
  chmod +x "$stubs/squeue" "$stubs/scontrol"
}

# stub_srun BODY: the srun stub (the guards' step): BODY is its bash code; its stderr is dropped so
# that a stub left sleeping does not hold the test's output open.
stub_srun() {
  printf '#!/bin/bash\nexec 2>/dev/null\n%s\n' "$1" >"$stubs/srun"
  chmod +x "$stubs/srun"
}

# in_job CODE: runs CODE in a batch shell of a 2-node job with hpc_job.bash loaded.
in_job() {
  PATH="$stubs:$PATH" SLURM_JOB_ID=7 SLURM_JOB_NUM_NODES=2 SLURM_JOB_NODELIST='n[1-2]' SLURMD_NODENAME=n1 \
    HPC_ROOT="$HPC_ROOT" bash -c 'set -euo pipefail
# shellcheck source=/dev/null # hpc_job.bash is linted on its own (tests/run.sh)
source "$HPC_ROOT/hpc_files/lib/hpc_job.bash"
hpc_plan_toolkit_dir=$HPC_ROOT/hpc_files
'"$1"
}

# seconds DURATION: prints what the job's one reader of SLURM's times (hpc_facts_seconds) makes of
# DURATION; false when it refuses it.
seconds() {
  hpc_facts_seconds "$1" || return
  # shellcheck disable=SC2154 # set by hpc_facts_seconds (hpc_facts.bash)
  printf '%s\n' "$hpc_facts_seconds"
}

@test "hpc_facts_seconds reads squeue's durations and refuses the rest" {
  # shellcheck source=/dev/null # hpc_job.bash is linted on its own (tests/run.sh)
  source "$HPC_ROOT/hpc_files/lib/hpc_job.bash"
  assert_equal "$(seconds 5:00)" 300
  assert_equal "$(seconds 1:02:03)" 3723
  assert_equal "$(seconds 2-00:00:09)" 172809
  assert_equal "$(seconds 08:09)" 489
  run seconds UNLIMITED
  assert_failure 1
  run seconds INVALID
  assert_failure 1
}

@test "setup bound: 3/4 of the time left, at least 60 s, HPC_JOB_SETUP_TIMEOUT wins, a day when unlimited" {
  # shellcheck disable=SC2016 # code for the job's shell, expanded there
  run in_job 'hpc_job_time_bounds; echo "$hpc_job_time_left $hpc_job_setup_timeout"'
  assert_output "600 450"
  # shellcheck disable=SC2016 # code for the job's shell, expanded there
  run in_job 'HPC_JOB_SETUP_TIMEOUT=5 hpc_job_time_bounds; echo "$hpc_job_time_left $hpc_job_setup_timeout"'
  assert_output "600 5"
  printf '#!/bin/bash\necho 0:40\n' >"$stubs/squeue"
  # shellcheck disable=SC2016 # code for the job's shell, expanded there
  run in_job 'hpc_job_time_bounds; echo "$hpc_job_setup_timeout"'
  assert_output 60
  printf '#!/bin/bash\necho UNLIMITED\n' >"$stubs/squeue"
  # shellcheck disable=SC2016 # code for the job's shell, expanded there
  run in_job 'hpc_job_time_bounds; echo "$hpc_job_time_left"'
  assert_output 86400
}

@test "a node that never says ready fails the job after the setup bound, naming the node" {
  # n2 would answer after 60 s, the default bound is 60 s: under 20 is the 2 s bound's doing,
  # whatever the load.
  stub_srun 'echo "ready n1"; exec sleep 60'
  SECONDS=0
  run in_job 'HPC_JOB_SETUP_TIMEOUT=2 hpc_job_start_guards; echo not reached'
  assert_failure 1
  assert_output "[hpc n1] FAILED at step 'node setup': node(s) n2 not ready within 2 s (the bound: 3/4 of the job's time left, or HPC_JOB_SETUP_TIMEOUT)"
  ((SECONDS < 20)) || fail "waited ${SECONDS}s for the node instead of the 2 s bound"
}

@test "a lost stop signal is sent again until the node answers; no warning then" {
  # The stub answers only the second SIGUSR2, as if the first had been lost.
  # shellcheck disable=SC2016 # code for the job's shell, expanded there
  stub_srun 'n=0
trap '\''n=$((n + 1)); echo "USR2 $n" >>"$STUB_LOG"; if ((n >= 2)); then printf "stopping n1\ndone n1\nstopping n2\ndone n2\n"; exit 0; fi'\'' USR2
echo "ready n1"; echo "ready n2"
for ((i = 0; i < 40; i++)); do sleep 0.1; done'
  export STUB_LOG=$BATS_TEST_TMPDIR/log
  run in_job 'hpc_job_start_guards; HPC_JOB_STOP_RESEND=1 hpc_job_stop_guards; echo "rc $?"'
  assert_success
  assert_output "rc 0"
  # Sent again after the lost one; on a busy machine once more may go out before the answer of the
  # second is read (each second: HPC_JOB_STOP_RESEND).
  run cat "$STUB_LOG"
  assert_line --index 0 "USR2 1"
  assert_line --index 1 "USR2 2"
  ((${#lines[@]} <= 3)) || fail "the stop signal was sent ${#lines[@]} times"
}

@test "a node that never answers the stop signal: the wait gives up after its bound, names the node, status 0" {
  stub_srun 'trap '\''printf "stopping n1\ndone n1\n"'\'' USR2
echo "ready n1"; echo "ready n2"
for ((i = 0; i < 40; i++)); do sleep 0.1; done'
  SECONDS=0
  run in_job 'hpc_job_start_guards; HPC_JOB_STOP_RESEND=1 HPC_JOB_STOP_TIMEOUT=3 hpc_job_stop_guards; echo "rc $?"'
  assert_success
  assert_line --index 0 "[hpc n1] the guard of node(s) n2 did not answer the stop signal within 3 s (sent every 1 s): the cleanup of its SLURM_TMPDIR may not have run; SLURM's end of the job will signal it again"
  assert_line --index 1 "rc 0"
  ((SECONDS < 20)) || fail "took ${SECONDS}s"
}

@test "a guard whose cleanup failed fails the stop (the job's copy-back step)" {
  stub_srun 'trap '\''printf "stopping n1\ncleanup-failed n1\nstopping n2\ndone n2\n"; exit 1'\'' USR2
echo "ready n1"; echo "ready n2"
for ((i = 0; i < 40; i++)); do sleep 0.1; done'
  run in_job 'hpc_job_start_guards; hpc_job_stop_guards || echo "rc $?"'
  assert_output "rc 1"
}

@test "a guards' step that ends before every node confirmed its cleanup: said in the log" {
  stub_srun 'trap '\''printf "stopping n1\ndone n1\n"; exit 0'\'' USR2
echo "ready n1"; echo "ready n2"
for ((i = 0; i < 40; i++)); do sleep 0.1; done'
  run in_job 'hpc_job_start_guards; hpc_job_stop_guards; echo "rc $?"'
  assert_output "[hpc n1] the guards' step ended before node(s) n2 confirmed its cleanup (see above)
rc 0"
}
