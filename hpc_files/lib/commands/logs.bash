# shellcheck shell=bash
# Summary: a job's output, every secret in it masked
# Usage: bash job_submitter.sh logs EXP|JOBID[_TASK] [--follow]
#
#   logs TARGET         Prints the output of the newest job of experiment TARGET, or of the job
#                       TARGET (every task of an array, each after a '==> FILE <==' line), or of
#                       the array task JOBID_TASK, every secret in it masked: the values of this
#                       shell's variables named like secrets (*KEY*, *TOKEN*, *SECRET*, *PASS*,
#                       *CREDENTIAL*, *AUTH*, *_PWD) and the key in ~/wandb_credentials.txt.
#                       Only your own files are shown (not one someone else put in place, nor
#                       a link); colours are left out, other control characters and escape
#                       sequences shown visible (^[, ^G), a carriage return as a line break.
#                       For a map, it says how to see one task's log.
#     -f, --follow      Then follows it (tail -F) until the job has ended (SLURM says so), or
#                       until interrupted.
#   -h, --help          This text.
#
# It reads the project's manifests (see 'status --help'); SCRATCH must be set as for submitting.
#
# Exit status: 0 printed, 1 no output yet, 2 bad input (an unknown experiment or job is answered
# with the known ones).

# logs.bash: the command 'logs' (bash job_submitter.sh logs EXP|JOBID[_TASK] [--follow]): a job's
# output, every secret in it masked.

# What this file reads, set by the others: declared here, not set (values already there are
# kept), so that the linter knows each name and catches a misspelt one.
# hpc_common.bash: the library's folder.
declare -g hpc_lib_dir

# shellcheck source=hpc_files/lib/hpc_manage.bash
source "$hpc_lib_dir/hpc_manage.bash"

# hpc_command_logs EXP|JOBID[_TASK] [--follow]: the command 'logs': the output of the newest job
# of an experiment, or of a job or array task.
hpc_command_logs() {
  hpc_manage_begin
  local target='' follow=0 word id key
  local -a files=() keys=()
  for word in "$@"; do
    case $word in
      -f | --follow) follow=1 ;;
      -*) hpc_commands_die_unknown_option logs "$word" ;;
      *)
        [[ -z $target ]] || hpc_die_usage "logs" "unexpected word '$word'; usage: logs EXP|JOBID[_TASK] [--follow]"
        target=$word
        ;;
    esac
  done
  [[ -n $target ]] || hpc_die_usage "logs" "needs an experiment, a job id or JOBID_TASK; $(hpc_manage_known)"
  hpc_manage_target "$target"
  # The newest job of an experiment: the highest job id (a resubmission is newer).
  id=${hpc_manage_ids[${#hpc_manage_ids[@]} - 1]}
  hpc_manage_task_keys "$id"
  keys=("${hpc_manage_keys[@]}")
  # %j of an array task is the task's own job id: SLURM knows it.
  if [[ ${keys[0]} != "$id" && ${hpc_manage_output[$id]} == *%[jJ]* ]]; then
    hpc_manage_states "$id"
  else
    declare -gA hpc_st_raw=()
  fi
  for key in "${keys[@]}"; do
    hpc_manage_task_output "$id" "$key"
    files+=("$hpc_manifest_path")
  done
  [[ -z $hpc_manage_target_exp ]] || hpc_manage_logs_map_hint "$id"
  # What is printed is made visible (hpc_visible_stream): a log may hold what a terminal acts on;
  # then masked (hpc_mask_stream): a program may print a secret, as may the toolkit's lines of a
  # job that ran before masking existed. In that order: the colour codes visible leaves out could
  # otherwise split a secret that the mask would miss and join it again after it.
  if ((follow)); then
    hpc_manage_logs_follow "$id" "${files[@]}"
    exit
  fi
  local shown=0 file fd
  for file in "${files[@]}"; do
    # Only the user's own regular file, never through a link, as status reads logs.
    if ! hpc_trusted_open "$file" own; then
      if [[ -e $file || -L $file ]]; then
        hpc_say "not shown: $file $hpc_trusted_problem"
      else
        hpc_say "no output yet: $file"
      fi
      continue
    fi
    fd=$hpc_trusted_fd
    ((${#files[@]} == 1)) || printf '==> %s <==\n' "$file"
    hpc_visible_stream <&"$fd" | hpc_mask_stream || hpc_die "cannot read $file"
    exec {fd}<&-
    shown=$((shown + 1))
  done
  ((shown > 0)) || exit 1
}

# hpc_manage_logs_map_hint ID: (logs EXP) when job ID, whose log is shown, is a map's gather job
# or array, says how to see one task's log.
hpc_manage_logs_map_hint() {
  local id=$1 array='' x task
  for x in "${hpc_manage_ids[@]}"; do
    ((x > id)) || [[ ${hpc_manage_mode[$x]-} != map || -z ${hpc_manage_array[$x]-} ]] || array=$x
  done
  if [[ -z $array ]] || ! hpc_manifest_expand_array "${hpc_manage_array[$array]}"; then return 0; fi
  task="one task's log: logs ${array}_TASK (e.g. logs ${array}_${hpc_manifest_indices[0]})"
  if ((array == id)); then
    hpc_say "$hpc_manage_target_exp is a map: these are its tasks' logs; $task"
  else
    hpc_say "$hpc_manage_target_exp is a map: this is its gather job $id; $task, every task's: logs $array"
  fi
}

# hpc_manage_logs_follow ID FILE...: prints the job ID's output FILEs (masked, made visible) and
# follows them (tail -F) until the job has ended, as SLURM (or the states status kept) says: every
# task of it in an ended state, asked at once and then every 5 s (tail then reads them once more
# and ends); or until interrupted. A job that SLURM no longer knows is followed until interrupted.
hpc_manage_logs_follow() {
  local id=$1 watcher file
  shift
  for file in "$@"; do
    [[ ! -e $file && ! -L $file ]] || hpc_own_check "$file" || hpc_die "not shown: $file $hpc_trusted_problem"
  done
  hpc_manage_logs_watch "$id" "$$" &
  watcher=$!
  tail -n +1 -F --pid="$watcher" -- "$@" | hpc_visible_stream | hpc_mask_stream
  kill "$watcher" 2>/dev/null || true
}

# hpc_manage_logs_watch ID PID: (in the background) returns once every task of job ID has ended
# (hpc_manage_states), or once the process PID (the command) is gone.
hpc_manage_logs_watch() {
  local key ended
  while kill -0 "$2" 2>/dev/null; do
    hpc_manage_states "$1"
    hpc_manage_task_keys "$1"
    ended=1
    for key in "${hpc_manage_keys[@]}"; do
      [[ $hpc_manifest_ended_states == *" ${hpc_st_state[$key]-} "* ]] || ended=0
    done
    ((ended == 0)) || return 0
    sleep 5
  done
}
