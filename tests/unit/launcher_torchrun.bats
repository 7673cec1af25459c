#!/usr/bin/env bats
# -W torchrun (hpc_files/lib/launchers/torchrun.bash) without SLURM: the command each node's task
# runs.
# Set by hpc_job.bash and the launcher, whose sources shellcheck does not follow here; declared
# for shellcheck.
declare -g hpc_job_rank_lines_code hpc_launcher_argv

bats_require_minimum_version 1.5.0

setup() {
  load '../helpers/common'
  # shellcheck source=/dev/null # hpc_job.bash is linted on its own (tests/run.sh)
  source "$HPC_ROOT/hpc_files/lib/hpc_job.bash"
}

# task NODE_ID NODES GPUS LABEL ARGV...: the command the task on node NODE_ID runs for ARGV (the
# expanded configs command) in the venv, one word per line.
task() {
  export SLURM_NODEID=$1 SLURM_JOB_NUM_NODES=$2 MASTER_ADDR=n1 MASTER_PORT=23456
  # The job's plan, as its plan file sets it.
  # shellcheck disable=SC2034 # read by the launcher and the runner
  hpc_plan_gpus=$3 hpc_plan_label_ranks=$4 hpc_plan_runner=venv
  shift 4
  hpc_launcher_load torchrun
  hpc_runner_load venv
  hpc_launcher_torchrun_task "$@"
  printf '%s\n' "${hpc_launcher_argv[@]}"
}

@test "torchrun task, 2 nodes x 2 GPUs: the node's rank, the first node's address and the job's port" {
  run task 1 2 2 0 python train.py --lr 1
  assert_success
  local want
  want=$(printf '%s\n' python -m torch.distributed.run --nnodes=2 --nproc_per_node=2 \
    --node_rank=1 --master_addr=n1 --master_port=23456 \
    --no-python bash -c "$hpc_job_rank_lines_code" hpc_rank_lines - python train.py --lr 1)
  assert_output "$want"
}

@test "torchrun task, 1 node: --standalone; --label-ranks labels each worker" {
  run task 0 1 2 1 python3 -u -m pkg.train
  assert_success
  local want
  want=$(printf '%s\n' python3 -m torch.distributed.run --nnodes=1 --nproc_per_node=2 \
    --standalone --no-python bash -c "$hpc_job_rank_lines_code" hpc_rank_lines rank python3 -u -m pkg.train)
  assert_output "$want"
}
