# shellcheck shell=bash
# Summary: the recorded jobs and array tasks, with their states
# Usage: bash job_submitter.sh status [EXP|JOBID[_TASK]]
#
#   status [TARGET]     The recorded jobs of the project, or of experiment TARGET (or the job
#                       or array task TARGET): job id, experiment, kind, state, exit code, output
#                       file. Shown first: every job SLURM still runs or holds, then the 20 most
#                       recent (in submission order; a line says how many older ones are not
#                       shown). An array of at most 10 tasks: one line per task; a longer one:
#                       one line, JOBID_[TASKS], with its tasks per state ('100 tasks: 2 RUNNING,
#                       98 COMPLETED'; a map's items); its job id as TARGET, or --tasks, lists
#                       every task. The state comes from squeue
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
#   --all               Every recorded job, however old.
#   --tasks             Every array task on a line of its own (and what each one's log says of
#                       its end when SLURM has forgotten it).
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

# hpc_command_status [--all] [--tasks] [EXP|JOBID[_TASK]]: the command 'status'.
hpc_command_status() {
  local word
  local -a words=()
  hpc_manage_begin
  hpc_status_all=0 hpc_status_tasks=0
  for word in "$@"; do
    case $word in
      --all) hpc_status_all=1 ;;
      --tasks) hpc_status_tasks=1 ;;
      -*) hpc_commands_die_unknown_option status "$word" ;;
      *) words+=("$word") ;;
    esac
  done
  hpc_manage_status ${words[@]+"${words[@]}"}
}

# How many of the most recent jobs the default view shows (beside those SLURM still runs or
# holds), and the most tasks an array may have to be shown one line per task without --tasks.
hpc_status_recent=20 hpc_status_task_lines=10

