# shellcheck shell=bash
# hpc_submit.bash: job_submitter.sh's steps in order: options, the runner's checks, profile, configs
# file, plan, then --dry-run (hpc_submit_dry_run.bash), or the confirmation, folders, the runner's
# preparation, plan file, sbatch, kept job script and manifest.

# What this library reads, set by the others: declared here, not set (values already there are
# kept), so that the linter knows each name and catches a misspelt one.
# job_submitter.sh: its own path and folder; hpc_options.bash: the options.
declare -g hpc_submitter hpc_files_dir hpc_opt_cluster \
  hpc_opt_dry_run hpc_opt_help hpc_opt_wandb_offline hpc_opt_yes
declare -ga hpc_opt_data
# hpc_plan.bash: the plan.
declare -g hpc_plan_checkpoints_dir hpc_plan_exp_name hpc_plan_job_name hpc_plan_outputs_dir \
  hpc_plan_runner hpc_plan_scratch_dir hpc_plan_summary hpc_plan_file hpc_plan_output
# hpc_manifest.bash: the manifest's path and the cluster's MaxArraySize.
declare -g hpc_manifest_path hpc_manifest_max_array_size
# hpc_slurm.bash: sbatch's answer (hpc_slurm_sbatch).
declare -g hpc_slurm_id hpc_slurm_error hpc_slurm_answer
# hpc_configs.bash: the names the command refers to (hpc_configs_reference_names).
declare -ga hpc_configs_names hpc_submit_secret_names

# shellcheck source=hpc_files/lib/hpc_pending.bash
source "${BASH_SOURCE[0]%/*}/hpc_pending.bash"

