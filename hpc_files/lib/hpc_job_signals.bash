# shellcheck shell=bash
# hpc_job_signals.bash: signals and restarts in a job (sourced by hpc_job.bash): the time-limit
# warning passed only to the processes that catch it (hpc_job_warn), the batch shell's traps
# (hpc_job_forward), and requeueing: the toolkit's own (hpc_job_maybe_requeue) and the program's
# through the scontrol shim (hpc_job_scontrol), both counted against --requeue N; a preempted run
# (SLURM's notice is the same signal) is requeued too, and counts against nothing.

# What this file reads, set by the others: declared here, not set (values already there are
# kept), so that the linter knows each name and catches a misspelt one.
# The plan file (hpc_job_plan_load); hpc_job.bash: the launcher's srun options.
declare -g hpc_plan_requeue
# hpc_facts.bash (loaded by hpc_common.bash): SLURM's times in seconds.
declare -g hpc_facts_seconds
declare -ga hpc_launcher_srun

# hpc_job_catches PID SIGNAL [MASK]: true when process PID has a handler for SIGNAL (a name, e.g.
# USR1): bit N-1 of the SigCgt mask in /proc/PID/status for signal N; with MASK SigIgn, true
# when PID ignores SIGNAL.
hpc_job_catches() {
  local pid=$1 number mask line
  number=$(kill -l "$2" 2>/dev/null) || return 1
  while IFS= read -r line; do
    [[ $line == "${3:-SigCgt}:"* ]] || continue
    mask=${line#*:}
    mask=${mask//[[:space:]]/}
    [[ $mask =~ ^[0-9a-fA-F]{1,16}$ ]] || return 1
    # An explicit status: a bare return in code run from a trap returns the status from before it.
    [[ $(((16#$mask >> (number - 1)) & 1)) == 1 ]] && return 0
    return 1
  done 2>/dev/null <"/proc/$pid/status"
  return 1
}

# hpc_job_is_runtime PID: true when PID is a container runtime (apptainer or singularity, run
# directly or by an interpreter, or Apptainer's starter): it passes every signal on to the
# program inside, whether the program takes it or not, so the warning looks through it to the
# processes below.
hpc_job_is_runtime() {
  local comm='' word
  local -a argv=()
  IFS= read -r comm 2>/dev/null <"/proc/$1/comm" || return 1
  [[ $comm == starter* || $comm == [Aa]pptainer* || $comm == [Ss]ingularity* ]] && return 0
  mapfile -d '' -n 2 argv 2>/dev/null <"/proc/$1/cmdline" || return 1
  for word in "${argv[@]}"; do
    [[ ${word##*/} == apptainer || ${word##*/} == singularity ]] && return 0
  done
  return 1
}

# hpc_job_warn_tree PID SIGNAL: sends SIGNAL to the outermost processes of the tree at PID that
# catch it (in each branch the first one from the top; a container runtime is looked through),
# each once: a process in hpc_job_warned_pids (warned in an earlier round) is passed over with
# its branch. Processes without a handler, which SIGNAL would kill, never get it. Appends what got
# it ('PID (name)') to hpc_job_warned_to and its pid to hpc_job_warned_pids. True when the tree at
# PID has had the warning (now or in an earlier round); else, unless PID ignores SIGNAL (an output
# filter, as the rank-lines awks and the root-cause tee: it needs no warning), sets
# hpc_job_warn_waiting to 1: PID may install a handler yet (a program still importing, whose only
# children are its output filters, or whose workers have not started).
hpc_job_warn_tree() {
  local pid=$1 signal=$2 child comm='' warned=1
  [[ " ${hpc_job_warned_pids:-} " != *" $pid "* ]] || return 0
  if ! hpc_job_is_runtime "$pid" && hpc_job_catches "$pid" "$signal"; then
    IFS= read -r comm 2>/dev/null <"/proc/$pid/comm" || true
    kill -"$signal" "$pid" 2>/dev/null || return 1
    hpc_job_warned_to+=("$pid ($comm)")
    hpc_job_warned_pids+=" $pid"
    return 0
  fi
  for child in $(pgrep -P "$pid" 2>/dev/null); do
    hpc_job_warn_tree "$child" "$signal" && warned=0
  done
  ((warned == 0)) && return 0
  hpc_job_catches "$pid" "$signal" SigIgn || hpc_job_warn_waiting=1
  return 1
}

# hpc_job_warn ROOT SIGNAL: passes the time-limit warning SIGNAL to the processes below ROOT that
# catch it (hpc_job_warn_tree), each once, with one line per round that warned someone. It looks
# again while ROOT runs (each second, after a minute every 5 s) until every branch has been
# warned: a program still starting (heavy imports before its handler; torchrun's workers do not
# all install theirs at once) gets the warning once it installs its handler; a branch that never
# installs one runs on to the time limit, and the looking ends with ROOT.
hpc_job_warn() {
  local root=$1 signal=$2 said=0 rounds=0 hpc_job_warned_pids='' hpc_job_warn_waiting
  while kill -0 "$root" 2>/dev/null; do
    hpc_job_warned_to=() hpc_job_warn_waiting=0
    hpc_job_warn_tree "$root" "$signal" || true
    if ((${#hpc_job_warned_to[@]})); then
      hpc_job_log "time-limit warning SIG$signal passed to ${hpc_job_warned_to[*]}"
    elif ((said == 0)) && [[ -z $hpc_job_warned_pids ]]; then
      local msg="no process of the program catches SIG$signal (yet): it gets the warning once it installs a handler,"
      msg+=" else it runs on until the time limit"
      hpc_job_log "$msg"
      said=1
    fi
    ((hpc_job_warn_waiting)) || return 0
    sleep $((++rounds <= 60 ? 1 : 5))
  done
}

# hpc_job_forward SIGNAL: the batch shell's trap. The time-limit warning goes only to processes
# that catch it (its default action would kill the others): directly below the program here (no
# launcher), or, for srun's tasks on every node, through the carrier signal URG (ignored by
# default, so nothing dies of it) that scancel sends to the job's steps and each task's
# hpc_job_supervise turns into the warning. srun itself would pass the warning to every process
# of the step, torchrun's agent included. Other signals go to the program as they are.
hpc_job_forward() {
  if [[ $1 == "${HPC_WARNING_SIGNAL:-}" ]]; then
    hpc_job_warned=1
    if hpc_job_preempted_now; then
      # Told apart from the time limit, so that the restart it causes is not counted against it.
      hpc_job_preempted=1
      hpc_job_preempt_record_make
      local msg="preempted by a higher-priority job (SIG$1 at SLURM's notice; the partition's grace time ends"
      msg+=" this run): passing it to the program, then waiting for it to finish; the job is requeued"
      hpc_job_log "$msg"
      hpc_job_preempt_requeueable
    else
      hpc_job_log "time-limit warning (SIG$1): passing it to the program, then waiting for it to finish"
    fi
    [[ -n ${hpc_job_program_pid:-} ]] || return 0
    if ((${#hpc_launcher_srun[@]} == 0)); then
      hpc_job_warn "$hpc_job_program_pid" "$1" &
    else
      local target
      target=$(hpc_job_own_id)
      scancel --signal=URG "$target" ||
        hpc_job_log "scancel --signal=URG $target failed: the warning did not reach the program"
    fi
    return 0
  fi
  # SLURM's SIGTERM (time limit, scancel, requeue) ends the run: the job's end is SLURM's then.
  if [[ $1 == TERM ]]; then
    hpc_job_ended_by_slurm=1
    hpc_job_term_reason
  fi
  if [[ $1 == TERM ]] && hpc_job_requeued_by_program; then
    local msg="received SIGTERM: SLURM ends this run for the requeue the program asked for"
    msg+=" (restart $((${SLURM_RESTART_COUNT:-0} + 1)) of $hpc_plan_requeue); passing it to the program"
    hpc_job_log "$msg"
  else
    hpc_job_log "received SIG$1; passing it to the program"
  fi
  [[ -z ${hpc_job_program_pid:-} ]] || kill -"$1" "$hpc_job_program_pid" 2>/dev/null || true
}

# hpc_job_term_reason: (SLURM's SIGTERM came) sets hpc_job_term_why to what sent it, for the
# log's last line: the time limit when this run has used its time limit (less a minute: SLURM
# may signal early, and counts from its own start), else scancel (or a requeue, or preemption).
# No question to SLURM: by then it may no longer list the job, or say INVALID.
# shellcheck disable=SC2034 # hpc_job_term_why: read by hpc_job.bash
hpc_job_term_reason() {
  local limit t0=${HPC_JOB_T0:-$EPOCHSECONDS} elapsed
  elapsed=$((EPOCHSECONDS - ${t0%%[.,]*}))
  hpc_job_term_why='scancel, a requeue or preemption'
  hpc_facts_seconds "${hpc_plan_time:-}" || return 0
  limit=$hpc_facts_seconds
  ((elapsed + 60 < limit)) || hpc_job_term_why='the time limit'
}

# hpc_job_requeue_record [RESTART]: prints the path of the record that the program of run RESTART
# (default: this run, SLURM_RESTART_COUNT) requeued this job itself: a file beside the job's log
# (${scratch_dir}/hpc_outputs, on storage every node shares), named by the job id and the run.
hpc_job_requeue_record() {
  [[ -n ${scratch_dir:-} && -n ${SLURM_JOB_ID:-} ]] || return 1
  printf '%s/hpc_outputs/.hpc_requeue.%s.%s\n' "$scratch_dir" "$SLURM_JOB_ID" "${1:-${SLURM_RESTART_COUNT:-0}}"
}

# hpc_job_own_id: prints this job's own name for scontrol and scancel: ARRAYJOB_TASK for an array
# task (one of them shares the array's job id, and by that SLURM shows, updates, signals and
# requeues every task of the array), else SLURM_JOB_ID.
hpc_job_own_id() {
  if [[ -n ${SLURM_ARRAY_TASK_ID:-} ]]; then
    printf '%s_%s\n' "${SLURM_ARRAY_JOB_ID:?}" "$SLURM_ARRAY_TASK_ID"
  else
    printf '%s\n' "${SLURM_JOB_ID:?}"
  fi
}

# hpc_job_preempted_now: true when SLURM has chosen this job for preemption (its PreemptTime is
# set): the warning signal then is SLURM's notice of it (a site's preempt_send_user_signal), not
# of the time limit. Asked once, bounded: no answer reads as not preempted.
hpc_job_preempted_now() {
  local out id
  id=$(hpc_job_own_id)
  out=$(timeout 10 scontrol -o show job "$id" 2>/dev/null) || return 1
  [[ $out =~ (^|[[:space:]])PreemptTime=([^[:space:]]+) ]] || return 1
  [[ ${BASH_REMATCH[2]} != None && ${BASH_REMATCH[2]} != Unknown ]]
}

# hpc_job_preempt_requeueable: (at the preemption notice) makes a job submitted without --requeue N
# (--no-requeue) requeueable: SLURM cancels a preempted job that is not, so the work the program
# saved at the notice would never be resumed (and a program that stopped early and exited 0 would
# end the job COMPLETED). Then SLURM requeues it at the end of the grace time, and the batch shell
# may after an early stop (hpc_job_maybe_requeue_preempted). Bounded; a refusal is said.
hpc_job_preempt_requeueable() {
  ((${hpc_plan_requeue:-0} == 0)) || return 0
  local id
  id=$(hpc_job_own_id)
  if timeout 10 scontrol update JobId="$id" Requeue=1 >/dev/null 2>&1; then
    hpc_job_log "made requeueable (it was submitted without --requeue N): SLURM requeues a preempted job" \
      "that is, and cancels one that is not"
  else
    hpc_job_log "scontrol update JobId=$id Requeue=1 failed: SLURM may cancel this preempted run" \
      "instead of requeueing it"
  fi
}

# hpc_job_preempt_record [RESTART]: prints the path of the record that run RESTART (default: this
# run) of this job was preempted: beside the requeue records (hpc_job_requeue_record).
hpc_job_preempt_record() {
  [[ -n ${scratch_dir:-} && -n ${SLURM_JOB_ID:-} ]] || return 1
  printf '%s/hpc_outputs/.hpc_preempted.%s.%s\n' "$scratch_dir" "$SLURM_JOB_ID" "${1:-${SLURM_RESTART_COUNT:-0}}"
}

# hpc_job_preempt_record_make: records that this run was preempted (a plain new file; an existing
# one is left as it is).
hpc_job_preempt_record_make() {
  local record
  record=$(hpc_job_preempt_record) || return 0
  (set -C && printf 'preempted\n' >"$record") 2>/dev/null || true
}

# hpc_job_was_preempted [RESTART]: true when run RESTART (default: this run) was preempted.
hpc_job_was_preempted() {
  local record
  record=$(hpc_job_preempt_record "$@") || return 1
  [[ -f $record && ! -L $record ]]
}

# hpc_job_restarts_counted: prints how many of this job's restarts count against --requeue N: those
# after a time limit or the program's requeue, not those after a preemption.
hpc_job_restarts_counted() {
  local restart counted=${SLURM_RESTART_COUNT:-0}
  for ((restart = 0; restart < ${SLURM_RESTART_COUNT:-0}; restart++)); do
    ! hpc_job_was_preempted "$restart" || counted=$((counted - 1))
  done
  printf '%s\n' "$counted"
}

# hpc_job_requeued_by_program: true when the program of this run has requeued this job itself
# (hpc_job_program_requeue made this run's record).
hpc_job_requeued_by_program() {
  local record
  record=$(hpc_job_requeue_record) || return 1
  [[ -f $record && ! -L $record ]]
}

# hpc_job_requeue_records_remove: (the batch shell) removes the records of this job's earlier runs
# and, when it ends without the program's requeue, this run's: only plain files by those names.
hpc_job_requeue_records_remove() {
  local restart record
  for ((restart = 0; restart <= ${SLURM_RESTART_COUNT:-0}; restart++)); do
    ((restart < ${SLURM_RESTART_COUNT:-0})) || ! hpc_job_requeued_by_program || continue
    record=$(hpc_job_requeue_record "$restart") || return 0
    [[ ! -f $record || -L $record ]] || rm -f -- "${record:?}"
  done
}

# hpc_job_preempt_records_remove: (the batch shell, at the end of a run) removes the records of
# the earlier runs' preemptions once this run ends the job: while it has runs to come (requeued
# by the batch shell, the program or the preemption of this run), they are counted at each.
hpc_job_preempt_records_remove() {
  local restart record
  ((! ${hpc_job_requeue_asked:-0})) && ! hpc_job_requeued_by_program && ! hpc_job_was_preempted || return 0
  for ((restart = 0; restart < ${SLURM_RESTART_COUNT:-0}; restart++)); do
    record=$(hpc_job_preempt_record "$restart") || return 0
    [[ ! -f $record || -L $record ]] || rm -f -- "${record:?}"
  done
}

# hpc_job_own_requeue ARGS...: true when ARGS (scontrol's) ask to requeue this very job:
# 'requeue' after any options, naming SLURM_JOB_ID or, in an array, ARRAYJOB_TASK.
hpc_job_own_requeue() {
  local word id
  local -a ids
  while [[ ${1-} == -* ]]; do shift; done
  [[ ${1-} == requeue ]] || return 1
  shift
  for word in "$@"; do
    IFS=, read -r -a ids <<<"$word"
    for id in "${ids[@]}"; do
      [[ $id == "${SLURM_JOB_ID:-}" ]] && return 0
      [[ -n ${SLURM_ARRAY_TASK_ID:-} && $id == "${SLURM_ARRAY_JOB_ID:-}_$SLURM_ARRAY_TASK_ID" ]] && return 0
    done
  done
  return 1
}

# hpc_job_own_words ARGS...: sets hpc_job_words to ARGS, in an array task with SLURM_JOB_ID in
# a list of ids replaced by the task's own id (hpc_job_own_id): for the one task whose job id is
# its array's, that id names the whole array to scontrol, which would requeue every task.
hpc_job_own_words() {
  local word own i IFS=,
  local -a ids
  hpc_job_words=("$@")
  [[ -n ${SLURM_ARRAY_TASK_ID:-} ]] || return 0
  own=$(hpc_job_own_id)
  hpc_job_words=()
  for word in "$@"; do
    if [[ $word != -* ]]; then
      read -r -a ids <<<"$word"
      for i in "${!ids[@]}"; do [[ ${ids[i]} != "${SLURM_JOB_ID:-}" ]] || ids[i]=$own; done
      word="${ids[*]}"
    fi
    hpc_job_words+=("$word")
  done
}

# hpc_job_real_scontrol SHIM: prints the first scontrol on PATH that is not SHIM (the file itself).
hpc_job_real_scontrol() {
  local dir
  local -a dirs
  IFS=: read -r -a dirs <<<"$PATH"
  for dir in "${dirs[@]}"; do
    [[ -n $dir && -f $dir/scontrol && -x $dir/scontrol && ! $dir/scontrol -ef $1 ]] || continue
    printf '%s\n' "$dir/scontrol"
    return 0
  done
  return 1
}

# hpc_job_program_requeue REAL ARGS...: the program asks to requeue its own job (scontrol ARGS;
# Lightning's SLURM handler does so on the time-limit warning). It counts against --requeue N
# (the plan's hpc_plan_requeue) as the toolkit's own requeue does: with restarts left, this run's record
# is made first (so the batch shell neither requeues again nor says otherwise), then REAL
# requeues the job; else it is refused (status 1) and the run goes on. Once per run.
hpc_job_program_requeue() {
  local real=$1 restarts max=${hpc_plan_requeue:-0} record status=0 msg
  shift
  # The requeue ends this run: SLURM's SIGTERM must not cut the bookkeeping short.
  trap '' TERM
  restarts=$(hpc_job_restarts_counted)
  if hpc_job_was_preempted; then
    # SLURM requeues a preempted job anyway: the program's requeue (on the same signal) counts not.
    hpc_job_log "requeueing for the program (scontrol $*) after the preemption; it does not count against --requeue N"
    "$real" "$@"
    return
  fi
  if ((max == 0)); then
    msg="not requeued: the program asked (scontrol $*), but this job was submitted without --requeue N"
    msg+=" (no restarts allowed); the run goes on"
    hpc_job_log "$msg"
    return 1
  fi
  if ((restarts >= max)); then
    msg="not requeued: the program asked (scontrol $*), but $restarts restart(s) done of the $max allowed"
    msg+=" (--requeue $max); the run goes on"
    hpc_job_log "$msg"
    return 1
  fi
  if ! record=$(hpc_job_requeue_record); then
    msg="not requeued by the program (scontrol $*): without the job's scratch_dir it cannot be recorded;"
    msg+=" the batch shell's requeue after the run applies"
    hpc_job_log "$msg"
    return 1
  fi
  if ! (set -C && printf '%s\n' "$((restarts + 1))" >"$record") 2>/dev/null; then
    if [[ -f $record && ! -L $record ]]; then
      hpc_job_log \
        "not requeued again: the program already requeued this job in this run (restart $((restarts + 1)) of $max)"
      return 0
    fi
    msg="not requeued by the program (scontrol $*): cannot write the record $record;"
    msg+=" the batch shell's requeue after the run applies"
    hpc_job_log "$msg"
    return 1
  fi
  # Said before the requeue: once SLURM ends the step, a line written after it may be lost.
  msg="requeueing for the program (scontrol $*), restart $((restarts + 1)) of $max:"
  msg+=" SLURM ends this run now and starts the job again"
  hpc_job_log "$msg"
  "$real" "$@" || status=$?
  if ((status != 0)); then
    rm -f -- "${record:?}"
    hpc_job_log "the program's scontrol $* failed (exit status $status): not requeued by it"
    return "$status"
  fi
}

# hpc_job_scontrol SHIM ARGS...: the scontrol that the program finds first on its PATH
# (lib/shims/scontrol, the file SHIM): a requeue of this job is hpc_job_program_requeue's;
# anything else goes to the real scontrol as it is.
hpc_job_scontrol() {
  local real
  real=$(hpc_job_real_scontrol "$1") || {
    printf 'scontrol: command not found\n' >&2
    return 127
  }
  shift
  if hpc_job_own_requeue "$@"; then
    # The job's plan (HPC_JOB_PLAN, exported by the batch shell): the restarts allowed.
    hpc_job_plan_load "${HPC_JOB_PLAN:-}"
    hpc_job_own_words "$@"
    hpc_job_program_requeue "$real" "${hpc_job_words[@]}"
    return
  fi
  exec "$real" "$@"
}

# hpc_job_maybe_requeue: after a warned run, requeues this job (once, from the batch shell) while
# it has restarts left (--requeue N: SLURM_RESTART_COUNT < N), unless the program has requeued it
# itself in this run (hpc_job_program_requeue), or SLURM ended the run (SIGTERM: at the time
# limit the program had not stopped by itself, and a restart would start from what it never saved).
# scontrol is bounded: a hanging one must not hold the batch shell to the time limit.
hpc_job_maybe_requeue() {
  local restarts
  restarts=$(hpc_job_restarts_counted)
  if hpc_job_requeued_by_program; then
    hpc_job_log \
      "requeued by the program in this run (restart $((restarts + 1)) of $hpc_plan_requeue): not requeued again"
    return 0
  fi
  if ((${hpc_job_preempted:-0})); then
    hpc_job_maybe_requeue_preempted
    return 0
  fi
  ((hpc_job_warned && hpc_plan_requeue > 0)) || return 0
  if ((${hpc_job_ended_by_slurm:-0})); then
    hpc_job_log \
      "not requeued: SLURM ended this run (SIGTERM: the time limit or scancel) before the program ended by itself"
    return 0
  fi
  if ((restarts >= hpc_plan_requeue)); then
    hpc_job_log "not requeued: $restarts restart(s) done of the $hpc_plan_requeue allowed"
    return 0
  fi
  hpc_job_log "requeueing (restart $((restarts + 1)) of $hpc_plan_requeue)"
  hpc_job_requeue_asked=1
  local id
  id=$(hpc_job_own_id)
  timeout 10 scontrol requeue "$id" || hpc_job_log "scontrol requeue $id failed"
}

# hpc_job_maybe_requeue_preempted: after a preempted run, requeues this job whether or not it has
# --requeue N (a program that stopped early at the notice and exited 0 would else end the job
# COMPLETED for work not done): SLURM would requeue it at the end of the grace time anyway. When
# SLURM ended the run (SIGTERM at the end of the grace time), SLURM requeues it itself.
hpc_job_maybe_requeue_preempted() {
  local max=${hpc_plan_requeue:-0}
  if ((${hpc_job_ended_by_slurm:-0})); then
    hpc_job_log "preempted: SLURM ended this run at the end of the grace time and requeues the job"
    return 0
  fi
  hpc_job_log "requeueing after the preemption (restart $((${SLURM_RESTART_COUNT:-0} + 1));" \
    "a preemption does not count against --requeue $max)"
  hpc_job_requeue_asked=1
  local id
  id=$(hpc_job_own_id)
  timeout 10 scontrol requeue "$id" || hpc_job_log "scontrol requeue $id failed"
}
