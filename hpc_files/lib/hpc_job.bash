# shellcheck shell=bash
# hpc_job.bash: what a job does on the compute nodes. Sourced by the generated job script (the
# batch shell, on the job's first node) and by job_step.sh (the tasks SLURM starts on every node).
#
# The batch shell (hpc_job_main):
#   phase 1  when the cluster gives jobs no SLURM_TMPDIR, one 'guard' task per node (one srun
#            step, --overlap) makes this job's folder there and stays until the end: after
#            scancel or the time limit no new step can start, so cleanup must come from a step
#            that is already running (it gets SIGTERM then, or SIGUSR2 from us at a normal end);
#   phase 2  the program: runner (lib/runners/) x launcher (lib/launchers/), started in the
#            background and waited for, so that signal traps run at once and are forwarded;
#   phase 3  the guards remove what phase 1 made; the job exits with the program's status.
# Every wait of the batch shell on the guards is bounded (hpc_job_start_guards, hpc_job_stop_guards).

# The job's values are its plan (hpc_plan.bash's fields, hpc_plan_*): the job script names the
# plan file, hpc_job_main loads it (hpc_job_plan_load) and exports its path as HPC_JOB_PLAN, from
# which job_step.sh's tasks and guards and the scontrol shim load it too; nothing renames them.
# What this library reads, set by the plan file: declared here, not set (values already there are
# kept), so that the linter knows each name and catches a misspelt one.
# hpc_job_guards_PID: set by bash for the coprocess hpc_job_guards; hpc_runner_argv: by the
# runner module's wrap (hpc_files/lib/runners/).
declare -g scratch_dir exp_name hpc_plan_launcher hpc_plan_runner hpc_plan_python_helpers \
  hpc_plan_tmpdir_provided hpc_plan_tmpdir_root hpc_plan_toolkit_dir hpc_plan_venv hpc_plan_mode \
  hpc_plan_signal hpc_plan_requeue hpc_plan_workdir hpc_plan_data_archive \
  hpc_plan_image hpc_plan_container_lib hpc_plan_nodes hpc_plan_gpus hpc_job_guards_PID
declare -ga hpc_plan_modules hpc_plan_command hpc_plan_offline_commands hpc_plan_copy_back \
  hpc_runner_argv

# shellcheck source=hpc_files/lib/hpc_common.bash
source "$(dirname "${BASH_SOURCE[0]}")/hpc_common.bash"
# shellcheck source=hpc_files/lib/hpc_configs.bash
source "$(dirname "${BASH_SOURCE[0]}")/hpc_configs.bash"
# shellcheck source=hpc_files/lib/hpc_sweep.bash
source "$(dirname "${BASH_SOURCE[0]}")/hpc_sweep.bash"
# shellcheck source=hpc_files/lib/hpc_stage_node.bash
source "$(dirname "${BASH_SOURCE[0]}")/hpc_stage_node.bash"

# hpc_launcher_srun: the launcher's srun options (hpc_launcher_NAME_srun); empty: no srun.
hpc_launcher_srun=()

# hpc_job_log MESSAGE...: one line to the job's output, marked as the toolkit's (hpc_log).
hpc_job_log() {
  hpc_log "$@"
}

# hpc_job_fail STEP MESSAGE...: the toolkit's step STEP failed: says so and exits 1, so the job
# ends FAILED before (or instead of) the program.
hpc_job_fail() {
  local step=$1
  shift
  hpc_job_log "FAILED at step '$step': $*"
  exit 1
}

# hpc_job_plan_load PATH: reads the job's plan file PATH (hpc_plan_record's text): only a regular
# file of this user that is not a link and that nobody else can write, read from the descriptor
# that was checked (hpc_plan_file_open); anything else ends the job FAILED, naming it. It is then sourced: the toolkit's own
# text, every value quoted with printf %q, written once before sbatch with noclobber in the
# user's outputs folder, so sourcing it assigns values and runs nothing (no eval: bash reads the
# quoted words as it wrote them).
hpc_job_plan_load() {
  local path=$1 fd
  # Read from the one descriptor that was checked (hpc_plan_file_open), never by name again.
  hpc_plan_file_open "$path" || hpc_job_fail "plan" "the plan file '$path' $hpc_plan_file_problem: not read"
  fd=$hpc_plan_file_fd
  # shellcheck source=/dev/null
  source "/dev/fd/$fd" || hpc_job_fail "plan" "cannot read the plan file $path"
  exec {fd}<&-
}

# hpc_job_elapsed: seconds since the batch script started (HPC_JOB_T0), e.g. 0.042.
hpc_job_elapsed() {
  local now=${EPOCHREALTIME/[.,]/} start=${HPC_JOB_T0/[.,]/}
  local us=$((now - start))
  printf '%d.%03d\n' "$((us / 1000000))" "$(((us % 1000000) / 1000))"
}

# hpc_job_tmpdir_token_make: (the batch shell, once per run) exports HPC_JOB_TMPDIR_TOKEN, 128
# random bits from which every node derives its emulated SLURM_TMPDIR's name. It lives only in
# the job's environment (readable by its user alone), so nobody can guess the names in advance.
hpc_job_tmpdir_token_make() {
  if ((BASH_VERSINFO[0] * 100 + BASH_VERSINFO[1] >= 501)); then
    printf -v HPC_JOB_TMPDIR_TOKEN '%08x%08x%08x%08x' "$SRANDOM" "$SRANDOM" "$SRANDOM" "$SRANDOM"
  else
    HPC_JOB_TMPDIR_TOKEN=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n') || return 1
  fi
  export HPC_JOB_TMPDIR_TOKEN
}

# hpc_job_tmpdir_is_clusters PATH: true when PATH looks made by the cluster for this very job: a
# real folder (not a symlink) of this user whose path names the job id. A SLURM_TMPDIR exported in
# the submitting shell (sbatch passes that environment on) is none of these.
hpc_job_tmpdir_is_clusters() {
  local path=$1
  [[ -n $path && -d $path && ! -L $path && -O $path ]] || return 1
  [[ /$path/ =~ [^0-9]${SLURM_JOB_ID:?}[^0-9] ]]
}

