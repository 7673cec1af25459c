# shellcheck shell=bash
# Summary: cancels the recorded jobs that are still pending or running
# Usage: bash job_submitter.sh cancel EXP|JOBID[_TASK]
#
#   cancel TARGET       Cancels (scancel) the recorded jobs of experiment TARGET, or the job or
#                       array task TARGET, that are still pending or running; prints each one.
#                       For an experiment, also the jobs its stopped submissions left in SLURM
#                       without a manifest; and what a map or a study killed before its release
#                       had made (plan files, kept scripts, manifests, its folder).
#   -h, --help          This text.
#
# It reads the project's manifests (see 'status --help'); SCRATCH must be set as for submitting.
#
# Exit status: 0 done (also: nothing to cancel), 1 SLURM refused or failed, 2 bad input (an
# unknown experiment or job is answered with the known ones).

# cancel.bash: the command 'cancel' (bash job_submitter.sh cancel EXP|JOBID[_TASK]): scancel of the
# recorded jobs or tasks still pending or running.

# What this file reads, set by the others: declared here, not set (values already there are
# kept), so that the linter knows each name and catches a misspelt one.
# hpc_common.bash: the library's folder.
declare -g hpc_lib_dir

# shellcheck source=hpc_files/lib/hpc_manage.bash
source "$hpc_lib_dir/hpc_manage.bash"

# hpc_command_cancel EXP|JOBID[_TASK]: the command 'cancel'.
hpc_command_cancel() {
  local word
  hpc_manage_begin
  for word in "$@"; do
    [[ $word != -* ]] || hpc_commands_die_unknown_option cancel "$word"
  done
  hpc_manage_cancel "$@"
}

# hpc_manage_cancel TARGET: cancels the recorded jobs (or tasks) of TARGET still pending or
# running; for an experiment, also the jobs that its submissions stopped on the way left in SLURM
# without a manifest (hpc_pending.bash), whose records then go.
hpc_manage_cancel() {
  (($# == 1)) || hpc_die_usage "cancel" "needs one experiment, job id or JOBID_TASK; usage: cancel EXP|JOBID[_TASK]"
  hpc_manage_target "$1"
  local id key token line
  local -a ids=(${hpc_manage_ids[@]+"${hpc_manage_ids[@]}"}) targets=() lines=() active=()
  hpc_manage_unrecorded=()
  [[ -z $hpc_manage_target_exp ]] || hpc_manage_pending "$hpc_manage_target_exp"
  ((${#ids[@]} == 0)) || hpc_manage_states "${ids[@]}"
  for id in ${hpc_manage_unrecorded[@]+"${hpc_manage_unrecorded[@]}"}; do
    targets+=("$id")
    printf -v line 'cancelled %s (%s, was %s; not recorded: its submission stopped first)' \
      "${hpc_pending_job_key[$id]}" "$hpc_manage_target_exp" "${hpc_pending_job_state[$id]}"
    lines+=("$line")
  done
  for id in ${ids[@]+"${ids[@]}"}; do
    hpc_manage_task_keys "$id"
    active=()
    for key in "${hpc_manage_keys[@]}"; do
      # Pending, running, suspended, requeued...: whatever has not ended (or is ending).
      case ${hpc_st_state[$key]} in
        UNKNOWN* | COMPLETING) ;;
        *) [[ $hpc_manifest_ended_states == *" ${hpc_st_state[$key]} "* ]] || active+=("$key") ;;
      esac
    done
    ((${#active[@]})) || continue
    if [[ ${active[0]} == *_* && -z $hpc_manage_task && ${#active[@]} -eq ${#hpc_manage_keys[@]} ]]; then
      # Every task of the array: the array's id cancels them all.
      targets+=("$id")
    else
      targets+=("${active[@]}")
    fi
    for key in "${active[@]}"; do
      lines+=("cancelled $key (${hpc_manage_exp[$id]}, was ${hpc_st_state[$key]})")
    done
  done
  if ((${#targets[@]})); then
    local out
    out=$(scancel "${targets[@]}" 2>&1) || hpc_die "scancel ${targets[*]} failed: ${out//$'\n'/ }"
  fi
  # Every job of the experiment that had not ended is cancelled: the records of its submissions
  # that stopped on the way have nothing left to find, once no sbatch of theirs can still answer.
  for token in ${hpc_pending_tokens[@]+"${hpc_pending_tokens[@]}"}; do
    # Its held jobs cancelled: what a stopped submission made before their release goes.
    ((hpc_pending_stopped[$token] == 0)) || hpc_pending_unmake "$token"
    ! hpc_pending_settled "$token" || rm -f -- "${hpc_pending_dir:?}/submissions/${token:?}"
  done
  if ((${#targets[@]} == 0)); then
    printf 'Nothing to cancel: no recorded job of %s is pending or running.\n' "$1"
    return 0
  fi
  printf '%s\n' "${lines[@]}"
}
