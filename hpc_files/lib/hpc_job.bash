# shellcheck shell=bash
# shellcheck disable=SC2154 # reads the plan the generated job script assigns (hpc_job_*, hpc_command, num_nodes, gpus_per_node)
# hpc_job.bash: what a job does on the compute nodes. Sourced by the generated job script (the
# batch shell, on the job's first node) and by job_step.sh (the tasks SLURM starts on every node).
#
# The batch shell (hpc_job_main):
#   phase 1  when the cluster gives jobs no SLURM_TMPDIR, one 'guard' task per node (one srun
#            step, --overlap) makes this job's folder there and stays until the end: after
#            scancel or the time limit no new step can start, so cleanup must come from a step
#            that is already running (it gets SIGTERM then, or SIGUSR2 from us at a normal end);
#   phase 2  the program: runner (venv) x launcher (none, lightning, torchrun), started in the
#            background and waited for, so that signal traps run at once and are forwarded;
#   phase 3  the guards remove what phase 1 made; the job exits with the program's status.
# Every wait of the batch shell on the guards is bounded (hpc_job_start_guards, hpc_job_stop_guards).

# shellcheck source=hpc_files/lib/hpc_common.bash
source "$(dirname "${BASH_SOURCE[0]}")/hpc_common.bash"
# shellcheck source=hpc_files/lib/hpc_configs.bash
source "$(dirname "${BASH_SOURCE[0]}")/hpc_configs.bash"
# shellcheck source=hpc_files/lib/hpc_sweep.bash
source "$(dirname "${BASH_SOURCE[0]}")/hpc_sweep.bash"
# shellcheck source=hpc_files/lib/hpc_stage.bash
source "$(dirname "${BASH_SOURCE[0]}")/hpc_stage.bash"

# hpc_job_log MESSAGE...: one line to the job's output, marked as the toolkit's.
hpc_job_log() {
  printf '[hpc %s] %s\n' "${SLURMD_NODENAME:-$(hostname)}" "$*" >&2
}

# hpc_job_fail STEP MESSAGE...: the toolkit's step STEP failed: says so and exits 1, so the job
# ends FAILED before (or instead of) the program.
hpc_job_fail() {
  local step=$1
  shift
  hpc_job_log "FAILED at step '$step': $*"
  exit 1
}

# hpc_job_elapsed: seconds since the batch script started (HPC_JOB_T0), e.g. 0.042.
hpc_job_elapsed() {
  local now=${EPOCHREALTIME/[.,]/} start=${HPC_JOB_T0/[.,]/}
  local us=$((now - start))
  printf '%d.%03d\n' "$((us / 1000000))" "$(((us % 1000000) / 1000))"
}

