#!/usr/bin/env bats
# bash job_submitter.sh interactive: what makes no sense in a shell is refused (exit 2, one line,
# nothing asked of SLURM, nothing created); without a terminal it is refused too; --dry-run shows
# the salloc line with the submission's shape and the shell's environment, and creates nothing.

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
  hpc_test_submitter_setup 'scratch space' --venv --cache "$BATS_TEST_TMPDIR/cache"
  # salloc records its calls, as the fixtures' stubs do.
  mkdir -p "$BATS_TEST_TMPDIR/salloc_bin"
  # shellcheck disable=SC2016 # the stub expands its own arguments
  printf '#!/bin/bash\nprintf "%%s\\n" "$@" >>"$HPC_STUB_LOG/salloc.args"\n' >"$BATS_TEST_TMPDIR/salloc_bin/salloc"
  chmod +x "$BATS_TEST_TMPDIR/salloc_bin/salloc"
  export PATH=$BATS_TEST_TMPDIR/salloc_bin:$PATH
}

# listing DIR: everything under DIR, with type, size, mode and modification time.
listing() {
  find "$1" -printf '%P|%y|%s|%m|%T@\n' | LC_ALL=C sort
}

# refused LINE ARGS...: interactive ARGS exits 2 with the one line 'job_submitter.sh: LINE...',
# calls neither salloc nor sbatch, and changes nothing under $tmp.
refused() {
  local want="job_submitter.sh: $1" before
  shift
  before=$(listing "$tmp")
  run --separate-stderr timeout "$HPC_TEST_HANG_S" bash "$submitter" interactive "$@" </dev/null
  [[ $status == 2 ]] || fail "interactive $*: exit $status, expected 2 (stderr: $stderr)"
  [[ -z $output ]] || fail "interactive $*: printed on stdout: $output"
  [[ $stderr != *$'\n'* ]] || fail "interactive $*: more than one line: $stderr"
  [[ $stderr == "$want"* ]] || fail "interactive $*: stderr '$stderr' does not start with '$want'"
  [[ ! -e $stub_log/salloc.args && ! -e $stub_log/sbatch.1.args ]] || fail "interactive $*: salloc or sbatch was called"
  [[ $(listing "$tmp") == "$before" ]] || fail "interactive $*: changed something under $tmp"
}

@test "interactive refuses arrays, maps, scaling tests, --requeue and bad values: exit 2, one line" {
  refused "-w/--wandb-sweepid: not with interactive" -w abc
  refused "--wandb-offline: not with interactive" --wandb-offline
  refused "--repeat: not with interactive" --repeat 3
  refused "--map-range: not with interactive" --map-range 1-3
  refused "--map-over: not with interactive" --map-over items.txt
  refused "--gather: not with interactive" --gather 'python g.py'
  refused "--scaling-test: not with interactive" --scaling-test
  refused "--requeue: not with interactive" --requeue 1
  refused "-s/--singularity-container: not with interactive" -s app.sif
  refused "-g/--gpus: 'x' is not accepted" -g x
  refused "-W/--which-distributed: 'nope' is not accepted" -W nope
}

@test "interactive without a terminal on stdin: exit 2, one line, nothing asked" {
  refused "interactive needs a terminal" -g 0
}

@test "interactive --dry-run: the salloc line with the job's shape, the environment; nothing made" {
  local before
  before=$(listing "$tmp")
  run --separate-stderr timeout "$HPC_TEST_HANG_S" bash "$submitter" interactive --dry-run -W torchrun -g 2 -n 2 -c 3 -t 00:20:00 -e inter </dev/null
  [[ $status == 0 ]] || fail "exit $status: $stderr"
  local option
  for option in --nodes=2 --ntasks-per-node=1 --cpus-per-task=6 --gres=gpu:2 --time=00:20:00 '--job-name=[^-]*-inter'; do
    assert_line --regexp "^salloc .*$option .*-- bash JOB_SCRIPT\$"
  done
  assert_line --regexp 'checkpoints_dir=.*/inter/checkpoints$'
  # What the shell will see.
  assert_line --regexp 'exp_name=inter'
  assert_line --regexp 'num_processes=4'
  # No #SBATCH line is lost: the salloc line carries no --output (the shell is the output).
  refute_line --regexp '^salloc .*--output'
  [[ ! -e $stub_log/salloc.args && ! -e $stub_log/sbatch.1.args ]] || fail "salloc or sbatch was called"
  [[ $(listing "$tmp") == "$before" ]] || fail "changed something under $tmp"
}

@test "interactive --help: its usage, hpc-run named" {
  run bash "$submitter" interactive --help
  assert_success
  assert_line --partial 'Usage: bash job_submitter.sh interactive'
  assert_output --partial 'hpc-run'
}
