#!/usr/bin/env bats
# job_submitter.sh's virtual environment and its install job, without SLURM (split from
# job_submitter.bats, whose header says how: a project installed with install.sh in a folder
# whose path has a space, PATH stubs of SLURM in tests/fixtures/submitter/bin). The sbatch stub
# runs the real install_venv.sh with the fake Pythons of tests/fixtures/submitter/install_bin.
# Its rebuilds and what they remove: job_submitter_rebuild.bats.

bats_require_minimum_version 1.5.0

setup_file() {
  load '../helpers/common'
  load '../helpers/submitter'
  hpc_test_warm_profiles
}

setup() {
  load '../helpers/common'
  load '../helpers/stub'
  # shellcheck source=tests/helpers/job_submitter.bash
  source "$BATS_TEST_DIRNAME/../helpers/job_submitter.bash"
  unset name
  hpc_test_submitter_setup scratch
}

# profile_load HPC_FILES NAME: loads cluster profile NAME of the toolkit in the folder HPC_FILES
# (the repository's or an installed one) into hpc_profile_*, as the submitter does: compiled into
# HPC_CACHE_DIR when it is not there yet. Sources the toolkit's libraries: call it in a subshell.
profile_load() {
  local hpc_files_dir=$1
  # shellcheck source=hpc_files/lib/hpc_common.bash
  source "$hpc_files_dir/lib/hpc_common.bash"
  hpc_facts_locate "$hpc_files_dir"
  # shellcheck source=hpc_files/lib/hpc_profile.bash
  source "$hpc_files_dir/lib/hpc_profile.bash"
  hpc_profile_load "$2"
}

# ---------------------------------------------------------------------------------------------
# The virtual environment's install job (the stub runs the real install_venv.sh with fake Pythons)

# seconds_as_n: stdin with the elapsed times of the install job's progress, "(3 s)", as "(N s)".
seconds_as_n() {
  sed -E 's/\([0-9]+ s\)$/(N s)/'
}

# install_job_options: the sbatch options the install job of the local profile must get.
install_job_options() {
  printf '%s\n' --parsable --job-name="my project-venv-install" --nodes=1 --ntasks=1 \
    --cpus-per-task=1 --mem=2G --time=00-01:00:00 --output="$outputs/venv_install_%j.out" \
    --chdir="$project" --partition=debug
}

