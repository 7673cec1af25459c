#!/usr/bin/env bats
# Attacks on issue 40's append mode on the cluster: every job's log is opened for appending
# (--open-mode=append), so a log left by an earlier job of the same name and id (ids given again
# after the controller's state is reset) must not run on into the new job's, nor show in 'logs'.
# Set by hpc_run_job (helpers/cluster.bash); declared for shellcheck.
declare -g job_id job_out job_state

setup_file() {
  load '../helpers/common'
  load '../helpers/cluster'
  hpc_test_project "attack40 project"
  hpc_warm_venv "$PROJECT" 'python probe.py exit 0' -e warm
}

setup() {
  load '../helpers/common'
  load '../helpers/cluster'
}

@test "a stale log of the next job's name and id: the job's first run starts it afresh; logs shows this run only" {
  local last next stale
  last=$(hpc_sbatch -o /dev/null --wrap true)
  next=$((last + 1))
  stale="$SCRATCH/attack40 project/hpc_outputs/stale_venv-none_$next.out"
  printf 'STALE line of an earlier job %s\n' "$next" >"$stale"
  touch -d '-5 minutes' "$stale"
  hpc_run_job "$PROJECT" -g 0 -e stale
  [[ $job_id == "$next" ]] || skip "another job took id $next"
  assert_equal "$job_state" "COMPLETED 0:0"
  assert_equal "$job_out" "$stale"
  run grep -c STALE "$job_out"
  assert_output 0
  run grep -c "job $next (venv, launcher none)" "$job_out"
  assert_output 1
  run bash "$PROJECT/hpc_files/job_submitter.sh" logs "$job_id" </dev/null
  assert_success
  refute_output --partial STALE
}
