# shellcheck shell=bash
# shellcheck disable=SC2034 # the hpc_plan_* globals are this library's output, read by hpc_submit.bash and
# venv_runner.bash
# hpc_plan.bash: the plan of a submission, a pure function of the options (hpc_opt_*), the
# cluster profile (hpc_profile_*), the project's location and the configs file's command
# (hpc_configs_words). It fills hpc_plan_* and the sbatch arguments; hpc_plan_record makes the
# plan's one record from them (written once per job as a .plan file beside its output, read by
# the job, the dry run and the manifest), and hpc_plan_render the job script that names it.
# Nothing here touches the file system or SLURM, but hpc_plan_write_file.

# What this library reads, set by the others: declared here, not set (values already there are
# kept), so that the linter knows each name and catches a misspelt one.
# hpc_submit_locate: the paths; hpc_options.bash: the options; hpc_sweep.bash: the offline
# commands; hpc_configs.bash: the configs file's command; the compiled profile (hpc_profile.bash);
# the launcher's module (hpc_files/lib/launchers/): the ratios it sets, its processes per node;
# hpc_common.bash: the launchers' names; hpc_submit.bash: the container's image and working
# folder, --workdir's folder and the data archive.
# hpc_facts.bash (loaded by hpc_common.bash): SLURM's times in seconds.
declare -g hpc_facts_seconds
declare -g hpc_plan_ntasks_per_node hpc_plan_cpus_per_task hpc_launcher_processes hpc_module_problem
declare -ga hpc_launcher_names
# hpc_plan_more.bash: the fields the mode added (hpc_plan_add_fields).
declare -ga hpc_plan_mode_fields
# Set by hpc_plan_check_lead for the summary: how the profile's warning lead was made to fit.
declare -g hpc_submit_signal_note=''
declare -g hpc_files_dir hpc_source_dir hpc_python_helpers_dir hpc_container_lib \
  hpc_opt_label_ranks hpc_opt_launcher hpc_opt_num_nodes hpc_opt_requeue \
  hpc_profile_account_allowed hpc_profile_gpu_gres_name hpc_profile_name hpc_profile_signal_name \
  hpc_profile_tmpdir_provided hpc_profile_tmpdir_root hpc_submit_image hpc_submit_workdir \
  hpc_submit_host_workdir hpc_submit_data_archive
declare -ga hpc_opt_copy_back hpc_plan_offline_commands hpc_configs_words hpc_profile_gpu_types \
  hpc_profile_modules

# What a plan holds: its one list. Each field NAME is the variable hpc_plan_NAME; the record
# (hpc_plan_record) writes them in this order, the manifest (hpc_manifest_write) takes its plan
# values from the same list. A mode adds its own fields from its own file (hpc_map_submit.bash:
# map_*, hpc_scaling.bash: scaling_*), through hpc_plan_add_fields.
#   scalars: hpc_plan_fields; arrays (written as NAME=( %q ... )): hpc_plan_array_fields
# Where a manifest key is not the field's name (every other field is its own key):
#   | field       | manifest key |
#   | time        | time_limit   |  (the manifest's 'time' is when it was written)
#   | project_name| project      |
#   | sbatch_args | sbatch       |
hpc_plan_fields=(launcher runner cluster kind nodes ntasks_per_node cpus cpus_per_task gpus gpu_type
  mem mem_per_gpu time partition account requeue signal signal_lead mode array job_name output
  source_dir project_name scratch_dir exp_name outputs_dir checkpoints_dir venv toolkit_dir
  python_helpers tmpdir_provided tmpdir_root image container_workdir container_lib workdir
  data_archive label_ranks num_processes)
# command: the configs file's templates (expanded on the node, never here).
hpc_plan_array_fields=(sbatch_args command offline_commands copy_back modules)
# The scalars' variables (hpc_plan_NAME), in the list's order: the record reads them by name.
hpc_plan_field_vars=("${hpc_plan_fields[@]/#/hpc_plan_}")
declare -gA hpc_plan_manifest_keys=([time]=time_limit [project_name]=project [sbatch_args]=sbatch)
# The plan files this process wrote (hpc_plan_write_file), for hpc_plan_unwrite, and the text
# each was written with (the same index).
hpc_plan_written=() hpc_plan_written_texts=()
# The token of each plan file this process wrote (hpc_plan_write_file), by its path.
declare -gA hpc_plan_tokens=()

