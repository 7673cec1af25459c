# shellcheck shell=bash
# none.bash: the launcher of one process on one node, started by the batch shell itself (no
# srun), which passes signals to it. The interface of a launcher: docs/architecture.md.

# What this file reads, set by the others: declared here, not set (values already there are
# kept), so that the linter knows each name and catches a misspelt one.
# hpc_plan.bash: the plan; hpc_options.bash: --label-ranks.
declare -g hpc_plan_cpus hpc_plan_gpus hpc_plan_nodes hpc_opt_label_ranks

# hpc_launcher_none_describe: prints its lines of --help.
hpc_launcher_none_describe() {
  printf '%s\n' "Without -W, or with -W none: one process on one node."
}

# hpc_launcher_none_plan: (submission) one node, one task with the CPUs of all its GPUs; exit 2
# on options that need a distributed launcher.
# shellcheck disable=SC2034 # sets the plan's ratios from the plan and options (hpc_plan.bash)
hpc_launcher_none_plan() {
  ((hpc_plan_nodes == 1)) ||
    hpc_die_usage "-n/--num-nodes" \
      "$hpc_plan_nodes nodes need a launcher; accepted with $(hpc_plan_distributed_text), else 1"
  ((hpc_opt_label_ranks == 0)) ||
    hpc_die_usage "--label-ranks" \
      "labels the lines of each rank of a distributed job; accepted with $(hpc_plan_distributed_text)"
  hpc_plan_ntasks_per_node=1
  hpc_plan_cpus_per_task=$((hpc_plan_cpus * (hpc_plan_gpus > 1 ? hpc_plan_gpus : 1)))
}

# hpc_launcher_none_processes: sets hpc_launcher_processes to its processes per node: one.
# shellcheck disable=SC2034 # hpc_launcher_processes: read by hpc_plan.bash
hpc_launcher_none_processes() {
  hpc_launcher_processes=1
}

# hpc_launcher_none_srun: (batch shell) no srun: the task runs in the batch shell's background.
# shellcheck disable=SC2034 # hpc_launcher_srun: read by hpc_job.bash
hpc_launcher_none_srun() {
  hpc_launcher_srun=()
}

# hpc_launcher_none_task ARGV...: (the task) the command as it is, in the runner.
hpc_launcher_none_task() {
  hpc_job_runner_wrap "$@"
}

# hpc_launcher_none_workers: false: the task is the program itself.
hpc_launcher_none_workers() {
  return 1
}
