# shellcheck shell=bash
# hpc_job_node.bash: a job's phases 1 and 3 on every node (sourced by hpc_job.bash): this job's
# SLURM_TMPDIR where the cluster gives none (a random token, a name no one can guess, a record),
# the data archive unpacked, the container image copied, the copy-back at the end, and the
# 'guard' task per node that does all of it (hpc_job_guard), started and stopped by the batch
# shell with bounded waits (hpc_job_start_guards, hpc_job_stop_guards).

# What this file reads, set by the others: declared here, not set (values already there are
# kept), so that the linter knows each name and catches a misspelt one.
# The plan file (hpc_job_plan_load); hpc_facts.bash: the tmpdir's name; hpc_configs_expand: the
# expanded root; hpc_job_guards_PID: set by bash for the coprocess hpc_job_guards.
# hpc_facts.bash (loaded by hpc_common.bash): SLURM's times in seconds; hpc_common.bash: the
# libraries' folder and hpc_module_load's problem.
declare -g hpc_facts_seconds hpc_lib_dir hpc_module_problem
declare -g hpc_plan_runner hpc_plan_tmpdir_root \
  hpc_plan_toolkit_dir hpc_facts_tmpdir_name hpc_job_guards_PID
declare -ga hpc_configs_argv hpc_plan_copy_back hpc_job_srun_detach

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
      if [[ -n ${SLURM_TMPDIR:-} ]]; then
        local msg="ignoring SLURM_TMPDIR=$SLURM_TMPDIR: it was not made by the cluster for job"
        msg+=" $SLURM_JOB_ID (inherited from the submitting shell?); this job makes its own"
        hpc_job_log "$msg"
      fi
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
      local msg="copy-back of $rel FAILED: $hpc_job_copy_link_path is a symbolic"
      msg+=" link, and the toolkit never writes through one; nothing was changed"
      hpc_job_log "$msg"
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
  local path='' sleeper made=0
  hpc_job_runner_load
  hpc_job_node_tmpdir || hpc_job_guard_failed
  path=$hpc_job_node_tmpdir
  if [[ $HPC_JOB_TMPDIR_MODE == emulated ]]; then
    hpc_job_tmpdir_make "$path" || hpc_job_guard_failed
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
      local msg="copy-back failed: the complete results "
      if ((made)); then
        msg+="stay in $path on $SLURMD_NODENAME (not removed; plai_cleanups removes it later)"
      else
        msg+="are in the cluster's $path on $SLURMD_NODENAME, which the cluster removes when the job ends"
      fi
      hpc_job_log "$msg"
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
  [[ -z ${hpc_plan_data_archive:-} ]] || hpc_module_load "$hpc_lib_dir" hpc_stage_extract hpc_stage_node ||
    hpc_job_log "staging: $hpc_module_problem"
  [[ -z ${hpc_plan_data_archive:-} ]] || hpc_stage_extract "$hpc_plan_data_archive" "$path" || hpc_job_guard_failed
  # The runner's work on every node (a container's image copied into SLURM_TMPDIR).
  ! "hpc_runner_${hpc_plan_runner}_node_work" || "hpc_runner_${hpc_plan_runner}_node_setup" "$path" ||
    hpc_job_guard_failed
  printf 'ready %s\n' "$SLURMD_NODENAME"
  sleep infinity &
  sleeper=$!
  while :; do wait "$sleeper" || true; done
}

# hpc_job_guard_failed: (in hpc_job_guard, before 'ready') tells the batch shell that this node
# failed, removes the SLURM_TMPDIR the guard made (its path and made), and exits 1.
hpc_job_guard_failed() {
  printf 'failed %s\n' "$SLURMD_NODENAME"
  ((made == 0)) || hpc_job_tmpdir_remove "$path" || true
  exit 1
}

