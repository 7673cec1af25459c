# shellcheck shell=bash
# Summary: cancels the recorded jobs that are still pending or running
# Usage: bash job_submitter.sh cancel EXP|JOBID[_TASK]
#
#   cancel TARGET       Cancels (scancel) the recorded jobs of experiment TARGET, or the job or
#                       array task TARGET, that are still pending or running; prints each one.
#                       For an experiment, also the jobs its stopped submissions left in SLURM
#                       without a manifest; and what a map or a study killed before its release
#                       had made (plan files, kept scripts, manifests, its folder). Only the
#                       user's own jobs: an id that SLURM now gives to another user's job or to
#                       another job (another name) is left, and said.
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
  hpc_manage_owned=()
  local -a ids=(${hpc_manage_ids[@]+"${hpc_manage_ids[@]}"}) targets=() lines=() active=()
  hpc_manage_unrecorded=()
  [[ -z $hpc_manage_target_exp ]] || hpc_manage_pending "$hpc_manage_target_exp"
  # A long history: only the jobs SLURM still has can be cancelled; they alone are asked about
  # (one squeue -u finds them, hpc_manage_live), not every job ever recorded.
  if ((${#ids[@]} > 20)); then
    hpc_manage_live || exit 1
    active=()
    for id in "${ids[@]}"; do
      [[ -z ${hpc_manage_live[$id]-} ]] || active+=("$id")
    done
    ids=(${active[@]+"${active[@]}"})
  fi
  ((${#ids[@]} == 0)) || hpc_manage_states "${ids[@]}"
  for id in ${hpc_manage_unrecorded[@]+"${hpc_manage_unrecorded[@]}"}; do
    targets+=("$id")
    printf -v line 'cancelled %s (%s, was %s; not recorded: its submission stopped first)' \
      "${hpc_pending_job_key[$id]}" "$hpc_manage_target_exp" "${hpc_pending_job_state[$id]}"
    lines+=("$line")
  done
  local -a live=()
  local -A live_keys=()
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
    live+=("$id")
    live_keys[$id]=${active[*]}
  done
  ((${#live[@]} == 0)) || hpc_manage_cancel_owned "${live[@]}"
  for id in ${hpc_manage_owned[@]+"${hpc_manage_owned[@]}"}; do
    read -r -a active <<<"${live_keys[$id]}"
    hpc_manage_task_keys "$id"
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
    out=$(hpc_slurm scancel "${targets[@]}" 2>&1) || hpc_die "scancel ${targets[*]} failed: ${out//$'\n'/ }"
  fi
  # Every job of the experiment that had not ended is cancelled: the records of its submissions
  # that stopped on the way have nothing left to find, once no sbatch of theirs can still answer.
  for token in ${hpc_pending_tokens[@]+"${hpc_pending_tokens[@]}"}; do
    # Its held jobs cancelled: what a stopped submission made before their release goes.
    ((hpc_pending_stopped[$token] == 0)) || hpc_pending_unmake "$token"
    ! hpc_pending_settled "$token" || hpc_pending_remove "$token"
  done
  if ((${#targets[@]} == 0)); then
    printf 'Nothing to cancel: no recorded job of %s is pending or running.\n' "$1"
    return 0
  fi
  printf '%s\n' "${lines[@]}"
}

# hpc_manage_cancel_owned ID...: sets hpc_manage_owned to the recorded job ids ID that SLURM (one
# squeue) says are still the user's own jobs, under the name their manifest records. An id that
# SLURM now gives to another user's job, or to another job of the user's, is the record's no more
# (a reset cluster hands ids out again): root, an operator or an account coordinator, whom SLURM
# lets cancel others' jobs, would cancel that one. Such ids are left, said in one line for each
# reason; an id SLURM no longer lists has ended meanwhile. Exit 1 when squeue fails.
hpc_manage_cancel_owned() {
  local out id uid user name recorded ids
  local -A uids=() users=() names=() exps=() whose=() called=()
  local -a foreign=() renamed=()
  hpc_manage_owned=()
  printf -v ids '%s,' "$@"
  # The name last: whatever it holds, the fields before it are SLURM's own.
  if ! out=$(hpc_slurm -t 60 squeue -h -j "${ids%,}" -o '%F|%U|%u|%j' 2>&1); then
    # A list of jobs that SLURM has all forgotten is an error for squeue: none is left to cancel.
    [[ $out == *'Invalid job id'* ]] ||
      hpc_die "squeue failed, so whose jobs $* are is unknown: nothing was cancelled (${out//$'\n'/ })"
    out=''
  fi
  while IFS='|' read -r id uid user name; do
    [[ $id =~ ^[0-9]+$ && -z ${uids[$id]-} ]] || continue
    uids[$id]=$uid users[$id]=$user names[$id]=$name
  done <<<"$out"
  for id; do
    [[ -n ${uids[$id]-} ]] || continue
    recorded=${hpc_manage_name[$id]-}
    if [[ ${uids[$id]} != "$EUID" ]]; then
      foreign+=("$id")
      whose[${users[$id]}]=1 exps[${hpc_manage_exp[$id]}]=1
    elif [[ -n $recorded && ${names[$id]} != "$recorded" ]]; then
      renamed+=("$id")
      called["'${names[$id]}'"]=1 exps[${hpc_manage_exp[$id]}]=1
    else
      hpc_manage_owned+=("$id")
    fi
  done
  ((${#foreign[@]} + ${#renamed[@]})) || return 0
  local -a these=("this id" "these ids") a=("a job" "jobs") that=("the record is older than that job"
    "the records are older than those jobs") another=("another job" "other jobs")
  local n list exp_list who names_list
  hpc_manage_cancel_list exp_list "${!exps[@]}"
  if ((${#foreign[@]})); then
    n=$((${#foreign[@]} > 1))
    hpc_manage_cancel_list list "${foreign[@]}"
    hpc_manage_cancel_list who "${!whose[@]}"
    hpc_say "not cancelled: $list ($exp_list): SLURM gives ${these[n]} to ${a[n]} of another user ($who) now:" \
      "${that[n]} (a reset cluster hands ids out again)"
  fi
  if ((${#renamed[@]})); then
    n=$((${#renamed[@]} > 1))
    hpc_manage_cancel_list list "${renamed[@]}"
    hpc_manage_cancel_list names_list "${!called[@]}"
    hpc_say "not cancelled: $list ($exp_list): SLURM gives ${these[n]} to ${another[n]} of yours now" \
      "(named $names_list, recorded '${hpc_manage_name[${renamed[0]}]}'): ${that[n]}" \
      "(a reset cluster hands ids out again)"
  fi
}

# hpc_manage_cancel_list VAR WORD...: sets VAR to the WORDs, sorted, separated by ', '.
hpc_manage_cancel_list() {
  local -n _hpc_cancel_list=$1
  local text
  local -a _hpc_cancel_words=()
  shift
  printf -v text '%s\n' "$@"
  mapfile -t _hpc_cancel_words < <(LC_ALL=C sort -u <<<"${text%$'\n'}")
  printf -v text '%s, ' "${_hpc_cancel_words[@]}"
  _hpc_cancel_list=${text%, }
}
