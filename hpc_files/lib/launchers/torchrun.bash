# shellcheck shell=bash
# torchrun.bash: one task per node, each running torchrun (python -m torch.distributed.run),
# which starts one worker per GPU. Static rendezvous: node i of the job is torchrun's --node_rank
# i, so global rank 0 runs on the first node, MASTER_ADDR (c10d would hand out ranks in arrival
# order). The interface of a launcher: docs/architecture.md.

# What this file reads, set by the others: declared here, not set (values already there are
# kept), so that the linter knows each name and catches a misspelt one.
# hpc_plan.bash: the plan (in a task: its plan file); hpc_job.bash: the rank-lines code.
declare -g hpc_plan_cpus hpc_plan_gpus hpc_plan_label_ranks hpc_job_rank_lines_code

# hpc_launcher_torchrun_describe: prints its lines of --help.
hpc_launcher_torchrun_describe() {
  printf '%s\n' "torchrun: one torchrun per node, which starts one process per GPU" \
    "(static rendezvous: node i of the job is torchrun's --node_rank i, so" \
    "global rank 0 runs on the first node, MASTER_ADDR; port derived from" \
    "the job id); 'script' is the old name of torchrun."
}

# hpc_launcher_torchrun_plan: (submission) one task per node with -c CPUs for each of its GPU
# processes; exit 2 without GPUs or without python.
# shellcheck disable=SC2034 # sets the plan's ratios from the plan (hpc_plan.bash)
hpc_launcher_torchrun_plan() {
  hpc_plan_check_gpus_python
  hpc_plan_ntasks_per_node=1
  hpc_plan_cpus_per_task=$((hpc_plan_cpus * hpc_plan_gpus))
}

# hpc_launcher_torchrun_processes: sets hpc_launcher_processes to its processes per node: one per GPU.
# shellcheck disable=SC2034 # hpc_launcher_processes: read by hpc_plan.bash; hpc_plan_gpus: the plan's
hpc_launcher_torchrun_processes() {
  hpc_launcher_processes=$hpc_plan_gpus
}

# hpc_launcher_torchrun_srun: (batch shell) one task per node: --ntasks explicitly, since srun
# inherits the job's SLURM_NTASKS; the first failure stops the rest.
# shellcheck disable=SC2034 # hpc_launcher_srun: read by hpc_job.bash
hpc_launcher_torchrun_srun() {
  hpc_launcher_srun=(--ntasks="$SLURM_JOB_NUM_NODES" --ntasks-per-node=1 --kill-on-bad-exit=1)
}

# hpc_launcher_torchrun_task ARGV...: (a task: one node's agent) torchrun in front of the
# command, all in the runner (one container per node: torchrun runs inside it). MASTER_ADDR and
# MASTER_PORT: the batch shell's (hpc_job_master), the job's one rule.
hpc_launcher_torchrun_task() {
  local py=$1 lines_mode=-
  local rdzv=(--standalone)
  if ((SLURM_JOB_NUM_NODES > 1)); then
    # A static rendezvous: the node's index is its rank among the agents, so global rank 0
    # runs on the first node, where MASTER_ADDR points and --copy-back keeps the plain name (c10d
    # hands out ranks in arrival order).
    rdzv=(--node_rank="$SLURM_NODEID" --master_addr="$MASTER_ADDR" --master_port="$MASTER_PORT")
  fi
  # --no-python: torchrun runs the user's command as written, python and all its arguments,
  # each worker behind the rank-lines wrapper: the workers of a node share one output pipe.
  ((hpc_plan_label_ranks == 0)) || lines_mode=rank
  hpc_job_runner_wrap "$py" -m torch.distributed.run --nnodes="$SLURM_JOB_NUM_NODES" --nproc_per_node="$hpc_plan_gpus" \
    "${rdzv[@]}" --no-python bash -c "$hpc_job_rank_lines_code" hpc_rank_lines "$lines_mode" "$@"
}

# hpc_launcher_torchrun_workers: true: the agent exits 1 whatever its workers did; its stderr
# names the first failed worker (hpc_job_supervise reads it).
hpc_launcher_torchrun_workers() {
  return 0
}