# hpc_job_tmpdir_choose PROVIDED: (the batch shell) decides where this job's SLURM_TMPDIR comes
# from, by the profile's tmpdir.provided (true, false, auto), and exports HPC_JOB_TMPDIR_MODE:
# 'provided' (the cluster's) or 'emulated' (made by the guards; SLURM_TMPDIR unset here, a new
# token made). Returns 1 when the profile says provided but the job has none.
hpc_job_tmpdir_choose() {
  local provided=$1
  export HPC_JOB_TMPDIR_MODE=emulated
  case $provided in
    true)
      [[ -d ${SLURM_TMPDIR:-} ]] || return 1
      HPC_JOB_TMPDIR_MODE=provided
      return 0
      ;;
    false) ;;
    *)
      if hpc_job_tmpdir_is_clusters "${SLURM_TMPDIR:-}"; then
        HPC_JOB_TMPDIR_MODE=provided
        return 0
      fi
      [[ -z ${SLURM_TMPDIR:-} ]] ||
        hpc_job_log "ignoring SLURM_TMPDIR=$SLURM_TMPDIR: it was not made by the cluster for job $SLURM_JOB_ID (inherited from the submitting shell?); this job makes its own"
      ;;
  esac
  unset SLURM_TMPDIR
  hpc_job_tmpdir_token_make
}

# hpc_job_tmpdir_path: prints this node's emulated SLURM_TMPDIR: the profile's root (expanded
# here, from this node's environment) / hpc_tmpdir.<user>.<job id>.<16 hex digits of
# sha256(token:node)>. The job id lets cleanup tools ask SLURM whether the job still runs; the
# hash makes the name unguessable (a name in one node's log tells nothing about another node's),
# and every task of the node works out the same one from the job's environment.
hpc_job_tmpdir_path() {
  local root sum
  if [[ -z ${HPC_JOB_TMPDIR_TOKEN:-} ]]; then
    hpc_job_log "this job's SLURM_TMPDIR token (HPC_JOB_TMPDIR_TOKEN) is missing from its environment"
    return 1
  fi
  hpc_configs_expand "$hpc_plan_tmpdir_root" || return 1
  root=${hpc_configs_argv[0]}
  [[ $root == /* ]] || {
    hpc_job_log "the local scratch root '$root' is not an absolute path"
    return 1
  }
  sum=$(printf '%s:%s' "$HPC_JOB_TMPDIR_TOKEN" "${SLURMD_NODENAME:-$(hostname)}" | sha256sum) || return 1
  hpc_facts_tmpdir_name "${USER:-$(id -un)}" "${SLURM_JOB_ID:?}" "${sum:0:16}"
  printf '%s/%s\n' "${root%/}" "$hpc_facts_tmpdir_name"
}

# hpc_job_tmpdir_make PATH: makes PATH mode 0700 with the record .hpc_tmpdir (the job id) that
# cleanup tools look for. Never reuses, follows or touches something already there by that name.
hpc_job_tmpdir_make() {
  local path=$1
  mkdir -p -- "$(dirname -- "$path")" 2>/dev/null || true
  if ! mkdir -m 700 -- "$path" 2>/dev/null; then
    hpc_job_log "cannot make SLURM_TMPDIR $path: something else already has that name"
    return 1
  fi
  hpc_facts_tmpdir_record_write "$path" "$SLURM_JOB_ID"
}

# hpc_job_tmpdir_remove PATH: removes this job's emulated SLURM_TMPDIR: only a real folder (not
# a symlink) of this user that holds this job's record, without crossing into other file systems.
hpc_job_tmpdir_remove() {
  local path=${1:?}
  [[ -d $path && ! -L $path && -O $path ]] || return 0
  hpc_facts_tmpdir_record_matches "$path" "$SLURM_JOB_ID" || return 0
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

# hpc_job_copy_one SRC FINAL REL: copies SRC to FINAL whole or not at all: into a temporary folder
# beside FINAL first (same file system), then renamed into place; a folder that is already there
# gets the complete copies merged in as hard links (each file replaced whole, others kept). On
# failure nothing under FINAL's name has changed (or, merging, no file is truncated), the partial
# copy is removed, and one line says what is incomplete.
hpc_job_copy_one() {
  local src=$1 final=$2 rel=$3 parent part err='' rc=0
  parent=${final%/*}
  if ! err=$(mkdir -p -- "$parent" 2>&1) || ! part=$(mktemp -d "$parent/.hpc_copy_back.XXXXXX" 2>&1); then
    hpc_job_log "copy-back of $rel FAILED: cannot write in $parent: ${err:-$part}; $final was not changed"
    return 1
  fi
  err=$(cp -a -- "$src" "$part/copy" 2>&1) || rc=$?
  if ((rc == 0)); then
    if [[ -d $part/copy && ! -L $part/copy && -d $final && ! -L $final ]]; then
      err=$(cp -al --remove-destination -- "$part/copy/." "$final/" 2>&1) || rc=$?
      ((rc == 0)) || err="merging into it: $err; files already merged are complete, the others are their older versions"
    else
      err=$(mv -fT -- "$part/copy" "$final" 2>&1) || rc=$?
    fi
  fi
  rm -rf -- "${part:?}"
  if ((rc != 0)); then
    err=${err//$'\n'/; }
    [[ $err == merging* ]] || err="$err; $final was not changed"
    hpc_job_log "copy-back of $rel FAILED: $err"
    return 1
  fi
}

# hpc_job_copy_link DEST REL: true when a folder on REL's way below DEST (DEST/a, DEST/a/b, ...,
# not REL itself) is a symbolic link, which a copy would follow out of DEST; sets
# hpc_job_copy_link_path to it.
hpc_job_copy_link() {
  local path=$1 part
  local -a parts
  [[ $2 == */* ]] || return 1
  IFS=/ read -r -a parts <<<"${2%/*}"
  for part in "${parts[@]}"; do
    [[ -n $part && $part != . ]] || continue
    path=$path/$part
    if [[ -L $path ]]; then
      hpc_job_copy_link_path=$path
      return 0
    fi
  done
  return 1
}

