# shellcheck shell=bash
# Helpers for the integration tests on the site configuration of the local cluster
# (local_cluster.sh --config site: slurmdbd, preemption, QOS limits). Load after cluster.bash.

# hpc_site_cluster_use: from setup_file, points the test file at the site cluster (tests/run.sh
# brings it up in HPC_SITE_CLUSTER_DIR on HPC_SITE_CLUSTER_PORT_BASE when a site_* file runs);
# fails the file, saying how to bring it up, when it is not up.
hpc_site_cluster_use() {
  hpc_cluster_use "${HPC_SITE_CLUSTER_DIR:-$HPC_ROOT/.local_cluster_site}" \
    "${HPC_SITE_CLUSTER_PORT_BASE:-$((${HPC_CLUSTER_PORT_BASE:-17817} + 30))}"
  if [[ $(sinfo -h -o '%P' 2>/dev/null | sort | tr '\n' ' ') != "debug* high " ]] ||
    ! sacctmgr -n show cluster >/dev/null 2>&1; then
    fail "the site cluster is not up in $HPC_CLUSTER_DIR: run 'bash hpc_files/local_cluster.sh" \
      "--dir $HPC_CLUSTER_DIR --port-base $HPC_CLUSTER_PORT_BASE --config site up' (or tests/run.sh)"
  fi
}

# hpc_wait_forgotten ID TIMEOUT_S: waits until the controller has forgotten job ID (MinJobAge,
# then its next purge), so that only the accounting database knows it; fails after TIMEOUT_S.
hpc_wait_forgotten() {
  local id=$1 timeout=$2 start=$SECONDS
  while scontrol show job "$id" >/dev/null 2>&1; do
    ((SECONDS - start <= timeout)) || fail "the controller still knows job $id after ${timeout}s"
    sleep 1
  done
}

# hpc_site_preempt [GPUS]: submits to partition 'high' a one-node job that needs GPUS GPUs
# (default 1), which every toolkit job that holds more than 2 - GPUS of each node's two GPUs must
# give up (with 1: a job with -g 2; with 2: any, e.g. a 2x1 job): it is preempted. Prints its id.
hpc_site_preempt() {
  hpc_sbatch -p high -N1 --gres="gpu:${1:-1}" -o /dev/null --wrap 'sleep 1'
}

# hpc_site_wait_line ID FILE REGEX TIMEOUT_S: waits until a line of FILE (job ID's output) matches
# REGEX, cutting short SLURM's 120 s wait before a requeued job may start again (as
# hpc_wait_requeued does); fails the test after TIMEOUT_S.
hpc_site_wait_line() {
  local id=$1 file=$2 regex=$3 timeout=$4 start=$SECONDS pending_since=''
  until grep -qE -- "$regex" "$file" 2>/dev/null; do
    ((SECONDS - start <= timeout)) || fail "no line matching '$regex' in $file within ${timeout}s: $(cat "$file")"
    if [[ $(squeue -h -j "$id" -o '%T %r' 2>/dev/null) == "PENDING BeginTime" ]] &&
      ! sinfo -h -N -o %T | grep -q completing && ! pgrep -f "slurmstepd: \[$id\." >/dev/null; then
      pending_since=${pending_since:-$SECONDS}
      if ((SECONDS - pending_since >= 3)); then
        scontrol update JobId="$id" StartTime=now || true
        pending_since=''
      fi
    fi
    # A look a second: each costs an squeue (CPU the suite lacks); the wait is minutes long.
    sleep 1
  done
}

# hpc_site_lock NAME: (in a test) waits until no other test file on this site cluster holds the
# lock NAME, then holds it until the test ends (its process exits): the site files run side by
# side, and those that preempt ('preempt') or count the user's jobs in the QOS 'limited' ('qos')
# would disturb each other. Fails the test after 900 s.
hpc_site_lock() {
  local fd
  exec {fd}>"$HPC_CLUSTER_DIR/run/test-$1.lock"
  flock -w 900 "$fd" || fail "the site cluster's test lock '$1' was held for 900 s"
}
