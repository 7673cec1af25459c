# shellcheck shell=bash
# hpc_followup.bash: "jobs, then one follow-up job that reads what the jobs wrote". Shared by the
# map + gather (hpc_map.bash) and meant for any other study that ends in a report job (a scaling
# test's report, a wandb sync after an offline sweep, a --repeat summary).
#
# Interface
#   Each task (a job, or one task of an array) owns a folder UNIT_DIR/<key>/ and writes
#   UNIT_DIR/<key>/status.json itself, from its batch shell, with hpc_followup_status_write:
#     at its start   state RUNNING
#     at its end     state COMPLETED (exit 0) or FAILED (its exit code), or SLURM's own state
#                    when SLURM already says CANCELLED / TIMEOUT / ... (hpc_followup_final_state)
#   Fields (JSON object, one file, replaced atomically by a rename): key, index (number or null),
#   item, job_id, array_job_id, task_id, state, exit_code (number or null), node, start_utc,
#   end_utc, start_s and end_s (epoch seconds with microseconds), attempt, log; a caller may add
#   fields of its own.
#   The follow-up job is submitted with hpc_followup_sbatch_args IDS... (afterany on every id,
#   --kill-on-invalid-dep=yes: it runs whatever the tasks' fate, and is never left PENDING on a
#   dependency that can no longer be met). Its first step is the Python reader
#     python -m hpc_helpers.followup read --dir UNIT_DIR --keys KEYS --policy POLICY \
#            --out PREFIX [--rerun COMMAND] [--what NAME]
#   (hpc_followup_read runs it): every expected key's newest status; a task left RUNNING is
#   LOST, refined from `scontrol show job` while SLURM still knows the job (never sacct); a
#   missing file is LOST too (or SLURM's state: a task cancelled while pending). It writes
#   PREFIX.tsv and PREFIX.json (one row per task, the policy and its verdict), prints the
#   verdict line on stderr and name=value lines (ok, failed, n_ok, n_failed, count,
#   status_file) on stdout; exit 0 when the policy is met, 1 when not, 2 on bad input.
#   Policies: all-ok, always, min-ok=K, min-ok=P%.

