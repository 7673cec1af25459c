#!/usr/bin/env bats
# Attacks on issue 36's private folders from the folder above them: on a lab's group-writable
# scratch (umask 002) the project's folder ${SCRATCH}/<project>, which the toolkit makes, held the
# private hpc_outputs/ and the data's archive cache .staging/ in a folder the other member of the
# group could write. They could move hpc_outputs/ away and put their own folder in its place
# (SLURM opens a pending job's --output there when the job starts: a link named like it writes
# the log into any file of the user), or replace the archive a job stages (.staging/ itself, and
# the archive in it, were group-writable). A real second Unix user (tests/helpers/mate.bash);
# the PATH stubs of tests/fixtures/submitter/bin.
# shellcheck disable=SC2016 # bash -c scripts in single quotes get their values as arguments, on purpose

bats_require_minimum_version 1.5.0

setup_file() {
  load '../helpers/common'
  load '../helpers/submitter'
  hpc_test_warm_profiles
}

setup() {
  load '../helpers/common'
  load '../helpers/mate'
  # shellcheck source=tests/helpers/submitter.bash
  source "$BATS_TEST_DIRNAME/../helpers/submitter.bash"
  # The shared folder: outside bats' own temporary folders (0700), so that the other member can
  # reach it, as on a cluster's /project/<group>.
  lab=$(mktemp -d "/tmp/hpc lab.XXXXXX")
  chmod 755 "$lab"
  hpc_test_submitter_project "$(hpc_test_tmp)/cache" "$lab/scratch"
  base="$SCRATCH/my project"
  outputs="$base/hpc_outputs"
  hpc_test_venv_built "$project"
  printf 'precious\n' >"$lab/victim.txt"
}

teardown() {
  rm -rf -- "${lab:?}"
}

# submit ARGS...: runs the submitter with umask 002 (a lab's shared folder), stdout and stderr apart.
submit() {
  run --separate-stderr bash -c 'umask 002 && exec bash "$@" </dev/null' _ "$submitter" "$@"
}

@test "umask 002: the other member cannot move the user's hpc_outputs/ away and put their own, with a link named like the pending job's output, in its place" {
  mate_ready
  submit -y -g 0 -e one
  assert_success
  run as_mate 'mv -- "$1" "$1.old" && mkdir -- "$1" && ln -s -- "$2" "$1/one_venv-none_4243.out"' _ \
    "$outputs" "$lab/victim.txt"
  assert_failure
  [[ ! -L $outputs/one_venv-none_4243.out ]] || fail "planted"
  [[ -O $outputs ]] || fail "hpc_outputs/ is not the user's"
}

@test "umask 002: --data's archive cache is the user's alone: the other member can neither rewrite the archive a job stages nor point its link at their own" {
  mate_ready
  mkdir -p "$base/local"
  printf 'mine\n' >"$base/local/a.txt"
  submit -y -g 0 -e one --data local
  assert_success
  local link
  link=$(find "$base/.staging" -maxdepth 1 -type l -name '????????????????')
  [[ -n $link ]] || fail "no archive link in $base/.staging"
  run as_mate ': >>"$1/data.tar"' _ "$link"
  assert_failure
  run as_mate 'mkdir -p -- "$2" && ln -sfn -- "$2" "$1"' _ "$link" "$base/.staging/${link##*/}.v9"
  assert_failure
  run as_mate 'mv -- "$1" "$1.old" && mkdir -- "$1"' _ "$base/.staging"
  assert_failure
}

@test "resubmit: a command's variables named like the toolkit's own locals (name, sbatch) reach the job with the values they had at submission" {
  unset name sbatch EPOCHS
  mkdir -p "$lab/bin"
  cat >"$lab/bin/sbatch" <<EOT
#!/usr/bin/env bash
n=1
while [[ -e "\$HPC_STUB_LOG/sbatch.\$n.args" ]]; do n=\$((n + 1)); done
printf '%s|%s|%s\n' "\${name-(unset)}" "\${sbatch-(unset)}" "\${EPOCHS-(unset)}" >"\$HPC_STUB_LOG/sbatch.\$n.env"
exec "$fixtures/bin/sbatch" "\$@"
EOT
  chmod +x "$lab/bin/sbatch"
  # shellcheck disable=SC2016 # for the job to expand
  printf '%s\n' 'python train.py --run ${name} --tag ${sbatch} --epochs ${EPOCHS}' \
    >"$project/hpc_files/experiment_configurations.txt"
  PATH=$lab/bin:$PATH name=myrun sbatch=mytag EPOCHS=12 submit -y -g 0 -e ep
  assert_success
  assert_equal "$(cat "$stub_log/sbatch.1.env")" "myrun|mytag|12"
  PATH=$lab/bin:$PATH submit resubmit ep
  assert_success
  assert_equal "$(cat "$stub_log/sbatch.2.env")" "myrun|mytag|12"
  assert_equal "$stderr" "job_submitter.sh: note: EPOCHS is not set in this shell; the job gets the value it had at submission, '12'
job_submitter.sh: note: name is not set in this shell; the job gets the value it had at submission, 'myrun'
job_submitter.sh: note: sbatch is not set in this shell; the job gets the value it had at submission, 'mytag'"
  # Unset at submission, set in the resubmitting shell: unset for the job, as then.
  PATH=$lab/bin:$PATH EPOCHS=7 submit -y -g 0 -e other
  assert_success
  assert_equal "$(cat "$stub_log/sbatch.3.env")" "(unset)|(unset)|7"
  PATH=$lab/bin:$PATH name=late sbatch=late EPOCHS=7 submit resubmit other
  assert_success
  assert_equal "$(cat "$stub_log/sbatch.4.env")" "(unset)|(unset)|7"
}

