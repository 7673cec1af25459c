#!/usr/bin/env bats
# The site configuration of the local cluster (local_cluster.sh --config site), as real sites run
# SLURM: accounting in slurmdbd on a MariaDB of the cluster's own, a short MinJobAge, a preemptible
# default partition (debug, PreemptMode=REQUEUE, GraceTime 30 s) under a higher-priority one
# (high), and a QOS with limits (limited). tests/run.sh brings it up for the files named site_*
# (HPC_SITE_CLUSTER_DIR and HPC_SITE_CLUSTER_PORT_BASE).

bats_require_minimum_version 1.5.0

setup_file() {
  load '../helpers/common'
  load '../helpers/cluster'
  load '../helpers/site'
  hpc_site_cluster_use
}

setup() {
  load '../helpers/common'
  load '../helpers/cluster'
  load '../helpers/site'
  work=$(hpc_test_tmp)
  cd "$work" || return
}

teardown() {
  local id
  for id in ${cancel_ids:-}; do scancel "$id" 2>/dev/null || true; done
  if [[ -n ${fresh:-} ]]; then
    bash "$HPC_ROOT/hpc_files/local_cluster.sh" --dir "$fresh" down >/dev/null 2>&1 || true
    rm -rf -- "${fresh:?}"
  fi
}

@test "site: sacct answers for a job the controller has forgotten, with MaxRSS and TotalCPU" {
  # 60 MB held for three seconds while the CPU works (a fixed amount: the machine may be busy): the
  # gatherer (every second) sees both.
  id=$(hpc_sbatch -N1 -o /dev/null --wrap \
    "python3 -c 'import time; b = bytearray(60 * 2**20); sum(range(2 * 10**7)); time.sleep(3)'")
  hpc_wait_job "$id" 120
  hpc_wait_forgotten "$id" 150
  run sacct -n -P -X -j "$id" -o State,ExitCode
  assert_output "COMPLETED|0:0"
  line=$(sacct -n -P -j "$id.batch" -o MaxRSS,TotalCPU --noconvert)
  IFS='|' read -r maxrss totalcpu <<<"$line"
  # MaxRSS in bytes (--noconvert): at least the 60 MB held.
  ((${maxrss%[KMG]} >= 60 * 2 ** 20)) || fail "MaxRSS '$maxrss' is below the 60 MB the job held ($line)"
  # TotalCPU is MM:SS.mmm here: at least the 0.2 s that summing takes on a fast core.
  [[ $totalcpu =~ ^([0-9]+):([0-9]+)\.([0-9]{3})$ ]] || fail "TotalCPU '$totalcpu' is not MM:SS.mmm"
  ((10#${BASH_REMATCH[1]} * 60000 + 10#${BASH_REMATCH[2]} * 1000 + 10#${BASH_REMATCH[3]} >= 200)) ||
    fail "TotalCPU '$totalcpu' is below the CPU the job spent"
}

@test "site: a job in partition high preempts one in debug, which is sent its --signal at once and requeued" {
  hpc_site_lock preempt
  # The low job takes every CPU of both nodes (once the other site files' jobs let it); the high
  # one then needs one of them.
  cat >low.sh <<'EOS'
#!/bin/bash
trap 'echo "signal USR1 restart ${SLURM_RESTART_COUNT:-0}" >>"$OUT"' USR1
echo "start ${SLURM_RESTART_COUNT:-0}" >>"$OUT"
for ((i = 0; i < 600; i++)); do sleep 0.2; done
EOS
  export OUT=$work/low.out
  id=$(hpc_sbatch -N2 --exclusive -t 10 --signal=B:USR1@5 -o /dev/null low.sh)
  cancel_ids=$id
  hpc_wait_output "$OUT" '^start 0$' 300
  high=$(hpc_sbatch -p high -N1 -o /dev/null --wrap 'sleep 1')
  cancel_ids+=" $high"
  # Told at preemption (preempt_send_user_signal), not 5 s before its 10 min limit.
  hpc_wait_output "$OUT" '^signal USR1 restart 0$' 45
  hpc_wait_job "$high" 90
  run hpc_job_state "$high"
  assert_output "COMPLETED 0:0"
  run sacct -n -P -X -D -j "$id" -o State
  assert_line --index 0 PREEMPTED
  [[ $(hpc_job_field "$id" Restarts) == 1 ]] || fail "not requeued: $(scontrol show job "$id")"
}

@test "site: the QOS 'limited' refuses a submission beyond MaxSubmitJobsPerUser with SLURM's reason" {
  local ids=() i max
  hpc_site_lock qos
  max=$(sacctmgr -n -P show qos limited format=MaxSubmitPU)
  [[ $max =~ ^[0-9]+$ ]] || fail "QOS limited has no MaxSubmitJobsPerUser: '$max'"
  for ((i = 0; i < max; i++)); do
    ids+=("$(hpc_sbatch --qos=limited -H -o /dev/null --wrap true)")
  done
  cancel_ids=${ids[*]}
  run sbatch --qos=limited -H -o /dev/null --wrap true
  assert_failure
  assert_output --partial "QOSMaxSubmitJobPerUserLimit"
}

@test "site: up in a fresh folder, then down stops MariaDB and slurmdbd with the rest, leaving no process" {
  local base=$((HPC_CLUSTER_PORT_BASE + 10)) file pid pids=()
  # No whitespace: slurm.conf cannot quote the folder.
  fresh=$(mktemp -d /tmp/hpc-site-fresh.XXXXXX)
  run bash "$HPC_ROOT/hpc_files/local_cluster.sh" --dir "$fresh" --port-base "$base" --config site up
  assert_success
  assert_output --partial "export SLURM_CONF=$fresh/etc/slurm.conf"
  run env SLURM_CONF="$fresh/etc/slurm.conf" sacctmgr -n -P show assoc user=root format=Account
  assert_output --partial lab
  for file in "$fresh"/run/*.pid; do
    read -r pid <"$file" && pids+=("$pid")
  done
  run bash "$HPC_ROOT/hpc_files/local_cluster.sh" --dir "$fresh" --port-base "$base" status
  assert_success
  assert_line --regexp '^mariadbd: running'
  assert_line --regexp '^slurmdbd: running'
  ((${#pids[@]} == 6)) || fail "expected 6 daemons (munged, mariadbd, slurmdbd, slurmctld, 2 slurmd): ${pids[*]}"
  run bash "$HPC_ROOT/hpc_files/local_cluster.sh" --dir "$fresh" --port-base "$base" down
  assert_success
  for pid in "${pids[@]}"; do
    ! kill -0 "$pid" 2>/dev/null || fail "pid $pid ($(cat "/proc/$pid/comm" 2>/dev/null)) still runs after down"
  done
  # Nothing else runs from this folder either (the database names it on its command line).
  run pgrep -f -- "$fresh/"
  assert_failure
}
