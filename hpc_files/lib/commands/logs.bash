# shellcheck shell=bash
# Summary: a job's output, every secret in it masked
# Usage: bash job_submitter.sh logs EXP|JOBID[_TASK] [--follow]
#
#   logs TARGET         Prints the output of the newest job of experiment TARGET, or of the job
#                       TARGET (every task of an array, each after a '==> FILE <==' line), or of
#                       the array task JOBID_TASK, every secret in it masked: the values of this
#                       shell's variables named like secrets (*KEY*, *TOKEN*, *SECRET*, *PASS*,
#                       *CREDENTIAL*, *AUTH*, *_PWD) and the key in ~/wandb_credentials.txt.
#     -f, --follow      Then follows it (tail -F) until interrupted.
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

# hpc_command_logs EXP|JOBID[_TASK] [--follow]: the command 'logs'.
hpc_command_logs() {
  hpc_manage_begin
  hpc_manage_logs "$@"
}

# hpc_manage_logs TARGET [--follow]: the output of the newest job of an experiment, or of a job
# or array task.
hpc_manage_logs() {
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
  # What is printed is masked (hpc_mask_stream): a program may print a secret, as may the
  # toolkit's lines of a job that ran before masking existed.
  if ((follow)); then
    tail -n +1 -F -- "${files[@]}" | hpc_mask_stream
    exit
  fi
  local shown=0 file
  for file in "${files[@]}"; do
    if [[ ! -f $file ]]; then
      hpc_say "no output yet: $file"
      continue
    fi
    ((${#files[@]} == 1)) || printf '==> %s <==\n' "$file"
    hpc_mask_stream <"$file" || hpc_die "cannot read $file"
    shown=$((shown + 1))
  done
  ((shown > 0)) || exit 1
}
