#!/usr/bin/env bats
# hpc_usage_sacct_load (hpc_files/lib/hpc_usage.bash): what sacct says an ended job used, as the
# command 'usage' prints it beside the sampler's figures (or alone where the sampler left none).
# sacct is a PATH stub here, printing the lines a site's sacct prints in its several formats.

bats_require_minimum_version 1.5.0

setup() {
  load '../helpers/common'
  # shellcheck source=hpc_files/lib/hpc_facts.bash
  source "$HPC_ROOT/hpc_files/lib/hpc_facts.bash"
  # shellcheck source=hpc_files/lib/hpc_slurm.bash
  source "$HPC_ROOT/hpc_files/lib/hpc_slurm.bash"
  # shellcheck source=hpc_files/lib/hpc_usage.bash
  source "$HPC_ROOT/hpc_files/lib/hpc_usage.bash"
  mkdir -p "$BATS_TEST_TMPDIR/bin"
  PATH=$BATS_TEST_TMPDIR/bin:$PATH
}

# sacct_says LINE...: the sacct stub prints LINEs (and its arguments into args).
sacct_says() {
  {
    printf '#!/usr/bin/env bash\nprintf "%%s\\n" "$*" >"%s/args"\ncat <<"EOS"\n' "$BATS_TEST_TMPDIR"
    printf '%s\n' "$@" EOS
  } >"$BATS_TEST_TMPDIR/bin/sacct"
  chmod +x "$BATS_TEST_TMPDIR/bin/sacct"
}

@test "sacct_load: TotalCPU summed over the steps, the largest MaxRSS (bytes, or K/M/G), elapsed, state; only ended jobs and tasks" {
  sacct_says '17|COMPLETED|00:00:13||00:05.717' \
    '17.batch|COMPLETED|00:00:13|238354432|00:05.599' \
    '17.0|COMPLETED|00:00:12|7581696|00:00.118' \
    '18_2|CANCELLED by 0|1-00:00:01||01:02:03' \
    '18_2.batch|CANCELLED|1-00:00:01|2097152K|1:02:03' \
    '18_2.extern|CANCELLED|1-00:00:01|0|00:00:00' \
    '18_3|RUNNING|00:01:00||00:00:00' \
    '18_3.batch|RUNNING|00:01:00|1G|00:10.000' \
    '18_[4-9]|PENDING|00:00:00||00:00:00' \
    '19|FAILED|00:00:02||00:00.500'
  hpc_usage_sacct_load 17 18 19
  assert_equal "$(cat "$BATS_TEST_TMPDIR/args")" "-n -P -u $(id -un) -j 17,18,19 -o JobID,State,Elapsed,MaxRSS,TotalCPU --noconvert"
  assert_equal "${hpc_usage_acct[17]}" \
    "CPU 5.72 CPU-s (TotalCPU, all its steps); peak memory 227 MiB (MaxRSS, its largest task); elapsed 13 s; COMPLETED"
  assert_equal "${hpc_usage_acct[18_2]}" \
    "CPU 3723.00 CPU-s (TotalCPU, all its steps); peak memory 2048 MiB (MaxRSS, its largest task); elapsed 86401 s; CANCELLED"
  # No step recorded: the allocation's TotalCPU; no MaxRSS: said so, never 0 MiB.
  assert_equal "${hpc_usage_acct[19]}" \
    "CPU 0.50 CPU-s (TotalCPU, all its steps); peak memory not recorded; elapsed 2 s; FAILED"
  # Still running or pending: its figures are not final.
  assert_equal "${hpc_usage_acct[18_3]-none}" none
  assert_equal "${#hpc_usage_acct[@]}" 3
}

@test "sacct_load: no accounting (sacct fails) or no job: nothing, and true" {
  printf '#!/usr/bin/env bash\necho "Slurm accounting storage is disabled" >&2\nexit 1\n' >"$BATS_TEST_TMPDIR/bin/sacct"
  chmod +x "$BATS_TEST_TMPDIR/bin/sacct"
  run hpc_usage_sacct_load 17
  assert_success
  assert_output ''
  hpc_usage_sacct_load 17
  assert_equal "${#hpc_usage_acct[@]}" 0
  hpc_usage_sacct_load
  assert_equal "${#hpc_usage_acct[@]}" 0
}
