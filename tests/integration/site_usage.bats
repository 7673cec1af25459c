#!/usr/bin/env bats
# 'usage' on the site configuration (local_cluster.sh --config site: accounting in slurmdbd,
# MinJobAge=5): what the job's own sampler measured agrees with sacct's MaxRSS and TotalCPU for
# the same job, each line saying its source; a job whose sampler left no figures (its usage folder
# gone, or a job of an earlier toolkit) is still answered, from sacct, once it has ended.

# Set by hpc_run_job (helpers/cluster.bash); declared for shellcheck.
declare -g job_id job_state

bats_require_minimum_version 1.5.0

setup_file() {
  load '../helpers/common'
  load '../helpers/cluster'
  load '../helpers/site'
  hpc_site_cluster_use
  hpc_test_project "site usage project"
  cp "$HPC_ROOT/tests/fixtures/usage/hold.py" "$PROJECT/"
  hpc_warm_venv "$PROJECT" 'python probe.py exit 0' -e warm
}

setup() {
  load '../helpers/common'
  load '../helpers/cluster'
  load '../helpers/site'
  submitter=$PROJECT/hpc_files/job_submitter.sh
}

# within_10 WHAT OURS SACCT: fails unless OURS is within 10 % of SACCT (above 0).
within_10() {
  printf '# %s: usage says %s, sacct %s\n' "$1" "$2" "$3" >&3
  python3 -c 'import sys; a, b = map(float, sys.argv[1:]); sys.exit(0 if b > 0 and abs(a - b) <= 0.1 * b else 1)' \
    "$2" "$3" || fail "$1: usage says $2, sacct $3: $output"
}

# sacct_figures ID: sets sacct_cpu_s (TotalCPU of the job's steps, summed, in s) and sacct_rss_mib
# (the largest MaxRSS of its steps, MiB) from sacct itself.
sacct_figures() {
  local out
  out=$(sacct -n -P -j "$1" -o JobID,MaxRSS,TotalCPU --noconvert) || fail "sacct -j $1 failed"
  read -r sacct_cpu_s sacct_rss_mib < <(awk -F'|' '
    function secs(t,   d, n, p) {
      d = 0
      if (t ~ /-/) { split(t, p, "-"); d = p[1]; t = p[2] }
      n = split(t, p, ":")
      return d * 86400 + (n == 3 ? p[1] * 3600 + p[2] * 60 + p[3] : n == 2 ? p[1] * 60 + p[2] : p[1])
    }
    $1 ~ /\./ { c += secs($3); r = $2 + 0; if (r > m) m = r }
    END { printf "%.2f %.1f\n", c, m / 1048576 }' <<<"$out")
  [[ -n $sacct_cpu_s ]] || fail "no figures from sacct: $out"
}

@test "site: usage of an ended job: the sampler's peak memory and CPU within 10 % of sacct's MaxRSS and TotalCPU, and sacct's own line beside them, each naming its source" {
  local line ours
  hpc_configs "$PROJECT" 'python hold.py'
  # 200 MB held for 12 s (both samplers see it), busy for the first 6 CPU-s only, then idle
  # (HOLD_UNTIL names a file never made): a busy loop's every CPU-s is one of the suite's. All 6
  # CPU-s, however long they take (HOLD_BUSY_ALL): starved to 1.3 CPU-s in 12 s (a loaded run of
  # the suite), the program's CPU no longer outweighed the batch shell's, which sacct counts too.
  HOLD_MB=200 HOLD_SECONDS=12 HOLD_BUSY=6 HOLD_BUSY_ALL=1 HOLD_UNTIL=$BATS_TEST_TMPDIR/never \
    hpc_run_job "$PROJECT" -g 0 -t 00:10:00 -e hold
  assert_equal "$job_state" "COMPLETED 0:0"
  sacct_figures "$job_id"
  run --separate-stderr bash "$submitter" usage hold
  assert_success
  assert_line --index 0 "=== job $job_id (hold)"
  # The sampler's line ('usage n1: CPU 0.95 of 1 allocated (95 %, 12.3 CPU-s); peak memory 230 MiB ...').
  line=$(grep -E '^usage n[12]: CPU ' <<<"$output") || fail "no line of the sampler: $output"
  ours=$(sed -n 's/.*allocated ([0-9]* %, \([0-9.]*\) CPU-s).*/\1/p' <<<"$line")
  within_10 "the sampler's CPU-s" "$ours" "$sacct_cpu_s"
  ours=$(sed -n 's/.*peak memory \([0-9]*\) MiB.*/\1/p' <<<"$line")
  within_10 "the sampler's peak memory" "$ours" "$sacct_rss_mib"
  # sacct's line: its own figures, as sacct gives them.
  line=$(grep -E '^usage from sacct: ' <<<"$output") || fail "no line from sacct: $output"
  ours=$(sed -n 's/.*CPU \([0-9.]*\) CPU-s.*/\1/p' <<<"$line")
  within_10 "sacct's CPU-s" "$ours" "$sacct_cpu_s"
  ours=$(sed -n 's/.*peak memory \([0-9]*\) MiB.*/\1/p' <<<"$line")
  within_10 "sacct's MaxRSS" "$ours" "$sacct_rss_mib"
  assert_line "source: the job's own sampler (usage NODE lines); SLURM's accounting (sacct) for the ended job"
}

@test "site: usage of an ended job whose sampler left no figures: answered from sacct once the controller forgot it, saying so" {
  local line dir
  hpc_configs "$PROJECT" 'python hold.py'
  # Both figures are sacct's (the gatherer samples every second): a short job is enough.
  HOLD_MB=100 HOLD_SECONDS=3 hpc_run_job "$PROJECT" -g 0 -t 00:10:00 -e nosampler
  assert_equal "$job_state" "COMPLETED 0:0"
  # As for a job of an earlier toolkit: no usage folder.
  dir="$SCRATCH/site usage project/hpc_outputs/usage/$job_id"
  [[ -d $dir ]] || fail "no usage folder $dir"
  rm -rf -- "${dir:?}"
  hpc_wait_forgotten "$job_id" 150
  sacct_figures "$job_id"
  run --separate-stderr bash "$submitter" usage nosampler
  assert_success
  assert_line --index 0 "=== job $job_id (nosampler)"
  line=$(grep -E '^usage from sacct: ' <<<"$output") || fail "no line from sacct: $output"
  within_10 "sacct's CPU-s" "$(sed -n 's/.*CPU \([0-9.]*\) CPU-s.*/\1/p' <<<"$line")" "$sacct_cpu_s"
  within_10 "sacct's MaxRSS" "$(sed -n 's/.*peak memory \([0-9]*\) MiB.*/\1/p' <<<"$line")" \
    "$sacct_rss_mib"
  assert_line "source: SLURM's accounting (sacct): the job's sampler left no figures"
  refute_output --partial 'no usage recorded'
}