# hpc_plan_in_list VALUE ITEM...: true when VALUE is one of the ITEMs.
hpc_plan_in_list() {
  local value=$1 item
  shift
  for item in "$@"; do [[ $item == "$value" ]] && return 0; done
  return 1
}

# A launcher's check of its command, the fields a mode adds, a failed submission's plan files
# removed (hpc_plan_more.bash, loaded at the first call: a plain submission runs none of them).
hpc_plan_add_fields() { hpc_lib_load hpc_plan_more && hpc_plan_add_fields "$@"; }
hpc_plan_check_gpus_python() { hpc_lib_load hpc_plan_more && hpc_plan_check_gpus_python "$@"; }
hpc_plan_written_add() { hpc_lib_load hpc_plan_more && hpc_plan_written_add "$@"; }
hpc_plan_unwrite() { hpc_lib_load hpc_plan_more && hpc_plan_unwrite "$@"; }

# hpc_plan_gpus_ask GPUS: sets hpc_plan_gres to GPUS GPUs (of hpc_plan_gpu_type, if any) and, when
# there is a hpc_plan_mem_per_gpu (e.g. 10G), hpc_plan_mem to it times GPUS, same unit (20G).
hpc_plan_gpus_ask() {
  hpc_plan_gres=$hpc_profile_gpu_gres_name:${hpc_plan_gpu_type:+$hpc_plan_gpu_type:}$1
  [[ -z ${hpc_plan_mem_per_gpu:-} ]] || hpc_plan_mem=$((10#${hpc_plan_mem_per_gpu%?} * $1))${hpc_plan_mem_per_gpu: -1}
}

# hpc_plan_mem_mb AMOUNT: sets hpc_plan_mb to AMOUNT (512M, 10G, 1T, 2048K; no unit: MB, as
# SLURM reads it) in whole MB, rounded up.
hpc_plan_mem_mb() {
  local number=${1%[KMGTkmgt]} unit=${1##*[0-9]}
  case ${unit^^} in
    K) hpc_plan_mb=$(((10#$number + 1023) / 1024)) ;;
    G) hpc_plan_mb=$((10#$number * 1024)) ;;
    T) hpc_plan_mb=$((10#$number * 1024 * 1024)) ;;
    *) hpc_plan_mb=$((10#$number)) ;;
  esac
}

# hpc_plan_distributed_text: prints the launchers other than none, as a refusal names them
# ('-W lightning or -W torchrun').
hpc_plan_distributed_text() {
  local name text=''
  local -a names=()
  hpc_launcher_list
  for name in "${hpc_launcher_names[@]}"; do
    [[ $name == none ]] || names+=("-W $name")
  done
  if ((${#names[@]} > 1)); then
    printf -v text '%s, ' "${names[@]:0:${#names[@]}-1}"
    text="${text%, } or "
  fi
  printf '%s\n' "$text${names[*]: -1}"
}

# hpc_plan_choose_runner: sets hpc_plan_runner to the runner the options choose: --runner NAME (a
# file of hpc_files/lib/runners/), singularity with -s (its image), else venv.
hpc_plan_choose_runner() {
  hpc_plan_runner=${hpc_opt_runner:-venv}
  [[ -z $hpc_opt_singularity ]] || hpc_plan_runner=singularity
}

# hpc_plan_make: resolves every value of the job into hpc_plan_*; exit 2 on input that the
# profile or the launcher does not accept.
hpc_plan_make() {
  hpc_plan_launcher=$hpc_opt_launcher
  hpc_plan_choose_runner
  hpc_plan_cluster=$hpc_profile_name
  hpc_plan_nodes=$hpc_opt_num_nodes
  hpc_plan_gpus=${hpc_opt_gpus:-$hpc_profile_defaults_gpus}
  hpc_plan_cpus=${hpc_opt_cpus:-$hpc_profile_defaults_cpus}
  hpc_plan_time=${hpc_opt_time:-$hpc_profile_defaults_time}
  # -p, else the profile's, else SBATCH_PARTITION (which sbatch would read): written into the job,
  # so that a resubmission, a gather or a follow-up gets it from a shell without the variable.
  # hpc_plan_partition_option names where it came from, for the refusals (hpc_fit.bash).
  hpc_plan_partition=${hpc_opt_partition:-${hpc_profile_partition:-${SBATCH_PARTITION:-}}}
  hpc_plan_partition_option=-p/--partition
  if [[ -z $hpc_opt_partition && -z $hpc_profile_partition && -n $hpc_plan_partition ]]; then
    hpc_plan_partition_option=SBATCH_PARTITION
    # The variable's value goes into the job script's #SBATCH line as -p's does: the same names.
    [[ $hpc_plan_partition =~ ^[A-Za-z0-9_.,-]+$ ]] ||
      hpc_die_usage "SBATCH_PARTITION" \
        "'$hpc_plan_partition' is not a partition name; accepted: letters, digits, _ . - (several: separated by commas)"
  fi
  # Account and GPU type: the profile's list, when it has one, is what the cluster accepts.
  hpc_plan_account=${hpc_opt_account:-$hpc_profile_account_default}
  hpc_plan_check_listed -a/--account "$hpc_opt_account" 'an account' \
    ${hpc_profile_account_allowed[@]+"${hpc_profile_account_allowed[@]}"}
  hpc_plan_gpu_type=${hpc_opt_gpu_type:-$hpc_profile_gpu_default_type}
  hpc_plan_check_listed -G/--gpu-type "$hpc_opt_gpu_type" 'a GPU type' \
    ${hpc_profile_gpu_types[@]+"${hpc_profile_gpu_types[@]}"}
  if [[ -n $hpc_profile_gpu_max_per_node ]] && ((hpc_plan_gpus > hpc_profile_gpu_max_per_node)); then
    local msg="$hpc_plan_gpus GPUs per node is more than a node of cluster"
    msg+=" $hpc_profile_name has; accepted: 0 to $hpc_profile_gpu_max_per_node"
    hpc_die_usage "-g/--gpus" "$msg"
  fi

  # The ratios: the launcher's (hpc_files/lib/launchers/NAME.bash). -c/--cpus is the number of
  # CPUs of each GPU process (each process when G = 0).
  hpc_launcher_load "$hpc_plan_launcher" || hpc_die_usage "-W/--which-distributed" "launcher $hpc_module_problem"
  "hpc_launcher_${hpc_plan_launcher}_plan"
  # Memory: asked for only when the option or the profile gives an amount; else SLURM's own
  # default applies (a profile for an unknown cluster cannot know what its nodes have).
  hpc_plan_mem='' hpc_plan_mem_per_gpu='' hpc_plan_gres=''
  if ((hpc_plan_gpus > 0)); then
    hpc_plan_mem_per_gpu=${hpc_opt_mem_per_gpu:-$hpc_profile_defaults_mem_per_gpu}
    hpc_plan_gpus_ask "$hpc_plan_gpus"
  else
    local value=${hpc_profile_defaults_mem_no_gpu:-"SLURM's default memory"}
    [[ -z $hpc_opt_mem_per_gpu ]] || hpc_say "note: -m/--mem-per-gpu is ignored without GPUs; the job gets $value"
    hpc_plan_mem=$hpc_profile_defaults_mem_no_gpu
  fi
  hpc_plan_paths
  # The runner's fields (the venv a venv job runs from; a container job has none).
  hpc_runner_load "$hpc_plan_runner" || hpc_die "runner $hpc_module_problem"
  "hpc_runner_${hpc_plan_runner}_plan"
  hpc_plan_sbatch
  hpc_plan_adopt
}

# hpc_plan_check_listed OPTION VALUE WHAT ACCEPTED...: exit 2 when VALUE, given to OPTION, is not
# among the ACCEPTED values of the profile (WHAT: 'an account'); none listed: any is accepted.
hpc_plan_check_listed() {
  local option=$1 value=$2 what=$3
  shift 3
  [[ -n $value ]] && (($#)) && ! hpc_plan_in_list "$value" "$@" || return 0
  hpc_die_usage "$option" "'$value' is not $what of cluster $hpc_profile_name; accepted: $*"
}

# hpc_plan_paths: sets the plan's folders and names; exit 2 on a path or a name that SLURM's job
# options cannot hold.
hpc_plan_paths() {
  hpc_plan_source_dir=$hpc_source_dir
  hpc_plan_project_name=${hpc_source_dir##*/}
  hpc_scratch_check
  hpc_plan_scratch_dir=${SCRATCH%/}/$hpc_plan_project_name
  # #SBATCH lines quote paths with double quotes, which cannot hold a backslash, a double quote or
  # a newline; sbatch reads % in --output as a pattern (%j: the job id) and removes backslashes
  # from it: the job would then fail to open its output and leave no log at all.
  local name value
  for name in SCRATCH project; do
    value=$SCRATCH
    [[ $name == SCRATCH ]] || value=$hpc_plan_source_dir
    [[ $value == *[$'\\"%\n']* ]] || continue
    local msg="'$value' contains a backslash, a double quote, a % or a newline,"
    msg+=" which SLURM's job options cannot hold; accepted: a path without them"
    hpc_die_usage "$name" "$msg"
  done
  hpc_plan_exp_name=${hpc_opt_exp_name:-default}
  hpc_plan_outputs_dir=$hpc_plan_scratch_dir/hpc_outputs
  hpc_plan_checkpoints_dir=$hpc_plan_scratch_dir/$hpc_plan_exp_name/checkpoints
  hpc_plan_kind=$hpc_plan_runner-$hpc_plan_launcher
  hpc_plan_job_name=$hpc_plan_project_name-$hpc_plan_exp_name
  hpc_plan_output=$hpc_plan_outputs_dir/${hpc_plan_exp_name}_${hpc_plan_kind}_%j.out
  # The output's file name, EXP_KIND_ID.out, must fit NAME_MAX (255 on the usual file systems),
  # with room for the longest job id: JOBID_TASK of an array (20 characters).
  local longest=$((255 - ${#hpc_plan_kind} - 2 - 20 - 4))
  if ! ((${#hpc_plan_exp_name} <= longest)); then
    local msg="a name of ${#hpc_plan_exp_name} characters is too long; accepted: at most $longest characters"
    msg+=" (the output file ${hpc_plan_exp_name:0:8}..._${hpc_plan_kind}_JOBID.out must fit in 255)"
    hpc_die_usage "-e/--exp-name" "$msg"
  fi
}

# hpc_plan_sbatch: sets hpc_plan_sbatch_args, the job's sbatch options, and the time-limit
# warning's signal and lead.
hpc_plan_sbatch() {
  hpc_plan_sbatch_args=(
    --job-name="$hpc_plan_job_name"
    --nodes="$hpc_plan_nodes"
    --ntasks-per-node="$hpc_plan_ntasks_per_node"
    --cpus-per-task="$hpc_plan_cpus_per_task"
  )
  [[ -z $hpc_plan_mem ]] || hpc_plan_sbatch_args+=(--mem="$hpc_plan_mem")
  hpc_plan_sbatch_args+=(
    --time="$hpc_plan_time"
    --output="$hpc_plan_output"
    --chdir="$hpc_plan_source_dir"
  )
  # The time-limit warning goes to the batch shell (B:), which passes it on to the program.
  hpc_plan_signal=$hpc_profile_signal_name
  hpc_plan_signal_lead=${hpc_opt_signal_lead:-$hpc_profile_signal_lead_seconds}
  hpc_plan_check_lead
  # No warning when the profile's lead had to go: the limit is a minute.
  [[ $hpc_submit_signal_note == "no time-limit warning"* ]] ||
    hpc_plan_sbatch_args+=(--signal="B:$hpc_plan_signal@$hpc_plan_signal_lead")
  hpc_plan_requeue=$hpc_opt_requeue
  # Restarts append to the same log instead of truncating it: those of --requeue N, and a job
  # without it that a preemption made requeueable (hpc_job_preempt_requeueable).
  local requeue=--no-requeue
  ((hpc_plan_requeue <= 0)) || requeue=--requeue
  hpc_plan_sbatch_args+=("$requeue" --open-mode=append)
  [[ -z $hpc_plan_gres ]] || hpc_plan_sbatch_args+=(--gres="$hpc_plan_gres")
  [[ -z $hpc_plan_account ]] || hpc_plan_sbatch_args+=(--account="$hpc_plan_account")
  [[ -z $hpc_plan_partition ]] || hpc_plan_sbatch_args+=(--partition="$hpc_plan_partition")
}

# hpc_plan_adopt: (the end of hpc_plan_make) copies into the plan's own fields what the job needs
# and the options, the profile and the submission's checks hold elsewhere, and sets the mode's
# fields to a single job's (hpc_sweep_plan, hpc_map_plan and hpc_scaling_plan change them
# after): every field of a new plan is set here or above, so nothing of an earlier plan in the
# same process (a scaling study makes one per run) reaches it.
hpc_plan_adopt() {
  hpc_plan_mode=single hpc_plan_array='' hpc_plan_offline_commands=()
  hpc_plan_command=("${hpc_configs_words[@]}")
  hpc_plan_toolkit_dir=$hpc_files_dir
  hpc_plan_python_helpers=$hpc_python_helpers_dir/src
  hpc_plan_container_lib=$hpc_container_lib
  hpc_plan_tmpdir_provided=$hpc_profile_tmpdir_provided
  hpc_plan_tmpdir_root=$hpc_profile_tmpdir_root
  hpc_plan_modules=(${hpc_profile_modules[@]+"${hpc_profile_modules[@]}"})
  hpc_plan_image=${hpc_submit_image:-} hpc_plan_container_workdir=${hpc_submit_workdir:-}
  hpc_plan_workdir=${hpc_submit_host_workdir:-}
  hpc_plan_data_archive=${hpc_submit_data_archive:-}
  hpc_plan_copy_back=(${hpc_opt_copy_back[@]+"${hpc_opt_copy_back[@]}"})
  hpc_plan_label_ranks=${hpc_opt_label_ranks:-0}
  hpc_plan_clear_mode_fields
  hpc_plan_processes
}

# hpc_plan_clear_mode_fields: empties the fields that modes added (hpc_plan_add_fields): a plan
# sets those of its own mode after this.
hpc_plan_clear_mode_fields() {
  local name
  for name in ${hpc_plan_mode_fields[@]+"${hpc_plan_mode_fields[@]}"}; do
    printf -v "hpc_plan_$name" '%s' ''
  done
}

# hpc_plan_check_lead: makes the warning's lead fit the time limit: SLURM counts time limits in
# whole minutes (rounded up) and may send the warning up to 60 s before the lead asked for, which
# must still come after the job's start. An explicit --signal-lead that leaves less than 60 s:
# exit 2. The profile's lead (no --signal-lead) never refuses: shortened to leave 60 s, or 0 and
# no warning at all when the limit is a minute; hpc_submit_signal_note then says so for the
# summary ('' when the lead is as asked).
hpc_plan_check_lead() {
  local limit profile_lead=$hpc_plan_signal_lead
  hpc_submit_signal_note=''
  hpc_facts_seconds "$hpc_plan_time" || return 0
  limit=$(((hpc_facts_seconds + 59) / 60 * 60))
  ((limit - hpc_plan_signal_lead < 60)) || return 0
  if [[ -n $hpc_opt_signal_lead ]]; then
    local msg
    printf -v msg '%s' "$hpc_plan_signal_lead s before the time limit $hpc_plan_time ($limit s:" \
      " SLURM counts whole minutes) leaves less than 60 s, and SLURM may send the warning up to" \
      " 60 s early; accepted: at most $((limit - 60 > 0 ? limit - 60 : 0)) s with this time limit"
    hpc_die_usage "--signal-lead" "$msg"
  fi
  hpc_plan_signal_lead=$((limit - 60))
  if ((hpc_plan_signal_lead > 0)); then
    hpc_submit_signal_note="signal lead $hpc_plan_signal_lead s (the profile's $profile_lead s shortened"
    hpc_submit_signal_note+=" to fit --time $hpc_plan_time)"
  else
    hpc_submit_signal_note="no time-limit warning signal (the profile's lead of $profile_lead s does not fit"
    hpc_submit_signal_note+=" --time $hpc_plan_time)"
  fi
}

# hpc_plan_summary: prints the one-line summary of the plan.
hpc_plan_summary() {
  hpc_plan_summary_text
  printf '%s\n' "$hpc_plan_summary"
}

# hpc_plan_summary_text: sets hpc_plan_summary to the one-line summary of the plan.
hpc_plan_summary_text() {
  local gpu_text=''
  ((hpc_plan_gpus == 0)) || gpu_text=" x ${hpc_plan_gpus} GPU${hpc_plan_gpu_type:+ $hpc_plan_gpu_type}"
  printf -v hpc_plan_summary '%s job on %s: %s node(s) x %s task(s) x %s CPU(s)%s per node, ' \
    "$hpc_plan_kind" "$hpc_plan_cluster" "$hpc_plan_nodes" "$hpc_plan_ntasks_per_node" \
    "$hpc_plan_cpus_per_task" "$gpu_text"
  printf -v hpc_plan_summary '%smemory %s per node, time %s%s, output %s' "$hpc_plan_summary" \
    "${hpc_plan_mem:-"(SLURM's default)"}" "$hpc_plan_time" \
    "${hpc_submit_signal_note:+, $hpc_submit_signal_note}" "$hpc_plan_output"
}

# hpc_plan_record: sets hpc_plan_text to the plan's record: a header line, then one line per
# field of the list, 'hpc_plan_NAME=%q' (an array 'hpc_plan_NAME=( %q ... )'), the fields' values
# as they are now. Sourced by the job (hpc_job_plan_load), shown by the dry run, named by the
# manifest. One printf for all the scalars and one per array, no process: it runs on every
# submission. It reads nothing but the fields: a field never set reads as empty.
hpc_plan_record() {
  local name ref part
  local -a args=() values
  hpc_plan_processes
  # One command a field: this runs on every submission (once per job of a map or study).
  for ref in "${hpc_plan_field_vars[@]}"; do
    args+=("$ref" "${!ref-}")
  done
  printf -v hpc_plan_text '%s=%q\n' "${args[@]}"
  hpc_plan_text=$'\n'$hpc_plan_text
  hpc_plan_text="# The plan of a job (hpc_files/job_submitter.sh): read by hpc_files/lib/hpc_job.bash."$hpc_plan_text
  for name in "${hpc_plan_array_fields[@]}"; do
    ref="hpc_plan_${name}[@]"
    values=(${!ref+"${!ref}"})
    part=''
    ((${#values[@]} == 0)) || printf -v part ' %q' "${values[@]}"
    hpc_plan_text+="hpc_plan_$name=($part )"$'\n'
  done
}

# hpc_plan_new_token: sets hpc_plan_token to a new token: a plan file's identity, which the job
# script that names the file carries too (hpc_plan_render), so that a plan renamed into another's
# name (another of the user's plans, by a group member or by mistake) is refused by its job
# (hpc_job_plan_load) and by resubmit. Unique among the user's plans (the process, the time, a
# counter and random bits), made without a process; letters, digits and '-' only.
hpc_plan_new_token() {
  local now=${EPOCHREALTIME//[.,]/}
  hpc_plan_token_counter=$((${hpc_plan_token_counter:-0} + 1))
  printf -v hpc_plan_token '%s-%s-%s-%04x%04x%04x' "$now" "$$" "$hpc_plan_token_counter" \
    "$((${SRANDOM:-$RANDOM} & 65535))" "$RANDOM" "$((${SRANDOM:-$RANDOM} & 65535))"
}

# hpc_plan_write_file PREFIX TEXT: writes TEXT to a new file PREFIX_<stamp>.plan and sets
# hpc_plan_file to it. Its last line is its identity, 'hpc_plan_token=TOKEN', a new token
# (hpc_plan_new_token; kept in hpc_plan_token and hpc_plan_tokens[FILE], for the job script that
# names it and the manifest); hpc_plan_file_text is the whole text written. <stamp> is the
# submitter's pid and a counter, the next one while a file of that name exists (from an earlier
# process of the same pid): unique for the submission and the plan, and short, so that the name
# fits wherever the job's output name does (EXP_KIND_JOBID.out, hpc_plan_make's limit). Always a
# new name, written 0600 (hpc_private_create). Adds it to hpc_plan_written and the text to
# hpc_plan_written_texts (hpc_plan_unwrite removes those). False when it cannot be written.
hpc_plan_write_file() {
  local tries text
  hpc_plan_new_token
  text=$2'# Its identity: the job script that names this file carries the same token.'$'\n'
  text+="hpc_plan_token=$hpc_plan_token"$'\n'
  for ((tries = 0; tries < 100; tries++)); do
    hpc_plan_counter=$((${hpc_plan_counter:-0} + 1))
    hpc_plan_file=${1}_$$-$hpc_plan_counter.plan
    # Anything by that name: the next.
    [[ ! -e $hpc_plan_file && ! -L $hpc_plan_file ]] || continue
    # Readable and writable by the user alone: the job sources it (a group member who could
    # write it would run code as the user) and it holds the configs file's command as written.
    # Named in the submission's record first (hpc_pending.bash), for cancel of a killed one.
    [[ -z ${hpc_pending_file:-} ]] || hpc_pending_made "$hpc_plan_file"
    if hpc_private_create "$hpc_plan_file" "$text"; then
      hpc_plan_written+=("$hpc_plan_file") hpc_plan_written_texts+=("$text")
      hpc_plan_tokens[$hpc_plan_file]=$hpc_plan_token hpc_plan_file_text=$text
      return 0
    fi
    [[ -e $hpc_plan_file || -L $hpc_plan_file ]] || return 1
  done
  return 1
}

# hpc_plan_write: makes the plan's record (hpc_plan_record) and writes it beside the job's
# output, ${outputs_dir}/${exp_name}_${kind}_<stamp>.plan (hpc_plan_write_file), before sbatch:
# the job may start as soon as sbatch returns. False when it cannot be written.
hpc_plan_write() {
  hpc_plan_record
  hpc_plan_write_file "$hpc_plan_outputs_dir/${hpc_plan_exp_name}_$hpc_plan_kind" "$hpc_plan_text"
}

# hpc_plan_render [PLAN_FILE]: sets hpc_plan_script to the job script: the #SBATCH lines (SLURM
# reads them), a header, and one call into the job library naming the plan file (PLAN_FILE,
# default hpc_plan_file), which holds every value of the job: the script holds none of its own,
# but the plan's token (hpc_plan_script_tail; TOKEN for a plan not written yet, a dry run's).
# Built in a variable, with no subshell: it runs on every submission.
hpc_plan_render() {
  local arg user='\u' sbatch='' part
  hpc_plan_summary_text
  for arg in "${hpc_plan_sbatch_args[@]}"; do
    # sbatch reads #SBATCH values in double quotes, so paths with spaces stay whole.
    if [[ $arg == *=* ]]; then
      sbatch+="#SBATCH ${arg%%=*}=\"${arg#*=}\""$'\n'
    else
      sbatch+="#SBATCH $arg"$'\n'
    fi
  done
  # ${user@P} is the user name, as a prompt shows it, without starting id -un. The toolkit's
  # time in the job is measured from HPC_JOB_T0 to the program's start.
  printf -v hpc_plan_script '#!/bin/bash\n%s#\n# Generated by hpc_files/job_submitter.sh on %(%Y-%m-%d %H:%M:%S)T' \
    "$sbatch" -1
  printf -v part ' for %s\n# %s\n# Every value of the job is in its plan file, named below.' \
    "${user@P}" "$hpc_plan_summary"
  hpc_plan_script+=$part
  hpc_plan_script+=$' To change the job, change the options or\n# the configs file and submit again.\n'
  hpc_plan_script+=$'set -euo pipefail\n# shellcheck disable=SC2034 # read by hpc_job.bash\n'
  # shellcheck disable=SC2016 # $EPOCHREALTIME is for the job script to expand
  hpc_plan_script+='HPC_JOB_T0=$EPOCHREALTIME'$'\n\n# shellcheck source=/dev/null\n'
  printf -v part 'source %q\n' "$hpc_files_dir/lib/hpc_job.bash"
  hpc_plan_script_tail "${1:-$hpc_plan_file}"
  hpc_plan_script+=$part$hpc_plan_script_tail
}

# hpc_plan_script_tail PLAN_FILE: sets hpc_plan_script_tail to a job script's last two lines: the
# token of the plan file PLAN_FILE (written by this process: hpc_plan_tokens; else TOKEN), which
# the job checks the plan against (hpc_job_plan_load), and the call naming the file.
hpc_plan_script_tail() {
  local token=${hpc_plan_tokens[$1]-TOKEN}
  # shellcheck disable=SC2034 # read by the callers
  printf -v hpc_plan_script_tail 'export HPC_JOB_PLAN_TOKEN=%q\nhpc_job_main %q\n' "$token" "$1"
}

# hpc_plan_processes: sets hpc_plan_num_processes to the job's total of program processes:
# the nodes times the launcher's processes per node (hpc_launcher_NAME_processes).
hpc_plan_processes() {
  hpc_launcher_load "$hpc_plan_launcher" || hpc_die "launcher $hpc_module_problem"
  "hpc_launcher_${hpc_plan_launcher}_processes"
  hpc_plan_num_processes=$((hpc_plan_nodes * hpc_launcher_processes))
}

# hpc_plan_fits_quick SUMMARY: true when SUMMARY (what sinfo said, cached: see hpc_fit.bash)
# shows that the plan's partition (the one given, or the default) has the nodes, and its largest
# node the CPUs, memory and GPUs, that the plan asks for. False when it does not, or cannot tell
# (a list of partitions, none known): hpc_fit.bash then judges and says why. The check that
# runs on every submission: parameter expansions and arithmetic only.
hpc_plan_fits_quick() {
  local text=$'\n'$1$'\n' part=$hpc_plan_partition line nodes cpus mb gpus
  if [[ -z $part ]]; then
    part=${1%%$'\n'*}
    part=${part#d}
    part=${part# }
  fi
  [[ -n $part && $part != *,* && $text == *$'\n'"p $part "* ]] || return 1
  line=${text#*$'\n'"p $part "}
  line=${line%%$'\n'*}
  nodes=${line%% *} line=${line#* }
  cpus=${line%% *} line=${line#* }
  mb=${line%% *} line=${line#* }
  gpus=${line%% *}
  [[ $nodes$cpus$mb$gpus == +([0-9]) ]] || return 1
  # A GPU type (-G) is judged by hpc_fit.bash, against the types sinfo named.
  [[ -z $hpc_plan_gpu_type ]] || ((hpc_plan_gpus == 0)) || return 1
  ((hpc_plan_nodes <= nodes && hpc_plan_gpus <= gpus)) || return 1
  ((cpus == 0 || hpc_plan_cpus_per_task * hpc_plan_ntasks_per_node <= cpus)) || return 1
  if [[ -z $hpc_plan_mem ]] || ((mb <= 1)); then return 0; fi
  hpc_plan_mem_mb "$hpc_plan_mem"
  ((hpc_plan_mb <= mb))
}
