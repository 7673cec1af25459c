#!/usr/bin/env bats
# hpc_files/lib/hpc_usage.bash: a node's usage file turned into the job's last lines (what it
# used of what it asked for, and a suggestion where a request was far off); SLURM's time limits.

bats_require_minimum_version 1.5.0

setup() {
  load '../helpers/common'
  # shellcheck source=hpc_files/lib/hpc_facts.bash
  source "$HPC_ROOT/hpc_files/lib/hpc_facts.bash"
  # shellcheck source=hpc_files/lib/hpc_usage.bash
  source "$HPC_ROOT/hpc_files/lib/hpc_usage.bash"
}

# usage_file FILE KEY=VALUE...: a node's usage file, as the sampler writes it.
usage_file() {
  local file=$1
  shift
  printf '%s\n' "$@" >"$file"
}

@test "report: CPU used of allocated (average over the elapsed time, and CPU-s), peak memory, GPU, elapsed of the limit; suggestions only for what was far off" {
  usage_file "$BATS_TEST_TMPDIR/n1" node=n1 start_s=1000.0 now_s=1040.0 cpu_ticks=4000 clock_ticks=100 peak_rss_kb=524288 \
    cpus=8 mem=16G time=00-02:00:00 gpus=0 processes=1 'gpu=not measured (no nvidia-smi on the node)'
  run hpc_usage_report "$BATS_TEST_TMPDIR/n1"
  assert_success
  assert_line --index 0 "usage n1: CPU 1.00 of 8 allocated (12 %, 40.0 CPU-s); peak memory 512 MiB of 16384 MiB allocated; GPU not measured (no nvidia-smi on the node); elapsed 40.0 s of 2:00:00 (0 %)"
  assert_line --index 1 "usage n1: suggestion; asked 8 CPUs, used 1.00: -c 1 would do; asked 16384 MiB of memory, used at most 512 MiB; used 40 s of a 7200 s time limit: --time of twice that would do"
  # Well used: no suggestion. Two processes a node: -c is per process.
  usage_file "$BATS_TEST_TMPDIR/n2" node=n2 start_s=0 now_s=100 cpu_ticks=30000 clock_ticks=100 peak_rss_kb=1048576 \
    cpus=4 mem=2G time=10 gpus=2 processes=2 gpu=x
  run hpc_usage_report "$BATS_TEST_TMPDIR/n2"
  assert_output "usage n2: CPU 3.00 of 4 allocated (75 %, 300.0 CPU-s); peak memory 1024 MiB of 2048 MiB allocated; GPU x; elapsed 100.0 s of 0:10:00 (16 %)"
  usage_file "$BATS_TEST_TMPDIR/n3" node=n3 start_s=0 now_s=100 cpu_ticks=10000 clock_ticks=100 peak_rss_kb=1 \
    cpus=8 mem= time= gpus=2 processes=2 gpu=x
  run hpc_usage_report "$BATS_TEST_TMPDIR/n3"
  assert_line --index 1 "usage n3: suggestion; asked 8 CPUs, used 1.00: -c 1 would do"
  # A file that is a link, or not there: nothing.
  ln -s "$BATS_TEST_TMPDIR/n1" "$BATS_TEST_TMPDIR/n4"
  run hpc_usage_report "$BATS_TEST_TMPDIR/n4" "$BATS_TEST_TMPDIR/none"
  assert_success
  assert_output ''
}

@test "time limits as SLURM writes them, in seconds; anything else is refused" {
  local t
  for t in 10:600 1:30:90 2:00:00:7200 1-12:129600 00-00:10:00:600 1-0:30:88200; do
    hpc_facts_seconds "${t%:*}"
    assert_equal "$hpc_facts_seconds" "${t##*:}"
  done
  for t in '' x UNLIMITED 1-x 1:2:3:4; do
    run hpc_facts_seconds "$t"
    assert_failure
  done
}
