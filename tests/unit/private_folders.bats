#!/usr/bin/env bats
# The folders the toolkit makes for a user's job logs and records (hpc_outputs/ and its
# manifests/, submissions/, usage/, map/ and scaling/) are the user's alone (0700, whatever the
# umask), and a folder someone else made is refused with one line naming its owner; what is read
# again from them is read only as the user's own regular file, never through a link, never
# hanging on a FIFO; and 'logs' shows only the user's own log, its control characters made
# visible. On a lab's group-writable scratch (umask 002) with another member of the group, a real
# second Unix user (tests/helpers/mate.bash). Without SLURM: the PATH stubs of
# tests/fixtures/submitter/bin (submissions) and tests/fixtures/manage/bin (status, logs, cancel).
# shellcheck disable=SC2016 # bash -c scripts in single quotes get their values as arguments, on purpose

# Set by hpc_test_user_copy (helpers/common.bash); declared for shellcheck.
declare -g user_copy

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
  outputs="$SCRATCH/my project/hpc_outputs"
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

# manage ARGS...: a command that reads the records (status, logs, cancel, resubmit), with the
# table-driven SLURM stand-ins of tests/fixtures/manage/bin ($lab/jobs: what SLURM knows), at
# most 20 s: a hang is a failure, not a stuck suite.
manage() {
  [[ -e $lab/jobs ]] || : >"$lab/jobs"
  run --separate-stderr env PATH="$HPC_ROOT/tests/fixtures/manage/bin:$PATH" HPC_STUB_JOBS="$lab/jobs" \
    HPC_STUB_SACCT=fail timeout "$HPC_TEST_HANG_S" bash -c 'umask 002 && exec bash "$@" </dev/null' _ "$submitter" "$@"
}

