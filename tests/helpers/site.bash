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
