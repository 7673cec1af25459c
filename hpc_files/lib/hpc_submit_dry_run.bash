# shellcheck shell=bash
# hpc_submit_dry_run.bash: what --dry-run prints (the sbatch invocation, the plan's record, the
# job script, the program's environment and files, the summary, SLURM's answer to --test-only).
# Loaded by hpc_submit_main only for --dry-run; creates nothing.

# What this library reads, set by the others: declared here, not set (values already there are
# kept), so that the linter knows each name and catches a misspelt one.
# hpc_options.bash: the options; hpc_plan.bash: the plan; the compiled profile; the runner: its
# preview; hpc_configs.bash: the command's words; hpc_stage_submit.bash: the data's archive;
# hpc_submit.bash: the secrets on the command line.
declare -g hpc_plan_exp_name hpc_plan_kind hpc_plan_launcher hpc_plan_outputs_dir \
  hpc_plan_python_helpers hpc_plan_runner hpc_plan_scratch_dir hpc_plan_script \
  hpc_plan_text hpc_profile_tmpdir_provided hpc_profile_tmpdir_root hpc_stage_archive \
  hpc_runner_preview hpc_facts_omp_threads hpc_runner_wandb_dir hpc_runner_wandb_note hpc_runner_env_text \
  hpc_runner_sets_workdir hpc_runner_start_text
declare -ga hpc_opt_settings hpc_configs_words hpc_facts_program_env hpc_opt_data hpc_plan_sbatch_args hpc_stage_paths \
  hpc_submit_secret_names

# hpc_submit_own_folders_text: prints where the job's files land: checkpoints_dir (the mode's
# dry_folders hook: a repeat's first and last task's seed too), WANDB_DIR and the folder the
# program starts in (see hpc_job_own_folders), each array task its own (the mode's tasks hook).
hpc_submit_own_folders_text() {
  local task='' exp=$hpc_plan_scratch_dir/$hpc_plan_exp_name
  ! hpc_mode tasks || task=/task_N
  hpc_mode dry_folders "$exp/checkpoints$task"
  if [[ -n ${WANDB_DIR:-} ]]; then
    printf 'WANDB_DIR=%s (from this shell)\n' "$WANDB_DIR"
  else
    # The job's own rule (hpc_job_own_folders), the runner's.
    "hpc_runner_${hpc_plan_runner}_folders" "$exp" "${task#/}"
    printf 'WANDB_DIR=%s%s\n' "$hpc_runner_wandb_dir" "$hpc_runner_wandb_note"
  fi
  if [[ -n ${hpc_plan_workdir:-} ]]; then
    printf 'working folder: %s%s (HPC_WORKDIR)\n' "$hpc_plan_workdir" "$task"
  elif [[ -n $hpc_runner_start_text ]]; then
    printf 'working folder: %s\n' "$hpc_runner_start_text"
  fi
}

# hpc_mode_any_dry_folders CHECKPOINTS: prints the job's checkpoints_dir.
hpc_mode_any_dry_folders() { printf 'checkpoints_dir=%s\n' "$1"; }

# hpc_mode_any_defines NAME: false: no variable of the program is a mode's own.
hpc_mode_any_defines() { return 1; }