# private PATH...: fails the test unless each PATH is a folder that only its owner can reach.
private() {
  local path mode
  for path in "$@"; do
    [[ -d $path && ! -L $path ]] || fail "not a folder: $path"
    mode=$(stat -c %a "$path")
    (((8#$mode & 8#077) == 0)) || fail "$path has mode $mode"
  done
}

@test "umask 002: hpc_outputs/ and its manifests/ and submissions/ are the user's alone; the other member cannot plant a link named like the next job's output, and the user's file is intact" {
  mate_ready
  submit -y -g 0 -e one
  assert_success
  private "$outputs" "$outputs/manifests" "$outputs/submissions"
  # The next job's output (ids are sequential): a link to the user's file, planted in advance.
  run as_mate 'ln -s -- "$1" "$2"' _ "$lab/victim.txt" "$outputs/one_venv-none_4243.out"
  assert_failure
  assert_output --partial "Permission denied"
  [[ ! -e $outputs/one_venv-none_4243.out && ! -L $outputs/one_venv-none_4243.out ]] || fail "planted"
  assert_equal "$(<"$lab/victim.txt")" precious
  # A map's and a study's roots too.
  printf 'a\nb\n' >"$lab/list.txt"
  HPC_STUB_MAX_ARRAY_SIZE=1001 submit -y -g 0 --map-over "$lab/list.txt" -e mapped
  assert_success
  submit --scaling-test --scale-gpus 1,2 -e probe -y
  assert_success
  private "$outputs/map" "$outputs/map/mapped" "$outputs/scaling" "$outputs/scaling/probe"
}

@test "the user's own hpc_outputs/ left open to the group by an older version (2775) is made theirs alone; one with the other member's link in it is refused, naming it, and nothing is submitted" {
  mate_ready
  mkdir -p "$outputs/manifests"
  chmod 2775 "$outputs" "$outputs/manifests"
  as_mate 'ln -s -- "$1" "$2"' _ "$lab/victim.txt" "$outputs/one_venv-none_4242.out"
  submit -y -g 0 -e one
  assert_equal "$status" 1
  [[ $stderr != *$'\n'* ]] || fail "more than one line: $stderr"
  assert_equal "$stderr" "job_submitter.sh: hpc_outputs/ in $SCRATCH/my project holds one_venv-none_4242.out of hpc_mate (it was open to others): remove what is not yours, then submit again; nothing was submitted"
  [[ ! -e $stub_log/sbatch.1.args ]] || fail "sbatch was called"
  rm -f -- "$outputs/one_venv-none_4242.out"
  submit -y -g 0 -e one
  assert_success
  private "$outputs" "$outputs/manifests"
  assert_equal "$(<"$lab/victim.txt")" precious
}

@test "the other member's hpc_outputs/ (made in advance, 2777), or their manifests/ in the user's: refused with one line naming the owner and the fix, nothing submitted; the other way round too" {
  mate_ready
  as_mate 'mkdir -p -- "$1" && chmod 2777 "$1"' _ "$outputs"
  submit -y -g 0 -e one
  assert_equal "$status" 1
  assert_equal "$stderr" "job_submitter.sh: hpc_outputs/ in $SCRATCH/my project belongs to hpc_mate, not you: your job logs and records are kept only in a folder of your own; use another SCRATCH or another project folder name, or ask hpc_mate to remove it; nothing was submitted"
  [[ ! -e $stub_log/sbatch.1.args ]] || fail "sbatch was called"
  manage status
  assert_equal "$status" 1
  assert_equal "$stderr" "job_submitter.sh: hpc_outputs/ in $SCRATCH/my project belongs to hpc_mate, not you: your job logs and records are kept only in a folder of your own; use another SCRATCH or another project folder name, or ask hpc_mate to remove it"
  # Theirs inside the user's own, which the user opened to the group: a map's folder.
  rm -rf -- "$outputs"
  submit -y -g 0 -e one
  assert_success
  chmod g+rwx "$outputs"
  as_mate 'mkdir -p -- "$1" && chmod 2777 "$1"' _ "$outputs/map"
  printf 'a\nb\n' >"$lab/list.txt"
  rm -f -- "$stub_log"/*
  HPC_STUB_MAX_ARRAY_SIZE=1001 submit -y -g 0 --map-over "$lab/list.txt" -e mapped
  assert_equal "$status" 1
  assert_equal "$stderr" "job_submitter.sh: map/ in $outputs belongs to hpc_mate, not you: your job logs and records are kept only in a folder of your own; use another SCRATCH or another project folder name, or ask hpc_mate to remove it; nothing was submitted"
  [[ ! -e $stub_log/sbatch.1.args ]] || fail "sbatch was called"
  # The other way round: the user's folder, met by the other member.
  rm -rf -- "$outputs"
  submit -y -g 0 -e one
  assert_success
  chmod 755 "$SCRATCH/my project"
  # The code runs from a copy the other member can read (the checkout may be in a private folder).
  hpc_test_user_copy hpc_mate hpc_files
  run as_mate 'hpc_files_dir=$1/hpc_files && source "$1/hpc_files/lib/hpc_common.bash" && hpc_private_dir "$2" || { printf "%s\n" "$hpc_private_dir_problem"; exit 1; }' \
    _ "$user_copy" "$outputs"
  rm -rf -- "${user_copy:?}"
  assert_failure
  assert_output "hpc_outputs/ in $SCRATCH/my project belongs to ${USER:-root}, not you: your job logs and records are kept only in a folder of your own; use another SCRATCH or another project folder name, or ask ${USER:-root} to remove it"
}

@test "a FIFO, a link or the other member's file named like a job's .states file: status, cancel and resubmit --failed neither hang, nor read it, nor write through it" {
  submit -y -g 0 -e victim
  assert_success
  local states=$outputs/manifests/victim_4242.states
  printf 'export KEEP=1\n' >"$lab/bashrc"
  # A FIFO (where an ended state seen is kept for when SLURM has forgotten the job).
  mkfifo "$states"
  printf 'scontrol 4242 4242 COMPLETED 0:0\n' >"$lab/jobs"
  manage status
  assert_success
  [[ $output == *"4242"*"COMPLETED"* ]] || fail "status: $output"
  : >"$lab/jobs"
  manage status
  assert_success
  [[ $output == *"4242"*"UNKNOWN"* ]] || fail "status: $output"
  printf 'scontrol 4242 4242 COMPLETED 0:0\n' >"$lab/jobs"
  manage status victim
  assert_success
  manage cancel victim
  [[ $status != 124 ]] || fail "cancel hung"
  manage resubmit victim --failed
  [[ $status != 124 ]] || fail "resubmit --failed hung"
  # A link: not read, not appended to.
  rm -f -- "$states"
  ln -s -- "$lab/bashrc" "$states"
  printf 'scontrol 4242 4242 COMPLETED 0:0\n' >"$lab/jobs"
  manage status
  assert_success
  assert_equal "$(<"$lab/bashrc")" "export KEEP=1"
  # The other member's file (in a folder the user opened to the group): not believed.
  rm -f -- "$states"
  mate_ready
  : >"$lab/jobs"
  as_mate 'printf "4242\t4242\tOUT_OF_MEMORY\t0:125\n" >"$1"' _ "$states"
  manage status
  assert_success
  refute_output --partial OUT_OF_MEMORY
  # The user's own: kept and read again, written anew (never through a link), 0600.
  rm -f -- "$states"
  printf 'scontrol 4242 4242 COMPLETED 0:0\n' >"$lab/jobs"
  manage status
  assert_success
  assert_equal "$(stat -c %a "$states")" 600
  : >"$lab/jobs"
  manage status
  [[ $output == *"4242"*"COMPLETED"* ]] || fail "status: $output"
}

@test "the usage sampler: its folders the job's alone; its folder swapped for a link while it runs does not redirect its samples" {
  mate_ready
  local dir=$outputs/usage/77 elsewhere=$lab/elsewhere
  mkdir -p "$elsewhere" "$SCRATCH/my project"
  # The job's side makes the folders as the job does (hpc_job_usage_folder), under umask 002.
  run bash -c 'umask 002 && hpc_files_dir=$1/hpc_files && source "$1/hpc_files/lib/hpc_common.bash" &&
    source "$1/hpc_files/lib/hpc_job.bash" && hpc_job_usage_folder "$2"' _ "$HPC_ROOT" "$dir"
  assert_success
  private "$outputs" "$outputs/usage" "$dir"
  run as_mate 'mv -- "$1" "$1.old"' _ "$dir"
  assert_failure
  # The folder swapped while the sampler runs (here by the user: the other member cannot).
  HPC_USAGE_INTERVAL=0.2 bash -c 'hpc_files_dir=$1/hpc_files && source "$1/hpc_files/lib/hpc_common.bash" &&
    source "$1/hpc_files/lib/hpc_usage.bash" && hpc_usage_sample_loop 77 "$2/node1"' _ "$HPC_ROOT" "$dir" &
  local sampler=$! i samples=0
  for ((i = 0; i < 600; i++)); do
    [[ ! -f $dir/node1 ]] || break
    sleep 0.1
  done
  [[ -f $dir/node1 ]] || fail "no sample written"
  mv -- "$dir" "$dir.old"
  ln -s -- "$elsewhere" "$dir"
  # Two more samples after the swap.
  for ((i = 0; i < 600; i++)); do
    samples=$(sed -n 's/^samples=//p' "$dir.old/node1" 2>/dev/null) || true
    [[ -z $(find "$elsewhere" -mindepth 1 -print -quit) ]] || break
    [[ $samples != [0-9]* ]] || ((samples < 4)) || break
    sleep 0.1
  done
  kill -USR2 "$sampler"
  wait "$sampler"
  assert_equal "$(find "$elsewhere" -mindepth 1)" ""
  [[ -f $dir.old/node1 ]] || fail "the samples did not stay in the job's folder"
}

@test "logs: the other member's file or a link at a job's output is not shown; the user's own log's escape sequences and control characters are shown visible" {
  submit -y -g 0 -e victim
  assert_success
  local log=$outputs/victim_venv-none_4242.out
  mate_ready
  as_mate 'printf "\033]0;owned\007\033[2Jplanted\n" >"$1"' _ "$log"
  manage logs victim
  assert_equal "$status" 1
  refute_output --partial planted
  assert_equal "$stderr" "job_submitter.sh: not shown: $log is not a regular file of ${USER:-this user} (or is a link)"
  rm -f -- "$log"
  ln -s -- "$lab/victim.txt" "$log"
  manage logs victim
  assert_equal "$status" 1
  refute_output --partial precious
  rm -f -- "$log"
  printf 'epoch 1\033]0;title\007 done\n\033[31mred\033[0m plain\r\n10%%\r20%%\rbell\007 \033[2Jclear\n' >"$log"
  manage logs victim
  assert_success
  assert_output "epoch 1^[]0;title^G done
red plain
10%
20%
bell^G ^[[2Jclear"
}

@test "logs EXP of a map says how to see one task's log; logs --follow ends once the job has ended" {
  printf 'a\nb\n' >"$lab/list.txt"
  HPC_STUB_MAX_ARRAY_SIZE=1001 submit -y -g 0 --map-over "$lab/list.txt" --gather 'python gather.py' -e mapped
  assert_success
  local map_dir
  map_dir=$(sed -n 's/^Map [^ ]*: array job [0-9]* ([^)]*), folder //p' <<<"$output")
  [[ -d $map_dir ]] || fail "no map folder in: $output"
  printf 'gathered\n' >"$map_dir/gather_4243.out"
  manage logs mapped
  assert_success
  assert_output "gathered"
  assert_equal "$stderr" "job_submitter.sh: mapped is a map: this is its gather job 4243; one task's log: logs 4242_TASK (e.g. logs 4242_0), every task's: logs 4242"
  # --follow of a job that has ended: prints and ends by itself.
  submit -y -g 0 -e single
  assert_success
  printf 'line one\nline two\n' >"$outputs/single_venv-none_4244.out"
  printf 'squeue 4244 4244 COMPLETED 0:0\n' >"$lab/jobs"
  manage logs single --follow
  assert_success
  assert_output "line one
line two"
}
