#!/usr/bin/env bats
# A preempted run of a job submitted without --requeue N (a map's task, a study's run, any job):
# SLURM cancels a preempted job that is not requeueable, so at SLURM's notice the batch shell makes
# its job requeueable (then SLURM's end of the grace time requeues it, and so may the batch shell
# after a program that stopped early); the run's own final state, for a map's gather or a study's
# report, is PREEMPTED: neither done (its program may have exited 0 at the notice) nor failed.
# shellcheck disable=SC2030,SC2031 # each @test runs in its own subshell: what it exports stays there, on purpose

bats_require_minimum_version 1.5.0

setup() {
  load '../helpers/common'
  load '../helpers/stub'
  tmp=$(hpc_test_tmp)
  # shellcheck source=/dev/null # hpc_job.bash is linted on its own (tests/run.sh)
  source "$HPC_ROOT/hpc_files/lib/hpc_job.bash"
  export SLURM_JOB_ID=4242 SLURMD_NODENAME=n1 HPC_WARNING_SIGNAL=USR1 scratch_dir=$tmp/scratch SLURM_RESTART_COUNT=0
  mkdir -p "$scratch_dir/hpc_outputs"
  # shellcheck disable=SC2034 # read by hpc_job_signals.bash
  hpc_job_warned=0 hpc_job_ended_by_slurm=0 hpc_plan_requeue=0
}

# job_line PREEMPT_TIME [STATE]: scontrol -o show job's line for job 4242.
job_line() {
  printf 'echo "JobId=4242 JobName=x JobState=%s Reason=None PreemptEligibleTime=2026-11-28T11:53:27 PreemptTime=%s"' \
    "${2:-RUNNING}" "$1"
}

@test "preemption notice to a job without --requeue: it is made requeueable at once (SLURM would cancel it), said in its log, then requeued" {
  stub scontrol "-o show job 4242 : $(job_line 2026-11-28T11:53:31)" 'update JobId=4242 Requeue=1 : true' \
    'requeue 4242 : true'
  hpc_job_forward USR1 2>"$tmp/log"
  run cat "$tmp/log"
  assert_line --index 0 --partial '[hpc n1] preempted by a higher-priority job (SIGUSR1'
  local want="[hpc n1] made requeueable (it was submitted without --requeue N):"
  want+=" SLURM requeues a preempted job that is, and cancels one that is not"
  assert_line --index 1 "$want"
  run hpc_job_maybe_requeue
  assert_output "[hpc n1] requeueing after the preemption (restart 1; a preemption does not count against --requeue 0)"
  unstub scontrol
}

@test "preemption notice to a job with --requeue N: already requeueable, not updated; an update refused is said, the run goes on" {
  hpc_plan_requeue=2
  stub scontrol "-o show job 4242 : $(job_line 2026-11-28T11:53:31)"
  run hpc_job_forward USR1
  assert_success
  refute_output --partial requeueable
  unstub scontrol
  # shellcheck disable=SC2034 # read by hpc_job_signals.bash
  hpc_plan_requeue=0
  stub scontrol "-o show job 4242 : $(job_line 2026-11-28T11:53:31)" 'update JobId=4242 Requeue=1 : exit 1'
  run hpc_job_forward USR1
  assert_success
  local want="[hpc n1] scontrol update JobId=4242 Requeue=1 failed:"
  want+=" SLURM may cancel this preempted run instead of requeueing it"
  assert_line "$want"
  unstub scontrol
}

@test "a preempted run's own final state is PREEMPTED, whatever its program's exit status; a run not preempted keeps its exit status's" {
  local status
  # shellcheck source=hpc_files/lib/hpc_followup.bash
  source "$HPC_ROOT/hpc_files/lib/hpc_followup.bash"
  for status in 0 1 143; do
    stub scontrol "show job -o 4242 : $(job_line 2026-11-28T11:53:31 COMPLETING)"
    hpc_job_preempted=1 hpc_followup_final_state "$status"
    assert_equal "$status: $hpc_followup_state" "$status: PREEMPTED"
    unstub scontrol
  done
  stub scontrol "show job -o 4242 : $(job_line None)"
  hpc_job_preempted=0 hpc_followup_final_state 0
  assert_equal "$hpc_followup_state" COMPLETED
  unstub scontrol
}
