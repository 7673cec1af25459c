# shellcheck shell=bash
# singularity.bash: the runner of an Apptainer/Singularity image (-s), with
# singularity_hpc_files/container_runner.bash. At submission: the checks of the image, of
# --workdir (a folder inside the container) and of --data. In a task (hpc_job_task): the
# runtime's command line. The interface of a runner: docs/architecture.md.

# What this file reads, set by the others: declared here, not set (values already there are
# kept), so that the linter knows each name and catches a misspelt one.
# The job's plan file: hpc_plan_*; the job: scratch_dir, exp_name.
declare -g hpc_plan_container_lib hpc_plan_container_workdir hpc_plan_image scratch_dir exp_name
# At submission: hpc_options.bash: the options; hpc_facts_locate: hpc_container_lib;
# container_runner.bash: what its checks keep.
declare -g hpc_opt_singularity hpc_opt_workdir hpc_container_lib hpc_container_image hpc_container_workdir
declare -ga hpc_opt_data

# shellcheck disable=SC2034 # hpc_submit_image and hpc_submit_workdir are read by hpc_plan_adopt
# hpc_runner_singularity_check: (submission, before the plan) the image must be a .sif file,
# --workdir an absolute path inside the container, --data what the container sees (exit 2
# otherwise, one line); sets hpc_submit_image and hpc_submit_workdir, which the plan copies.
hpc_runner_singularity_check() {
  # --runner singularity without its image.
  [[ -n $hpc_opt_singularity ]] ||
    hpc_die_usage "--runner" "'singularity' runs an image; accepted: -s/--singularity-container IMAGE.sif"
  # shellcheck source=singularity_hpc_files/container_runner.bash
  source "$hpc_container_lib"
  hpc_container_check_image "$hpc_opt_singularity" || exit 2
  hpc_submit_image=$hpc_container_image
  if [[ -n $hpc_opt_workdir ]]; then
    hpc_container_check_workdir "$hpc_opt_workdir" || exit 2
    hpc_submit_workdir=$hpc_container_workdir
  fi
  if ((${#hpc_opt_data[@]})); then
    hpc_container_check_data "${hpc_opt_data[@]}" || exit 2
  fi
}

# hpc_runner_singularity_prepare: (submission, after the confirmation) nothing to make: the image
# is copied to each node when the job starts (hpc_container_node_setup).
hpc_runner_singularity_prepare() {
  :
}

# shellcheck disable=SC2034 # hpc_runner_* are read by hpc_submit_dry_run
# hpc_runner_singularity_preview: (dry run) nothing would be made first: hpc_runner_preview empty.
# The program starts in the container's working folder, always named by HPC_WORKDIR.
hpc_runner_singularity_preview() {
  hpc_runner_preview='' hpc_runner_start_text='' hpc_runner_sets_workdir=1 hpc_runner_env_text=''
}

# shellcheck disable=SC2034 # read by the job (hpc_job.bash) and the dry run
# hpc_runner_singularity_plan: (the plan) a container job has no venv.
hpc_runner_singularity_plan() {
  hpc_plan_venv=''
}

# shellcheck disable=SC2034 # read by the job (hpc_job.bash) and the dry run
# hpc_runner_singularity_folders EXP_DIR [TASK]: (the batch shell and the dry run) W&B writes into
# /scratch_storage, the container's own folder on scratch (the host's paths are not visible in
# it): nothing to make on the host (hpc_runner_venv_folders says what these are).
hpc_runner_singularity_folders() {
  hpc_runner_wandb_dir=/scratch_storage hpc_runner_wandb_host=''
  hpc_runner_wandb_note=" (in the container: $1/singularity_JOBID_TASK)"
}

# shellcheck disable=SC2034 # read by the job (hpc_job.bash) and the dry run
# hpc_runner_singularity_python: (the job) the node's python3 runs the toolkit's helpers.
hpc_runner_singularity_python() {
  hpc_runner_python=python3
}

# hpc_runner_singularity_node_work: (the job) true: every node copies the image before the program.
hpc_runner_singularity_node_work() {
  return 0
}

# hpc_runner_singularity_node_setup PATH: (each node's guard, PATH its SLURM_TMPDIR) copies the
# image into PATH (hpc_container_node_setup); false when it cannot.
hpc_runner_singularity_node_setup() {
  # shellcheck source=singularity_hpc_files/container_runner.bash
  source "$hpc_plan_container_lib"
  hpc_container_node_setup "$hpc_plan_image" "$1"
}

# shellcheck disable=SC2034 # hpc_runner_here_problem: read by the caller
# hpc_runner_singularity_here SOURCE_DIR: (the login node) false: a container's command runs on a
# node, where the image is (hpc_runner_here_problem says so).
hpc_runner_singularity_here() {
  hpc_runner_here_problem="runs in a container"
  return 1
}

# hpc_runner_singularity_enter TEMPLATE...: loads the container runner, finds the runtime, hands
# the program's variables over (APPTAINERENV_/SINGULARITYENV_, never argv) and expands the
# command with the container's paths into hpc_configs_argv.
hpc_runner_singularity_enter() {
  # shellcheck source=singularity_hpc_files/container_runner.bash
  source "$hpc_plan_container_lib"
  hpc_runner_runtime=$(hpc_container_runtime) ||
    hpc_job_fail "container" "no container runtime on this node (see above)"
  hpc_runner_workdir=${hpc_plan_container_workdir:-$hpc_container_default_workdir}
  # What the program sees reaches it through APPTAINERENV_/SINGULARITYENV_, never argv.
  hpc_container_export_job_env "$hpc_runner_workdir"
  # The command's paths are the ones inside the container (/scratch_storage, /tmp, ...).
  hpc_container_expand "$hpc_runner_workdir" "$@" ||
    hpc_job_fail "command" "the configs file refers to a variable this job does not define"
}

# hpc_runner_singularity_wrap ARGV...: sets hpc_runner_argv to the runtime's command line that
# runs ARGV in the node's copy of the image, with the job's binds.
# shellcheck disable=SC2034 # hpc_runner_argv: read by hpc_job_runner_wrap
hpc_runner_singularity_wrap() {
  hpc_container_argv "$hpc_runner_runtime" "$SLURM_TMPDIR" "$scratch_dir" "$exp_name" "$hpc_runner_workdir" "$@" ||
    hpc_job_fail "container" "cannot run the container (see above)"
  hpc_runner_argv=("${hpc_container_cmd[@]}")
}