# hpc_manage_status [EXP]: the table of the project's (or EXP's) jobs and array tasks.
hpc_manage_status() {
  (($# <= 1)) || hpc_die_usage "status" "unexpected word '$2'; usage: status [EXP|JOBID[_TASK]]"
  local id key i one_job=0
  local -a ids=() rows_job=() rows_exp=() rows_kind=() rows_state=() rows_exit=() rows_out=() rows_log=() forgotten=()
  if (($#)); then
    hpc_manage_target "$1"
    ids=(${hpc_manage_ids[@]+"${hpc_manage_ids[@]}"})
    [[ -n $hpc_manage_target_exp ]] || one_job=1
  else
    ids=("${!hpc_manage_file[@]}")
  fi
  # The default view: what SLURM still runs or holds, then the most recent.
  hpc_status_hidden=0
  if ((! one_job && ! ${hpc_status_all:-0} && ${#ids[@]} > hpc_status_recent)); then
    hpc_status_select "${ids[@]}"
    ids=("${hpc_status_ids[@]}")
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
  # A long map array, one line: the tasks of one that SLURM has forgotten whole are counted from
  # their status files, none of them given a state of its own (hpc_manage_states, hpc_map.bash).
  if ((! one_job && ! ${hpc_status_tasks:-0})); then
    for id in "${ids[@]}"; do
      [[ ${hpc_manage_mode[$id]-} == map ]] || continue
      hpc_manage_count "$id"
      ((hpc_manage_count <= hpc_status_task_lines)) || hpc_manage_defer[$id]=1
    done
  fi
  ((${#ids[@]} == 0)) || hpc_manage_states "${ids[@]}"
  # A map's tasks: their state from the status files they wrote (hpc_map.bash).
  if ((${#ids[@]})) && [[ " ${hpc_manage_mode[*]} " == *" map "* ]]; then
    # shellcheck source=/dev/null # hpc_map.bash: linted on its own (see docs/architecture.md)
    source "${hpc_manage_lib%/*}/hpc_map.bash"
    hpc_map_task_states "${hpc_manage_dir%/*}/map" "${ids[@]}"
  fi
  rows_job=(JOB) rows_exp=(EXP) rows_kind=(KIND) rows_state=(STATE) rows_exit=(EXIT) rows_out=(OUTPUT) rows_log=('')
  for id in "${ids[@]}"; do
    # A long array: one line (its job id asked for, or --tasks: every task).
    ((one_job || ${hpc_status_tasks:-0})) || hpc_manage_count "$id"
    if ((! one_job && ! ${hpc_status_tasks:-0} && hpc_manage_count > hpc_status_task_lines)); then
      hpc_status_summary=${hpc_map_summary[$id]-}
      [[ -n $hpc_status_summary ]] || {
        hpc_manage_keys "$id"
        hpc_status_summary "$id"
      }
      rows_job+=("${id}_[${hpc_manage_array[$id]}]") rows_exp+=("${hpc_manage_exp[$id]}")
      rows_kind+=("${hpc_manage_kind[$id]}") rows_state+=("$hpc_status_summary") rows_exit+=(-)
      hpc_manifest_output "${hpc_manage_output[$id]}" "$id" %a '' "${hpc_manage_name[$id]}"
      rows_out+=("$hpc_manifest_path") rows_log+=('')
      continue
    fi
    hpc_manage_task_keys "$id"
    for key in "${hpc_manage_keys[@]}"; do
      hpc_manage_task_output "$id" "$key"
      # SLURM has forgotten it: how it ended is in its own log (read below, all at once).
      [[ ${hpc_st_state[$key]} != UNKNOWN* ]] || forgotten+=("${#rows_job[@]}")
      rows_job+=("$key") rows_exp+=("${hpc_manage_exp[$id]}") rows_kind+=("${hpc_manage_kind[$id]}")
      rows_state+=("${hpc_st_state[$key]}${hpc_st_note[$key]:+ (${hpc_st_note[$key]})}") \
      rows_exit+=("${hpc_st_exit[$key]}") rows_out+=("$hpc_manifest_path") rows_log+=("$hpc_manifest_path")
    done
  done
  for id in ${hpc_manage_unrecorded[@]+"${hpc_manage_unrecorded[@]}"}; do
    rows_job+=("${hpc_pending_job_key[$id]}") rows_exp+=("${hpc_pending_exp[${hpc_pending_job_token[$id]}]}") \
    rows_kind+=(unrecorded)
    rows_state+=("${hpc_pending_job_state[$id]}") rows_exit+=(-) rows_out+=(-) rows_log+=('')
  done
  # How the jobs SLURM has forgotten ended, if the toolkit wrote it in their logs.
  local -a paths=()
  for i in ${forgotten[@]+"${forgotten[@]}"}; do paths+=("${rows_log[i]}"); done
  ((${#paths[@]} == 0)) || hpc_status_log_ends "${paths[@]}"
  for i in ${forgotten[@]+"${forgotten[@]}"}; do
    hpc_status_log_state "${hpc_status_log_end[${rows_log[i]}]-}" || continue
    rows_state[i]="$hpc_status_log_state (from its log; SLURM has forgotten it)" rows_exit[i]=$hpc_status_log_exit
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
  hpc_status_says
  if ((hpc_status_hidden)); then
    local jobs='jobs'
    ((hpc_status_hidden > 1)) || jobs='job'
    printf '%s older %s not shown (ended, or forgotten by SLURM): bash job_submitter.sh status --all%s\n' \
      "$hpc_status_hidden" "$jobs" "${hpc_manage_target_exp:+ $hpc_manage_target_exp}"
  fi
  hpc_manage_pending_notes
}

# hpc_status_select ID...: (the default view) sets hpc_status_ids to the IDs (ascending) that
# SLURM still runs or holds (hpc_manage_live) and the hpc_status_recent last ones, and
# hpc_status_hidden to how many others there are.
# Only the IDs SLURM still has are looked at among the older ones: no step per older ID.
hpc_status_select() {
  local id n=$(($# - hpc_status_recent))
  local -a live=() older=()
  hpc_manage_live || exit 1
  local first=${*:n+1:1}
  for id in "${!hpc_manage_live[@]}"; do live[id]=$id; done
  for id in ${live[@]+"${live[@]}"}; do
    ((id < first)) || break
    # One of the IDs: recorded (of the experiment asked for, if one was).
    [[ -n ${hpc_manage_file[id]-} && ${hpc_manage_exp[$id]} == "${hpc_manage_target_exp:-${hpc_manage_exp[$id]}}" ]] ||
      continue
    older+=("$id")
  done
  hpc_status_ids=(${older[@]+"${older[@]}"} "${@:n+1}")
  hpc_status_hidden=$((n - ${#older[@]}))
}

# hpc_status_summary ID: sets hpc_status_summary to the tasks of array job ID (its keys in
# hpc_manage_keys) per state ('100 tasks: 2 RUNNING, 10 PENDING, 88 COMPLETED'; a map's: items):
# the states SLURM still runs first, then the others in the order of their first task; a task
# SLURM has forgotten counts as its log says it ended, as on its own line.
hpc_status_summary() {
  local key state
  local -A count=() log_of=()
  local -a order=(RUNNING COMPLETING PENDING) text=() paths=()
  # The tasks SLURM has forgotten: how they ended, from their logs (as one line per task says).
  for key in "${hpc_manage_keys[@]}"; do
    [[ ${hpc_st_state[$key]} == UNKNOWN* ]] || continue
    hpc_manage_task_output "$1" "$key"
    log_of[$key]=$hpc_manifest_path
    paths+=("$hpc_manifest_path")
  done
  ((${#paths[@]} == 0)) || hpc_status_log_ends "${paths[@]}"
  for key in "${hpc_manage_keys[@]}"; do
    state=${hpc_st_state[$key]%% *}
    if [[ -n ${log_of[$key]-} ]] && hpc_status_log_state "${hpc_status_log_end[${log_of[$key]}]-}"; then
      state=$hpc_status_log_state
    fi
    [[ -n ${count[$state]-} ]] || {
      count[$state]=0
      [[ " ${order[*]} " == *" $state "* ]] || order+=("$state")
    }
    count[$state]=$((count[$state] + 1))
  done
  for state in "${order[@]}"; do
    [[ -z ${count[$state]-} ]] || text+=("${count[$state]} $state")
  done
  local IFS=,
  hpc_status_summary="${#hpc_manage_keys[@]} tasks: ${text[*]}"
  [[ ${hpc_manage_mode[$1]-} != map ]] || hpc_status_summary="${#hpc_manage_keys[@]} items: ${text[*]}"
  hpc_status_summary=${hpc_status_summary//,/, }
}

# hpc_status_says: (after the table) the lines the logs of its rows (rows_log, rows_job: the
# caller's) say of what they lost: a --copy-back path that no node had
# (hpc_job_copy_back_missing); and a stop at the time-limit warning, which a state of FAILED
# (exit 128+SIGUSR1) hides. Each log is the user's own, opened as hpc_status_log_ends opens it;
# one grep reads up to 200 of them at once (from their descriptors).
hpc_status_says() {
  local i fd line path
  local -a says=(-e '] copy-back WARNING: ' -e '] stopped at the time-limit warning ') fds=()
  local -A key_of=()
  for ((i = 1; i <= ${#rows_log[@]}; i++)); do
    if ((i < ${#rows_log[@]})) && [[ -n ${rows_log[i]} ]] && hpc_trusted_open "${rows_log[i]}" own; then
      fd=$hpc_trusted_fd
      fds+=("/dev/fd/$fd")
      key_of[$fd]=${rows_job[i]}
    fi
    ((${#fds[@]} == 200 || (i == ${#rows_log[@]} && ${#fds[@]}))) || continue
    while IFS= read -r line; do
      [[ $line == /dev/fd/*:* ]] || continue
      path=${line%%:*} line=${line#*:}
      path=${path##*/}
      [[ -z ${key_of[$path]-} ]] || printf '%s: %s\n' "${key_of[$path]}" "${line#\[hpc * }"
    done < <(grep -m 5 -H "${says[@]}" "${fds[@]}" 2>/dev/null)
    for path in "${fds[@]}"; do
      fd=${path##*/}
      exec {fd}<&-
    done
    fds=() key_of=()
  done
}

# hpc_status_log_ends FILE...: sets hpc_status_log_end[FILE] to the last line of each job's log
# FILE that says how the job ended (the toolkit's last line about the program, or a failed step);
# none for a log that says nothing of it (gone, unreadable, or still being written by a job that
# was lost). Only the user's own regular file, not a link (hpc_trusted_open own): a log someone
# else wrote or replaced says nothing. One grep reads up to 200 logs, from their descriptors.
hpc_status_log_ends() {
  local i fd line path re='^\[hpc [^]]*\] (the program |FAILED at step |stopped at the time-limit warning|'
  re+='ended after the time-limit warning)'
  local -a fds=()
  local -A path_of=()
  declare -gA hpc_status_log_end=()
  for ((i = 1; i <= $# + 1; i++)); do
    if ((i <= $#)) && hpc_trusted_open "${!i}" own; then
      fd=$hpc_trusted_fd
      fds+=("/dev/fd/$fd")
      path_of[$fd]=${!i}
    fi
    ((${#fds[@]} == 200 || (i == $# + 1 && ${#fds[@]}))) || continue
    while IFS= read -r line; do
      # Not 'Binary file ... matches' (a log that is not text says nothing).
      [[ $line == /dev/fd/*:* ]] || continue
      path=${line%%:*}
      path=${path_of[${path##*/}]-}
      [[ -z $path ]] || hpc_status_log_end[$path]=${line#*:}
    done < <(grep -H -E -- "$re" "${fds[@]}" 2>/dev/null)
    for path in "${fds[@]}"; do
      fd=${path##*/}
      exec {fd}<&-
    done
    fds=()
  done
}

# hpc_status_log_state LINE: sets hpc_status_log_state and hpc_status_log_exit to how LINE (a
# line of hpc_status_log_ends) says the job ended; false when it says nothing of it.
hpc_status_log_state() {
  local line=$1
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