# What this file reads, set by the others: declared here, not set. The plan: its runner; the
# runner module: the Python for the toolkit's helpers.
declare -g hpc_plan_runner hpc_runner_python hpc_followup_start_utc
# hpc_facts.bash: SLURM's time in seconds (hpc_facts_seconds).
declare -g hpc_facts_seconds
# hpc_followup_json_string NAME VALUE: sets the variable NAME to VALUE as a JSON string (quoted;
# backslash, quote and control characters escaped). Pure Bash: a task writes two of these files.
hpc_followup_json_string() {
  # Locals with names no caller uses: NAME must resolve to the caller's variable.
  local -n hpc_followup_out=$1
  local _hpc_fj_value=$2 _hpc_fj_i _hpc_fj_c _hpc_fj_code _hpc_fj_text=''
  _hpc_fj_value=${_hpc_fj_value//\\/\\\\}
  _hpc_fj_value=${_hpc_fj_value//\"/\\\"}
  if [[ $_hpc_fj_value == *[[:cntrl:]]* ]]; then
    for ((_hpc_fj_i = 0; _hpc_fj_i < ${#_hpc_fj_value}; _hpc_fj_i++)); do
      _hpc_fj_c=${_hpc_fj_value:_hpc_fj_i:1}
      if [[ $_hpc_fj_c == [[:cntrl:]] ]]; then
        printf -v _hpc_fj_code '%d' "'$_hpc_fj_c"
        printf -v _hpc_fj_c '\\u%04x' "$_hpc_fj_code"
      fi
      _hpc_fj_text+=$_hpc_fj_c
    done
    _hpc_fj_value=$_hpc_fj_text
  fi
  # shellcheck disable=SC2034 # a nameref: the caller's variable
  hpc_followup_out="\"$_hpc_fj_value\""
}

# hpc_followup_json_list NAME ITEM...: sets the variable NAME to a JSON list of the ITEMs as
# strings (hpc_followup_json_string each).
hpc_followup_json_list() {
  # Locals with names no caller uses: NAME must resolve to the caller's variable.
  local -n hpc_followup_list_out=$1
  local _hpc_fl_item _hpc_fl_quoted _hpc_fl_sep=''
  shift
  # Items with nothing to escape (most lists: options, ids, paths): one printf for all of them.
  printf -v _hpc_fl_item '%s' "$@"
  if (($#)) && [[ $_hpc_fl_item != *[\\\"[:cntrl:]]* ]]; then
    printf -v _hpc_fl_quoted '"%s", ' "$@"
    hpc_followup_list_out="[${_hpc_fl_quoted%, }]"
    return 0
  fi
  hpc_followup_list_out='['
  for _hpc_fl_item in "$@"; do
    hpc_followup_json_string _hpc_fl_quoted "$_hpc_fl_item"
    hpc_followup_list_out+=$_hpc_fl_sep$_hpc_fl_quoted
    _hpc_fl_sep=', '
  done
  hpc_followup_list_out+=']'
}

# hpc_followup_json_object NAME FIELD...: sets the variable NAME to one JSON object. FIELD is
# NAME=TEXT (a string) or NAME:=NUMBER (a number; anything else is written as null).
hpc_followup_json_object() {
  local -n hpc_followup_object=$1
  local _hpc_fo_field _hpc_fo_name _hpc_fo_value _hpc_fo_json='{' _hpc_fo_sep=''
  shift
  for _hpc_fo_field in "$@"; do
    if [[ $_hpc_fo_field == *:=* && ${_hpc_fo_field%%:=*} != *=* ]]; then
      _hpc_fo_name=${_hpc_fo_field%%:=*} _hpc_fo_value=${_hpc_fo_field#*:=}
      [[ $_hpc_fo_value =~ ^-?[0-9]+(\.[0-9]+)?$ ]] || _hpc_fo_value=null
    else
      _hpc_fo_name=${_hpc_fo_field%%=*}
      hpc_followup_json_string _hpc_fo_value "${_hpc_fo_field#*=}"
    fi
    _hpc_fo_json+="$_hpc_fo_sep\"$_hpc_fo_name\": $_hpc_fo_value"
    _hpc_fo_sep=', '
  done
  # shellcheck disable=SC2034 # a nameref: the caller's variable
  hpc_followup_object="$_hpc_fo_json}"
}

# hpc_followup_status_write FILE FIELD...: writes FILE as one JSON object (FIELDs as for
# hpc_followup_json_object), atomically: a temporary file beside it, then a rename (-T: a link
# planted at FILE is replaced, never written through into the folder it points to). A write
# that fails (a full disk) leaves no temporary file behind to keep the disk full.
hpc_followup_status_write() {
  local file=$1 json tmp
  shift
  hpc_followup_json_object json "$@"
  tmp=$file.tmp.$$
  printf '%s\n' "$json" 2>/dev/null >"$tmp" && mv -fT -- "$tmp" "$file" && return 0
  rm -f -- "${tmp:?}"
  return 1
}

# hpc_followup_member_start: (a member's batch shell: a map's task, a study's run) its clock starts:
# hpc_followup_start_utc, hpc_followup_start_s (epoch seconds, a dot before the microseconds).
hpc_followup_member_start() {
  hpc_followup_utc hpc_followup_start_utc
  hpc_followup_start_s=${EPOCHREALTIME/,/.}
}

# hpc_followup_member_status FILE KEY STATE EXIT_CODE END_UTC END_S LOG [FIELD...]: writes a member's
# status file FILE (the interface above): its key, this job, the state and exit code, this node,
# the clock (hpc_followup_member_start's and END_*), its log, and the caller's own FIELD...
hpc_followup_member_status() {
  hpc_followup_status_write "$1" "key=$2" "job_id=${SLURM_JOB_ID:-}" "state=$3" "exit_code:=$4" \
    "node=${SLURMD_NODENAME:-}" "start_utc=$hpc_followup_start_utc" "end_utc=$5" "start_s:=$hpc_followup_start_s" \
    "end_s:=$6" "log=$7" "${@:8}"
}

# hpc_followup_utc NAME: sets the variable NAME to the time now in UTC, 2026-11-23T12:00:05Z.
hpc_followup_utc() {
  local TZ=UTC0
  printf -v "$1" '%(%Y-%m-%dT%H:%M:%SZ)T' -1
}

# hpc_followup_final_state STATUS: sets hpc_followup_state to the task's final state: SLURM's,
# when SLURM has already ended the job (scancel, time limit: the batch shell still runs in its
# kill wait, and a program that handles TERM and exits 0 was still cancelled), else COMPLETED
# for exit 0 and FAILED for any other. While the batch shell runs, SLURM shows such a job as
# COMPLETING (or already CANCELLED, TIMEOUT...); a run time at its limit tells a TIMEOUT. A run
# that was preempted (hpc_job_preempted) ends PREEMPTED: it is requeued, to be run again.
# shellcheck disable=SC2034 # hpc_followup_state is the result, read by the caller
hpc_followup_final_state() {
  local status=$1 line state='' job=${SLURM_JOB_ID:?} run limit
  # An array task by its own name: the array's job id shows every task of the array.
  [[ -z ${SLURM_ARRAY_TASK_ID:-} ]] || job=${SLURM_ARRAY_JOB_ID:?}_$SLURM_ARRAY_TASK_ID
  line=$(exec scontrol show job -o "$job" 2>/dev/null) || line=
  [[ $line =~ JobState=([A-Z_]+) ]] && state=${BASH_REMATCH[1]}
  if [[ $state == COMPLETING ]]; then
    state=CANCELLED
    if [[ $line =~ RunTime=([0-9:-]+)\ .*TimeLimit=([0-9:-]+) ]]; then
      run=${BASH_REMATCH[1]} limit=${BASH_REMATCH[2]}
      if hpc_facts_seconds "$limit" && limit=$hpc_facts_seconds && hpc_facts_seconds "$run" &&
        ((hpc_facts_seconds >= limit)); then
        state=TIMEOUT
      fi
    fi
  fi
  # A preempted run (hpc_job_signals.bash) is requeued: its program's exit status, 0 for one that
  # stopped early at the notice, tells neither that its work is done nor that it failed.
  # An end of SLURM's own (hpc_facts.bash) stays; COMPLETED and FAILED are the exit status's.
  if ((${hpc_job_preempted:-0})); then
    hpc_followup_state=PREEMPTED
  elif hpc_facts_state_ended "$state" && [[ $state != COMPLETED && $state != FAILED ]]; then
    hpc_followup_state=$state
  elif ((status == 0)); then
    hpc_followup_state=COMPLETED
  else
    hpc_followup_state=FAILED
  fi
}

# hpc_followup_sbatch_args ID...: sets hpc_followup_sbatch to the follow-up job's dependency
# options: afterany on every ID, and SLURM cancels it at once if a dependency can never be met.
# shellcheck disable=SC2034 # hpc_followup_sbatch is the result, read by the caller
hpc_followup_sbatch_args() {
  local IFS=:
  hpc_followup_sbatch=(--dependency="afterany:$*" --kill-on-invalid-dep=yes)
}

# hpc_followup_python: sets hpc_followup_py to the Python that runs the reader in a job: the
# job's venv's when it has one, else python3 of the node.
hpc_followup_python() {
  "hpc_runner_${hpc_plan_runner}_python"
  hpc_followup_py=$hpc_runner_python
}

# hpc_followup_read DIR KEYS POLICY PREFIX RERUN [WHAT]: in the follow-up job: runs the reader
# (see the header; WHAT names the follow-up in its verdict line, default gather); sets
# hpc_followup_vars (name=value lines) and hpc_followup_rc (0 met, 1 not met, 2 the reader
# failed). The verdict line goes to the job's output.
# shellcheck disable=SC2034 # hpc_followup_vars and hpc_followup_rc are the results
hpc_followup_read() {
  hpc_followup_python
  hpc_followup_rc=0
  hpc_followup_vars=$(PYTHONPATH=${hpc_plan_python_helpers:?}${PYTHONPATH:+:$PYTHONPATH} \
    "$hpc_followup_py" -m hpc_helpers.followup read --dir "$1" --keys "$2" --policy "$3" \
    --out "$4" --rerun "$5" --what "${6:-gather}") || hpc_followup_rc=$?
}
