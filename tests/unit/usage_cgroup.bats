#!/usr/bin/env bats
# The usage sampler where scontrol cannot list the job's processes (issue 37): the job's are
# those whose cgroup names the job (/job_ID/). The sampler scans with globbing off (it splits
# /proc's stat lines into words), so that fallback's look at /proc/[0-9]* found nothing at all.

bats_require_minimum_version 1.5.0

setup() {
  load '../helpers/common'
  load '../helpers/stub'
  # shellcheck source=hpc_files/lib/hpc_usage.bash
  source "$HPC_ROOT/hpc_files/lib/hpc_usage.bash"
  export SLURMD_NODENAME=n1
  unset SLURM_STEP_ID
  # A cgroup (v1, cpuacct) named as SLURM's cgroup plugins name a job's step, for this test only.
  CG=/sys/fs/cgroup/cpuacct/hpc_usage_test_$$
  [[ $(id -u) == 0 && -d /sys/fs/cgroup/cpuacct && -w /sys/fs/cgroup/cpuacct ]] ||
    skip "needs root and cgroup v1's cpuacct (to make a job's cgroup)"
}

teardown() {
  [[ -z ${held:-} ]] || kill "$held" 2>/dev/null || true
  [[ -z ${held:-} ]] || wait "$held" 2>/dev/null || true
  [[ ! -d ${CG:-/nonexistent} ]] || rmdir "$CG/job_987654321/step_0" "$CG/job_987654321" "$CG" 2>/dev/null || true
}

@test "where scontrol cannot list the job's processes, the sampler counts those whose cgroup names the job" {
  stub scontrol 'listpids 987654321 n1 : exit 1'
  mkdir -p "$CG/job_987654321/step_0"
  sleep 60 &
  held=$!
  printf '%s\n' "$held" >"$CG/job_987654321/step_0/tasks"
  grep -q '/job_987654321/step_0' "/proc/$held/cgroup" || fail "not in the cgroup: $(cat "/proc/$held/cgroup")"
  hpc_usage_begin
  hpc_usage_scan 987654321
  assert_equal "$hpc_usage_members" 1
  unstub scontrol
}
