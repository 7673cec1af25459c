#!/usr/bin/env bats
# Modes as modules (hpc_files/lib/modes/NAME.bash, called through hpc_mode HOOK): no file outside
# modes/ branches on a mode's name, and a mode is one file: a probe mode dropped into a copy of the
# toolkit is submitted and run by the one submission (hpc_submit_main) and the job's steps
# without a line of the core changed. Without SLURM: the PATH stubs of tests/fixtures/manage/bin.

bats_require_minimum_version 1.5.0

setup_file() {
  load '../helpers/common'
  export PROJECT="$BATS_FILE_TMPDIR/my project"
  mkdir -p "$PROJECT"
  bash "$HPC_ROOT/hpc_files/install.sh" "$PROJECT" >/dev/null
  printf 'python main.py --lr 0.1\n' >"$PROJECT/hpc_files/experiment_configurations.txt"
  # The profiles compiled once for the whole bats run, by the first file that asks.
  # shellcheck source=tests/helpers/submitter.bash
  source "$BATS_TEST_DIRNAME/../helpers/submitter.bash"
  hpc_test_warm_profiles
  hpc_test_venv_built "$PROJECT"
}

setup() {
  load '../helpers/common'
  load '../helpers/shipped'
  tmp=$(hpc_test_tmp)
  stub_log="$BATS_TEST_TMPDIR/stub log"
  mkdir -p "$stub_log" "$tmp/scratch" "$tmp/bin"
  cp -R "$HPC_WARM_CACHE" "$tmp/cache"
  printf '#!/usr/bin/env bash\necho "debug*|2|4|8000|gpu:2"\n' >"$tmp/bin/sinfo"
  chmod +x "$tmp/bin/sinfo"
  unset HPC_STUB_SQUEUE HPC_STUB_SACCT HPC_STUB_SBATCH HPC_STUB_JOB_ID HPC_STUB_MAX_ARRAY_SIZE
  export SCRATCH=$tmp/scratch HPC_CLUSTER=local HPC_CACHE_DIR=$tmp/cache HPC_STUB_LOG=$stub_log
  export HPC_STUB_JOBS=$tmp/jobs
  export PATH=$HPC_ROOT/tests/fixtures/manage/bin:$tmp/bin:$PATH
  : >"$HPC_STUB_JOBS"
}

# mode_comparisons FILE...: prints FILE:LINE: TEXT for each code line of FILEs (comments not
# counted) that compares the plan's or the submission's mode with something: ==, !=, =~ or a case.
mode_comparisons() {
  grep -nHE '(\$\{?(hpc_plan_mode|hpc_mode_name)[^ ]*[[:space:]]*(==|!=|=~))|case[[:space:]]+"?\$\{?(hpc_plan_mode|hpc_mode_name)' \
    -- "$@" | grep -vE '^[^:]+:[0-9]+:[[:space:]]*#' || true
}

@test "modes: no shipped Bash file outside hpc_files/lib/modes/ compares the mode's name" {
  local -a files=()
  local f
  while IFS= read -r f; do
    [[ $f == hpc_files/lib/modes/* ]] || files+=("$f")
  done < <(shipped_bash)
  ((${#files[@]} > 20))
  run mode_comparisons "${files[@]}"
  assert_success
  assert_output ''
}

@test "modes: the comparison check finds each planted comparison of the mode, and not a comment" {
  local f=$BATS_TEST_TMPDIR/x.bash
  # shellcheck disable=SC2016 # shell code as data
  printf '%s\n' '[[ $hpc_plan_mode == map ]] || true' '[[ ${hpc_plan_mode:-single} != scaling ]]' \
    'case ${hpc_plan_mode:-single} in' '  # [[ $hpc_plan_mode == map ]]' 'hpc_plan_mode=single' \
    '[[ $hpc_mode_name =~ ^s ]]' >"$f"
  run mode_comparisons "$f"
  assert_output "$f:1:[[ \$hpc_plan_mode == map ]] || true
$f:2:[[ \${hpc_plan_mode:-single} != scaling ]]
$f:3:case \${hpc_plan_mode:-single} in
$f:6:[[ \$hpc_mode_name =~ ^s ]]"
}

# probe_mode DIR: writes DIR/probe.bash, a mode of its own: its plan is one job's in mode probe,
# it says when it was submitted, and its job's setup and folders say that they ran.
probe_mode() {
  cat >"$1/probe.bash" <<'EOF'
# shellcheck shell=bash
hpc_mode_probe_describe() { printf '%s\n' "a probe"; }
hpc_mode_probe_plan() {
  hpc_plan_make
  hpc_plan_mode=probe
}
hpc_mode_probe_submitted() { printf 'probe: submitted in mode %s\n' "$hpc_plan_mode"; }
hpc_mode_probe_job_setup() { printf 'probe: job setup\n'; }
hpc_mode_probe_job_folders() { printf 'probe: job folders\n'; }
EOF
}

@test "modes: a mode is one file: a probe mode dropped into modes/ is submitted by the one pipeline and set up by the job, the core unchanged" {
  # The project's copy of the toolkit (install.sh's), this file's own.
  local copy=$PROJECT/hpc_files lib=$PROJECT/hpc_files/lib
  probe_mode "$lib/modes"
  # The submitter as job_submitter.sh runs it, in mode probe (as the command interactive names its mode).
  sed 's/^  hpc_submit_main "" "\$@"$/  hpc_submit_main probe "$@"/' "$copy/job_submitter.sh" >"$copy/probe_submitter.sh"
  grep -q 'hpc_submit_main probe' "$copy/probe_submitter.sh"
  run --separate-stderr bash "$copy/probe_submitter.sh" -y -g 0 -e probe </dev/null
  assert_success
  assert_line 'probe: submitted in mode probe'
  assert_line --partial 'Submitted job 5000'
  # The plan the job loads names the mode; the job's steps call its hooks.
  local -a plans=("$SCRATCH/my project/hpc_outputs/"*.plan)
  assert_equal "${#plans[@]}" 1
  run grep -x 'hpc_plan_mode=probe' "${plans[0]}"
  assert_success
  run bash -c 'source "$1/hpc_job.bash" && hpc_plan_mode=probe hpc_plan_command=(x) && hpc_job_array_setup' _ "$lib"
  assert_success
  assert_output 'probe: job setup
probe: job folders'
}

@test "modes: a mode that is not a file of modes/ is refused with one line naming it" {
  run bash -c 'source "$1/hpc_job.bash" && hpc_plan_mode=nosuch && hpc_job_array_setup' _ "$HPC_ROOT/hpc_files/lib"
  assert_failure 1
  assert_output --partial "mode 'nosuch': no 'nosuch' in $HPC_ROOT/hpc_files/lib/modes"
}
