# shellcheck shell=bash
# Summary: the recorded jobs and array tasks, with their states
# Usage: bash job_submitter.sh status [EXP|JOBID[_TASK]]
#
#   status [TARGET]     Every recorded job of the project, or of experiment TARGET (or the job
#                       or array task TARGET), array tasks one per line: job id, experiment,
#                       kind, state, exit code, output file. The state comes from squeue
#                       (pending, running; a job SLURM requeued says 'requeued, restarts at
#                       TIME', as scontrol show job tells), then sacct (where the cluster keeps accounting), then
#                       scontrol show job (ended jobs, for MinJobAge), then the last ended state
#                       status saw; else what the job's own log says of its end ('FAILED
#                       (from its log; SLURM has forgotten it)'); else UNKNOWN (forgotten by
#                       SLURM). A map's tasks: the state
#                       and exit code their status files say (a file left RUNNING after SLURM
#                       ended the task: SLURM's state, else LOST; no file: LOST once ended).
#                       A submission that stopped before it had recorded and released its jobs
#                       (its submitter killed, even by SIGKILL) is named with the jobs it left
#                       in SLURM: those without a manifest are rows of KIND 'unrecorded'.
#                       What each job used of what it asked for: 'usage TARGET'.
#   -h, --help          This text.
#
# Every submission is recorded in a manifest,
# ${scratch_dir}/hpc_outputs/manifests/EXP_JOBID.manifest (scratch_dir is ${SCRATCH}/PROJECT, the
# project being the folder that holds this hpc_files/): the options, the sbatch options, the
# command, the kept job script, the output files, the git commit. status, logs, cancel, resubmit
# and gather read the manifests of the project; SCRATCH must be set as for submitting.
#
# Exit status: 0 done, 1 SLURM failed, 2 bad input (an unknown experiment or job is answered
# with the known ones).

# status.bash: the command 'status' (bash job_submitter.sh status [EXP|JOBID[_TASK]]): the table
# of the recorded jobs and array tasks with their states (hpc_manage.bash).

# What this file reads, set by the others: declared here, not set (values already there are
# kept), so that the linter knows each name and catches a misspelt one.
# hpc_common.bash: the library's folder.
declare -g hpc_lib_dir

# shellcheck source=hpc_files/lib/hpc_manage.bash
source "$hpc_lib_dir/hpc_manage.bash"

# hpc_command_status [EXP|JOBID[_TASK]]: the command 'status'.
hpc_command_status() {
  local word
  hpc_manage_begin
  for word in "$@"; do
    [[ $word != -* ]] || hpc_commands_die_unknown_option status "$word"
  done
  hpc_manage_status "$@"
}

