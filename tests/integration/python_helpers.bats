#!/usr/bin/env bats
# hpc_helpers in real jobs: distributed.init() from SLURM's variables (srun, 2 tasks per node,
# no torchrun) and job.paths() inside a job.
# shellcheck disable=SC2016 # configs lines are single-quoted on purpose: the job expands them
# Set by hpc_run_job or hpc_submit_job (helpers/cluster.bash); declared for shellcheck.
declare -g job_out job_state

setup_file() {
  load '../helpers/common'
  load '../helpers/cluster'
  hpc_test_project "helpers project"
  # The venv: a copy of the one built once per bats run (not what this file tests).
  hpc_venv_seed "$PROJECT"
}

setup() {
  load '../helpers/common'
  load '../helpers/cluster'
}

@test "init() under srun, 2 nodes x 2 tasks, no torchrun: world 4, ranks 0..3, all-reduce 6, from SLURM's variables" {
  hpc_configs "$PROJECT" 'python probe.py ddp'
  hpc_run_job "$PROJECT" -W lightning --gpus 2 --num-nodes 2 -e slurmddp
  assert_equal "$job_state" "COMPLETED 0:0"
  run sed -n 's/^DDP \(rank=[0-9] world=4 sum=6\) .*source=slurm .*/\1/p' "$job_out"
  assert_equal "$(sort <<<"$output")" "rank=0 world=4 sum=6
rank=1 world=4 sum=6
rank=2 world=4 sum=6
rank=3 world=4 sum=6"
}

@test "python -m hpc_helpers paths inside a job prints the job's folders" {
  hpc_configs "$PROJECT" 'python -m hpc_helpers paths'
  hpc_run_job "$PROJECT" -g 0 -e pathsjob
  assert_equal "$job_state" "COMPLETED 0:0"
  run cat "$job_out"
  assert_line "source_dir=$PROJECT"
  assert_line "scratch_dir=$SCRATCH/helpers project"
  assert_line "exp_name=pathsjob"
  assert_line "checkpoints=$SCRATCH/helpers project/pathsjob/checkpoints"
}