# hpc_job_copy_back TMPDIR: copies the --copy-back paths (relative to TMPDIR) found on this node
# to ${scratch_dir}/${exp_name}/, each whole or not at all (hpc_job_copy_one): the first node's
# as PATH, another node's as PATH.NODE, so that copies of one path from several nodes stay apart.
# Sets hpc_job_copy_found to the paths found here; returns 1 and names the incomplete ones when
# any copy fails.
hpc_job_copy_back() {
  local tmpdir=$1 rel final suffix='' dest=${scratch_dir:?}/${exp_name:?}
  local -a copied=() failed=()
  hpc_job_copy_found=()
  [[ -n ${hpc_plan_copy_back[*]+x} ]] || return 0
  [[ ${SLURM_NODEID:-0} == 0 ]] || suffix=.${SLURMD_NODENAME:?}
  for rel in "${hpc_plan_copy_back[@]}"; do
    # 'ck/' names the folder ck: its copy goes beside it, not into a folder made first.
    while [[ $rel == ?*/ ]]; do rel=${rel%/}; done
    [[ -n $rel ]] || continue
    if [[ ! -e $tmpdir/$rel ]]; then
      hpc_job_log "copy-back: $rel is not in SLURM_TMPDIR on this node; nothing to copy from here"
      continue
    fi
    hpc_job_copy_found+=("$rel")
    final=$rel$suffix
    if hpc_job_copy_link "$dest" "$final"; then
      hpc_job_log "copy-back of $rel FAILED: $hpc_job_copy_link_path is a symbolic link, and the toolkit never writes through one; nothing was changed"
      failed+=("$final")
      continue
    fi
    if hpc_job_copy_one "$tmpdir/$rel" "$dest/$final" "$rel"; then copied+=("$final"); else failed+=("$final"); fi
  done
  ((${#copied[@]} == 0)) || hpc_job_log "copied back to $dest: ${copied[*]}"
  ((${#failed[@]})) || return 0
  hpc_job_log "copy-back INCOMPLETE: not copied back to $dest: ${failed[*]}"
  return 1
}

# hpc_job_guard: the phase-1 task of one node (job_step.sh guard). Makes the node's SLURM_TMPDIR
# (emulated mode), unpacks the data archive into it, prints 'ready NODE' (or 'failed NODE'), then
# waits for SIGUSR2 (normal end) or SIGTERM (scancel, time limit), says 'stopping NODE', copies
# back what this node has (printing 'found PATH' for each, for hpc_job_copy_back_missing), removes
# what it made, only after the copy succeeded, and says 'done NODE' (or 'cleanup-failed NODE').
# Its lines reach the batch shell through the guards' srun.
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
    hpc_job_copy_found=()
    if ! hpc_job_copy_back "$path"; then
      ((${#hpc_job_copy_found[@]} == 0)) || printf 'found %s\n' "${hpc_job_copy_found[@]}"
      if ((made)); then
        hpc_job_log "copy-back failed: the complete results stay in $path on $SLURMD_NODENAME (not removed; plai_cleanups removes it later)"
      else
        hpc_job_log "copy-back failed: the complete results are in the cluster's $path on $SLURMD_NODENAME, which the cluster removes when the job ends"
      fi
      printf 'cleanup-failed %s\n' "$SLURMD_NODENAME" 2>/dev/null || true
      exit 1
    fi
    # What this node had, for the batch shell's count of paths found nowhere.
    ((${#hpc_job_copy_found[@]} == 0)) || printf 'found %s\n' "${hpc_job_copy_found[@]}"
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
  if [[ -n ${hpc_plan_data_archive:-} ]] && ! hpc_stage_extract "$hpc_plan_data_archive" "$path"; then
    printf 'failed %s\n' "$SLURMD_NODENAME"
    ((made == 0)) || hpc_job_tmpdir_remove "$path" || true
    exit 1
  fi
  if [[ $hpc_plan_runner == singularity ]]; then
    # shellcheck source=singularity_hpc_files/container_runner.bash
    source "$hpc_plan_container_lib"
    if ! hpc_container_node_setup "$hpc_plan_image" "$path"; then
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
  # What the guards say they found, for hpc_job_copy_back_missing.
  declare -gA hpc_job_copy_found_paths=()
  hpc_job_time_bounds
  # A coprocess: its output (the guards' 'ready' lines) comes back on a pipe, no file needed.
  coproc hpc_job_guards {
    exec srun --ntasks="$SLURM_JOB_NUM_NODES" --ntasks-per-node=1 --overlap --cpus-per-task=1 \
      --mem=0 --kill-on-bad-exit=0 bash "$hpc_plan_toolkit_dir/job_step.sh" guard
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
        found\ *) hpc_job_copy_found_paths[${line#found }]=1 ;;
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
  if ((${#finished[@]} < SLURM_JOB_NUM_NODES)) && [[ -z ${finished[${SLURMD_NODENAME:-?}]:-} && -n ${hpc_plan_copy_back[*]+x} ]]; then
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
  hpc_job_copy_back_missing "$( ((${#finished[@]} == SLURM_JOB_NUM_NODES)) || hpc_job_nodes_except "${!finished[@]}")"
  return "$rc"
}

# hpc_job_copy_back_missing [SILENT_NODES]: says loudly which --copy-back paths no node had (the
# guards' 'found PATH' lines, collected by hpc_job_stop_guards into hpc_job_copy_found_paths).
# With SILENT_NODES (nodes whose guard's last lines never arrived, as when SLURM ends the job at
# its time limit) that cannot be known: it says so instead of naming paths as missing.
hpc_job_copy_back_missing() {
  local rel
  [[ -n ${hpc_plan_copy_back[*]+x} ]] || return 0
  if [[ -n ${1:-} ]]; then
    hpc_job_log "copy-back: node(s) $1 did not report what they copied back (their own lines above say it); the copy-back is not confirmed"
    return 0
  fi
  for rel in "${hpc_plan_copy_back[@]}"; do
    while [[ $rel == ?*/ ]]; do rel=${rel%/}; done
    [[ -n $rel && -z ${hpc_job_copy_found_paths[$rel]:-} ]] || continue
    hpc_job_log "copy-back WARNING: $rel was found on none of the $SLURM_JOB_NUM_NODES node(s): nothing was copied back for it"
  done
}

# hpc_job_master: exports MASTER_ADDR (this, the first node) and MASTER_PORT (a preset one wins,
# else derived from the job id by the Python helpers' rule and checked free here).
hpc_job_master() {
  export MASTER_ADDR=${MASTER_ADDR:-$SLURMD_NODENAME}
  if [[ -z ${MASTER_PORT:-} ]]; then
    local py=python3
    # The venv's Python is the one sure to be there in a venv job; container jobs use the node's.
    [[ $hpc_plan_runner != venv ]] || py=$hpc_plan_venv/bin/python
    MASTER_PORT=$(PYTHONPATH="$hpc_plan_python_helpers" "$py" -m hpc_helpers port \
      --job-id "$SLURM_JOB_ID" --check-free) || hpc_job_fail "port" "no free port for the rendezvous"
    export MASTER_PORT
  fi
}

# hpc_job_load_modules: loads the profile's environment modules, if any.
hpc_job_load_modules() {
  [[ -n ${hpc_plan_modules[*]+x} ]] || return 0
  if ! declare -F module >/dev/null && [[ -r /etc/profile.d/modules.sh ]]; then
    # shellcheck source=/dev/null
    source /etc/profile.d/modules.sh
  fi
  declare -F module >/dev/null || command -v module >/dev/null ||
    hpc_job_fail "modules" "the cluster profile lists modules (${hpc_plan_modules[*]}) but there is no 'module' command"
  module load "${hpc_plan_modules[@]}" || hpc_job_fail "modules" "module load ${hpc_plan_modules[*]} failed"
}

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
# it ('PID (name)') to hpc_job_warned_to and its pid to hpc_job_warned_pids; sets
# hpc_job_warn_waiting to 1 when a branch has no catcher yet (it ends in a process that has no
# handler and no children, and does not ignore SIGNAL: an output filter that ignores it, as the
# rank-lines awks and the root-cause tee do, needs no warning).
hpc_job_warn_tree() {
  local pid=$1 signal=$2 child comm='' leaf=1
  [[ " ${hpc_job_warned_pids:-} " != *" $pid "* ]] || return 0
  if ! hpc_job_is_runtime "$pid" && hpc_job_catches "$pid" "$signal"; then
    IFS= read -r comm 2>/dev/null <"/proc/$pid/comm" || true
    kill -"$signal" "$pid" 2>/dev/null || return 0
    hpc_job_warned_to+=("$pid ($comm)")
    hpc_job_warned_pids+=" $pid"
    return 0
  fi
  for child in $(pgrep -P "$pid" 2>/dev/null); do
    leaf=0
    hpc_job_warn_tree "$child" "$signal"
  done
  ((leaf == 0)) || hpc_job_catches "$pid" "$signal" SigIgn || hpc_job_warn_waiting=1
}

# hpc_job_warn ROOT SIGNAL: passes the time-limit warning SIGNAL to the processes below ROOT that
# catch it (hpc_job_warn_tree), each once, with one line per round that warned someone. It looks
# again every second while ROOT runs, until every branch has been warned: a worker still
# starting (torchrun's workers do not all install their handlers at once) gets the warning once
# it installs its handler; a branch that never installs one runs on to the time limit, and the
# looking ends with ROOT.
hpc_job_warn() {
  local root=$1 signal=$2 said=0 hpc_job_warned_pids='' hpc_job_warn_waiting
  while kill -0 "$root" 2>/dev/null; do
    hpc_job_warned_to=() hpc_job_warn_waiting=0
    hpc_job_warn_tree "$root" "$signal"
    if ((${#hpc_job_warned_to[@]})); then
      hpc_job_log "time-limit warning SIG$signal passed to ${hpc_job_warned_to[*]}"
    elif ((said == 0)) && [[ -z $hpc_job_warned_pids ]]; then
      hpc_job_log "no process of the program catches SIG$signal (yet): it gets the warning once it installs a handler, else it runs on until the time limit"
      said=1
    fi
    ((hpc_job_warn_waiting)) || return 0
    sleep 1
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
    hpc_job_log "time-limit warning (SIG$1): passing it to the program, then waiting for it to finish"
    [[ -n ${hpc_job_program_pid:-} ]] || return 0
    if ((${#hpc_launcher_srun[@]} == 0)); then
      hpc_job_warn "$hpc_job_program_pid" "$1" &
    else
      local target=$SLURM_JOB_ID
      # An array task by its own name: the array's first task shares the array's job id.
      [[ -z ${SLURM_ARRAY_TASK_ID:-} ]] || target=${SLURM_ARRAY_JOB_ID:?}_$SLURM_ARRAY_TASK_ID
      scancel --signal=URG "$target" || hpc_job_log "scancel --signal=URG $target failed: the warning did not reach the program"
    fi
    return 0
  fi
  # SLURM's SIGTERM (time limit, scancel, requeue) ends the run: the job's end is SLURM's then.
  [[ $1 != TERM ]] || hpc_job_ended_by_slurm=1
  if [[ $1 == TERM ]] && hpc_job_requeued_by_program; then
    hpc_job_log "received SIGTERM: SLURM ends this run for the requeue the program asked for (restart $((${SLURM_RESTART_COUNT:-0} + 1)) of $hpc_plan_requeue); passing it to the program"
  else
    hpc_job_log "received SIG$1; passing it to the program"
  fi
  [[ -z ${hpc_job_program_pid:-} ]] || kill -"$1" "$hpc_job_program_pid" 2>/dev/null || true
}

# hpc_job_requeue_record [RESTART]: prints the path of the record that the program of run RESTART
# (default: this run, SLURM_RESTART_COUNT) requeued this job itself: a file beside the job's log
# (${scratch_dir}/hpc_outputs, on storage every node shares), named by the job id and the run.
hpc_job_requeue_record() {
  [[ -n ${scratch_dir:-} && -n ${SLURM_JOB_ID:-} ]] || return 1
  printf '%s/hpc_outputs/.hpc_requeue.%s.%s\n' "$scratch_dir" "$SLURM_JOB_ID" "${1:-${SLURM_RESTART_COUNT:-0}}"
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
  local real=$1 restarts=${SLURM_RESTART_COUNT:-0} max=${hpc_plan_requeue:-0} record status=0
  shift
  # The requeue ends this run: SLURM's SIGTERM must not cut the bookkeeping short.
  trap '' TERM
  if ((max == 0)); then
    hpc_job_log "not requeued: the program asked (scontrol $*), but this job was submitted without --requeue N (no restarts allowed); the run goes on"
    return 1
  fi
  if ((restarts >= max)); then
    hpc_job_log "not requeued: the program asked (scontrol $*), but $restarts restart(s) done of the $max allowed (--requeue $max); the run goes on"
    return 1
  fi
  if ! record=$(hpc_job_requeue_record); then
    hpc_job_log "not requeued by the program (scontrol $*): without the job's scratch_dir it cannot be recorded; the batch shell's requeue after the run applies"
    return 1
  fi
  if ! (set -C && printf '%s\n' "$((restarts + 1))" >"$record") 2>/dev/null; then
    if [[ -f $record && ! -L $record ]]; then
      hpc_job_log "not requeued again: the program already requeued this job in this run (restart $((restarts + 1)) of $max)"
      return 0
    fi
    hpc_job_log "not requeued by the program (scontrol $*): cannot write the record $record; the batch shell's requeue after the run applies"
    return 1
  fi
  # Said before the requeue: once SLURM ends the step, a line written after it may be lost.
  hpc_job_log "requeueing for the program (scontrol $*), restart $((restarts + 1)) of $max: SLURM ends this run now and starts the job again"
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
    hpc_job_program_requeue "$real" "$@"
    return
  fi
  exec "$real" "$@"
}

# hpc_job_maybe_requeue: after a warned run, requeues this job (once, from the batch shell) while
# it has restarts left (--requeue N: SLURM_RESTART_COUNT < N), unless the program has requeued it
# itself in this run (hpc_job_program_requeue), or SLURM ended the run (SIGTERM: at the time
# limit the program had not stopped by itself, and a restart would start from what it never saved).
hpc_job_maybe_requeue() {
  local restarts=${SLURM_RESTART_COUNT:-0}
  if hpc_job_requeued_by_program; then
    hpc_job_log "requeued by the program in this run (restart $((restarts + 1)) of $hpc_plan_requeue): not requeued again"
    return 0
  fi
  ((hpc_job_warned && hpc_plan_requeue > 0)) || return 0
  if ((${hpc_job_ended_by_slurm:-0})); then
    hpc_job_log "not requeued: SLURM ended this run (SIGTERM: the time limit or scancel) before the program ended by itself"
    return 0
  fi
  if ((restarts >= hpc_plan_requeue)); then
    hpc_job_log "not requeued: $restarts restart(s) done of the $hpc_plan_requeue allowed"
    return 0
  fi
  hpc_job_log "requeueing (restart $((restarts + 1)) of $hpc_plan_requeue)"
  scontrol requeue "${SLURM_JOB_ID:?}" || hpc_job_log "scontrol requeue $SLURM_JOB_ID failed"
}

# hpc_job_run_program: phase 2. Starts the program with its launcher in the background and
# waits for it; sets hpc_job_status to its exit status.
hpc_job_run_program() {
  local step=(bash "$hpc_plan_toolkit_dir/job_step.sh" task --) first_failure
  # srun returns the highest exit status of its tasks, and the tasks it stopped after the first
  # failure (--kill-on-bad-exit) count as 128+SIGTERM. The program's own status is the first
  # task's that "Exited with exit code N": srun says which on its stderr, which passes through
  # tee (to the job's output) and a grep that keeps that first line.
  first_failure=$(mktemp "${TMPDIR:-/tmp}/hpc_first_failure.XXXXXX")
  # The launcher's srun options (hpc_launcher_NAME_srun, set in hpc_job_main); none: no srun.
  if ((${#hpc_launcher_srun[@]} == 0)); then
    "${step[@]}" "${hpc_job_command[@]}" &
  else
    srun "${hpc_launcher_srun[@]}" "${step[@]}" "${hpc_job_command[@]}" \
      2> >(tee -p >(grep -m 1 -oE ': tasks? [0-9,-]+: Exited with exit code [0-9]+$' >"$first_failure") >&2) &
  fi
  hpc_job_program_pid=$!
  hpc_job_status=0
  while :; do
    wait "$hpc_job_program_pid" || hpc_job_status=$?
    # A trapped signal interrupts wait; the program may still be running.
    kill -0 "$hpc_job_program_pid" 2>/dev/null || break
    hpc_job_status=0
  done
  if ((hpc_job_status != 0 && ${#hpc_launcher_srun[@]} > 0)); then
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

# hpc_job_array_setup: what an array task gets: repeats a seed; offline grid points their own
# command (hpc_job_command, the plan's command otherwise) and W&B's offline mode. Then every job's
# own folders (hpc_job_own_folders).
hpc_job_array_setup() {
  hpc_job_command=("${hpc_plan_command[@]}")
  case ${hpc_plan_mode:-single} in
    repeat)
      export seed=${SLURM_ARRAY_TASK_ID:?}
      ;;
    offline)
      local i=${SLURM_ARRAY_TASK_ID:?}
      [[ -n ${hpc_plan_offline_commands[i]:-} ]] || hpc_job_fail "sweep" "no grid point $i in this job"
      IFS=$'\x1f' read -r -a hpc_job_command <<<"${hpc_plan_offline_commands[i]}"
      export WANDB_MODE=offline
      hpc_job_log "grid point $i of ${#hpc_plan_offline_commands[@]}, offline"
      ;;
    map | gather)
      # shellcheck source=hpc_files/lib/hpc_map.bash
      source "$hpc_plan_toolkit_dir/lib/hpc_map.bash"
      if [[ $hpc_plan_mode == map ]]; then hpc_map_task_setup; else hpc_map_gather_setup; fi
      ;;
    scaling | scaling-report)
      # shellcheck source=hpc_files/lib/hpc_scaling.bash
      source "$hpc_plan_toolkit_dir/lib/hpc_scaling.bash"
      if [[ $hpc_plan_mode == scaling ]]; then hpc_scaling_run_setup; else hpc_scaling_report_run; fi
      ;;
  esac
  hpc_job_own_folders
}

# hpc_job_own_folders: (the batch shell) the folders of this experiment, each array task its own
# (task_N), so that runs of one experiment never share files: checkpoints_dir
# (${scratch_dir}/${exp_name}/checkpoints[/task_N]); WANDB_DIR (${scratch_dir}/${exp_name}[/task_N],
# where W&B writes wandb/), unless the submitting shell set one; and with --workdir, HPC_WORKDIR,
# where each task starts ([WORKDIR/task_N]). Containers get /scratch_storage as WANDB_DIR (their
# own folder on scratch: the host's paths are not visible in them).
hpc_job_own_folders() {
  local task=''
  # Array tasks and scaling runs each their own; a single job, a gather or a scaling report
  # the experiment's.
  case ${hpc_plan_mode:-single} in
    single | gather | scaling-report) ;;
    *) task=task_${hpc_job_task_index:-${SLURM_ARRAY_TASK_ID:?}} ;;
  esac
  export checkpoints_dir=$scratch_dir/$exp_name/checkpoints${task:+/$task}
  mkdir -p -- "$checkpoints_dir" || hpc_job_fail "folders" "cannot make $checkpoints_dir"
  if [[ -n ${WANDB_DIR:-} ]]; then
    hpc_job_log "WANDB_DIR=$WANDB_DIR from the submitting shell is kept"
  elif [[ $hpc_plan_runner == singularity ]]; then
    export WANDB_DIR=/scratch_storage
  else
    export WANDB_DIR=$scratch_dir/$exp_name${task:+/$task}
    mkdir -p -- "$WANDB_DIR" || hpc_job_fail "folders" "cannot make $WANDB_DIR"
  fi
  if [[ -z ${hpc_plan_workdir:-} ]]; then
    # One in the submitting shell (sbatch passes it on) is not this job's.
    unset HPC_WORKDIR
    return 0
  fi
  # The submission made it; a folder removed since is not made again here.
  [[ -d $hpc_plan_workdir ]] || hpc_job_fail "workdir" "the working folder $hpc_plan_workdir (--workdir) is missing"
  export HPC_WORKDIR=$hpc_plan_workdir${task:+/$task}
  mkdir -p -- "$HPC_WORKDIR" || hpc_job_fail "workdir" "cannot make $HPC_WORKDIR"
}

# hpc_job_is_python WORD: true for python, python3, python3.11, or such a name with a path.
hpc_job_is_python() {
  [[ ${1##*/} =~ ^python([0-9]+(\.[0-9]+)?)?$ ]]
}

# hpc_job_resolve_program SOURCE_DIR: (--workdir) makes the project's files of the expanded
# command (hpc_configs_argv) absolute under SOURCE_DIR, so that the program, which starts in its
# working folder, still finds them: the program itself when it is a relative path with a '/'
# (./run.sh, scripts/train.sh: a bare name is looked up on PATH), and python's script (the first
# word after python's own options: python -u train.py). Everything else stays as written: a
# relative path among the arguments is the working folder's. Sets hpc_job_python_module when
# python runs a module (-m), which it imports from the working folder.
hpc_job_resolve_program() {
  local src=$1 word i=1 j n=${#hpc_configs_argv[@]}
  hpc_job_python_module=0
  word=${hpc_configs_argv[0]}
  [[ $word != */* || $word == /* ]] || hpc_configs_argv[0]=$src/$word
  hpc_job_is_python "$word" || return 0
  while ((i < n)); do
    word=${hpc_configs_argv[i]}
    case $word in
      --) i=$((i + 1)) && break ;;
      --check-hash-based-pycs) i=$((i + 2)) ;;
      -) return 0 ;;
      --*) i=$((i + 1)) ;;
      -*)
        # A cluster of one-letter options (-uB); c and m end it (code, module), W and X take
        # the rest of the word or the next word.
        i=$((i + 1))
        for ((j = 1; j < ${#word}; j++)); do
          case ${word:j:1} in
            c) return 0 ;;
            m)
              # shellcheck disable=SC2034 # read by the venv runner (lib/runners/venv.bash)
              hpc_job_python_module=1
              return 0
              ;;
            W | X)
              ((j < ${#word} - 1)) || i=$((i + 1))
              break
              ;;
          esac
        done
        ;;
      *) break ;;
    esac
  done
  ((i < n)) || return 0
  word=${hpc_configs_argv[i]}
  [[ $word == /* || $word == - ]] || hpc_configs_argv[i]=$src/$word
}

# hpc_job_main PLAN_FILE: the batch shell's whole job (the generated script's last line): loads
# the plan, exports its path for the tasks (HPC_JOB_PLAN) and what the program sees.
hpc_job_main() {
  local needs_guards=0 cleanup_rc=0
  export HPC_JOB_T0=${HPC_JOB_T0:-$EPOCHREALTIME}
  hpc_job_plan_load "${1-}"
  # The tasks, the guards and the scontrol shim load the same file; nothing else is handed on.
  export HPC_JOB_PLAN=$1
  hpc_facts_program_env
  export "${hpc_facts_program_env[@]}"
  # The program learns which signal warns of the time limit (hpc_helpers.signals reads it).
  export HPC_WARNING_SIGNAL=${hpc_plan_signal:-USR1}
  export HPC_RESTART_COUNT=${SLURM_RESTART_COUNT:-0}
  hpc_job_warned=0 hpc_job_ended_by_slurm=0
  hpc_job_requeue_records_remove
  # An array task by its own name: its job id alone may be the array's (SLURM gives the array's
  # id to one of its tasks), which reads as another job's.
  local name="job ${SLURM_JOB_ID} ("
  [[ -z ${SLURM_ARRAY_TASK_ID:-} ]] || name="job ${SLURM_ARRAY_JOB_ID}_$SLURM_ARRAY_TASK_ID (job id $SLURM_JOB_ID; "
  hpc_job_log "$name$hpc_plan_runner, launcher $hpc_plan_launcher) on ${SLURM_JOB_NODELIST}: $hpc_plan_nodes node(s) x $hpc_plan_gpus GPU(s), restart $HPC_RESTART_COUNT"
  hpc_job_load_modules
  hpc_job_array_setup
  # The launcher (hpc_files/lib/launchers/NAME.bash): how its tasks are started.
  hpc_launcher_load "$hpc_plan_launcher" || hpc_job_fail "launcher" "no launcher '$hpc_plan_launcher' in this toolkit"
  "hpc_launcher_${hpc_plan_launcher}_srun"

  # Signals first: from here on, a warning or a TERM reaches the program, or is noted.
  trap 'hpc_job_forward TERM' TERM
  trap 'hpc_job_forward INT' INT
  # shellcheck disable=SC2064 # the signal's name is fixed for the job
  trap "hpc_job_forward $HPC_WARNING_SIGNAL" "$HPC_WARNING_SIGNAL"

  # SLURM_TMPDIR: the cluster's, or one this job makes on every node.
  hpc_job_tmpdir_choose "$hpc_plan_tmpdir_provided" ||
    hpc_job_fail "tmpdir" "the cluster profile says SLURM_TMPDIR is provided, but this job has none"
  [[ $HPC_JOB_TMPDIR_MODE != emulated ]] || needs_guards=1
  # Data to unpack, results to copy back, an image to copy: work for a guard on every node.
  [[ -z $hpc_plan_data_archive && -z ${hpc_plan_copy_back[*]+x} && $hpc_plan_runner != singularity ]] || needs_guards=1
  if ((needs_guards)); then
    # However the batch shell ends, the guards are told to copy back and clean up.
    trap hpc_job_stop_guards EXIT
    hpc_job_start_guards
  fi

  if ((${#hpc_launcher_srun[@]})); then
    hpc_job_master
    hpc_job_log "rendezvous at $MASTER_ADDR:$MASTER_PORT"
  fi

  # A scaling run times the launcher command, just before to just after (hpc_scaling.bash).
  [[ ${hpc_plan_mode:-single} != scaling ]] || hpc_scaling_run_start
  hpc_job_run_program
  [[ ${hpc_plan_mode:-single} != scaling ]] || hpc_scaling_run_stop
  trap - TERM INT "$HPC_WARNING_SIGNAL"
  local warning_code
  warning_code=$((128 + $(kill -l "$HPC_WARNING_SIGNAL" 2>/dev/null || echo 0)))
  if ((hpc_job_status == 0 && hpc_job_ended_by_slurm)); then
    hpc_job_log "the program exited with status 0 after SLURM's SIGTERM, $(hpc_job_elapsed) s after the start"
  elif ((hpc_job_warned && hpc_job_status == warning_code)); then
    # The program ended of the warning (128+the signal's number): a stop, not a crash; only the
    # program knows whether it saved its work.
    hpc_job_log "stopped at the time-limit warning (SIG$HPC_WARNING_SIGNAL): the program exited with $hpc_job_status (128+SIG$HPC_WARNING_SIGNAL) after $(hpc_job_elapsed) s; whether it saved its work, its own lines above say"
  elif ((hpc_job_warned && hpc_job_status == 0)); then
    # 0 after the warning: a program that stopped early as asked, or one that finished its work
    # in the time left (a refused requeue lets it go on); only its own lines tell which.
    hpc_job_log "ended after the time-limit warning (SIG$HPC_WARNING_SIGNAL): the program exited with 0 after $(hpc_job_elapsed) s; whether it stopped early and saved its work or finished, its own lines above say"
  elif ((hpc_job_status == 0)); then
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
  # A map task's final status, for its gather (hpc_map.bash).
  [[ ${hpc_plan_mode:-single} != map ]] || hpc_map_task_end "$hpc_job_status" || hpc_job_status=$?
  [[ ${hpc_plan_mode:-single} != scaling ]] || hpc_scaling_run_end "$hpc_job_status"
  hpc_job_maybe_requeue
  hpc_job_requeue_records_remove
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
  # mawk reads a pipe until 4 KiB or its end: -W interactive hands on each line as it comes
  # (its writes unbuffered: ORS empty, so that each line is one write).
  hpc_awk=(awk -v ORS=)
  case $(awk -W version 2>&1 </dev/null) in mawk*) hpc_awk+=(-W interactive) ;; esac
  exec {err}>&2
  exec 2> >(trap '' INT TERM HUP QUIT USR1 USR2 && exec "${hpc_awk[@]}" -v p="$label" '{ print p $0 "\n"; fflush() }' >&"$err") {err}>&-
  exec > >(trap '' INT TERM HUP QUIT USR1 USR2 && exec "${hpc_awk[@]}" -v p="$label" '{ print p $0 "\n"; fflush() }')
fi
exec "$@"
EOF

# hpc_job_enter_venv VENV: what bin/activate does, without sourcing it: activate holds the
# venv's path inside double quotes, so a path with $(...) in it would run as code.
hpc_job_enter_venv() {
  export VIRTUAL_ENV=$1
  export PATH=$1/bin:$PATH
  unset PYTHONHOME
}

# hpc_job_task ARGV_TEMPLATES...: one program process of the job (job_step.sh task): enters the
# runner's environment, expands the command and becomes the launcher's command for this task
# (hpc_launcher_NAME_task: torchrun in front of it, if so), under hpc_job_supervise when srun
# started it.
hpc_job_task() {
  local path
  if [[ ${HPC_JOB_TMPDIR_MODE:-provided} == emulated ]]; then
    hpc_job_node_tmpdir || hpc_job_fail "tmpdir" "cannot work out SLURM_TMPDIR"
    path=$hpc_job_node_tmpdir
    [[ -d $path && ! -L $path ]] || hpc_job_fail "tmpdir" "SLURM_TMPDIR $path is missing on this node"
    export SLURM_TMPDIR=$path
  fi

  local -a argv
  if [[ ${hpc_plan_mode:-single} == sweep ]]; then
    # The agent's key, from the job's environment or read here on the node: never on argv.
    hpc_sweep_load_key || hpc_job_fail "wandb key" "no WANDB_API_KEY in the job and no readable $(hpc_sweep_credentials)"
  fi
  hpc_launcher_load "$hpc_plan_launcher" || hpc_job_fail "launcher" "no launcher '$hpc_plan_launcher' in this toolkit"
  hpc_runner_load "$hpc_plan_runner" || hpc_job_fail "runner" "no runner '$hpc_plan_runner' in this toolkit"
  # The runner's environment, and the command expanded in it (hpc_configs_argv).
  "hpc_runner_${hpc_plan_runner}_enter" "$@"
  # The launcher's command for this task, with the runner's wrap where the launcher puts it.
  "hpc_launcher_${hpc_plan_launcher}_task" "${hpc_configs_argv[@]}"
  argv=("${hpc_launcher_argv[@]}")
  if [[ ${SLURM_LOCALID:-0} == 0 ]]; then
    local shown=("${argv[@]}") i
    for i in "${!shown[@]}"; do
      [[ ${shown[i]} != "$hpc_job_rank_lines_code" ]] || shown[i]=HPC_RANK_LINES_CODE
    done
    hpc_job_log "starting after $(hpc_job_elapsed) s: $(hpc_mask_quoted shown)"
  fi
  # Without srun (no launcher) the batch shell is the parent, and passes signals on itself.
  "hpc_launcher_${hpc_plan_launcher}_srun"
  ((${#hpc_launcher_srun[@]})) || exec "${argv[@]}"
  hpc_job_supervise "${argv[@]}"
}

# hpc_job_runner_wrap ARGV...: (a launcher's task) sets hpc_launcher_argv to ARGV run by the
# job's runner (hpc_runner_NAME_wrap): one call, one environment (one container per call: per
# node for torchrun, per GPU for lightning).
hpc_job_runner_wrap() {
  "hpc_runner_${hpc_plan_runner}_wrap" "$@"
  hpc_launcher_argv=("${hpc_runner_argv[@]}")
}

# hpc_job_supervise ARGV...: one srun task (lightning: a rank; torchrun: the agent) runs ARGV
# and stays its parent: the carrier signal URG (hpc_job_forward) becomes the time-limit warning
# for the processes below that catch it (a torchrun agent does not: its workers get it); TERM
# goes to the program. Exits with the program's status.
hpc_job_supervise() {
  local program status=0 root_cause=''
  # torchrun (a torch elastic agent: the launcher's _workers is true) exits 1 whatever its
  # workers' codes; its stderr names the first failed worker.
  if hpc_launcher_load "${hpc_plan_launcher:-none}" && "hpc_launcher_${hpc_plan_launcher:-none}_workers"; then
    root_cause=$(mktemp "${TMPDIR:-/tmp}/hpc_root_cause.XXXXXX") || root_cause=''
  fi
  if [[ -n $root_cause ]]; then
    # The tee and awk ignore the signals srun sends to every process of the step.
    "$@" 2> >(trap '' INT TERM HUP QUIT USR1 USR2 && tee -p >(trap '' INT TERM HUP QUIT USR1 USR2 &&
      exec awk "$hpc_job_root_cause_awk" >"$root_cause") >&2) &
  else
    "$@" &
  fi
  program=$!
  # shellcheck disable=SC2064 # the program's pid is fixed now
  trap "hpc_job_warn $program $HPC_WARNING_SIGNAL &" URG
  # shellcheck disable=SC2064
  trap "kill -TERM $program 2>/dev/null || true" TERM
  while :; do
    wait "$program" || status=$?
    kill -0 "$program" 2>/dev/null || break
    status=0
  done
  if [[ -n $root_cause ]]; then
    ((status == 0)) || hpc_job_worker_status "$root_cause" "$status"
    rm -f -- "${root_cause:?}"
  fi
  exit "$status"
}

# The first failed worker in torchrun's summary (ChildFailedError: 'Root Cause (first observed
# failure):', then its host, rank and exitcode lines): prints 'EXITCODE RANK LOCAL_RANK HOST'.
# Reads to the end, so that the tee in front of it never writes into a closed pipe.
# shellcheck disable=SC2016 # awk's own $3, not the shell's
hpc_job_root_cause_awk='
/^Root Cause \(first observed failure\):/ { if (!done) cause = 1; next }
cause && $1 == "host" { host = $3 }
cause && $1 == "rank" { rank = $3; lrank = $5; sub(/\)$/, "", lrank) }
cause && $1 == "exitcode" { print $3, rank, lrank, host; cause = 0; done = 1 }
'

# hpc_job_worker_status FILE STATUS: (hpc_job_supervise, torchrun) sets the caller's status to
# the exit code of torchrun's first failed worker, read from FILE (hpc_job_root_cause_awk; 128+N
# for a worker killed by signal N), and says which rank on which node. Waits at most 2 s for the
# line: the awk ends when the last worker's output has drained. Keeps STATUS when torchrun named
# no worker.
hpc_job_worker_status() {
  local file=$1 i code rank local_rank host
  for ((i = 0; i < 20; i++)); do
    [[ -s $file ]] && break
    sleep 0.1
  done
  read -r code rank local_rank host 2>/dev/null <"$file" || return 0
  [[ $code =~ ^-?[0-9]+$ ]] || return 0
  ((code >= 0)) || code=$((128 - code))
  # Only an exit status a process can have: 'exit 256' would end the job COMPLETED.
  ((code > 0 && code <= 255 && code != $2)) || return 0
  hpc_job_log "${hpc_plan_launcher:-torchrun} exited with $2: its first failed worker, rank $rank (local rank $local_rank) on ${SLURMD_NODENAME:-$host}, exited with $code: that is this node's status"
  status=$code
}