# hpc_job_tmpdir_path: prints this node's emulated SLURM_TMPDIR: the profile's root (expanded
# here, from this node's environment) / hpc_tmpdir.<user>.<job id>. The name holds the job id
# (an array task has its own) so that cleanup tools can ask SLURM whether its job still runs.
hpc_job_tmpdir_path() {
  hpc_configs_expand "$HPC_JOB_TMPDIR_ROOT" || return 1
  local root=${hpc_configs_argv[0]}
  [[ $root == /* ]] || {
    hpc_job_log "the local scratch root '$root' is not an absolute path"
    return 1
  }
  printf '%s/hpc_tmpdir.%s.%s\n' "${root%/}" "${USER:-$(id -un)}" "${SLURM_JOB_ID:?}"
}

# hpc_job_tmpdir_make PATH: makes PATH mode 0700, or reuses it when it is this job's own folder
# (a requeued job); never follows or reuses something planted with the same name.
hpc_job_tmpdir_make() {
  local path=$1
  mkdir -p -- "$(dirname -- "$path")" 2>/dev/null || true
  if mkdir -m 700 -- "$path" 2>/dev/null; then
    printf '%s\n' "$SLURM_JOB_ID" >"$path/.hpc_tmpdir"
    return 0
  fi
  if [[ -d $path && ! -L $path && -O $path && -f $path/.hpc_tmpdir && ! -L $path/.hpc_tmpdir ]] &&
    [[ $(<"$path/.hpc_tmpdir") == "$SLURM_JOB_ID" ]]; then
    return 0
  fi
  hpc_job_log "cannot make SLURM_TMPDIR $path: something else already has that name"
  return 1
}

# hpc_job_tmpdir_remove PATH: removes this job's emulated SLURM_TMPDIR: only a real folder (not
# a symlink) that holds this job's record, without crossing into other file systems.
hpc_job_tmpdir_remove() {
  local path=${1:?}
  [[ -d $path && ! -L $path && -f $path/.hpc_tmpdir ]] || return 0
  [[ $(<"$path/.hpc_tmpdir") == "$SLURM_JOB_ID" ]] || return 0
  rm -rf --one-file-system -- "${path:?}"
}

# hpc_job_node_tmpdir: sets hpc_job_node_tmpdir to this node's SLURM_TMPDIR: the cluster's, or the
# one this job makes (emulated mode).
hpc_job_node_tmpdir() {
  if [[ ${HPC_JOB_TMPDIR_MODE:-provided} == emulated ]]; then
    hpc_job_node_tmpdir=$(hpc_job_tmpdir_path) || return 1
  else
    hpc_job_node_tmpdir=${SLURM_TMPDIR:?}
  fi
}

# hpc_job_copy_back TMPDIR: copies the --copy-back paths (relative to TMPDIR) to
# ${scratch_dir}/${exp_name}/; returns 1 when any copy fails (nothing is removed then).
hpc_job_copy_back() {
  local tmpdir=$1 rel dest=${scratch_dir:?}/${exp_name:?} rc=0
  [[ -n ${HPC_JOB_COPY_BACK:-} ]] || return 0
  local -a paths
  mapfile -t paths <<<"$HPC_JOB_COPY_BACK"
  mkdir -p -- "$dest" || return 1
  for rel in "${paths[@]}"; do
    [[ -n $rel ]] || continue
    if [[ ! -e $tmpdir/$rel ]]; then
      hpc_job_log "copy-back: $rel is not in SLURM_TMPDIR; nothing to copy"
      continue
    fi
    if ! mkdir -p -- "$dest/$(dirname -- "$rel")" || ! cp -a -- "$tmpdir/$rel" "$dest/$(dirname -- "$rel")/"; then
      hpc_job_log "copy-back of $rel to $dest FAILED"
      rc=1
    fi
  done
  ((rc)) || hpc_job_log "copied back to $dest: $(printf '%s ' "${paths[@]}")"
  return "$rc"
}

# hpc_job_guard: the phase-1 task of one node (job_step.sh guard). Makes the node's SLURM_TMPDIR
# (emulated mode), unpacks the data archive into it, prints 'ready NODE' (or 'failed NODE'), then
# waits for SIGUSR2 (normal end) or SIGTERM (scancel, time limit), says 'stopping NODE', copies
# back (first node) and removes what it made, only after the copy succeeded, and says 'done NODE'
# (or 'cleanup-failed NODE'). Its lines reach the batch shell through the guards' srun.
hpc_job_guard() {
  local path sleeper made=0
  if ! hpc_job_node_tmpdir; then
    printf 'failed %s\n' "$SLURMD_NODENAME"
    exit 1
  fi
  path=$hpc_job_node_tmpdir
  if [[ $HPC_JOB_TMPDIR_MODE == emulated ]]; then
    if ! hpc_job_tmpdir_make "$path"; then
      printf 'failed %s\n' "$SLURMD_NODENAME"
      exit 1
    fi
    made=1
  fi
  # shellcheck disable=SC2317,SC2329 # invoked by the traps below
  hpc_job_guard_end() {
    local rc=0
    trap '' TERM USR2 INT
    # The batch shell re-sends the stop signal until each node says it got it: a message to a
    # node whose slurmd is away is lost. (After the batch shell has gone, nobody reads this.)
    printf 'stopping %s\n' "$SLURMD_NODENAME" 2>/dev/null || true
    [[ -z ${sleeper:-} ]] || kill "$sleeper" 2>/dev/null || true
    if [[ ${SLURM_NODEID:-0} == 0 ]] && ! hpc_job_copy_back "$path"; then
      hpc_job_log "copy-back failed: $path is kept"
      printf 'cleanup-failed %s\n' "$SLURMD_NODENAME" 2>/dev/null || true
      exit 1
    fi
    if ((made)); then
      hpc_job_tmpdir_remove "$path" || { hpc_job_log "could not remove $path" && rc=1; }
    fi
    if ((rc)); then
      printf 'cleanup-failed %s\n' "$SLURMD_NODENAME" 2>/dev/null || true
    else
      printf 'done %s\n' "$SLURMD_NODENAME" 2>/dev/null || true
    fi
    exit "$rc"
  }
  trap hpc_job_guard_end TERM USR2 INT
  if [[ -n ${HPC_JOB_DATA_ARCHIVE:-} ]] && ! hpc_stage_extract "$HPC_JOB_DATA_ARCHIVE" "$path"; then
    printf 'failed %s\n' "$SLURMD_NODENAME"
    ((made == 0)) || hpc_job_tmpdir_remove "$path" || true
    exit 1
  fi
  if [[ $HPC_JOB_RUNNER == singularity ]]; then
    # shellcheck source=singularity_hpc_files/container_runner.bash
    source "$HPC_JOB_CONTAINER_LIB"
    if ! hpc_container_node_setup "$HPC_JOB_CONTAINER_IMAGE" "$path"; then
      printf 'failed %s\n' "$SLURMD_NODENAME"
      ((made == 0)) || hpc_job_tmpdir_remove "$path" || true
      exit 1
    fi
  fi
  printf 'ready %s\n' "$SLURMD_NODENAME"
  sleep infinity &
  sleeper=$!
  while :; do wait "$sleeper" || true; done
}

# hpc_job_seconds DURATION: prints SLURM's duration text ([D-]HH:MM:SS, MM:SS, as squeue's %L
# writes it) in seconds; returns 1 for anything else (UNLIMITED, NOT_SET, INVALID).
hpc_job_seconds() {
  local re='^(([0-9]+)-)?(([0-9]+):)?([0-9]+):([0-9]+)$'
  [[ $1 =~ $re ]] || return 1
  printf '%d\n' "$(((10#${BASH_REMATCH[2]:-0} * 24 + 10#${BASH_REMATCH[4]:-0}) * 3600 + 10#${BASH_REMATCH[5]} * 60 + 10#${BASH_REMATCH[6]}))"
}

# hpc_job_time_bounds: sets hpc_job_time_left (seconds this job has left, from squeue; one day
# when unlimited or unknown), hpc_job_end_by (the value of SECONDS then) and
# hpc_job_setup_timeout (how long the nodes' setup may take: HPC_JOB_SETUP_TIMEOUT, else 3/4 of
# the time left and at least 60 s: staging a large dataset takes long, but a node that never
# gets ready must not hold the job until its time limit).
hpc_job_time_bounds() {
  local left
  left=$(squeue -h -j "${SLURM_JOB_ID:?}" -o %L 2>/dev/null) || left=
  hpc_job_time_left=$(hpc_job_seconds "$left") || hpc_job_time_left=86400
  hpc_job_end_by=$((SECONDS + hpc_job_time_left))
  hpc_job_setup_timeout=${HPC_JOB_SETUP_TIMEOUT:-$((hpc_job_time_left * 3 / 4))}
  ((hpc_job_setup_timeout >= 60)) || [[ -n ${HPC_JOB_SETUP_TIMEOUT:-} ]] || hpc_job_setup_timeout=60
}

# hpc_job_nodes_except NODE...: prints the job's nodes that are not among NODE..., space-separated.
hpc_job_nodes_except() {
  local node all out=()
  all=$(scontrol show hostnames "${SLURM_JOB_NODELIST:?}" 2>/dev/null) || all=$SLURM_JOB_NODELIST
  for node in $all; do
    [[ " $* " == *" $node "* ]] || out+=("$node")
  done
  printf '%s\n' "${out[*]:-?}"
}

# hpc_job_start_guards: phase 1. Starts one guard per node and waits until each is ready, at
# most hpc_job_setup_timeout seconds.
hpc_job_start_guards() {
  local line left status deadline ready=()
  hpc_job_guard_pid=
  hpc_job_time_bounds
  # A coprocess: its output (the guards' 'ready' lines) comes back on a pipe, no file needed.
  coproc hpc_job_guards {
    exec srun --ntasks="$SLURM_JOB_NUM_NODES" --ntasks-per-node=1 --overlap --cpus-per-task=1 \
      --mem=0 --kill-on-bad-exit=0 bash "$hpc_job_toolkit_dir/job_step.sh" guard
  }
  hpc_job_guard_pid=$hpc_job_guards_PID
  # Our own copy of the pipe: bash closes a coprocess's descriptors when it ends, and the
  # guards' last lines may still be in the pipe then.
  exec {hpc_job_guard_fd}<&"${hpc_job_guards[0]}"
  deadline=$((SECONDS + hpc_job_setup_timeout))
  while ((${#ready[@]} < SLURM_JOB_NUM_NODES)); do
    left=$((deadline - SECONDS))
    status=0
    ((left > 0)) && IFS= read -r -t "$left" line <&"$hpc_job_guard_fd" || status=$?
    if ((left <= 0 || status > 128)); then
      hpc_job_fail "node setup" "node(s) $(hpc_job_nodes_except "${ready[@]}") not ready within ${hpc_job_setup_timeout} s (the bound: 3/4 of the job's time left, or HPC_JOB_SETUP_TIMEOUT)"
    elif ((status != 0)); then
      # A guard that ends without a word closes the pipe.
      hpc_job_fail "node setup" "a node's setup step ended without saying it was ready (see above)"
    fi
    case $line in
      ready\ *) ready+=("${line#ready }") ;;
      failed\ *) hpc_job_fail "node setup" "node ${line#failed } could not make its SLURM_TMPDIR, stage the data or copy the image (see above)" ;;
    esac
  done
}

# hpc_job_stop_guards: phase 3. Tells every guard to copy back and clean up (SIGUSR2 through
# their srun), re-sending it every HPC_JOB_STOP_RESEND (5) s to the nodes that have not answered
# 'stopping', for at most HPC_JOB_STOP_TIMEOUT (30) s: a message to a node whose slurmd is away
# is lost. Then waits for their 'done' lines, at most until the job's time is up. A node that
# never answers is named in the log and left to SLURM's own end of the job (SIGTERM to the
# guard). Returns 1 when a guard's copy-back or removal failed.
hpc_job_stop_guards() {
  local pid=${hpc_job_guard_pid:-} line status now rc=0 node
  local resend=${HPC_JOB_STOP_RESEND:-5} ack_timeout=${HPC_JOB_STOP_TIMEOUT:-30}
  local -A acked=() finished=()
  [[ -n $pid ]] || return 0
  hpc_job_guard_pid=
  # srun forwards SIGUSR2 to its tasks (SIGTERM to srun itself would SIGKILL them).
  kill -USR2 "$pid" 2>/dev/null || true
  local start=$SECONDS next_send=$((SECONDS + resend)) end_by=${hpc_job_end_by:-$((SECONDS + 86400))}
  while ((${#finished[@]} < SLURM_JOB_NUM_NODES)); do
    status=0
    IFS= read -r -t 1 line <&"$hpc_job_guard_fd" || status=$?
    if ((status == 0)); then
      node=${line#* }
      case $line in
        stopping\ *) acked[$node]=1 ;;
        done\ * | failed\ *) acked[$node]=1 finished[$node]=1 ;;
        cleanup-failed\ *) acked[$node]=1 finished[$node]=1 rc=1 ;;
      esac
      ((${#finished[@]} < SLURM_JOB_NUM_NODES)) || break
    elif ((status <= 128)); then
      # The pipe closed: every guard has ended.
      hpc_job_log "the guards' step ended before node(s) $(hpc_job_nodes_except "${!finished[@]}") confirmed its cleanup (see above)"
      break
    fi
    now=$SECONDS
    if ((${#acked[@]} < SLURM_JOB_NUM_NODES)); then
      if ((now - start >= ack_timeout)); then
        hpc_job_log "the guard of node(s) $(hpc_job_nodes_except "${!acked[@]}") did not answer the stop signal within ${ack_timeout} s (sent every ${resend} s): the cleanup of its SLURM_TMPDIR may not have run; SLURM's end of the job will signal it again"
        break
      fi
      if ((now >= next_send)); then
        kill -USR2 "$pid" 2>/dev/null || true
        next_send=$((now + resend))
      fi
    elif ((now >= end_by)); then
      hpc_job_log "the guard of node(s) $(hpc_job_nodes_except "${!finished[@]}") did not finish its cleanup before the job's time was up"
      break
    fi
  done
  if ((${#finished[@]} < SLURM_JOB_NUM_NODES)) && [[ -z ${finished[${SLURMD_NODENAME:-?}]:-} && -n ${HPC_JOB_COPY_BACK:-} ]]; then
    # This (the first) node copies back: without its word the copy cannot count as done.
    rc=1
  fi
  # srun ends soon after its tasks; unless a node is away, then SLURM ends it with the job.
  for ((now = 0; now < 50; now++)); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.2
  done
  kill -0 "$pid" 2>/dev/null || wait "$pid" 2>/dev/null || true
  exec {hpc_job_guard_fd}<&-
  return "$rc"
}

# hpc_job_master: exports MASTER_ADDR (this, the first node) and MASTER_PORT (a preset one wins,
# else derived from the job id by the Python helpers' rule and checked free here).
hpc_job_master() {
  export MASTER_ADDR=${MASTER_ADDR:-$SLURMD_NODENAME}
  if [[ -z ${MASTER_PORT:-} ]]; then
    local py=python3
    # The venv's Python is the one sure to be there in a venv job; container jobs use the node's.
    [[ $hpc_job_runner != venv ]] || py=$hpc_job_venv/bin/python
    MASTER_PORT=$(PYTHONPATH="$hpc_job_python_helpers" "$py" -m hpc_helpers port \
      --job-id "$SLURM_JOB_ID" --check-free) || hpc_job_fail "port" "no free port for the rendezvous"
    export MASTER_PORT
  fi
}

# hpc_job_load_modules: loads the profile's environment modules, if any.
hpc_job_load_modules() {
  ((${#hpc_job_modules[@]})) || return 0
  if ! declare -F module >/dev/null && [[ -r /etc/profile.d/modules.sh ]]; then
    # shellcheck source=/dev/null
    source /etc/profile.d/modules.sh
  fi
  declare -F module >/dev/null || command -v module >/dev/null ||
    hpc_job_fail "modules" "the cluster profile lists modules (${hpc_job_modules[*]}) but there is no 'module' command"
  module load "${hpc_job_modules[@]}" || hpc_job_fail "modules" "module load ${hpc_job_modules[*]} failed"
}

# hpc_job_forward SIGNAL: the batch shell's trap: passes SIGNAL on to the program (srun passes it
# on to every task; the torchrun agents pass it on to their workers).
hpc_job_forward() {
  if [[ $1 == "${HPC_WARNING_SIGNAL:-}" ]]; then
    hpc_job_warned=1
    hpc_job_log "time-limit warning (SIG$1): passing it to the program, then waiting for it to finish"
  else
    hpc_job_log "received SIG$1; passing it to the program"
  fi
  [[ -z ${hpc_job_program_pid:-} ]] || kill -"$1" "$hpc_job_program_pid" 2>/dev/null || true
}

# hpc_job_maybe_requeue: after a warned run, requeues this job (once, from the batch shell) while
# it has restarts left (--requeue N: SLURM_RESTART_COUNT < N).
hpc_job_maybe_requeue() {
  local restarts=${SLURM_RESTART_COUNT:-0}
  ((hpc_job_warned && hpc_job_requeue_max > 0)) || return 0
  if ((restarts >= hpc_job_requeue_max)); then
    hpc_job_log "not requeued: $restarts restart(s) done of the $hpc_job_requeue_max allowed"
    return 0
  fi
  hpc_job_log "requeueing (restart $((restarts + 1)) of $hpc_job_requeue_max)"
  scontrol requeue "${SLURM_JOB_ID:?}" || hpc_job_log "scontrol requeue $SLURM_JOB_ID failed"
}

# hpc_job_run_program: phase 2. Starts the program with its launcher in the background and
# waits for it; sets hpc_job_status to its exit status.
hpc_job_run_program() {
  local step=(bash "$hpc_job_toolkit_dir/job_step.sh" task --) first_failure
  # srun returns the highest exit status of its tasks, and the tasks it stopped after the first
  # failure (--kill-on-bad-exit) count as 128+SIGTERM. The program's own status is the first
  # task's that "Exited with exit code N": srun says which on its stderr, which passes through
  # tee (to the job's output) and a grep that keeps that first line.
  first_failure=$(mktemp "${TMPDIR:-/tmp}/hpc_first_failure.XXXXXX")
  case $hpc_job_launcher in
    none) "${step[@]}" "${hpc_command[@]}" & ;;
    lightning)
      srun --kill-on-bad-exit=1 "${step[@]}" "${hpc_command[@]}" \
        2> >(tee -p >(grep -m 1 -oE ': tasks? [0-9,-]+: Exited with exit code [0-9]+$' >"$first_failure") >&2) &
      ;;
    torchrun)
      srun --ntasks="$SLURM_JOB_NUM_NODES" --ntasks-per-node=1 --kill-on-bad-exit=1 \
        "${step[@]}" "${hpc_command[@]}" \
        2> >(tee -p >(grep -m 1 -oE ': tasks? [0-9,-]+: Exited with exit code [0-9]+$' >"$first_failure") >&2) &
      ;;
  esac
  hpc_job_program_pid=$!
  hpc_job_status=0
  while :; do
    wait "$hpc_job_program_pid" || hpc_job_status=$?
    # A trapped signal interrupts wait; the program may still be running.
    kill -0 "$hpc_job_program_pid" 2>/dev/null || break
    hpc_job_status=0
  done
  if ((hpc_job_status != 0)) && [[ $hpc_job_launcher != none ]]; then
    local i line
    # The pipeline may still be draining srun's last lines.
    for ((i = 0; i < 20; i++)); do
      [[ -s $first_failure ]] && break
      sleep 0.1
    done
    line=$(<"$first_failure")
    if [[ $line =~ Exited\ with\ exit\ code\ ([0-9]+)$ ]] && ((BASH_REMATCH[1] != hpc_job_status)); then
      hpc_job_log "srun exited with $hpc_job_status; the first task that failed${line%%: Exited*} exited with ${BASH_REMATCH[1]}: that is the job's status"
      hpc_job_status=${BASH_REMATCH[1]}
    fi
  fi
  rm -f -- "${first_failure:?}"
}

# hpc_job_array_setup: what an array task gets: repeats a seed and their own checkpoints folder;
# offline grid points their own command and W&B's offline mode; every job checkpoints_dir.
hpc_job_array_setup() {
  export checkpoints_dir=$scratch_dir/$exp_name/checkpoints
  case ${hpc_job_mode:-single} in
    repeat)
      export seed=${SLURM_ARRAY_TASK_ID:?}
      checkpoints_dir=$checkpoints_dir/task_$SLURM_ARRAY_TASK_ID
      ;;
    offline)
      local i=${SLURM_ARRAY_TASK_ID:?}
      [[ -n ${hpc_job_offline_commands[i]:-} ]] || hpc_job_fail "sweep" "no grid point $i in this job"
      IFS=$'\x1f' read -r -a hpc_command <<<"${hpc_job_offline_commands[i]}"
      export WANDB_MODE=offline WANDB_DIR=$scratch_dir/$exp_name
      mkdir -p -- "$WANDB_DIR" || hpc_job_fail "sweep" "cannot make $WANDB_DIR"
      hpc_job_log "grid point $i of ${#hpc_job_offline_commands[@]}, offline"
      ;;
  esac
  export HPC_JOB_MODE=${hpc_job_mode:-single}
  mkdir -p -- "$checkpoints_dir" || hpc_job_fail "folders" "cannot make $checkpoints_dir"
}

# hpc_job_main: the batch shell's whole job (the generated script's last line).
hpc_job_main() {
  local needs_guards=0 cleanup_rc=0
  export HPC_JOB_T0=${HPC_JOB_T0:-$EPOCHREALTIME}
  export HPC_JOB_LAUNCHER=$hpc_job_launcher HPC_JOB_RUNNER=$hpc_job_runner HPC_JOB_VENV=$hpc_job_venv
  export HPC_JOB_PYTHON_HELPERS=$hpc_job_python_helpers
  export HPC_JOB_TMPDIR_ROOT=$hpc_job_tmpdir_root
  export HPC_JOB_DATA_ARCHIVE=${hpc_job_data_archive:-}
  export HPC_JOB_COPY_BACK=${hpc_job_copy_back:-}
  export HPC_JOB_CONTAINER_IMAGE=${hpc_job_container_image:-} HPC_JOB_CONTAINER_WORKDIR=${hpc_job_container_workdir:-}
  export HPC_JOB_CONTAINER_LIB=${hpc_job_container_lib:-}
  # The program learns which signal warns of the time limit (hpc_helpers.signals reads it).
  export HPC_WARNING_SIGNAL=${hpc_job_signal:-USR1}
  export HPC_RESTART_COUNT=${SLURM_RESTART_COUNT:-0}
  export HPC_JOB_LABEL_RANKS=${hpc_job_label_ranks:-0}
  hpc_job_warned=0
  hpc_job_requeue_max=${hpc_job_requeue_max:-0}
  hpc_job_log "job ${SLURM_JOB_ID} ($hpc_job_runner, launcher $hpc_job_launcher) on ${SLURM_JOB_NODELIST}: $num_nodes node(s) x $gpus_per_node GPU(s), restart $HPC_RESTART_COUNT"
  hpc_job_load_modules
  hpc_job_array_setup

  # Signals first: from here on, a warning or a TERM reaches the program, or is noted.
  trap 'hpc_job_forward TERM' TERM
  trap 'hpc_job_forward INT' INT
  # shellcheck disable=SC2064 # the signal's name is fixed for the job
  trap "hpc_job_forward $HPC_WARNING_SIGNAL" "$HPC_WARNING_SIGNAL"

  # SLURM_TMPDIR: the cluster's, or one this job makes on every node.
  if [[ $hpc_job_tmpdir_provided == true && ! -d ${SLURM_TMPDIR:-} ]]; then
    hpc_job_fail "tmpdir" "the cluster profile says SLURM_TMPDIR is provided, but this job has none"
  fi
  if [[ $hpc_job_tmpdir_provided != true && ! -d ${SLURM_TMPDIR:-} ]]; then
    export HPC_JOB_TMPDIR_MODE=emulated
    unset SLURM_TMPDIR
    needs_guards=1
  else
    export HPC_JOB_TMPDIR_MODE=provided
  fi
  # Data to unpack, results to copy back, an image to copy: work for a guard on every node.
  [[ -z $HPC_JOB_DATA_ARCHIVE && -z $HPC_JOB_COPY_BACK && $hpc_job_runner != singularity ]] || needs_guards=1
  if ((needs_guards)); then
    # However the batch shell ends, the guards are told to copy back and clean up.
    trap hpc_job_stop_guards EXIT
    hpc_job_start_guards
  fi

  if [[ $hpc_job_launcher != none ]]; then
    hpc_job_master
    hpc_job_log "rendezvous at $MASTER_ADDR:$MASTER_PORT"
  fi

  hpc_job_run_program
  trap - TERM INT "$HPC_WARNING_SIGNAL"
  if ((hpc_job_status == 0)); then
    hpc_job_log "the program finished successfully after $(hpc_job_elapsed) s"
  else
    hpc_job_log "the program failed with exit status $hpc_job_status after $(hpc_job_elapsed) s"
  fi
  hpc_job_stop_guards || cleanup_rc=$?
  trap - EXIT
  if ((cleanup_rc != 0)); then
    hpc_job_log "FAILED at step 'copy-back': see above"
    ((hpc_job_status != 0)) || hpc_job_status=1
  fi
  hpc_job_maybe_requeue
  exit "$hpc_job_status"
}

# hpc_job_rank_lines_code: the rank-lines wrapper, run as bash -c CODE hpc_rank_lines MODE ARGV...
# in front of each rank's command: MODE '-' (whole lines), 'rank' (labelled with the RANK that
# torchrun gives each worker) or 'rank=N'. The command's stdout and stderr go through one awk
# each that writes every line whole, in one write (up to 4 KiB: PIPE_BUF), with '[rank N] ' in
# front when labelled; then the wrapper becomes the command, so that the worker's pid and its
# signals stay the program's. The awks ignore the signals SLURM and torchrun send to the whole
# process tree and end when the program closes its output. Inline code, not a file: with a
# container it runs inside the image (which needs bash; without awk the lines pass unchanged).
IFS= read -r -d '' hpc_job_rank_lines_code <<'EOF' || true
label=
case $1 in
  rank) label="[rank ${RANK:-?}] " ;;
  rank=*) label="[rank ${1#rank=}] " ;;
esac
shift
if command -v awk >/dev/null 2>&1; then
  exec {err}>&2
  exec 2> >(trap '' INT TERM HUP QUIT USR1 USR2 && exec awk -v p="$label" '{ print p $0; fflush() }' >&"$err") {err}>&-
  exec > >(trap '' INT TERM HUP QUIT USR1 USR2 && exec awk -v p="$label" '{ print p $0; fflush() }')
fi
exec "$@"
EOF

# hpc_job_torchrun_code: python -c CODE ARGS... runs torchrun (torch.distributed.run) with ARGS,
# with a handler for the time-limit warning that does nothing: slurmstepd signals the whole
# process group of the task, and the agent, which handles only TERM, INT, HUP and QUIT, would die
# of it (exit 138) while its workers save their work. A handler, unlike an ignored signal, is not
# inherited: the workers get the signal's default action or their own handler.
IFS= read -r -d '' hpc_job_torchrun_code <<'EOF' || true
import os, runpy, signal, sys
name = os.environ.get("HPC_WARNING_SIGNAL", "USR1")
signal.signal(getattr(signal, name if name.startswith("SIG") else "SIG" + name), lambda *_: None)
sys.argv[0] = "torchrun"
runpy.run_module("torch.distributed.run", run_name="__main__", alter_sys=True)
EOF

# hpc_job_enter_venv VENV: what bin/activate does, without sourcing it: activate holds the
# venv's path inside double quotes, so a path with $(...) in it would run as code.
hpc_job_enter_venv() {
  export VIRTUAL_ENV=$1
  export PATH=$1/bin:$PATH
  unset PYTHONHOME
}

# hpc_job_task ARGV_TEMPLATES...: one program process of the job (job_step.sh task): enters the
# runner's environment, expands the command and becomes it (torchrun in front of it, if so).
hpc_job_task() {
  local path py runtime='' workdir=''
  if [[ ${HPC_JOB_TMPDIR_MODE:-provided} == emulated ]]; then
    hpc_job_node_tmpdir || hpc_job_fail "tmpdir" "cannot work out SLURM_TMPDIR"
    path=$hpc_job_node_tmpdir
    [[ -d $path && ! -L $path ]] || hpc_job_fail "tmpdir" "SLURM_TMPDIR $path is missing on this node"
    export SLURM_TMPDIR=$path
  fi

  local -a argv
  if [[ ${HPC_JOB_MODE:-single} == sweep ]]; then
    # The agent's key, from the job's environment or read here on the node: never on argv.
    hpc_sweep_load_key || hpc_job_fail "wandb key" "no WANDB_API_KEY in the job and no readable $(hpc_sweep_credentials)"
  fi
  case $HPC_JOB_RUNNER in
    venv)
      [[ -x $HPC_JOB_VENV/bin/python ]] || hpc_job_fail "venv" "no virtual environment at $HPC_JOB_VENV"
      hpc_job_enter_venv "$HPC_JOB_VENV"
      # The toolkit's helpers (hpc_helpers) are importable by the program without installing them.
      export PYTHONPATH=$HPC_JOB_PYTHON_HELPERS${PYTHONPATH:+:$PYTHONPATH}
      hpc_configs_expand "$@" || hpc_job_fail "command" "the configs file refers to a variable this job does not define"
      ;;
    singularity)
      # shellcheck source=singularity_hpc_files/container_runner.bash
      source "$HPC_JOB_CONTAINER_LIB"
      runtime=$(hpc_container_runtime) || hpc_job_fail "container" "no container runtime on this node (see above)"
      workdir=${HPC_JOB_CONTAINER_WORKDIR:-$hpc_container_default_workdir}
      # What the program sees reaches it through APPTAINERENV_/SINGULARITYENV_, never argv.
      hpc_container_export_job_env "$workdir"
      # The command's paths are the ones inside the container (/scratch_storage, /tmp, ...).
      hpc_container_expand "$workdir" "$@" || hpc_job_fail "command" "the configs file refers to a variable this job does not define"
      ;;
  esac
  argv=("${hpc_configs_argv[@]}")

  if [[ $HPC_JOB_LAUNCHER == torchrun ]]; then
    py=${argv[0]}
    local rdzv=(--standalone)
    if ((SLURM_JOB_NUM_NODES > 1)); then
      # All nodes may share one address (as on the local cluster): say which agent hosts the
      # c10d store, or both try to.
      rdzv=(--rdzv_backend=c10d --rdzv_endpoint="$MASTER_ADDR:$MASTER_PORT" --rdzv_id="$SLURM_JOB_ID"
        --rdzv_conf="is_host=$((SLURM_NODEID == 0 ? 1 : 0))")
    fi
    # --no-python: torchrun runs the user's command as written, python and all its arguments,
    # each worker behind the rank-lines wrapper: the workers of a node share one output pipe.
    local lines_mode=-
    [[ $HPC_JOB_LABEL_RANKS != 1 ]] || lines_mode=rank
    argv=("$py" -c "$hpc_job_torchrun_code" --nnodes="$SLURM_JOB_NUM_NODES" --nproc_per_node="$gpus_per_node"
      "${rdzv[@]}" --no-python bash -c "$hpc_job_rank_lines_code" hpc_rank_lines "$lines_mode" "${argv[@]}")
  fi
  if [[ $HPC_JOB_RUNNER == singularity ]]; then
    # One container per task: per node for torchrun (torchrun runs inside it), per GPU for lightning.
    hpc_container_argv "$runtime" "$SLURM_TMPDIR" "$scratch_dir" "$exp_name" "$workdir" "${argv[@]}" ||
      hpc_job_fail "container" "cannot run the container (see above)"
    argv=("${hpc_container_cmd[@]}")
  fi
  if [[ $HPC_JOB_LAUNCHER == lightning && $HPC_JOB_LABEL_RANKS == 1 ]]; then
    # Each srun task is a rank (its own pipe to slurmstepd, which passes on whole lines).
    argv=(bash -c "$hpc_job_rank_lines_code" hpc_rank_lines "rank=${SLURM_PROCID:?}" "${argv[@]}")
  fi
  if [[ ${SLURM_LOCALID:-0} == 0 ]]; then
    local shown=("${argv[@]}") i
    for i in "${!shown[@]}"; do
      [[ ${shown[i]} != "$hpc_job_rank_lines_code" ]] || shown[i]=HPC_RANK_LINES_CODE
      [[ ${shown[i]} != "$hpc_job_torchrun_code" ]] || shown[i]=HPC_TORCHRUN_CODE:torch.distributed.run
    done
    hpc_job_log "starting after $(hpc_job_elapsed) s: $(printf '%q ' "${shown[@]}")"
  fi
  [[ $HPC_JOB_LAUNCHER == torchrun ]] || exec "${argv[@]}"
  hpc_job_torchrun_agent "${argv[@]}"
}

# hpc_job_torchrun_agent ARGV...: runs the torchrun agent and passes the time-limit warning on to
# its workers (when it reaches only this shell; the agent itself ignores it: hpc_job_torchrun_code).
hpc_job_torchrun_agent() {
  local agent status=0
  "$@" &
  agent=$!
  # shellcheck disable=SC2064 # the agent's pid is fixed now
  trap "pkill -$HPC_WARNING_SIGNAL -P $agent 2>/dev/null || true" "$HPC_WARNING_SIGNAL"
  # shellcheck disable=SC2064
  trap "kill -TERM $agent 2>/dev/null || true" TERM
  while :; do
    wait "$agent" || status=$?
    kill -0 "$agent" 2>/dev/null || break
    status=0
  done
  exit "$status"
}
