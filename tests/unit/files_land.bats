#!/usr/bin/env bats
# Where a job's files land, without SLURM: --workdir of venv jobs at submission (resolved,
# made, removed again when sbatch refuses), the program's paths resolved against the project
# when it starts elsewhere, and each job's (each array task's) own checkpoints_dir, WANDB_DIR
# and working folder, in the venv and in containers. The submitter runs against the PATH stubs
# of tests/fixtures/submitter/bin, as in job_submitter.bats.
# Set by hpc_job.bash, whose source shellcheck does not follow here; declared for shellcheck.
declare -g hpc_job_python_module

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
  hpc_test_submitter_project "$BATS_TEST_TMPDIR/cache" "$(hpc_test_tmp)/scratch"
  printf 'python train.py --out snapshot.pt\n' >"$project/hpc_files/experiment_configurations.txt"
  outputs="$SCRATCH/my project/hpc_outputs"
  # A venv the submitter considers built.
  hpc_test_venv_built "$project"
}

# submit ARGS...: runs the submitter (stdin not a terminal), stdout and stderr apart.
submit() {
  run --separate-stderr bash "$submitter" "$@" </dev/null
}

# shape DIR: everything under DIR with its type and mode, without times (making and removing a
# folder changes its parent's).
shape() {
  find "$1" -printf '%P|%y|%m|%l\n' | LC_ALL=C sort
}

# kept_plan EXP: the plan file the submission of experiment EXP wrote beside its output.
kept_plan() {
  local plans=("$outputs/$1"_*.plan)
  [[ -f ${plans[0]} ]] || fail "no plan file of $1 in $outputs"
  cat "${plans[0]}"
}

@test "--workdir without -s: relative to the current folder, '..' as cd reads it; its plan names it; the submission makes it" {
  mkdir -p "$tmp/here/sub"
  cd "$tmp/here/sub"
  submit -y -g 0 -e one --workdir ../runs/./one/
  assert_equal "$status" 0
  [ -d "$tmp/here/runs/one" ]
  run kept_plan one
  assert_line "hpc_plan_workdir=$(printf '%q' "$tmp/here/runs/one")"
  # Absolute, and an existing folder (a symlink to one) is taken as it is.
  ln -s "$tmp/here/runs" "$tmp/link"
  submit -y -g 0 -e two --workdir "$tmp/link/one"
  assert_equal "$status" 0
  run kept_plan two
  assert_line "hpc_plan_workdir=$(printf '%q' "$tmp/link/one")"
  [[ -L $tmp/link ]]
  # Without --workdir the plan's is empty: the program starts in the project.
  submit -y -g 0 -e three
  assert_equal "$status" 0
  run kept_plan three
  assert_line "hpc_plan_workdir=''"
}

@test "--workdir: sbatch refusing the job removes the folders this submission made for it, never one that was there" {
  mkdir -p "$tmp/runs"
  printf 'mine\n' >"$tmp/runs/keep.txt"
  local before
  before=$(shape "$tmp/runs")$(shape "$SCRATCH")
  HPC_STUB_SBATCH=refuse submit -y -g 0 -e fresh --workdir "$tmp/runs/a/b"
  assert_equal "$status" 1
  assert_equal "$(shape "$tmp/runs")$(shape "$SCRATCH")" "$before"
  # An existing working folder stays, with what it holds.
  mkdir -p "$tmp/runs/there"
  before=$(shape "$tmp/runs")$(shape "$SCRATCH")
  HPC_STUB_SBATCH=refuse submit -y -g 0 -e fresh --workdir "$tmp/runs/there"
  assert_equal "$status" 1
  assert_equal "$(shape "$tmp/runs")$(shape "$SCRATCH")" "$before"
}

