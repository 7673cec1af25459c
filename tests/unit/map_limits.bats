#!/usr/bin/env bats
# A map and the site's limits on the jobs a user may have submitted at once (hpc_map_fit_room,
# hpc_map_submit_room in hpc_map_submit.bash), without SLURM: sacctmgr and squeue are stubs of
# this file (the association's rows, the QOS's MaxSubmitJobsPerUser, the user's jobs), the rest
# the PATH stubs of tests/fixtures/submitter/bin. On the site cluster: site_limits_map.bats.

bats_require_minimum_version 1.5.0

setup_file() {
  load '../helpers/common'
  # The profiles compiled once for the whole bats run, by the first file that asks.
  # shellcheck source=tests/helpers/submitter.bash
  source "$BATS_TEST_DIRNAME/../helpers/submitter.bash"
  hpc_test_warm_profiles
}

setup() {
  load '../helpers/common'
  # shellcheck source=tests/helpers/submitter.bash
  source "$BATS_TEST_DIRNAME/../helpers/submitter.bash"
  # A built venv: no install job.
  hpc_test_submitter_setup scratch --venv
  mkdir -p "$tmp/bin"
  # shellcheck disable=SC2016 # the reference is for the job to expand
  printf 'python featurize.py --index ${map_index}\n' >"$project/hpc_files/experiment_configurations.txt"
  unset SBATCH_QOS SBATCH_ACCOUNT
  export HPC_STUB_MAX_ARRAY_SIZE=1000
  # sacctmgr: 'show user U withassoc ...' prints assoc.txt, 'show qos Q ...' the line of Q in
  # qos.txt (NAME|MAX); fails where fail exists (no accounting). squeue -o '%q|%a': jobs.txt.
  cat >"$tmp/bin/sacctmgr" <<EOS
#!/usr/bin/env bash
[[ ! -e '$tmp/fail' ]] || { echo 'sacctmgr: error: Problem talking to the database' >&2; exit 1; }
case "\$*" in
  *'show user '*) cat '$tmp/assoc.txt' ;;
  *'show qos '*) awk -F'|' -v q="\$5" '\$1 == q { print \$2 }' '$tmp/qos.txt' ;;
esac
EOS
  cat >"$tmp/bin/squeue" <<EOS
#!/usr/bin/env bash
if [[ "\$*" == *'%q|%a'* ]]; then cat '$tmp/jobs.txt'; exit 0; fi
exec '$HPC_ROOT/tests/fixtures/submitter/bin/squeue' "\$@"
EOS
  chmod +x "$tmp/bin/sacctmgr" "$tmp/bin/squeue"
  printf 'lab|lab|||normal\nlab|other|||\n' >"$tmp/assoc.txt"
  printf 'normal|\nlimited|4\n' >"$tmp/qos.txt"
  : >"$tmp/jobs.txt"
  export PATH=$tmp/bin:$PATH
}