# hpc_submit_locate: sets hpc_files_dir (the running submitter's folder), hpc_source_dir (its
# parent: the project), and the folders of the runners and Python helpers, which sit beside
# hpc_files/ in the toolkit's repository and inside it in an installed project.
hpc_submit_locate() {
  hpc_source_dir=${hpc_files_dir%/*}
  hpc_source_dir=${hpc_source_dir:-/}
  hpc_facts_locate "$hpc_files_dir"
}

# hpc_submission_load: sources the libraries that a submission runs beyond this one,
# hpc_common.bash and hpc_manifest.bash (all that job_submitter.sh loads for a command): the
# options, the profile, the configs file and the plan. Called once, by job_submitter.sh for a
# submission and at the top of the file of a command that submits or prints the options (help,
# interactive, resubmit, gather, scaling-report); their globals are declared with -g.
hpc_submission_load() {
  local _hpc_lib
  for _hpc_lib in hpc_options hpc_profile hpc_configs hpc_plan; do
    # shellcheck source=/dev/null # each linted on its own
    source "${hpc_lib_dir:?}/$_hpc_lib.bash"
  done
}

# shellcheck disable=SC2034 # what the checks keep is read by hpc_plan_adopt
# hpc_submit_runner_check: loads the runner the options choose (hpc_plan_choose_runner) and runs
# its check of its options (hpc_runner_NAME_check: exit 2 with one line); what a check keeps for
# the plan (the image, the container's and the host's working folder) starts empty.
hpc_submit_runner_check() {
  hpc_submit_image='' hpc_submit_workdir='' hpc_submit_host_workdir='' hpc_plan_workdir=''
  hpc_plan_choose_runner
  if ! hpc_runner_load "$hpc_plan_runner"; then
    # The option that chose it (the default is --runner's).
    local option=--runner
    [[ -z $hpc_opt_singularity ]] || option=-s/--singularity-container
    hpc_die_usage "$option" "runner $hpc_module_problem"
  fi
  "hpc_runner_${hpc_plan_runner}_check"
}

# hpc_submit_configs: reads the configs file (-C, else experiment_configurations.txt beside the
# submitter) into hpc_configs_words; exit 2 when it is missing or malformed.
hpc_submit_configs() {
  hpc_submit_configs_file=${hpc_opt_configs:-$hpc_files_dir/experiment_configurations.txt}
  local rc=0
  # Sweeps make their own command; a configs file is read only when there is one.
  if [[ -n $hpc_opt_wandb_sweepid || $hpc_opt_wandb_offline == 1 ]] &&
    [[ -z $hpc_opt_configs && ! -e $hpc_submit_configs_file ]]; then
    hpc_configs_words=()
    return 0
  fi
  hpc_configs_read "$hpc_submit_configs_file" || rc=$?
  ((rc == 0)) || exit 2
  hpc_submit_warn_secret_argv "${hpc_configs_words[@]}"
}

# hpc_submit_warn_secret_argv TEMPLATE...: for each variable that the configs file's command
# refers to and that holds a secret (hpc_submit_secret_argv), one line on stderr (not a refusal)
# saying that ps shows it; a dry run says it in its environment section instead (stdout).
hpc_submit_warn_secret_argv() {
  local name
  ((${hpc_opt_dry_run:-0} == 0)) || return 0
  hpc_submit_secret_argv "$@"
  for name in ${hpc_submit_secret_names[@]+"${hpc_submit_secret_names[@]}"}; do
    hpc_say "$(hpc_submit_secret_argv_text "$name")"
  done
}

# hpc_submit_secret_argv TEMPLATE...: sets hpc_submit_secret_names to the variables the templates
# refer to that hold a secret: named as one (hpc_secret_name), or holding a secret's value here (a
# URL with a password). The toolkit's records mask them, but the job expands them into the
# program's arguments, which ps shows to every user of the node. No process; no value traced.
hpc_submit_secret_argv() {
  local - _hpc_warn_ref _hpc_warn_value
  set +x
  hpc_submit_secret_names=()
  (($#)) || return 0
  hpc_configs_reference_names "$@" || return 0
  for _hpc_warn_ref in ${hpc_configs_names[@]+"${hpc_configs_names[@]}"}; do
    _hpc_warn_ref=${_hpc_warn_ref%:-}
    if ! hpc_secret_name "$_hpc_warn_ref"; then
      [[ -n ${!_hpc_warn_ref-} ]] || continue
      _hpc_warn_value=${!_hpc_warn_ref}
      hpc_mask_vars _hpc_warn_value
      [[ $_hpc_warn_value != "${!_hpc_warn_ref}" ]] || continue
    fi
    hpc_submit_secret_names+=("$_hpc_warn_ref")
  done
}

# hpc_submit_secret_argv_text NAME: prints what is said of the secret variable NAME on the
# program's command line (one line, no value).
hpc_submit_secret_argv_text() {
  printf '%s\n' "the configs file puts \$$1 on the program's command line, where ps shows its value to every user of\
 the node (masked only in the toolkit's records): pass it in the environment instead (the job has it) and read it\
 there (os.environ[\"$1\"] in Python)"
}

# hpc_submit_check_fit: exit 2 when no node of the cluster could ever run the plan (a request that
# SLURM accepts and leaves pending forever, or refuses with a vague message). Most submissions
# end at the quick check of what sinfo said, cached per cluster (no process); hpc_fit.bash is
# loaded to judge the rest.
hpc_submit_check_fit() {
  hpc_profile_slurm_facts 0
  if ((hpc_slurm_fresh == 0)) && [[ -n $hpc_slurm_text ]] && hpc_plan_fits_quick "$hpc_slurm_text"; then
    return 0
  fi
  # shellcheck source=hpc_files/lib/hpc_fit.bash
  source "$hpc_files_dir/lib/hpc_fit.bash"
  hpc_fit_judge
}

# The folders a first submission makes, and a submission's undoing (hpc_submit_undoing.bash, loaded at
# the first call: a plain submission into existing folders runs none of them).
hpc_submit_make_folders() { hpc_lib_load hpc_submit_undoing && hpc_submit_make_folders "$@"; }
hpc_submit_unmake_folders() { hpc_lib_load hpc_submit_undoing && hpc_submit_unmake_folders "$@"; }
hpc_submit_undo() { hpc_lib_load hpc_submit_undoing && hpc_submit_undo "$@"; }
hpc_submit_scancel() { hpc_lib_load hpc_submit_undoing && hpc_submit_scancel "$@"; }
hpc_submit_forget() { hpc_lib_load hpc_submit_undoing && hpc_submit_forget "$@"; }
hpc_submit_stop() { hpc_lib_load hpc_submit_undoing && hpc_submit_stop "$@"; }
hpc_submit_interrupted() { hpc_lib_load hpc_submit_undoing && hpc_submit_interrupted "$@"; }

# hpc_submit_defer_signals: (just before sbatch) a TERM, HUP or INT that comes while sbatch runs
# is noted in hpc_submit_signal instead of ending the submitter: bash runs a trap once sbatch has
# returned, so that a job SLURM accepted keeps its plan file (the EXIT trap would remove it from
# under the job, which then fails at its start) and gets its kept script and manifest. A map or a
# scaling study, whose jobs stay held until all are in place, looks at hpc_submit_signal after
# each sbatch and cancels them all (hpc_group_undo): no job is left held with
# nobody knowing its id.
hpc_submit_defer_signals() {
  # One that came while they were deferred already (a map's held array) is kept.
  hpc_submit_signal=${hpc_submit_signal:-}
  trap 'hpc_submit_signal=INT' INT
  trap 'hpc_submit_signal=TERM' TERM
  trap 'hpc_submit_signal=HUP' HUP
}

# hpc_submit_resume_signals EXP ID...: (once the files of experiment EXP's jobs ID are written, and
# a map or a study released) the signals act again; one that came meanwhile ends the submitter
# now, by that signal, naming every job submitted and how to cancel them.
hpc_submit_resume_signals() {
  trap - INT TERM HUP
  [[ -n $hpc_submit_signal ]] || return 0
  if (($# == 2)); then
    local msg="stopped by SIG$hpc_submit_signal after job $2 was submitted (its"
    msg+=" plan file, script and manifest are kept; cancel it with: scancel $2)"
    hpc_say "$msg"
  else
    local msg="stopped by SIG$hpc_submit_signal after jobs ${*:2} were submitted and released (their plan"
    msg+=" files, scripts and manifests are kept; cancel them all with: bash job_submitter.sh cancel $1)"
    hpc_say "$msg"
  fi
  kill -s "$hpc_submit_signal" "$$"
}

# hpc_submit_pending_open [OUTPUTS EXP]: (before a submission's first sbatch) records it, and
# tags its jobs (hpc_pending_open); by default in this plan's outputs folder, for its
# experiment. Exit 1 when the record cannot be written: nothing is submitted then.
hpc_submit_pending_open() {
  local dir=${1:-$hpc_plan_outputs_dir} sub
  local -a made=()
  for sub in manifests submissions; do [[ -d $dir/$sub ]] || made+=("$dir/$sub"); done
  # The folders of the records, private (hpc_private_dir): another's is refused here, before sbatch.
  hpc_private_dirs_or_die --submit "$dir" "$dir/manifests" "$dir/submissions"
  hpc_pending_open "$dir" "${2:-$hpc_plan_exp_name}" ||
    hpc_die "cannot record the submission in $dir/submissions; nothing was submitted"
  # A folder made for it goes again with the others if SLURM refuses the job.
  ((${#made[@]} == 0)) || [[ ! -v hpc_submit_made ]] || hpc_submit_made+=("${made[@]}")
}

# hpc_submit_confirm [SUMMARY]: on a terminal without -y, shows SUMMARY (the plan's by default) and
# asks; false means no. Never asks without a terminal (a script, a pipe, a batch job): it proceeds.
hpc_submit_confirm() {
  local answer
  ((hpc_opt_yes == 0)) && [[ -t 0 ]] || return 0
  printf '%s\nSubmit? [y/N] ' "${1:-$(hpc_plan_summary)}" >&2
  read -r answer || answer=
  [[ $answer == [yY] || $answer == [yY][eE][sS] ]]
}

# hpc_submit_prepare: (after the confirmation) what every submission needs before its first plan
# file: SLURM's facts kept, the outputs and checkpoints folders (and --workdir's) made, the runner
# made ready (the venv's install job), --data packed once.
hpc_submit_prepare() {
  hpc_profile_slurm_facts_save
  hpc_manifest_limits_save
  # Made before the venv's install job, which writes its log there; removed again when the
  # submission fails before SLURM accepts the job.
  hpc_submit_made=()
  [[ -d $hpc_plan_outputs_dir && -d $hpc_plan_checkpoints_dir && -d ${hpc_plan_workdir:-/} ]] || hpc_submit_make_folders
  hpc_private_dirs_or_die --submit "$hpc_plan_outputs_dir"
  "hpc_runner_${hpc_plan_runner}_prepare"
  ((${#hpc_opt_data[@]})) || return 0
  local rc=0
  hpc_stage_prepare "$hpc_plan_scratch_dir" "${hpc_opt_data[@]}" || rc=$?
  ((rc != 2)) || exit 2
  hpc_submit_interrupted "$rc" "while packing the data (--data)"
  ((rc == 0)) || hpc_die "staging the data failed (see above); nothing was submitted"
  # Every plan made from now on names the archive (hpc_plan_record; a study's runs: hpc_plan_adopt).
  # shellcheck disable=SC2034 # read by hpc_plan_record (this plan) and hpc_plan_adopt (a later one)
  hpc_plan_data_archive=$hpc_stage_archive hpc_submit_data_archive=$hpc_stage_archive
}

# hpc_submit_job [SBATCH_ARGS...]: (signals deferred, the submission's record open) submits the
# plan as one job: its plan file written (before sbatch: the job may start as soon as sbatch
# returns), its script rendered and given to sbatch with the plan's options and SBATCH_ARGS (--hold,
# a dependency). Sets hpc_submit_id; false, with hpc_submit_error, when the plan file cannot be
# written or sbatch refuses the job. Every job of a submission goes this way: a single job, an
# array, a map's array, each run of a scaling study.
hpc_submit_job() {
  hpc_plan_write || {
    hpc_submit_error="cannot write the job's plan in $hpc_plan_outputs_dir; nothing was submitted"
    return 1
  }
  # sbatch reads the script from its standard input; the file is kept once the job id is known
  # (hpc_submit_keep; SLURM keeps its own copy of what it runs).
  hpc_plan_render
  if ! hpc_slurm_sbatch '' "$hpc_plan_script" "${hpc_plan_sbatch_args[@]}" "$@"; then
    hpc_submit_error=$hpc_slurm_error
    # A kept MaxArraySize may be above what the cluster takes now: asked again next time.
    if [[ $hpc_slurm_answer == *'Invalid job array specification'* ]] && hpc_manifest_limits_forget; then
      hpc_submit_error+=" (this cluster's MaxArraySize was taken as $hpc_manifest_max_array_size, kept from"
      hpc_submit_error+=" scontrol show config within the last 10 minutes; the next submission asks again)"
    fi
    return 1
  fi
  hpc_submit_id=$hpc_slurm_id
}

# hpc_submit_keep FILE: (after hpc_submit_job) keeps the job's script as FILE and writes its
# manifest (status, logs, cancel and resubmit read it). False when the script cannot be kept.
hpc_submit_keep() {
  [[ -z ${hpc_pending_file:-} ]] || hpc_pending_made "$1"
  hpc_private_write "$1" "$hpc_plan_script" || return 1
  hpc_manifest_write "$hpc_submit_id" "$1" "$hpc_plan_file" ||
    hpc_say "job $hpc_submit_id was submitted, but its manifest could not be written"
}

# hpc_submit_choose_mode: sets hpc_mode_name to the mode the options ask for (the last that
# applies): repeats, an offline grid, W&B sweep agents, a map (an option of the table's scope map:
# also --repeat with a gather), a scaling study (scope scaling); else a single job.
hpc_submit_choose_mode() {
  hpc_mode_name=single
  [[ -z $hpc_opt_repeat ]] || hpc_mode_name=repeat
  ((hpc_opt_wandb_offline == 0)) || hpc_mode_name=offline
  [[ -z $hpc_opt_wandb_sweepid ]] || hpc_mode_name=sweep
  ! hpc_opt_asks map || hpc_mode_name=map
  ! hpc_opt_asks scaling || hpc_mode_name=scaling
}

# hpc_submit_main MODE ARGS...: the whole submission, for every mode: its steps in order, each
# mode's part through its hooks (hpc_mode; docs/architecture.md, "Modes"). MODE empty: the one
# the options ask for (hpc_submit_choose_mode). A dry run ends with its hook's status (set -e).
hpc_submit_main() {
  hpc_mode_name=$1
  shift
  # The submission's own words, recorded in its manifest (resubmit uses them).
  # shellcheck disable=SC2034 # read by hpc_manifest.bash
  hpc_submit_argv=("$@")
  hpc_opt_defaults
  hpc_mode_args=("$@")
  [[ -z $hpc_mode_name ]] || hpc_mode args "$@"
  hpc_opt_parse ${hpc_mode_args[@]+"${hpc_mode_args[@]}"}
  [[ -n $hpc_mode_name ]] || hpc_submit_choose_mode
  if ((hpc_opt_help)); then
    hpc_mode help
    exit 0
  fi
  hpc_mode settings
  hpc_opt_check_combinations
  # shellcheck disable=SC2034 # hpc_submit_data_archive: read by hpc_plan_adopt
  hpc_submit_hold=() hpc_submit_data_archive=''
  hpc_mode check
  hpc_submit_runner_check
  hpc_profile_load "$hpc_opt_cluster"
  hpc_submit_configs
  hpc_mode plan
  # --data: checked now (exit 2 on a bad path); the archive is made after the confirmation.
  if ((${#hpc_opt_data[@]})); then
    # Loaded only for --data: most submissions have none.
    # shellcheck source=hpc_files/lib/hpc_stage_submit.bash
    source "$hpc_files_dir/lib/hpc_stage_submit.bash"
    hpc_stage_validate "$hpc_plan_scratch_dir" "${hpc_opt_data[@]}" || exit 2
  fi
  hpc_mode fit
  if ((hpc_opt_dry_run)); then
    # Loaded only for --dry-run.
    # shellcheck source=hpc_files/lib/hpc_submit_dry_run.bash
    source "$hpc_files_dir/lib/hpc_submit_dry_run.bash"
    hpc_mode dry_run
    exit 0
  fi
  if ! hpc_mode confirm; then
    hpc_say "not submitted"
    exit 1
  fi
  hpc_mode prepare
  hpc_mode submit
}

# The core's hooks (hpc_mode_any_*), for the modes that define no hook of that name.

# hpc_mode_any_help: the submitter's usage.
hpc_mode_any_help() {
  # shellcheck source=hpc_files/lib/hpc_help.bash
  source "$hpc_files_dir/lib/hpc_help.bash"
  hpc_opt_help "$hpc_submitter"
}

# hpc_mode_any_settings: the defaults file's values (hpc_opt_file_apply).
hpc_mode_any_settings() { hpc_opt_file_apply; }

# hpc_mode_any_plan: one job's plan (hpc_plan_make).
hpc_mode_any_plan() { hpc_plan_make; }

# hpc_mode_any_fit: exit 2 when no node could run the plan (hpc_submit_check_fit).
hpc_mode_any_fit() { hpc_submit_check_fit; }

# hpc_mode_any_dry_run: what the job would be (hpc_submit_dry_run); false when SLURM refuses it.
hpc_mode_any_dry_run() { hpc_submit_dry_run; }

# hpc_mode_any_confirm: asks on a terminal (hpc_submit_confirm); false means no.
hpc_mode_any_confirm() { hpc_submit_confirm; }

# hpc_mode_any_prepare: folders, the runner, --data (hpc_submit_prepare).
hpc_mode_any_prepare() { hpc_submit_prepare; }

# hpc_mode_any_release ID: (job ID accepted, its files kept) nothing of the submission is left to
# find by its tag; a signal that came meanwhile acts now.
hpc_mode_any_release() {
  hpc_pending_close
  hpc_submit_resume_signals "$hpc_plan_exp_name" "$1"
}

# hpc_mode_any_submit: the plan as one job (an array is one job): the plan file, sbatch, the kept
# script and manifest, the mode's release (a map's array is held until its folder and gather are
# in place), then what was submitted and where its output goes.
hpc_mode_any_submit() {
  local final id
  # The plan file, before sbatch (the job may start as soon as sbatch returns); removed again,
  # with the folders made, when the submission fails before SLURM accepts the job.
  trap hpc_submit_undo EXIT
  hpc_submit_pending_open
  # A held job (a map's array): what the submission makes goes with a cancel of it, until released.
  ((${#hpc_submit_hold[@]} == 0)) || hpc_pending_mark held
  hpc_submit_defer_signals
  hpc_submit_job ${hpc_submit_hold[@]+"${hpc_submit_hold[@]}"} || hpc_die "$hpc_submit_error"
  trap - EXIT
  id=$hpc_submit_id
  final=$hpc_plan_outputs_dir/${hpc_plan_exp_name}_${hpc_plan_kind}_$id.sh
  hpc_submit_keep "$final" || hpc_say "job $id was submitted, but its script could not be kept as $final"
  hpc_mode release "$id"
  printf 'Submitted job %s (%s)\n' "$id" "$hpc_plan_summary"
  hpc_mode submitted
  local others='' first=${hpc_plan_array%%[-,:%]*}
  if [[ -n $hpc_plan_array ]]; then
    # An array: task FIRST's real file, and the others' with the job id filled in.
    hpc_manifest_output "$hpc_plan_output" "$id" %a '' "$hpc_plan_job_name"
    others=" (task $first; task %a writes $hpc_manifest_path, %a = ${hpc_plan_array%\%*})"
    hpc_manifest_output "$hpc_plan_output" "$id" "$first" '' "$hpc_plan_job_name"
  else
    hpc_manifest_output "$hpc_plan_output" "$id" '' "$id" "$hpc_plan_job_name"
  fi
  printf 'Job script: %s\nOutput:     %s%s\nFollow it:  tail -F %q\n' \
    "$final" "$hpc_manifest_path" "$others" "$hpc_manifest_path"
}