# install_script_index: sets k to the index in argv of the install job's script.
install_script_index() {
  for ((k = 0; k < ${#argv[@]}; k++)); do
    [[ ${argv[k]} == -* ]] || return 0
  done
  fail "no script in the sbatch call: ${argv[*]}"
}

# profile_value NAME KEY: hpc_profile_KEY of the project's cluster profile NAME.
profile_value() {
  (
    profile_load "$project/hpc_files" "$1"
    var=hpc_profile_$2
    printf '%s\n' "${!var}"
  )
}

@test "no venv and no dependency file: an install job is submitted and waited for, then the job" {
  submit -y
  assert_equal "$status" 0
  # Said as what it is: with the system's packages (the local profile's choice), not "empty".
  local empty="will be empty (the cluster profile keeps the system's packages out of it)"
  [[ $(profile_value local venv_system_site_packages) != true ]] ||
    empty="gets no packages of its own; it sees the system's (torch included where the cluster has it), as the cluster profile says"
  assert_equal "$(seconds_as_n <<<"$stderr")" "job_submitter.sh: no Pipfile or requirements.txt in $project: the virtual environment $empty
job_submitter.sh: install job 4242 submitted; its log: $outputs/venv_install_4242.out
job_submitter.sh: install job 4242: the virtual environment is ready (N s)"
  assert_line --index 0 --partial "Submitted job 4243 ("
  assert_equal "$(calls sbatch)" 2
  argv_of sbatch 1
  install_script_index
  assert_equal "$(printf '%s\n' "${argv[@]:0:k}")" "$(install_job_options)"
  assert_equal "${argv[k]}" "$project/hpc_files/virtual_env_hpc_files/install_venv.sh"
  # The install job ran: an empty venv, with or without the system's packages as the profile says.
  grep -qxF "[hpc node1] venv: ready: $project/.virtual_env_builds/venv-4242" "$outputs/venv_install_4242.out"
  argv_of venv-python 2
  if [[ $(profile_value local venv_system_site_packages) == true ]]; then
    assert_equal "${argv[*]}" "-m venv --system-site-packages $project/.virtual_env_builds/venv-4242"
  else
    assert_equal "${argv[*]}" "-m venv $project/.virtual_env_builds/venv-4242"
  fi
  assert_equal "$(calls venv-python)" 2
  # Waited for with squeue, which no longer lists it.
  assert_equal "$(calls squeue)" 1
  argv_of squeue 1
  assert_equal "${argv[*]}" "-h -j 4242 -o %T"
  argv_of sbatch 2
  assert_equal "${argv[0]}" --parsable
  [[ -f $outputs/default_venv-none_4243.sh ]]
}

# venv_cfg SYSTEM_SITE HOME VERSION: the venv's pyvenv.cfg as python3 -m venv writes it.
venv_cfg() {
  printf 'home = %s\ninclude-system-site-packages = %s\nversion = %s\n' "$2" "$1" "$3" >"$project/virtual_env/pyvenv.cfg"
}

@test "a venv is built again when the profile's system-packages choice or its Python changed (pyvenv.cfg), not otherwise" {
  local home=$BATS_TEST_TMPDIR/pyhome
  mkdir -p "$home"
  : >"$home/python3.11"
  chmod +x "$home/python3.11"
  # Built as the local profile wants (the system's packages), with a Python that is there: reused.
  make_ready_venv
  venv_cfg true "$home" 3.11.4
  submit -y
  assert_equal "$status" 0
  assert_equal "$stderr" ""
  assert_equal "$(calls sbatch)" 1
  # Built without the system's packages (as under the generic profile): built again.
  venv_cfg false "$home" 3.11.4
  forget_calls
  HPC_STUB_JOB_ID=4300 submit -y
  assert_equal "$status" 0
  assert_equal "${stderr_lines[0]}" "job_submitter.sh: $project/virtual_env was built without the system's packages, which the cluster profile wants: building it again"
  assert_equal "$(calls sbatch)" 2
  argv_of venv-python 2
  assert_equal "${argv[*]}" "-m venv --system-site-packages $project/.virtual_env_builds/venv-4300"
  # Its Python is gone from where it was (upgraded in place): built again.
  rm -rf "$project/virtual_env" "$project/.virtual_env_builds"
  make_ready_venv
  venv_cfg true "$home" 3.10.2
  forget_calls
  HPC_STUB_JOB_ID=4400 submit -y
  assert_equal "$status" 0
  assert_equal "${stderr_lines[0]}" "job_submitter.sh: the Python $project/virtual_env was built with ($home/python3.10) is gone: building it again"
  assert_equal "$(calls sbatch)" 2
}

@test "a venv is built from requirements.txt once, reused, and rebuilt when it changes; Pipfile wins" {
  printf 'numpy\n' >"$project/requirements.txt"
  HPC_STUB_SQUEUE_STATES=PENDING submit -y
  assert_equal "$status" 0
  assert_equal "$(seconds_as_n <<<"$stderr")" "job_submitter.sh: no virtual environment yet: building $project/virtual_env from requirements.txt
job_submitter.sh: install job 4242 submitted; its log: $outputs/venv_install_4242.out
job_submitter.sh: install job 4242: PENDING (N s)
job_submitter.sh: install job 4242: the virtual environment is ready (N s)"
  assert_equal "$(calls squeue)" 2
  argv_of venv-python 3
  assert_equal "${argv[*]}" "-m pip install -r $project/requirements.txt"
  assert_equal "$(<"$project/virtual_env/.hpc_deps")" "$(venv_stamp)"

  # Built: reused.
  forget_calls
  submit -y
  assert_equal "$status" 0
  assert_equal "$stderr" ""
  assert_equal "$(calls sbatch)" 1

  # requirements.txt changed: built again, then the job.
  forget_calls
  printf 'numpy\nscipy\n' >"$project/requirements.txt"
  HPC_STUB_JOB_ID=4300 submit -y
  assert_equal "$status" 0
  assert_equal "${stderr_lines[0]}" "job_submitter.sh: requirements.txt changed since $project/virtual_env was built: building it again"
  assert_line --index 0 --partial "Submitted job 4301 ("
  assert_equal "$(calls sbatch)" 2
  assert_equal "$(<"$project/virtual_env/.hpc_deps")" "$(venv_stamp)"

  # A Pipfile takes precedence over requirements.txt.
  forget_calls
  printf '[packages]\nnumpy = "*"\n' >"$project/Pipfile"
  HPC_STUB_JOB_ID=4400 submit -y
  assert_equal "$status" 0
  assert_equal "${stderr_lines[0]}" "job_submitter.sh: Pipfile changed since $project/virtual_env was built: building it again"
  assert_equal "$(calls pipenv)" 1
  argv_of pipenv 1
  assert_equal "${argv[*]}" "install --system --skip-lock"
  assert_equal "$(calls sbatch)" 2
}

@test "the job names the venv build by its real path: virtual_env a link to a build, a plain folder, the project reached through a link" {
  # Named like the project, so that its outputs land in the same place.
  local link="$tmp/a link/my project" sh
  mkdir -p "$project/.virtual_env_builds/venv-3/bin" "$project/.virtual_env_builds/venv-7/bin"
  for b in 3 7; do
    : >"$project/.virtual_env_builds/venv-$b/bin/activate"
    venv_stamp >"$project/.virtual_env_builds/venv-$b/.hpc_deps"
  done
  ln -s .virtual_env_builds/venv-7 "$project/virtual_env"
  submit -y
  assert_equal "$status" 0
  sh=$(job_plan "$outputs/default_venv-none_4242.sh")
  assert_equal "$(grep '^hpc_plan_venv=' <<<"$sh")" "hpc_plan_venv=$(printf '%q' "$project/.virtual_env_builds/venv-7")"

  # Through a link to the project: the build's physical path, as cd -P says it.
  mkdir -p "${link%/*}"
  ln -s "$project" "$link"
  run --separate-stderr bash "$link/hpc_files/job_submitter.sh" -y </dev/null
  assert_equal "$status" 0
  sh=$(job_plan "$outputs/default_venv-none_4243.sh")
  assert_equal "$(grep '^hpc_plan_venv=' <<<"$sh")" "hpc_plan_venv=$(printf '%q' "$project/.virtual_env_builds/venv-7")"

  # virtual_env links to no build of the project: where it leads.
  mkdir -p "$tmp/elsewhere/bin"
  : >"$tmp/elsewhere/bin/activate"
  venv_stamp >"$tmp/elsewhere/.hpc_deps"
  rm -- "$project/virtual_env"
  ln -s "../elsewhere" "$project/virtual_env"
  submit -y
  assert_equal "$status" 0
  sh=$(job_plan "$outputs/default_venv-none_4244.sh")
  assert_equal "$(grep '^hpc_plan_venv=' <<<"$sh")" "hpc_plan_venv=$(printf '%q' "$tmp/elsewhere")"

  # A plain folder (an older project's venv).
  rm -- "$project/virtual_env"
  make_ready_venv
  submit -y
  assert_equal "$status" 0
  sh=$(job_plan "$outputs/default_venv-none_4245.sh")
  assert_equal "$(grep '^hpc_plan_venv=' <<<"$sh")" "hpc_plan_venv=$(printf '%q' "$project/virtual_env")"
}

@test "a failed install stops with exit 1 and the install log's path; the job is not submitted" {
  printf 'numpy\n' >"$project/requirements.txt"
  HPC_STUB_INSTALL=fail submit -y
  assert_equal "$status" 1
  assert_equal "$output" ""
  assert_equal "${stderr_lines[${#stderr_lines[@]} - 1]}" "job_submitter.sh: the virtual environment's install job 4242 failed; nothing was submitted. Its log: $outputs/venv_install_4242.out"
  assert_equal "$(calls sbatch)" 1
  grep -qF "[hpc node1] venv: FAILED: pip install -r $project/requirements.txt" "$outputs/venv_install_4242.out"
  [[ ! -e $project/virtual_env && ! -L $project/virtual_env ]]
  # What the failed install made is gone.
  assert_equal "$(find "$project/.virtual_env_builds" -mindepth 1)" ""
  assert_equal "$(find "$outputs" -name '*.sh' | wc -l)" 0

  # The next submission tries again.
  forget_calls
  submit -y
  assert_equal "$status" 0
  assert_equal "$(calls sbatch)" 2
}

@test "the install job gets the cluster's account; sbatch refusing it stops the submission" {
  submit -y --cluster cedar
  assert_equal "$status" 0
  argv_of sbatch 1
  has_arg --account=rrg-kevinlb
  install_script_index
  [[ ${argv[k]} == */install_venv.sh ]]

  rm -rf -- "$project/virtual_env" "$project/.virtual_env_builds"
  forget_calls
  HPC_STUB_SBATCH=refuse submit -y
  assert_equal "$status" 1
  assert_equal "${stderr_lines[${#stderr_lines[@]} - 1]}" "job_submitter.sh: sbatch refused the virtual environment's install job"
  assert_equal "$(calls sbatch)" 1
  assert_equal "$(calls squeue)" 0
}

@test "dependency files that end without a newline, with CRLF, empty or only comments: built once, then reused" {
  local content
  for content in '' $'\n' 'numpy' $'numpy\r\nscipy\r\n' $'# the cluster\'s torch\n' $'# only a comment'; do
    rm -rf -- "$project/virtual_env" "$project/.virtual_env_builds"
    printf '%s' "$content" >"$project/requirements.txt"
    forget_calls
    HPC_STUB_JOB_ID=4242 submit -y
    assert_equal "$status" 0
    assert_equal "$(calls sbatch)" 2
    # The stamp holds the file byte for byte.
    cmp -s "$project/virtual_env/.hpc_deps" <(printf 'requirements.txt\n%s' "$content") ||
      fail "stamp of $(printf %q "$content"): $(od -c "$project/virtual_env/.hpc_deps")"
    forget_calls
    HPC_STUB_JOB_ID=5000 submit -y
    assert_equal "$status" 0
    assert_equal "$stderr" ""
    assert_equal "$(calls sbatch)" 1
  done
}

@test "the install job never sources the venv's activate script: a project path with \$(...) runs nothing" {
  local odd="$tmp/p \$(touch pwned)"
  mkdir -p "$odd"
  bash "$HPC_ROOT/hpc_files/install.sh" "$odd" >/dev/null
  printf 'python main.py\n' >"$odd/hpc_files/experiment_configurations.txt"
  printf 'numpy\n' >"$odd/requirements.txt"
  run --separate-stderr bash "$odd/hpc_files/job_submitter.sh" -y </dev/null
  assert_equal "$status" 0
  [[ -z $(find "$tmp" "$BATS_TEST_TMPDIR" -name pwned) ]] || fail "the path ran as code"
  argv_of venv-python 3
  assert_equal "${argv[*]}" "-m pip install -r $odd/requirements.txt"
}
