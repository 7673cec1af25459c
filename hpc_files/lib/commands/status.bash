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
# What a job's log says of how it ended (the toolkit's last line about the program, or a failed
# step): read for the jobs SLURM has forgotten (hpc_status_grep, hpc_status_log_state).
hpc_status_end_re='^\[hpc [^]]*\] (the program |FAILED at step |stopped at the time-limit warning|'
hpc_status_end_re+='ended after the time-limit warning)'

# hpc_manage_status [EXP]: the table of the project's (or EXP's) jobs and array tasks.
hpc_manage_status() {
  (($# <= 1)) || hpc_die_usage "status" "unexpected word '$2'; usage: status [EXP|JOBID[_TASK]]"
  local id i one_job=0
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
  hpc_status_row JOB EXP KIND STATE EXIT OUTPUT ''
  for id in "${ids[@]}"; do hpc_status_rows "$id"; done
  for id in ${hpc_manage_unrecorded[@]+"${hpc_manage_unrecorded[@]}"}; do
    hpc_status_row "${hpc_pending_job_key[$id]}" "${hpc_pending_exp[${hpc_pending_job_token[$id]}]}" unrecorded \
      "${hpc_pending_job_state[$id]}" - - ''
  done
  # How the jobs SLURM has forgotten ended, if the toolkit wrote it in their logs.
  local -a paths=()
  for i in ${forgotten[@]+"${forgotten[@]}"}; do paths+=("${rows_log[i]}"); done
  hpc_status_grep -s "$hpc_status_end_re" ${paths[@]+"${paths[@]}"}
  for i in ${forgotten[@]+"${forgotten[@]}"}; do
    hpc_status_log_state "${hpc_status_found[${rows_log[i]}]-}" || continue
    rows_state[i]="$hpc_status_log_state (from its log; SLURM has forgotten it)" rows_exit[i]=$hpc_status_log_exit
  done
  hpc_status_print
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

# hpc_status_row JOB EXP KIND STATE EXIT OUTPUT LOG: appends a row to the table of
# hpc_manage_status (its local rows_* arrays, by Bash's dynamic scope; LOG: the log its end is read
# from, or '').
hpc_status_row() {
  rows_job+=("$1") rows_exp+=("$2") rows_kind+=("$3") rows_state+=("$4")
  rows_exit+=("$5") rows_out+=("$6") rows_log+=("$7")
}

# hpc_status_rows ID: appends the rows of the recorded job ID to hpc_manage_status's table: one
# per task, or one for a long array (its job id asked for, or --tasks: every task); notes in its
# forgotten the rows of tasks SLURM has forgotten (how they ended is in their logs, read at once).
hpc_status_rows() {
  local id=$1 key
  ((one_job || ${hpc_status_tasks:-0})) || hpc_manage_count "$id"
  if ((! one_job && ! ${hpc_status_tasks:-0} && hpc_manage_count > hpc_status_task_lines)); then
    hpc_status_summary=${hpc_map_summary[$id]-}
    [[ -n $hpc_status_summary ]] || {
      hpc_manage_keys "$id"
      hpc_status_summary "$id"
    }
    hpc_manifest_output "${hpc_manage_output[$id]}" "$id" %a '' "${hpc_manage_name[$id]}"
    hpc_status_row "${id}_[${hpc_manage_array[$id]}]" "${hpc_manage_exp[$id]}" "${hpc_manage_kind[$id]}" \
      "$hpc_status_summary" - "$hpc_manifest_path" ''
    return 0
  fi
  hpc_manage_task_keys "$id"
  for key in "${hpc_manage_keys[@]}"; do
    hpc_manage_task_output "$id" "$key"
    [[ ${hpc_st_state[$key]} != UNKNOWN* ]] || forgotten+=("${#rows_job[@]}")
    hpc_status_row "$key" "${hpc_manage_exp[$id]}" "${hpc_manage_kind[$id]}" \
      "${hpc_st_state[$key]}${hpc_st_note[$key]:+ (${hpc_st_note[$key]})}" "${hpc_st_exit[$key]}" \
      "$hpc_manifest_path" "$hpc_manifest_path"
  done
}

# hpc_status_print: prints hpc_manage_status's table, its columns as wide as their widest cell.
hpc_status_print() {
  local i w1=0 w2=0 w3=0 w4=0 w5=0
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
  hpc_status_grep -s "$hpc_status_end_re" ${paths[@]+"${paths[@]}"}
  for key in "${hpc_manage_keys[@]}"; do
    state=${hpc_st_state[$key]%% *}
    if [[ -n ${log_of[$key]-} ]] && hpc_status_log_state "${hpc_status_found[${log_of[$key]}]-}"; then
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
# (exit 128+SIGUSR1) hides. Five at most per log (hpc_status_grep).
hpc_status_says() {
  local i line
  hpc_status_grep -m5 '\] (copy-back WARNING: |stopped at the time-limit warning )' "${rows_log[@]:1}"
  for ((i = 1; i < ${#rows_log[@]}; i++)); do
    [[ -n ${rows_log[i]} && -n ${hpc_status_found[${rows_log[i]}]-} ]] || continue
    while IFS= read -r line; do
      printf '%s: %s\n' "${rows_job[i]}" "${line#\[hpc * }"
    done <<<"${hpc_status_found[${rows_log[i]}]%$'\n'}"
  done
}

# hpc_status_grep OPTION ERE FILE...: sets hpc_status_found[FILE] to the lines (each ending in a
# newline) of each job's log FILE ('': none) that match ERE, with grep's OPTION (e.g. -m5); none:
# not set.
# Only the user's own regular file, not a link (hpc_trusted_open own): a log someone else wrote or
# replaced says nothing. One grep reads up to 200 logs at once, from their descriptors.
hpc_status_grep() {
  local option=$1 re=$2 i fd line path
  shift 2
  local -a fds=()
  local -A path_of=() seen=()
  declare -gA hpc_status_found=()
  for ((i = 1; i <= $# + 1; i++)); do
    if ((i <= $#)) && [[ -n ${!i} && -z ${seen[${!i}]-} ]] && hpc_trusted_open "${!i}" own; then
      fd=$hpc_trusted_fd
      fds+=("/dev/fd/$fd")
      path_of[$fd]=${!i} seen[${!i}]=1
    fi
    ((${#fds[@]} == 200 || (i == $# + 1 && ${#fds[@]}))) || continue
    while IFS= read -r line; do
      # Not 'Binary file ... matches' (a log that is not text says nothing).
      [[ $line == /dev/fd/*:* ]] || continue
      path=${line%%:*}
      path=${path_of[${path##*/}]-}
      [[ -z $path ]] || hpc_status_found[$path]+=${line#*:}$'\n'
    done < <(grep -H "$option" -E -- "$re" "${fds[@]}" 2>/dev/null)
    for path in "${fds[@]}"; do
      fd=${path##*/}
      exec {fd}<&-
    done
    fds=()
  done
}

# hpc_status_log_state LINES: sets hpc_status_log_state and hpc_status_log_exit to how the last of
# LINES (those hpc_status_grep found with hpc_status_end_re in a job's log) says the job ended;
# false when it says nothing of it.
hpc_status_log_state() {
  local line=${1%$'\n'}
  [[ -n $line ]] || return 1
  line=${line##*$'\n'}
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