# hpc_manage_status [EXP]: the table of the project's (or EXP's) jobs and array tasks.
hpc_manage_status() {
  (($# <= 1)) || hpc_die_usage "status" "unexpected word '$2'; usage: status [EXP|JOBID[_TASK]]"
  local id key i
  local -a ids=() rows_job=() rows_exp=() rows_kind=() rows_state=() rows_exit=() rows_out=()
  if (($#)); then
    hpc_manage_target "$1"
    ids=(${hpc_manage_ids[@]+"${hpc_manage_ids[@]}"})
  else
    ids=("${!hpc_manage_file[@]}")
  fi
  # The jobs that submissions stopped on the way left in SLURM (of the experiment asked for; none
  # for a job id).
  hpc_manage_unrecorded=()
  if (($# == 0)) || [[ -n $hpc_manage_target_exp ]]; then hpc_manage_pending "$hpc_manage_target_exp"; fi
  if ((${#ids[@]} == 0 && ${#hpc_manage_unrecorded[@]} == 0)); then
    if (($#)); then
      printf 'No job of %s is recorded (in %s) or left in SLURM by a stopped submission.\n' "$1" "$hpc_manage_dir"
    else
      printf 'No submission of project %s is recorded (in %s).\n' "$hpc_manage_project" "$hpc_manage_dir"
    fi
    hpc_manage_pending_notes
    return 0
  fi
  ((${#ids[@]} == 0)) || hpc_manage_states "${ids[@]}"
  # A map's tasks: their state from the status files they wrote (hpc_map.bash).
  if ((${#ids[@]})) && [[ " ${hpc_manage_mode[*]} " == *" map "* ]]; then
    # shellcheck source=/dev/null # hpc_map.bash: linted on its own (see docs/architecture.md)
    source "${hpc_manage_lib%/*}/hpc_map.bash"
    hpc_map_task_states "${hpc_manage_dir%/*}/map" "${ids[@]}"
  fi
  rows_job=(JOB) rows_exp=(EXP) rows_kind=(KIND) rows_state=(STATE) rows_exit=(EXIT) rows_out=(OUTPUT)
  for id in "${ids[@]}"; do
    hpc_manage_task_keys "$id"
    for key in "${hpc_manage_keys[@]}"; do
      hpc_manage_task_output "$id" "$key"
      # SLURM has forgotten it: how it ended is in its own log, if the toolkit wrote it there.
      if [[ ${hpc_st_state[$key]} == UNKNOWN* ]] && hpc_status_from_log "$hpc_manifest_path"; then
        hpc_st_state[$key]="$hpc_status_log_state (from its log; SLURM has forgotten it)" \
          hpc_st_exit[$key]=$hpc_status_log_exit
      fi
      rows_job+=("$key") rows_exp+=("${hpc_manage_exp[$id]}") rows_kind+=("${hpc_manage_kind[$id]}")
      rows_state+=("${hpc_st_state[$key]}${hpc_st_note[$key]:+ (${hpc_st_note[$key]})}") \
      rows_exit+=("${hpc_st_exit[$key]}") rows_out+=("$hpc_manifest_path")
    done
  done
  for id in ${hpc_manage_unrecorded[@]+"${hpc_manage_unrecorded[@]}"}; do
    rows_job+=("${hpc_pending_job_key[$id]}") rows_exp+=("${hpc_pending_exp[${hpc_pending_job_token[$id]}]}") \
    rows_kind+=(unrecorded)
    rows_state+=("${hpc_pending_job_state[$id]}") rows_exit+=(-) rows_out+=(-)
  done
  local w1=0 w2=0 w3=0 w4=0 w5=0
  for i in "${!rows_job[@]}"; do
    ((${#rows_job[i]} <= w1)) || w1=${#rows_job[i]}
    ((${#rows_exp[i]} <= w2)) || w2=${#rows_exp[i]}
    ((${#rows_kind[i]} <= w3)) || w3=${#rows_kind[i]}
    ((${#rows_state[i]} <= w4)) || w4=${#rows_state[i]}
    ((${#rows_exit[i]} <= w5)) || w5=${#rows_exit[i]}
  done
  for i in "${!rows_job[@]}"; do
    printf '%-*s  %-*s  %-*s  %-*s  %-*s  %s\n' "$w1" "${rows_job[i]}" "$w2" "${rows_exp[i]}" \
      "$w3" "${rows_kind[i]}" "$w4" "${rows_state[i]}" "$w5" "${rows_exit[i]}" "${rows_out[i]}"
  done
  # A chunked map's items, counted per state (hpc_map_task_states).
  [[ -z ${hpc_map_item_lines[*]+x} ]] || printf '%s\n' "${hpc_map_item_lines[@]}"
  # What a job's log says it lost: a --copy-back path that no node had (hpc_job_copy_back_missing);
  # and a stop at the time-limit warning, which a state of FAILED (exit 128+SIGUSR1) hides.
  local line
  local -a says=(-e '] copy-back WARNING: ' -e '] stopped at the time-limit warning ')
  local fd
  for ((i = 1; i < ${#rows_job[@]}; i++)); do
    # The user's own log, as hpc_status_from_log reads it.
    hpc_trusted_open "${rows_out[i]}" own || continue
    fd=$hpc_trusted_fd
    while IFS= read -r line; do
      printf '%s: %s\n' "${rows_job[i]}" "${line#\[hpc * }"
    done < <(grep -m 5 -h "${says[@]}" <&"$fd" 2>/dev/null)
    exec {fd}<&-
  done
  hpc_manage_pending_notes
}

# hpc_status_from_log FILE: sets hpc_status_log_state and hpc_status_log_exit to how the job's
# log FILE says it ended (the toolkit's last line about the program, or a failed step); false when
# the log says nothing of it (gone, unreadable, or still being written by a job that was lost).
# Only the user's own regular file, not a link (hpc_trusted_open own): a log someone else wrote or
# replaced says nothing.
hpc_status_from_log() {
  local line fd re='^\[hpc [^]]*\] (the program |FAILED at step |stopped at the time-limit warning|'
  re+='ended after the time-limit warning)'
  hpc_trusted_open "$1" own || return 1
  fd=$hpc_trusted_fd
  line=$(grep -E -- "$re" <&"$fd" 2>/dev/null | tail -n 1) || line=''
  exec {fd}<&-
  [[ -n $line ]] || return 1
  line=${line#\[hpc * }
  hpc_status_log_exit=-
  case $line in
    'the program finished successfully '* | \
      'ended after the time-limit warning '*) hpc_status_log_state=COMPLETED hpc_status_log_exit=0 ;;
    'the program was ended by SLURM (SIGTERM: the time limit)'*) hpc_status_log_state=TIMEOUT ;;
    'the program was ended by SLURM '*) hpc_status_log_state=CANCELLED ;;
    "the program exited with status 0 after SLURM's SIGTERM"*) hpc_status_log_state='ENDED by SLURM' \
      hpc_status_log_exit=0 ;;
    'the program failed with exit status '*)
      hpc_status_log_state=FAILED hpc_status_log_exit=${line#the program failed with exit status }
      hpc_status_log_exit=${hpc_status_log_exit%% *}
      ;;
    'stopped at the time-limit warning '*)
      hpc_status_log_state=FAILED hpc_status_log_exit=${line#*the program exited with }
      hpc_status_log_exit=${hpc_status_log_exit%% *}
      ;;
    'FAILED at step '*) hpc_status_log_state=FAILED ;;
    *) return 1 ;;
  esac
  [[ $hpc_status_log_exit =~ ^[0-9]+$ || $hpc_status_log_exit == - ]] || hpc_status_log_exit=-
}

# hpc_manage_pending_notes: (status, after hpc_manage_pending) a line for each submission that
# stopped on the way and left jobs in SLURM (and how to be rid of them), or whose sbatch may still
# be answering, and for each one still running.
hpc_manage_pending_notes() {
  local token
  for token in ${hpc_pending_tokens[@]+"${hpc_pending_tokens[@]}"}; do
    hpc_pending_left "$token"
    if ((${#hpc_pending_left[@]} == 0)); then
      # sbatch outlives a killed submitter: a job may still come.
      if ! ((hpc_pending_stopped[$token])) || hpc_pending_settled "$token"; then continue; fi
      printf '%s: a submission stopped (%s) while an sbatch of it may still be answering; %s\n' \
        "${hpc_pending_exp[$token]}" "${hpc_pending_where[$token]}" \
        "status ${hpc_pending_exp[$token]} shows its job if one comes"
      continue
    fi
    if ((hpc_pending_stopped[$token])); then
      printf '%s: a submission stopped before it had recorded and released its jobs (%s): SLURM still holds %s; %s\n' \
        "${hpc_pending_exp[$token]}" "${hpc_pending_where[$token]}" "${hpc_pending_left[*]}" \
        "cancel them with: bash job_submitter.sh cancel ${hpc_pending_exp[$token]}"
    else
      printf '%s: a submission is still running (%s): %s not yet recorded or released\n' \
        "${hpc_pending_exp[$token]}" "${hpc_pending_where[$token]}" "${hpc_pending_left[*]}"
    fi
  done
}
