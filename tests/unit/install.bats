#!/usr/bin/env bats
# hpc_files/install.sh: a self-contained hpc_files/ in a project; templates never overwritten.

setup() {
  load '../helpers/common'
  project="$(hpc_test_tmp)/my project"
}

@test "installs the submitter, its library, profiles, runner and helpers; says what it did" {
  mkdir -p "$project"
  run bash "$HPC_ROOT/hpc_files/install.sh" "$project"
  assert_success
  assert_line "installed the toolkit in $project/hpc_files (job_submitter.sh, lib/, clusters/, virtual_env_hpc_files/, plai_cleanups/, python_helpers/)"
  assert_line "added the template $project/hpc_files/experiment_configurations.txt: edit it"
  for f in job_submitter.sh job_step.sh lib/hpc_job.bash lib/hpc_configs.bash clusters/local.yaml \
    virtual_env_hpc_files/install_venv.sh python_helpers/src/hpc_helpers/__init__.py; do
    [ -f "$project/hpc_files/$f" ] || fail "missing $f"
  done
  run bash "$project/hpc_files/job_submitter.sh" --help
  assert_success
  assert_line --index 0 "Usage: bash job_submitter.sh [options]"
}

@test "a second run updates the toolkit's files and keeps the user's configuration" {
  mkdir -p "$project"
  bash "$HPC_ROOT/hpc_files/install.sh" "$project" >/dev/null
  printf 'python mine.py\n' >"$project/hpc_files/experiment_configurations.txt"
  printf 'stale\n' >"$project/hpc_files/lib/hpc_job.bash"
  run bash "$HPC_ROOT/hpc_files/install.sh" "$project"
  assert_success
  assert_line "kept your $project/hpc_files/experiment_configurations.txt"
  assert_equal "$(cat "$project/hpc_files/experiment_configurations.txt")" "python mine.py"
  cmp "$HPC_ROOT/hpc_files/lib/hpc_job.bash" "$project/hpc_files/lib/hpc_job.bash"
}

@test "bad input: no folder, a missing folder, two words: exit 2, nothing made" {
  run bash "$HPC_ROOT/hpc_files/install.sh"
  assert_equal "$status" 2
  assert_output "install.sh: PROJECT_DIR: missing; usage: bash hpc_files/install.sh PROJECT_DIR"
  run bash "$HPC_ROOT/hpc_files/install.sh" "$project"
  assert_equal "$status" 2
  assert_output "install.sh: PROJECT_DIR: '$project' is not a folder"
  [ ! -e "$project" ]
  mkdir -p "$project"
  run bash "$HPC_ROOT/hpc_files/install.sh" "$project" extra
  assert_equal "$status" 2
  assert_output "install.sh: extra: unexpected word; usage: bash hpc_files/install.sh PROJECT_DIR"
  [ ! -e "$project/hpc_files" ]
}

@test "folders get the mode the umask gives, not mktemp's 0700" {
  mkdir -p "$project"
  for mask in 022 027 002; do
    rm -rf -- "${project:?}/hpc_files"
    (umask "$mask" && bash "$HPC_ROOT/hpc_files/install.sh" "$project" >/dev/null)
    want=$(printf '%o' $((8#777 & ~8#$mask)))
    for dir in lib clusters virtual_env_hpc_files plai_cleanups python_helpers/src; do
      assert_equal "$mask $dir: $(stat -c %a "$project/hpc_files/$dir")" "$mask $dir: $want"
    done
  done
}

@test "the project's .gitignore gets the venv, its builds and the lock files: once, after the user's own lines" {
  local want='# hpc toolkit (hpc_files/install.sh): the virtual environment, its builds and locks
/virtual_env
/.virtual_env_builds/
/.virtual_env.lock
/.virtual_env.use.lock'
  mkdir -p "$project"
  run bash "$HPC_ROOT/hpc_files/install.sh" "$project"
  assert_success
  assert_line "added to $project/.gitignore: /virtual_env /.virtual_env_builds/ /.virtual_env.lock /.virtual_env.use.lock"
  assert_equal "$(<"$project/.gitignore")" "$want"
  # Again: nothing added, nothing duplicated.
  run bash "$HPC_ROOT/hpc_files/install.sh" "$project"
  assert_success
  assert_line "$project/.gitignore already ignores the virtual environment and its locks"
  assert_equal "$(<"$project/.gitignore")" "$want"
  # The user's own lines stay as they were (a last line without a newline too); only what is
  # missing is added, after them.
  printf 'data/\n/virtual_env\n*.ckpt' >"$project/.gitignore"
  run bash "$HPC_ROOT/hpc_files/install.sh" "$project"
  assert_success
  assert_line "added to $project/.gitignore: /.virtual_env_builds/ /.virtual_env.lock /.virtual_env.use.lock"
  assert_equal "$(<"$project/.gitignore")" 'data/
/virtual_env
*.ckpt
# hpc toolkit (hpc_files/install.sh): the virtual environment, its builds and locks
/.virtual_env_builds/
/.virtual_env.lock
/.virtual_env.use.lock'
}

@test "git really ignores the link virtual_env, the builds and the locks; a .gitignore that is a symlink is not written through" {
  mkdir -p "$project/.virtual_env_builds/venv-1"
  ln -s .virtual_env_builds/venv-1 "$project/virtual_env"
  : >"$project/.virtual_env.lock"
  : >"$project/.virtual_env.use.lock"
  : >"$project/main.py"
  bash "$HPC_ROOT/hpc_files/install.sh" "$project" >/dev/null
  git -C "$project" init -q
  run git -C "$project" status --porcelain --untracked-files=all
  assert_success
  refute_line --regexp "^\?\? \.?virtual_env"
  assert_line "?? main.py"
  # A symlinked .gitignore: left alone, and said so.
  local other
  other="$(hpc_test_tmp)/elsewhere"
  printf 'mine\n' >"$other"
  rm -f -- "$project/.gitignore"
  ln -s "$other" "$project/.gitignore"
  run bash "$HPC_ROOT/hpc_files/install.sh" "$project"
  assert_success
  assert_line "not writing $project/.gitignore: it is a symbolic link; add to it yourself: /virtual_env /.virtual_env_builds/ /.virtual_env.lock /.virtual_env.use.lock"
  assert_equal "$(<"$other")" mine
}

@test "a .gitignore that is a FIFO or a folder is not read or written: no hang, said so, the install succeeds" {
  mkdir -p "$project"
  mkfifo "$project/.gitignore"
  run timeout "$HPC_TEST_HANG_S" bash "$HPC_ROOT/hpc_files/install.sh" "$project"
  assert_success
  assert_line "not writing $project/.gitignore: it is not a regular file; add to it yourself: /virtual_env /.virtual_env_builds/ /.virtual_env.lock /.virtual_env.use.lock"
  [ -p "$project/.gitignore" ]
  rm -f -- "$project/.gitignore"
  mkdir "$project/.gitignore"
  run timeout "$HPC_TEST_HANG_S" bash "$HPC_ROOT/hpc_files/install.sh" "$project"
  assert_success
  assert_line "not writing $project/.gitignore: it is not a regular file; add to it yourself: /virtual_env /.virtual_env_builds/ /.virtual_env.lock /.virtual_env.use.lock"
  [ -d "$project/.gitignore" ]
  [ -z "$(ls -A "$project/.gitignore")" ]
}