# shellcheck disable=SC2016 # configs lines and the lines naming them are single-quoted on purpose
@test "--dry-run with --workdir makes nothing, says the working folder would be made, and shows where files land" {
  local before
  before=$(shape "$tmp")
  submit --dry-run -g 0 -e exp --workdir "$tmp/runs/exp"
  assert_equal "$status" 0
  assert_equal "$(shape "$tmp")" "$before"
  assert_line "The working folder $tmp/runs/exp would be made."
  assert_line "checkpoints_dir=$SCRATCH/my project/exp/checkpoints"
  assert_line "WANDB_DIR=$SCRATCH/my project/exp"
  assert_line "working folder: $tmp/runs/exp (HPC_WORKDIR)"
  # Arrays: each task its own; a WANDB_DIR of the submitting shell is the job's.
  WANDB_DIR=/mine submit --dry-run -g 0 -e rep --repeat 2 --workdir "$tmp/runs/rep"
  assert_equal "$status" 0
  assert_line "checkpoints_dir=$SCRATCH/my project/rep/checkpoints/task_0 (task 0) ... $SCRATCH/my project/rep/checkpoints/task_1 (task 1)"
  assert_line "WANDB_DIR=/mine (from this shell)"
  assert_line "working folder: $tmp/runs/rep/task_N (HPC_WORKDIR)"
  submit --dry-run -g 0 -e plain
  assert_line "working folder: $project (the project)"
  assert_line "WANDB_DIR=$SCRATCH/my project/plain"
  # The configs file may name them: defined by the job (HPC_WORKDIR only with --workdir).
  printf 'python train.py --ckpt ${checkpoints_dir} --wandb ${WANDB_DIR} --in ${HPC_WORKDIR}\n' >"$project/hpc_files/experiment_configurations.txt"
  submit --dry-run -g 0 -e plain
  assert_line 'configs file uses $checkpoints_dir: defined by the job'
  assert_line 'configs file uses $WANDB_DIR: defined by the job'
  assert_line 'configs file uses $HPC_WORKDIR: NOT DEFINED: the job will fail before the program starts'
  submit --dry-run -g 0 -e plain --workdir "$tmp/w"
  assert_line 'configs file uses $HPC_WORKDIR: defined by the job'
}

@test "with -s, --workdir keeps its meaning: the container's folder, checked as before; no host folder is made" {
  command -v siftool >/dev/null || skip "no siftool to make an image"
  bash "$HPC_ROOT/tests/fixtures/apptainer/make_sif.sh" "$tmp/app.sif" >/dev/null
  local before
  before=$(shape "$tmp")
  submit -y -g 0 -e boxed -s "$tmp/app.sif" --workdir /code
  assert_equal "$status" 0
  run kept_plan boxed
  assert_line "hpc_plan_container_workdir=/code"
  assert_line "hpc_plan_workdir=''"
  [ ! -e /code ]
  submit -y -g 0 -s "$tmp/app.sif" --workdir code
  assert_equal "$status" 2
  assert_equal "$stderr" "job_submitter.sh: --workdir: 'code': not an absolute path: give the folder inside the container, e.g. /code"
}

@test "hpc_job_resolve_program: the program and python's script are the project's; arguments stay the working folder's" {
  # shellcheck source=/dev/null # hpc_job.bash is linted on its own (tests/run.sh)
  source "$HPC_ROOT/hpc_files/lib/hpc_job.bash"
  local src='/p/my project' case want
  while IFS='|' read -r case want; do
    [[ -n $case ]] || continue
    eval "hpc_configs_argv=($case)"
    hpc_job_resolve_program "$src"
    assert_equal "$case -> $(printf '[%s]' "${hpc_configs_argv[@]}") module=$hpc_job_python_module" "$case -> $want"
  done <<'EOT'
python train.py --out snapshot.pt|[python][/p/my project/train.py][--out][snapshot.pt] module=0
python3.11 -u -B -W ignore -X dev sub/train.py a|[python3.11][-u][-B][-W][ignore][-X][dev][/p/my project/sub/train.py][a] module=0
python -Wignore -uX dev train.py|[python][-Wignore][-uX][dev][/p/my project/train.py] module=0
/usr/bin/python3 --check-hash-based-pycs never -- t.py|[/usr/bin/python3][--check-hash-based-pycs][never][--][/p/my project/t.py] module=0
python /abs/train.py x.py|[python][/abs/train.py][x.py] module=0
python -c 'print(1)' x.py|[python][-c][print(1)][x.py] module=0
python -uc 'print(1)'|[python][-uc][print(1)] module=0
python -m pkg.train data.txt|[python][-m][pkg.train][data.txt] module=1
python - x.py|[python][-][x.py] module=0
python|[python] module=0
./run.sh data.txt|[/p/my project/./run.sh][data.txt] module=0
scripts/train.sh|[/p/my project/scripts/train.sh] module=0
bash run.sh|[bash][run.sh] module=0
wandb agent me/p/x|[wandb][agent][me/p/x] module=0
EOT
}

