#!/usr/bin/env bats
# The runner modules (hpc_files/lib/runners/*.bash): each defines the documented interface
# (docs/architecture.md, "Runner x launcher"), and the submitter reaches a runner only through it:
# the submit side (check, prepare, preview) as much as the node side (enter, wrap). Without SLURM:
# the PATH stubs of tests/fixtures/submitter/bin.

bats_require_minimum_version 1.5.0

setup_file() {
  load '../helpers/common'
  load '../helpers/submitter'
  hpc_test_warm_profiles
}

setup() {
  load '../helpers/common'
  # shellcheck source=tests/helpers/submitter.bash
  source "$BATS_TEST_DIRNAME/../helpers/submitter.bash"
  hpc_test_submitter_project "$(hpc_test_tmp)/cache" "$(hpc_test_tmp)/scratch"
}

# submit ARGS...: runs the submitter (stdin not a terminal), stdout and stderr apart.
submit() {
  run --separate-stderr bash "$submitter" "$@" </dev/null
}

# sif PATH: makes a real SIF image at PATH (skips the test without siftool).
sif() {
  command -v siftool >/dev/null || skip "no siftool to make an image"
  bash "$HPC_ROOT/tests/fixtures/apptainer/make_sif.sh" "$1" >/dev/null
}

@test "each runner module defines the runner interface, and nothing else under its prefix: check, plan, prepare, preview (submission), folders, python, node_work, node_setup (the job), here (gather --here), enter, wrap (each task)" {
  local file name defined
  for file in "$HPC_ROOT"/hpc_files/lib/runners/*.bash; do
    name=${file##*/}
    name=${name%.bash}
    defined=$(
      # shellcheck source=/dev/null
      source "$file"
      compgen -A function "hpc_runner_${name}_" | sed "s/^hpc_runner_${name}_//" | sort | tr '\n' ' '
    )
    assert_equal "$name: $defined" "$name: check enter folders here node_setup node_work plan prepare preview python wrap "
  done
}

@test "a container submission's dry run puts no venv in the plan and announces no venv build: a container job needs none" {
  sif "$tmp/app.sif"
  [ ! -e "$project/virtual_env" ]
  submit --dry-run -g 0 -s "$tmp/app.sif"
  assert_equal "$status" 0
  refute_output --partial "would be built first"
  assert_line "hpc_plan_venv=''"
  assert_line "hpc_plan_runner=singularity"
  # A venv submission's dry run still says it.
  submit --dry-run -g 0
  assert_equal "$status" 0
  assert_line "The virtual environment $project/virtual_env would be built first by an install job."
}

@test "a container submission submits no install job and makes no venv, even without one; its plan names the image" {
  sif "$tmp/app.sif"
  submit -y -g 0 -s "$tmp/app.sif" -e boxed
  assert_equal "$status" 0
  [ ! -e "$project/virtual_env" ]
  [ ! -e "$project/.virtual_env_builds" ]
  # One sbatch: the job's.
  [ -e "$stub_log/sbatch.1.args" ] && [ ! -e "$stub_log/sbatch.2.args" ]
  grep -qxF "hpc_plan_image=$(printf %q "$tmp/app.sif")" "$SCRATCH/my project/hpc_outputs/"boxed_singularity-none_*.plan
}

@test "a runner's check refuses its own options with one line and exit 2, before anything is made: --workdir for the venv, the image for the container" {
  submit -y -g 0 --workdir /
  assert_equal "$status" 2
  assert_equal "$stderr" "job_submitter.sh: --workdir: '/' is the root folder; accepted: a folder of your own, absolute or relative to the current folder"
  submit -y -g 0 -s "$tmp/missing.sif"
  assert_equal "$status" 2
  assert_equal "$stderr" "job_submitter.sh: -s/--singularity-container: '$tmp/missing.sif': no such file"
  [ ! -e "$SCRATCH/my project" ]
  [ ! -e "$stub_log/sbatch.1.args" ]
}

@test "a runner is one file: a copy of venv.bash under a new name is chosen by --runner, listed by --help, and submits a job of its own kind; no code outside runners/ names a runner" {
  local dir=$project/hpc_files/lib/runners outputs="$SCRATCH/my project/hpc_outputs"
  sed 's/hpc_runner_venv_/hpc_runner_mine_/g' "$dir/venv.bash" >"$dir/mine.bash"
  run --separate-stderr bash "$submitter" --help </dev/null
  assert_success
  [[ $output == *"--runner NAME"*"accepted: mine, singularity, venv"* ]] || fail "--help: $(grep -n -A3 -- '--runner' <<<"$output")"
  hpc_test_venv_built "$project"
  submit -y -g 0 --runner mine -e mine
  assert_success
  local plan
  plan=$(printf '%s\n' "$outputs"/mine_mine-none_*.plan)
  [[ -f $plan ]] || fail "no plan of kind mine-none: $(ls "$outputs")"
  grep -qx "hpc_plan_runner=mine" "$plan" || fail "plan: $(grep runner "$plan")"
  [[ -f $outputs/mine_mine-none_4242.sh ]] || fail "no kept job script: $(ls "$outputs")"
  submit -g 0 --runner nosuch -e mine --dry-run
  assert_equal "$status" 2
  assert_equal "$stderr" "job_submitter.sh: --runner: 'nosuch' is not accepted; accepted: mine, singularity, venv"
  # The runner's name is compared nowhere else: everything that depends on it is a function of its module.
  local pattern='hpc_plan_runner[}"]* *(==|!=)|runner *(==|!=) *.?(venv|singularity)|[$]kind == venv'
  run grep -rnE "$pattern" "$HPC_ROOT/hpc_files" "$HPC_ROOT/plai_cleanups" --include=*.bash --include=*.sh
  assert_output ''
}

@test "a runner file that lacks functions (a copy cut short): --runner refuses it with exit 2 and one line naming what is missing, nothing made" {
  local dir=$project/hpc_files/lib/runners
  sed '/^hpc_runner_venv_enter()/,$d' "$dir/venv.bash" | sed 's/hpc_runner_venv_/hpc_runner_short_/g' >"$dir/short.bash"
  submit -g 0 --runner short -e short
  assert_equal "$status" 2
  assert_equal "$stderr" "job_submitter.sh: --runner: runner 'short' ($dir/short.bash) lacks hpc_runner_short_enter hpc_runner_short_wrap; it must define hpc_runner_short_{check,plan,prepare,preview,folders,python,node_work,node_setup,here,enter,wrap} (docs/architecture.md)"
  [[ ! -e $SCRATCH/my\ project/hpc_outputs ]] || fail "made: $(ls "$SCRATCH/my project/hpc_outputs")"
}

@test "--runner singularity without its image, or --runner beside -s: exit 2, one line naming --runner, nothing made" {
  submit -g 0 --runner singularity -e img
  assert_equal "$status" 2
  assert_equal "$stderr" "job_submitter.sh: --runner: 'singularity' runs an image; accepted: -s/--singularity-container IMAGE.sif"
  submit -g 0 --runner venv -s "$BATS_TEST_TMPDIR/app.sif" -e img
  assert_equal "$status" 2
  assert_equal "$stderr" "job_submitter.sh: --runner: -s/--singularity-container chooses the container's runner; accepted: one of the two"
  [[ ! -e $SCRATCH/my\ project/hpc_outputs ]] || fail "made: $(ls "$SCRATCH/my project/hpc_outputs")"
}
