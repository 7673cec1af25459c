# shellcheck shell=bash
# modes/sweep.bash: -w ID: W&B sweep agents, one array task each, on one node with one GPU
# (hpc_sweep.bash: the agents' path, count and key).

# What this mode reads, set by the others: declared here, not set, so that the linter knows each name.
declare -g hpc_lib_dir hpc_module_problem

# hpc_mode_sweep_describe: one line on the mode.
hpc_mode_sweep_describe() {
  printf '%s\n' "W&B sweep agents (-w), one array task each"
}

# hpc_mode_sweep_plan: the key's place checked, one GPU per agent, the plan, the agents' array.
hpc_mode_sweep_plan() {
  # shellcheck source=hpc_files/lib/hpc_sweep.bash
  source "$hpc_lib_dir/hpc_sweep.bash"
  if [[ -z ${HOME:-} ]] && ! [[ -v WANDB_API_KEY && ${#WANDB_API_KEY} -gt 0 ]]; then
    local msg="is not set, and neither is WANDB_API_KEY: the W&B API key"
    msg+=" is read from \$HOME/wandb_credentials.txt; set one of them"
    hpc_die_usage "HOME" "$msg"
  fi
  hpc_sweep_before_plan
  hpc_plan_make
  hpc_sweep_plan
}

# hpc_mode_sweep_tasks: true: each agent has folders of its own (task_N).
hpc_mode_sweep_tasks() { :; }

# hpc_mode_sweep_job_task: (each task, before its program) the agent's key, from the job's
# environment or read here on the node: never on argv.
hpc_mode_sweep_job_task() {
  hpc_module_load "$hpc_lib_dir" hpc_sweep_load_key hpc_sweep || hpc_job_fail "wandb key" "$hpc_module_problem"
  hpc_sweep_load_key ||
    hpc_job_fail "wandb key" "no WANDB_API_KEY in the job and no readable $(hpc_sweep_credentials)"
}