# hpc_submit_environment: prints the environment the job's program gets, and flags references of
# the configs file that nothing will define in the job.
hpc_submit_environment() {
  # Locals named so that no configs file uses them: ${!_hpc_env_name} must see only the caller's variables.
  local _hpc_env_name _hpc_env_value _hpc_env_required _hpc_env_defined -
  # Values of this shell's variables pass through here: no bash -x trace (restored on return).
  set +x
  hpc_plan_processes
  hpc_facts_program_env
  printf '%s\n' "${hpc_facts_program_env[@]}"
  # One exported here is passed on by sbatch and wins.
  [[ -z ${OMP_NUM_THREADS:-} ]] ||
    printf 'OMP_NUM_THREADS=%s (from this shell; the CPUs of each process are %s)\n' \
      "$OMP_NUM_THREADS" "$hpc_facts_omp_threads"
  hpc_submit_own_folders_text
  case $hpc_profile_tmpdir_provided in
    true) printf 'SLURM_TMPDIR=(made by the cluster on every node)\n' ;;
    false)
      printf 'SLURM_TMPDIR=(made by the toolkit on every node under %s, removed at the end)\n' \
        "$hpc_profile_tmpdir_root"
      ;;
    *)
      printf "SLURM_TMPDIR=(the cluster's when it has one, else made by the toolkit under %s)\n" \
        "$hpc_profile_tmpdir_root"
      ;;
  esac
  [[ $hpc_plan_launcher == none ]] ||
    printf 'MASTER_ADDR=(the first node)\nMASTER_PORT=%s\n' "${MASTER_PORT:-(derived from the job id, checked free)}"
  printf 'PYTHONPATH=%s (the toolkit'"'"'s hpc_helpers)%s\n' "$hpc_plan_python_helpers" "$hpc_runner_env_text"
  printf 'and the rest of this shell'"'"'s environment, as sbatch passes it on.\n'
  while IFS= read -r _hpc_env_name; do
    _hpc_env_required=1 _hpc_env_defined=''
    [[ $_hpc_env_name == *:- ]] && _hpc_env_required=0 && _hpc_env_name=${_hpc_env_name%:-}
    case $_hpc_env_name in
      # --repeat's tasks see their index as seed (hpc_job_own_folders); other jobs have none.
      seed) ! hpc_mode defines seed || _hpc_env_defined="defined by the job" ;;&
      source_dir | project_name | scratch_dir | exp_name | \
        num_nodes | gpus_per_node | num_processes | checkpoints_dir | \
        WANDB_DIR | SLURM_TMPDIR | SLURM_* | PYTHONPATH | VIRTUAL_ENV | \
        PATH | MASTER_ADDR | MASTER_PORT) _hpc_env_defined="defined by the job" ;;
      HPC_WORKDIR)
        # --workdir's (a container's always): one of this shell is not passed on.
        _hpc_env_defined="NOT DEFINED: the job will fail before the program starts"
        [[ -z $hpc_plan_workdir && $hpc_runner_sets_workdir == 0 ]] || _hpc_env_defined="defined by the job"
        ;;
      map_index | map_item | map_count | map_dir | task_dir)
        _hpc_env_defined="NOT DEFINED: only the tasks of a map (--map-range, --map-over) have it"
        ! hpc_mode defines "$_hpc_env_name" || _hpc_env_defined="defined by the job (each map task's own)"
        ;;
      *)
        if [[ -n ${_hpc_env_defined:-} ]]; then
          :
        elif [[ -n ${!_hpc_env_name+x} ]]; then
          # Secrets by name (in any case), and any secret's value inside another variable's.
          _hpc_env_value='(masked)'
          if ! hpc_secret_name "$_hpc_env_name"; then
            _hpc_env_value=${!_hpc_env_name}
            hpc_mask_vars _hpc_env_value
          fi
          _hpc_env_defined="from this shell: $_hpc_env_value"
        elif ((_hpc_env_required)); then
          _hpc_env_defined="NOT DEFINED: the job will fail before the program starts"
        else
          _hpc_env_defined="not defined: its default is used"
        fi
        ;;
    esac
    printf 'configs file uses $%s: %s\n' "$_hpc_env_name" "$_hpc_env_defined"
  done < <(hpc_configs_references "${hpc_configs_words[@]}")
  # A secret on the program's command line: what a submission says on stderr.
  hpc_submit_secret_argv "${hpc_configs_words[@]}"
  for _hpc_env_name in ${hpc_submit_secret_names[@]+"${hpc_submit_secret_names[@]}"}; do
    hpc_submit_secret_argv_text "$_hpc_env_name"
  done
}

# hpc_submit_dry_run: prints what would be submitted, asks SLURM to validate it when sbatch is
# here (sbatch --test-only, reading the script from stdin), submits and creates nothing.
# Returns 1 when SLURM refuses the request.
hpc_submit_dry_run() {
  local script answer plan rc=0
  # What the runner would use (the venv's build it would run from), and would make first.
  "hpc_runner_${hpc_plan_runner}_preview"
  # The plan file's name, as it would be written (its stamp is made when it is written).
  plan=$hpc_plan_outputs_dir/${hpc_plan_exp_name}_${hpc_plan_kind}_STAMP.plan
  hpc_plan_record
  hpc_plan_render "$plan"
  script=$hpc_plan_script
  printf '== sbatch invocation\nsbatch'
  printf ' %q' "${hpc_plan_sbatch_args[@]}"
  printf ' JOB_SCRIPT\n\n== plan (written as %s when submitted)\n' "$plan"
  # The record holds the configs file's templates: a secret written literally there is masked.
  printf '%s' "$hpc_plan_text" | hpc_mask_stream
  printf '\n== job script\n'
  printf '%s\n' "$script" | hpc_mask_stream
  printf '\n== environment of the program\n'
  hpc_submit_environment
  # Where each value that is not the built-in default came from (hpc_opt_settings).
  hpc_opt_settings
  printf '\n== settings (where each value that is not the built-in default came from)\n'
  ((${#hpc_opt_settings[@]} == 0)) || printf '%s\n' "${hpc_opt_settings[@]}" | hpc_mask_stream
  printf '\n== summary\n%s\n' "$(hpc_plan_summary)"
  [[ -z $hpc_runner_preview ]] || printf '%s\n' "$hpc_runner_preview"
  if [[ -n $hpc_plan_workdir && ! -d $hpc_plan_workdir ]]; then
    printf 'The working folder %s would be made.\n' "$hpc_plan_workdir"
  fi
  if ((${#hpc_opt_data[@]})); then
    if hpc_stage_cached "$hpc_plan_scratch_dir" "${hpc_opt_data[@]}"; then
      printf 'Data: the archive %s is current and would be reused.\n' "$hpc_stage_archive"
    else
      printf 'Data: an archive of %s would be built under %s/.staging/ first.\n' \
        "${hpc_stage_paths[*]}" "$hpc_plan_scratch_dir"
    fi
  fi
  if command -v sbatch >/dev/null 2>&1; then
    # --output names a folder that may not exist yet: validate with the output left to SLURM.
    answer=$(hpc_slurm sbatch --test-only "${hpc_plan_sbatch_args[@]/#--output=*/--output=/dev/null}" 2>&1 \
      <<<"$script") || rc=$?
    printf '\n== SLURM says (sbatch --test-only)\n%s\n' "$answer"
  else
    printf '\n(sbatch is not here: SLURM was not asked to validate the request)\n'
  fi
  printf '\nDry run: nothing was submitted or created.\n'
  return "$((rc == 0 ? 0 : 1))"
}