@test "logs: a secret that the program printed with a colour code inside it is masked, not joined again once the colour is left out" {
  submit -y -g 0 -e col
  assert_success
  printf 'key s3cr3t\033[1m-value\033[0m-123 done\n' >"$outputs/col_venv-none_4242.out"
  : >"$lab/jobs"
  HPC_TEST_SECRET_TOKEN=s3cr3t-value-123 run --separate-stderr env \
    PATH="$HPC_ROOT/tests/fixtures/manage/bin:$PATH" HPC_STUB_JOBS="$lab/jobs" HPC_STUB_SACCT=fail \
    timeout "$HPC_TEST_HANG_S" bash "$submitter" logs col
  assert_success
  assert_output "key (masked) done"
}

@test "the project's folder in SCRATCH made in advance by the other member, open to the group: refused with one line naming it and its owner, nothing submitted" {
  mate_ready
  as_mate 'umask 002 && mkdir -- "$1"' _ "$base"
  submit -y -g 0 -e one
  assert_equal "$status" 1
  assert_equal "$stderr" "job_submitter.sh: $base, which holds hpc_outputs/, belongs to hpc_mate and others can change it: they could put a folder of their own in its place; use a folder of your own (another SCRATCH or project folder name), or ask hpc_mate to run chmod go-w on it; nothing was submitted"
  [[ ! -e $stub_log/sbatch.1.args ]] || fail "sbatch was called"
  [[ ! -e $outputs ]] || fail "hpc_outputs/ was made"
}

@test "the helpers' venv in HPC_CACHE_DIR (where python3 has no PyYAML) runs only when the user's alone: one the group can write into (umask 002) is not run, and said" {
  mate_ready
  hpc_files_dir=$HPC_ROOT/hpc_files hpc_python_helpers_dir=$HPC_ROOT/python_helpers hpc_program=job_submitter.sh
  # shellcheck source=hpc_files/lib/hpc_common.bash
  source "$hpc_files_dir/lib/hpc_common.bash"
  # shellcheck source=hpc_files/lib/hpc_profile.bash
  source "$hpc_files_dir/lib/hpc_profile.bash"
  local real venv=$SCRATCH/cache/helpers-venv ran=$lab/planted-code-ran site
  real=$(command -v python3)
  "$real" -c 'import yaml' || skip "no PyYAML for python3"
  # As an earlier version made it under umask 002, with PyYAML (here: the system's).
  (umask 002 && "$real" -m venv --without-pip --system-site-packages "$venv")
  site=$("$venv/bin/python" -c 'import site; print(site.getsitepackages()[0])')
  # The other member plants a .pth file, which Python runs at its start.
  as_mate 'printf "import os; open(%s, \"w\")\n" "$2" >"$1/zz_planted.pth"' _ "$site" "'$ran'"
  # A python3 without PyYAML, as on many login nodes.
  mkdir -p "$lab/bin"
  printf '#!/bin/sh\nexec %q -S "$@"\n' "$real" >"$lab/bin/python3"
  chmod +x "$lab/bin/python3"
  PATH=$lab/bin:$PATH HPC_CACHE_DIR=$SCRATCH/cache run --separate-stderr hpc_python_for_helpers
  assert_failure
  [[ ! -e $ran ]] || fail "the other member's code ran"
  assert_equal "$stderr" "job_submitter.sh: $venv (the toolkit's Python for its helpers) is not yours alone, or a link: not run (others could change what it runs); remove it (it is made again, private), or install PyYAML for python3 or set HPC_PYTHON"
}

@test "umask 002: the experiment's checkpoints folder is not the group's to write: the other member can plant neither a checkpoint nor a link named like one" {
  mate_ready
  submit -y -g 0 -e one
  assert_success
  run as_mate 'ln -s -- "$2" "$1/last.ckpt"' _ "$base/one/checkpoints" "$lab/victim.txt"
  assert_failure
  run as_mate 'printf planted >"$1/last.ckpt"' _ "$base/one/checkpoints"
  assert_failure
  run as_mate 'mv -- "$1" "$1.old"' _ "$base/one/checkpoints"
  assert_failure
  [[ ! -e $base/one/checkpoints/last.ckpt ]] || fail "planted"
}