# shellcheck disable=SC2030,SC2031 # each case runs in its own subshell: what it exports stays there, on purpose
@test "hpc_job_own_folders: checkpoints_dir, WANDB_DIR and the working folder, each array task its own; the user's WANDB_DIR kept" {
  # shellcheck source=/dev/null # hpc_job.bash is linted on its own (tests/run.sh)
  source "$HPC_ROOT/hpc_files/lib/hpc_job.bash"
  export SLURM_JOB_ID=77 SLURMD_NODENAME=n1
  scratch_dir="$tmp/scratch/my project" exp_name=exp hpc_plan_runner=venv
  # The job loads the plan's runner, whose rule WANDB_DIR is.
  hpc_job_runner_load
  mkdir -p "$tmp/work"
  (
    hpc_plan_mode=single hpc_plan_workdir=$tmp/work
    hpc_job_own_folders
    assert_equal "$checkpoints_dir|$WANDB_DIR|$HPC_WORKDIR" "$scratch_dir/exp/checkpoints|$scratch_dir/exp|$tmp/work"
    [[ -d $checkpoints_dir && -d $WANDB_DIR ]]
  )
  for mode in repeat offline sweep; do
    (
      export SLURM_ARRAY_TASK_ID=2
      hpc_plan_mode=$mode hpc_plan_workdir=$tmp/work
      hpc_job_own_folders
      assert_equal "$mode: $checkpoints_dir|$WANDB_DIR|$HPC_WORKDIR" \
        "$mode: $scratch_dir/exp/checkpoints/task_2|$scratch_dir/exp/task_2|$tmp/work/task_2"
      [[ -d $checkpoints_dir && -d $WANDB_DIR && -d $HPC_WORKDIR ]]
    )
  done
  (
    # A WANDB_DIR of the submitting shell is kept; an HPC_WORKDIR of it is not the job's.
    export WANDB_DIR=/users/own HPC_WORKDIR=/elsewhere
    hpc_plan_mode=single hpc_plan_workdir=''
    run hpc_job_own_folders
    assert_output "[hpc n1] WANDB_DIR=/users/own from the submitting shell is kept"
    hpc_job_own_folders 2>/dev/null
    assert_equal "$WANDB_DIR|${HPC_WORKDIR:-none}" "/users/own|none"
  )
  (
    # shellcheck disable=SC2034 # read by hpc_job.bash
    hpc_plan_mode=single hpc_plan_runner=singularity
    hpc_job_runner_load
    hpc_job_own_folders
    assert_equal "$WANDB_DIR" /scratch_storage
  )
  # A working folder removed after the submission fails the job, naming it.
  (
    # shellcheck disable=SC2034 # read by hpc_job.bash
    hpc_plan_mode=single hpc_plan_workdir=$tmp/gone
    run hpc_job_own_folders
    assert_equal "$status" 1
    assert_output "[hpc n1] FAILED at step 'workdir': the working folder $tmp/gone (--workdir) is missing"
    [ ! -e "$tmp/gone" ]
  )
}

# shellcheck disable=SC2031,SC2154,SC2016 # the runner exports APPTAINERENV_*; the template is single-quoted on purpose
@test "containers: checkpoints_dir is bound at /checkpoints and is what the program and the configs file see" {
  # shellcheck source=hpc_files/lib/hpc_common.bash
  source "$HPC_ROOT/hpc_files/lib/hpc_common.bash"
  # shellcheck source=hpc_files/lib/hpc_configs.bash
  source "$HPC_ROOT/hpc_files/lib/hpc_configs.bash"
  # shellcheck source=singularity_hpc_files/container_runner.bash
  source "$HPC_ROOT/singularity_hpc_files/container_runner.bash"
  local node="$tmp/node" scratch="$tmp/scratch/my project" hpc_program=job_submitter.sh
  mkdir -p "$node" "$scratch/exp/checkpoints/task_1"
  : >"$node/image.sif"
  export SLURM_JOB_ID=77 HOME=$tmp/home checkpoints_dir="$scratch/exp/checkpoints/task_1"
  hpc_container_argv apptainer "$node" "$scratch" exp /code python train.py
  local joined
  printf -v joined '%s\n' "${hpc_container_cmd[@]}"
  [[ $joined == *$'--bind\n'"$scratch/exp/checkpoints/task_1:/checkpoints"$'\n'* ]] || fail "no /checkpoints bind: $joined"
  hpc_container_export_job_env /code
  assert_equal "$APPTAINERENV_checkpoints_dir|$SINGULARITYENV_checkpoints_dir" "/checkpoints|/checkpoints"
  hpc_container_expand /code python train.py --ckpt '${checkpoints_dir}/last.pt' '$HPC_WORKDIR'
  assert_equal "${hpc_configs_argv[3]}|${hpc_configs_argv[4]}" "/checkpoints/last.pt|/code"
  assert_equal "$checkpoints_dir" "$scratch/exp/checkpoints/task_1"
  # /checkpoints is the runner's: not a workdir.
  run hpc_container_check_workdir /checkpoints/x
  assert_equal "$status" 2
  assert_output "job_submitter.sh: --workdir: '/checkpoints/x': /checkpoints is bound by the job itself: use a folder of its own, e.g. /code"
}
