# shellcheck shell=bash
# accelerate.bash: Hugging Face Accelerate's launcher: one task per node, each running
# 'accelerate launch' (python -m accelerate.commands.launch), which starts one process per GPU
# through torch's elastic agent, as torchrun does, with the same rules: node i of the job is
# --machine_rank i, --main_process_ip is MASTER_ADDR (the first node) and --main_process_port
# MASTER_PORT (hpc_job_master: the job's port); the first failed worker's exit code is the
# node's. The interface of a launcher: docs/architecture.md.

# What this file reads, set by the others: declared here, not set (values already there are
# kept), so that the linter knows each name and catches a misspelt one.
# hpc_plan.bash: the plan; hpc_job.bash: the rank-lines code.
declare -g hpc_plan_cpus hpc_plan_gpus hpc_plan_label_ranks hpc_plan_num_processes hpc_job_rank_lines_code

# hpc_launcher_accelerate_describe: prints its lines of --help.
hpc_launcher_accelerate_describe() {
  printf '%s\n' "accelerate: one 'accelerate launch' per node (Hugging Face Accelerate)," \
    "which starts one process per GPU, as torchrun does: node i of the job is" \
    "--machine_rank i, --main_process_ip the first node (MASTER_ADDR)," \
    "--main_process_port MASTER_PORT."
}

# hpc_launcher_accelerate_plan: (submission) one task per node with -c CPUs for each of its GPU
# processes; exit 2 without GPUs or without python.
# shellcheck disable=SC2034 # sets the plan's ratios from the plan (hpc_plan.bash)
hpc_launcher_accelerate_plan() {
  hpc_plan_check_gpus_python
  hpc_plan_ntasks_per_node=1
  hpc_plan_cpus_per_task=$((hpc_plan_cpus * hpc_plan_gpus))
}

# hpc_launcher_accelerate_processes: sets hpc_launcher_processes to its processes per node: one
# per GPU.
# shellcheck disable=SC2034 # hpc_launcher_processes: read by hpc_plan.bash; hpc_plan_gpus: the plan's
hpc_launcher_accelerate_processes() {
  hpc_launcher_processes=$hpc_plan_gpus
}

# hpc_launcher_accelerate_srun: (batch shell) one task per node: --ntasks explicitly, since srun
# inherits the job's SLURM_NTASKS; the first failure stops the rest.
# shellcheck disable=SC2034 # hpc_launcher_srun: read by hpc_job.bash
hpc_launcher_accelerate_srun() {
  hpc_launcher_srun=(--ntasks="$SLURM_JOB_NUM_NODES" --ntasks-per-node=1 --kill-on-bad-exit=1)
}

# hpc_launcher_accelerate_task ARGV...: (a task: one node's launcher) accelerate launch in front
# of the command, all in the runner. --no_python: each process runs the user's command as
# written (python and its options, python -m included) behind the rank-lines wrapper, as
# torchrun's workers do: the processes of a node share one output pipe. --multi_gpu is what
# starts more than one process (accelerate refuses it for one; one process runs alone).
hpc_launcher_accelerate_task() {
  local py=$1 lines_mode=- processes=${hpc_plan_num_processes:?}
  local -a launch=()
  ((processes < 2)) || launch=(--multi_gpu)
  launch+=(--num_machines "$SLURM_JOB_NUM_NODES" --machine_rank "$SLURM_NODEID" --num_processes "$processes"
    --main_process_ip "$MASTER_ADDR" --main_process_port "$MASTER_PORT")
  # Static rendezvous at MASTER_ADDR:MASTER_PORT (torch's --master_addr/--master_port), as torchrun.
  ((SLURM_JOB_NUM_NODES < 2)) || launch+=(--same_network)
  ((hpc_plan_label_ranks == 0)) || lines_mode=rank
  hpc_job_runner_wrap "$py" -m accelerate.commands.launch "${launch[@]}" \
    --no_python bash -c "$hpc_job_rank_lines_code" hpc_rank_lines "$lines_mode" "$@"
}

# hpc_launcher_accelerate_workers: true: accelerate runs torch's elastic agent, which exits 1
# whatever its workers did; its stderr names the first failed worker (hpc_job_supervise reads it).
hpc_launcher_accelerate_workers() {
  return 0
}
