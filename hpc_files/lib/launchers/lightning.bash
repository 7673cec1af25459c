# shellcheck shell=bash
# lightning.bash: one SLURM task per GPU, started by srun; Lightning (or any program that reads
# SLURM's variables) makes each task a rank. The interface of a launcher: docs/architecture.md.

# What this file reads, set by the others: declared here, not set (values already there are
# kept), so that the linter knows each name and catches a misspelt one.
# hpc_plan.bash: the plan; hpc_job.bash: the rank-lines code.
declare -g hpc_plan_cpus hpc_plan_gpus hpc_plan_label_ranks hpc_job_rank_lines_code

# hpc_launcher_lightning_describe: prints its lines of --help.
hpc_launcher_lightning_describe() {
  printf '%s\n' "lightning: one SLURM task per GPU, started by srun (Lightning reads" \
    "SLURM's variables)."
}

# hpc_launcher_lightning_plan: (submission) one task per GPU, each with -c CPUs; exit 2 without
# GPUs or without python.
# shellcheck disable=SC2034 # sets the plan's ratios from the plan (hpc_plan.bash)
hpc_launcher_lightning_plan() {
  hpc_plan_check_gpus_python
  hpc_plan_ntasks_per_node=$hpc_plan_gpus
  hpc_plan_cpus_per_task=$hpc_plan_cpus
}

# hpc_launcher_lightning_processes: sets hpc_launcher_processes to its processes per node: one per GPU.
# shellcheck disable=SC2034 # hpc_launcher_processes: read by hpc_plan.bash; hpc_plan_gpus: the plan's
hpc_launcher_lightning_processes() {
  hpc_launcher_processes=$hpc_plan_gpus
}

# hpc_launcher_lightning_srun: (batch shell) the job's own tasks; the first failure stops the rest.
# shellcheck disable=SC2034 # hpc_launcher_srun: read by hpc_job.bash
hpc_launcher_lightning_srun() {
  hpc_launcher_srun=(--kill-on-bad-exit=1)
}

# hpc_launcher_lightning_task ARGV...: (a task: one rank) the command in the runner; with
# --label-ranks the rank-lines wrapper in front, outside the runner: each srun task is a rank, with
# its own pipe to slurmstepd, which passes on whole lines.
hpc_launcher_lightning_task() {
  hpc_job_runner_wrap "$@"
  if ((hpc_plan_label_ranks)); then
    hpc_launcher_argv=(bash -c "$hpc_job_rank_lines_code" hpc_rank_lines "rank=${SLURM_PROCID:?}"
      "${hpc_launcher_argv[@]}")
  fi
}

# hpc_launcher_lightning_workers: false: each task is a rank itself.
hpc_launcher_lightning_workers() {
  return 1
}
