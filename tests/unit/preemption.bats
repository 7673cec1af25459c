#!/usr/bin/env bats
# hpc_files/lib/hpc_job_signals.bash without SLURM: a run preempted by a higher-priority job gets
# SLURM's notice as the warning signal (a site's preempt_send_user_signal); the batch shell tells it
# from the time-limit warning by the job's PreemptTime, records it, requeues the job whether or not
# it has --requeue N, and the restart counts not against --requeue N, which is for time limits.
# shellcheck disable=SC2030,SC2031 # each @test runs in its own subshell: what it exports stays there, on purpose

bats_require_minimum_version 1.5.0

setup() {
  load '../helpers/common'
  load '../helpers/stub'
  tmp=$(hpc_test_tmp)
  # shellcheck source=/dev/null # hpc_job.bash is linted on its own (tests/run.sh)
  source "$HPC_ROOT/hpc_files/lib/hpc_job.bash"
  export SLURM_JOB_ID=4242 SLURMD_NODENAME=n1 HPC_WARNING_SIGNAL=USR1 scratch_dir=$tmp/scratch
  mkdir -p "$scratch_dir/hpc_outputs"
  records=$scratch_dir/hpc_outputs
  # shellcheck disable=SC2034 # read by hpc_job_signals.bash
  hpc_job_warned=0 hpc_job_ended_by_slurm=0 hpc_plan_requeue=1
}

# job_line PREEMPT_TIME: scontrol -o show job's line for job 4242 with that PreemptTime.
job_line() {
  printf 'echo "JobId=4242 JobName=x JobState=RUNNING Reason=None PreemptEligibleTime=2026-11-28T11:53:27 PreemptTime=%s"' "$1"
}

@test "preempted run: the notice is said as such, recorded, and the job requeued without using up --requeue 1; the next run's time limit still requeues it" {
  export SLURM_RESTART_COUNT=0
  stub scontrol "-o show job 4242 : $(job_line 2026-11-28T11:53:31)" 'requeue 4242 : true'
  hpc_job_forward USR1 2>"$tmp/log"
  run cat "$tmp/log"
  assert_output "[hpc n1] preempted by a higher-priority job (SIGUSR1 at SLURM's notice; the partition's grace time ends this run): passing it to the program, then waiting for it to finish; the job is requeued"
  [ -f "$records/.hpc_preempted.4242.0" ]
  run hpc_job_maybe_requeue
  assert_success
  assert_output "[hpc n1] requeueing after the preemption (restart 1; a preemption does not count against --requeue 1)"
  # The job goes on: the record stays for the runs to come.
  hpc_job_requeue_asked=1 hpc_job_preempted=1 hpc_job_preempt_records_remove
  [ -f "$records/.hpc_preempted.4242.0" ]
  unstub scontrol

  # Run 2, warned of its time limit (PreemptTime=None): the one restart --requeue 1 allows is left.
  # Its start clears the earlier runs' requeue records, not the preemption's.
  export SLURM_RESTART_COUNT=1
  # shellcheck disable=SC2034 # read by hpc_job_signals.bash
  hpc_job_preempted=0 hpc_job_warned=0 hpc_job_requeue_asked=0
  hpc_job_requeue_records_remove
  [ -f "$records/.hpc_preempted.4242.0" ]
  stub scontrol "-o show job 4242 : $(job_line None)" 'requeue 4242 : true'
  hpc_job_forward USR1 2>"$tmp/log"
  run cat "$tmp/log"
  assert_output "[hpc n1] time-limit warning (SIGUSR1): passing it to the program, then waiting for it to finish"
  run hpc_job_maybe_requeue
  assert_output "[hpc n1] requeueing (restart 1 of 1)"
  unstub scontrol

  # Run 3, warned again: now the count is used up; the job ends, and the records with it.
  export SLURM_RESTART_COUNT=2
  stub scontrol "-o show job 4242 : $(job_line None)"
  hpc_job_forward USR1 2>/dev/null
  run hpc_job_maybe_requeue
  assert_output "[hpc n1] not requeued: 1 restart(s) done of the 1 allowed"
  hpc_job_requeue_asked=0 hpc_job_preempt_records_remove
  [ ! -e "$records/.hpc_preempted.4242.0" ]
  unstub scontrol
}

@test "preempted run of a job without --requeue: requeued all the same (its program may have stopped early and exited 0)" {
  export SLURM_RESTART_COUNT=0
  # shellcheck disable=SC2034 # read by hpc_job_signals.bash
  hpc_plan_requeue=0
  stub scontrol "-o show job 4242 : $(job_line 2026-11-28T11:53:31)" 'update JobId=4242 Requeue=1 : true' \
    'requeue 4242 : true'
  hpc_job_forward USR1 2>/dev/null
  run hpc_job_maybe_requeue
  assert_output "[hpc n1] requeueing after the preemption (restart 1; a preemption does not count against --requeue 0)"
  unstub scontrol
}

@test "preempted run that SLURM ended at the end of the grace time: SLURM requeues it; the batch shell does not" {
  export SLURM_RESTART_COUNT=0
  stub scontrol "-o show job 4242 : $(job_line 2026-11-28T11:53:31)"
  hpc_job_forward USR1 2>/dev/null
  HPC_JOB_T0=$((EPOCHSECONDS - 40)) hpc_plan_time=00-00:10:00 hpc_job_forward TERM 2>/dev/null
  run hpc_job_maybe_requeue
  assert_output "[hpc n1] preempted: SLURM ended this run at the end of the grace time and requeues the job"
  unstub scontrol
}

@test "the program's own requeue (Lightning's handler) in a preempted run is done and not counted; a silent scontrol reads as no preemption" {
  export SLURM_RESTART_COUNT=1
  printf 'hpc_plan_requeue=1\n' >"$tmp/job.plan"
  chmod 600 "$tmp/job.plan"
  export HPC_JOB_PLAN=$tmp/job.plan
  echo preempted >"$records/.hpc_preempted.4242.1"
  stub scontrol 'requeue 4242 : true'
  PATH=$HPC_ROOT/hpc_files/lib/shims:$PATH run scontrol requeue 4242
  assert_success
  assert_output "[hpc n1] requeueing for the program (scontrol requeue 4242) after the preemption; it does not count against --requeue N"
  unstub scontrol
  # scontrol that fails (the controller busy): the warning is the time limit's, as before.
  rm "$records/.hpc_preempted.4242.1"
  stub scontrol '-o show job 4242 : exit 1'
  hpc_job_forward USR1 2>"$tmp/log"
  run cat "$tmp/log"
  assert_output "[hpc n1] time-limit warning (SIGUSR1): passing it to the program, then waiting for it to finish"
  unstub scontrol
}