@test "--chunk auto: K so that the tasks and the gather fit the QOS's MaxSubmitJobsPerUser less the user's jobs in it (SBATCH_QOS, else the association's default QOS); no limit known: as before" {
  printf 'limited|lab\nnormal|lab\n' >"$tmp/jobs.txt"
  SBATCH_QOS=limited run --separate-stderr bash "$submitter" --dry-run -g 0 --map-range 0-9 --chunk auto \
    --max-concurrent 10 --gather 'python -c pass' -e a </dev/null
  assert_success
  # 4 - 1 submitted = 3: 2 tasks of 5 and the gather.
  assert_line --regexp '^10 items in chunks of 5: one array of 2 task\(s\): '
  assert_equal "$stderr" "job_submitter.sh: note: --chunk auto: 5 items per task, so that the 2 tasks and the gather fit MaxSubmitJobsPerUser 4 of QOS limited, 1 already submitted"
  # The association's default QOS, where SBATCH_QOS is not set; no gather: 3 tasks of 4.
  printf 'lab|lab|||limited\n' >"$tmp/assoc.txt"
  run --separate-stderr bash "$submitter" --dry-run -g 0 --map-range 0-9 --chunk auto --max-concurrent 10 -e a </dev/null
  assert_success
  assert_line --regexp '^10 items in chunks of 4: one array of 3 task\(s\): '
  # No limit on the QOS, none on the association: the throttle's K, no note.
  printf 'lab|lab|||normal\n' >"$tmp/assoc.txt"
  run --separate-stderr bash "$submitter" --dry-run -g 0 --map-range 0-9 --chunk auto --max-concurrent 10 -e a </dev/null
  assert_success
  assert_line --regexp '^10 items in chunks of 1: one array of 10 task\(s\): '
  assert_equal "$stderr" ''
  # No accounting (sacctmgr fails): the same.
  : >"$tmp/fail"
  SBATCH_QOS=limited run --separate-stderr bash "$submitter" --dry-run -g 0 --map-range 0-9 --chunk auto \
    --max-concurrent 10 -e a </dev/null
  assert_success
  assert_line --regexp '^10 items in chunks of 1: one array of 10 task\(s\): '
}

@test "--chunk auto: the association's MaxSubmitJobs of the account (-a), its row for the partition first, when tighter than the QOS's; counted over the user's jobs of that account" {
  printf 'lab|lab|||normal\nlab|proj|||normal\nlab|proj|debug|3|normal\nlab|proj|other|1|normal\n' >"$tmp/assoc.txt"
  printf 'normal|lab\nnormal|proj\n' >"$tmp/jobs.txt"
  SBATCH_QOS=limited run --separate-stderr bash "$submitter" --dry-run -g 0 -a proj -p debug --map-range 0-9 \
    --chunk auto --max-concurrent 10 -e a </dev/null
  assert_success
  assert_line --regexp '^10 items in chunks of 5: one array of 2 task\(s\): '
  assert_equal "$stderr" "job_submitter.sh: note: --chunk auto: 5 items per task, so that the 2 tasks fit MaxSubmitJobs 3 of account proj, 1 already submitted"
}

@test "no room for even one task: --chunk auto refused in one line naming the limit; a plain map whose tasks and gather do not fit refused before any sbatch, naming --chunk auto; exit 1, nothing submitted" {
  printf 'limited|lab\n%.0s' 1 2 3 >"$tmp/jobs.txt"
  SBATCH_QOS=limited run --separate-stderr bash "$submitter" -y -g 0 --map-range 0-9 --chunk auto \
    --gather 'python -c pass' -e a </dev/null
  assert_failure 1
  assert_equal "$stderr" "job_submitter.sh: --chunk auto: no room for the map's array and its gather: MaxSubmitJobsPerUser 4 of QOS limited, 3 already submitted; submit it once earlier jobs have ended (squeue -u $(id -un) shows them)"
  [[ ! -e $stub_log/sbatch.1.args ]] || fail "sbatch was called"
  : >"$tmp/jobs.txt"
  SBATCH_QOS=limited run --separate-stderr bash "$submitter" -y -g 0 --map-range 0-3 --gather 'python -c pass' -e b </dev/null
  assert_failure 1
  assert_equal "$stderr" "job_submitter.sh: the map's 4 tasks and its gather are 5 jobs, more than the 4 left under MaxSubmitJobsPerUser 4 of QOS limited, 0 already submitted; --chunk auto runs its items several per task, within the limit (or submit it once earlier jobs have ended: squeue -u $(id -un) shows them); nothing was submitted"
  [[ ! -e $stub_log/sbatch.1.args ]] || fail "sbatch was called"
  [[ ! -e "$tmp/scratch/my project/hpc_outputs/map" ]] || fail "a map folder was made"
  # Without a gather the array alone is SLURM's to judge (its refusal leaves nothing).
  SBATCH_QOS=limited run --separate-stderr bash "$submitter" -y -g 0 --map-range 0-5 -e c </dev/null
  assert_success
}