# hpc_job_time_bounds: sets hpc_job_time_left (seconds this job has left, from squeue; one day
# when unlimited or unknown), hpc_job_end_by (the value of SECONDS then) and
# hpc_job_setup_timeout (how long the nodes' setup may take: HPC_JOB_SETUP_TIMEOUT, else 3/4 of
# the time left and at least 60 s: staging a large dataset takes long, but a node that never
# gets ready must not hold the job until its time limit).
hpc_job_time_bounds() {
  local left
  left=$(squeue -h -j "${SLURM_JOB_ID:?}" -o %L 2>/dev/null) || left=
  # squeue's %L ([D-]HH:MM:SS, MM:SS); UNLIMITED, NOT_SET or INVALID: a day.
  hpc_job_time_left=86400
  ! hpc_facts_seconds "$left" || hpc_job_time_left=$hpc_facts_seconds
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
    exec ${hpc_job_srun_detach[@]+"${hpc_job_srun_detach[@]}"} srun --ntasks="$SLURM_JOB_NUM_NODES" \
      --ntasks-per-node=1 --overlap --cpus-per-task=1 --mem=0 --kill-on-bad-exit=0 \
      bash "$hpc_plan_toolkit_dir/job_step.sh" guard
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
      local msg
      printf -v msg '%s' "node(s) $(hpc_job_nodes_except "${ready[@]}") not ready within" \
        " ${hpc_job_setup_timeout} s (the bound: 3/4 of the job's time left, or HPC_JOB_SETUP_TIMEOUT)"
      hpc_job_fail "node setup" "$msg"
    elif ((status != 0)); then
      # A guard that ends without a word closes the pipe.
      hpc_job_fail "node setup" "a node's setup step ended without saying it was ready (see above)"
    fi
    case $line in
      ready\ *) ready+=("${line#ready }") ;;
      failed\ *)
        hpc_job_fail "node setup" \
          "node ${line#failed } could not make its SLURM_TMPDIR, stage the data or copy the image (see above)"
        ;;
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
      local msg
      printf -v msg '%s' "the guards' step ended before node(s)" \
        " $(hpc_job_nodes_except "${!finished[@]}") confirmed its cleanup (see above)"
      hpc_job_log "$msg"
      break
    fi
    now=$SECONDS
    if ((${#acked[@]} < SLURM_JOB_NUM_NODES)); then
      if ((now - start >= ack_timeout)); then
        local msg
        printf -v msg '%s' "the guard of node(s) $(hpc_job_nodes_except "${!acked[@]}") did not" \
          " answer the stop signal within ${ack_timeout} s (sent every ${resend} s): the cleanup" \
          " of its SLURM_TMPDIR may not have run; SLURM's end of the job will signal it again"
        hpc_job_log "$msg"
        break
      fi
      if ((now >= next_send)); then
        kill -USR2 "$pid" 2>/dev/null || true
        next_send=$((now + resend))
      fi
    elif ((now >= end_by)); then
      local msg
      printf -v msg '%s' "the guard of node(s) $(hpc_job_nodes_except "${!finished[@]}")" \
        " did not finish its cleanup before the job's time was up"
      hpc_job_log "$msg"
      break
    fi
  done
  if ((${#finished[@]} < SLURM_JOB_NUM_NODES)) &&
    [[ -z ${finished[${SLURMD_NODENAME:-?}]:-} && -n ${hpc_plan_copy_back[*]+x} ]]; then
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
    local msg="copy-back: node(s) $1 did not report what they copied back"
    msg+=" (their own lines above say it); the copy-back is not confirmed"
    hpc_job_log "$msg"
    return 0
  fi
  for rel in "${hpc_plan_copy_back[@]}"; do
    while [[ $rel == ?*/ ]]; do rel=${rel%/}; done
    [[ -n $rel && -z ${hpc_job_copy_found_paths[$rel]:-} ]] || continue
    hpc_job_log \
      "copy-back WARNING: $rel was found on none of the $SLURM_JOB_NUM_NODES node(s): nothing was copied back for it"
  done
}
