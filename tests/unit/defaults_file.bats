#!/usr/bin/env bats
# The project's defaults file, hpc_files/defaults: a team's usual settings, one '--long-option=value'
# line each, between the command line and the cluster profile. The command line overrides it
# (never "given twice"); a bad line is refused naming the file, the line and the key (exit 2,
# nothing submitted or created); the file is read only as the user's own regular file, not a link,
# bounded; --dry-run says where every value that is not the built-in default came from, the
# manifest records it, and resubmit runs what ran after the file changed. Without SLURM: the PATH
# stubs of tests/fixtures/submitter/bin.

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
  hpc_test_submitter_project "$BATS_TEST_TMPDIR/cache" "$(hpc_test_tmp)/scratch space"
  hpc_test_venv_built "$project"
  defaults=$project/hpc_files/defaults
  outputs="$SCRATCH/my project/hpc_outputs"
}

# submit ARGS...: runs the submitter, stdout and stderr apart, bounded.
submit() {
  run --separate-stderr timeout "$HPC_TEST_HANG_S" bash "$submitter" "$@" </dev/null
}

# listing DIR: everything under DIR, with type, size, mode and modification time.
listing() {
  find "$1" -printf '%P|%y|%s|%m|%T@\n' | LC_ALL=C sort
}

# write_defaults LINE...: the project's defaults file, one LINE each.
write_defaults() {
  rm -f -- "$defaults"
  printf '%s\n' "$@" >"$defaults"
}

# refused LINE ARGS...: the submitter with ARGS exits 2 with the one line 'job_submitter.sh: LINE'
# on stderr, nothing on stdout, calls no sbatch and changes nothing under $tmp.
refused() {
  local want="job_submitter.sh: $1" before
  shift
  before=$(listing "$tmp")
  submit "$@"
  [[ $status == 2 ]] || fail "$*: exit $status, expected 2 (stderr: $stderr)"
  [[ -z $output ]] || fail "$*: printed on stdout: $output"
  assert_equal "$stderr" "$want"
  [[ ! -e $stub_log/sbatch.1.args ]] || fail "$*: sbatch was called"
  [[ $(listing "$tmp") == "$before" ]] || fail "$*: changed something under $tmp"
}

# sbatch_arg N NAME: the value of --NAME=VALUE in the Nth sbatch call's arguments.
sbatch_arg() {
  tr '\0' '\n' <"$stub_log/sbatch.$1.args" | sed -n "s/^--$2=//p"
}

@test "install.sh writes a commented defaults file, which changes nothing; run again it keeps the user's" {
  [[ -f $defaults && ! -L $defaults ]] || fail "no hpc_files/defaults after install.sh"
  run grep -cvE '^(#.*)?$' "$defaults"
  assert_output 0
  grep -q -- '--time=' "$defaults" || fail "the template does not show --time"
  submit --dry-run -g 0
  assert_success
  refute_output --partial "hpc_files/defaults line"
  printf -- '--time=2:00:00\n' >>"$defaults"
  run bash "$HPC_ROOT/hpc_files/install.sh" "$project"
  assert_success
  assert_line "kept your $defaults"
  assert_equal "$(tail -n 1 "$defaults")" "--time=2:00:00"
}

@test "the file's values are used; --dry-run says where each value that is not the built-in default came from" {
  write_defaults '# our usual settings' '' '--time=2:00:00' '--requeue=2' '  --cpus = 3  '
  submit --dry-run -g 0 -e mine
  assert_success
  assert_line "sbatch --job-name=my\\ project-mine --nodes=1 --ntasks-per-node=1 --cpus-per-task=3 --mem=1G --time=2:00:00 --output=${outputs// /\\ }/mine_venv-none_%j.out --chdir=${project// /\\ } --signal=B:USR1@30 --requeue --open-mode=append --partition=debug JOB_SCRIPT"
  local settings
  settings=$(sed -n '/^== settings/,/^$/p' <<<"$output")
  assert_equal "$settings" "== settings (where each value that is not the built-in default came from)
-g/--gpus=0 (command line)
-e/--exp-name=mine (command line)
-t/--time=2:00:00 (hpc_files/defaults line 3)
--requeue=2 (hpc_files/defaults line 4)
-c/--cpus=3 (hpc_files/defaults line 5)
-p/--partition=debug (cluster profile local)
--signal-lead=30 (cluster profile local)"
}

@test "the command line overrides the file's value without 'given twice'; its --data replaces the file's" {
  mkdir -p "$SCRATCH/my project/from-file" "$SCRATCH/my project/from-line"
  write_defaults '--time=2:00:00' '--data=from-file'
  submit --dry-run -g 0 -t 1:00:00 --data from-line
  assert_success
  assert_line --partial " --time=1:00:00 "
  assert_line "-t/--time=1:00:00 (command line)"
  assert_line "-d/--data=from-line (command line)"
  refute_output --partial "from-file"
  submit --dry-run -g 0
  assert_success
  assert_line "-d/--data=from-file (hpc_files/defaults line 2)"
}

@test "a bad line of the file is refused naming the file, the line and the key: exit 2, one line, nothing submitted or created" {
  write_defaults '# ok' '--tiem=1:00:00'
  refused "hpc_files/defaults line 2: unknown key '--tiem'; did you mean --time?" -g 0
  write_defaults '--colour=blue'
  refused "hpc_files/defaults line 1: unknown key '--colour'; accepted: --account, --copy-back, --cpus, --data, --exp-name, --gpu-type, --gpus, --mem-per-gpu, --num-nodes, --partition, --requeue, --runner, --signal-lead, --time, --which-distributed" -g 0
  write_defaults '--map-range=0-3'
  refused "hpc_files/defaults line 1: --map-range is not a setting of the defaults file (it is given on the command line); accepted: --account, --copy-back, --cpus, --data, --exp-name, --gpu-type, --gpus, --mem-per-gpu, --num-nodes, --partition, --requeue, --runner, --signal-lead, --time, --which-distributed" -g 0
  write_defaults '' '' 'gpus 2'
  refused "hpc_files/defaults line 3: 'gpus 2' is not accepted; accepted: --long-option=value, a comment (#) or a blank line" -g 0
  write_defaults '--time=1:00:00' '--time=2:00:00'
  refused "hpc_files/defaults line 2: --time given twice (line 1, then line 2); accepted: once (only --data and --copy-back take several)" -g 0
  write_defaults '' '' '--time=2h'
  refused "-t/--time from hpc_files/defaults line 3: '2h' is not accepted; accepted: a SLURM time M, M:S, H:M:S, D-H, D-H:M or D-H:M:S (minutes and seconds < 60, hours < 24 after a day count), e.g. 48:00:00 or 1-12:00:00" -g 0
  write_defaults '--time='
  refused "-t/--time from hpc_files/defaults line 1: '' is not accepted; accepted: a SLURM time M, M:S, H:M:S, D-H, D-H:M or D-H:M:S (minutes and seconds < 60, hours < 24 after a day count), e.g. 48:00:00 or 1-12:00:00" -g 0
  # A value that only the plan can judge (the lead against the time limit) still names its origin.
  write_defaults '--signal-lead=3000'
  refused "--signal-lead from hpc_files/defaults line 1: 3000 s before the time limit 5:00 (300 s: SLURM counts whole minutes) leaves less than 60 s, and SLURM may send the warning up to 60 s early; accepted: at most 240 s with this time limit" -g 0 -t 5:00
  # The command line's own values are named as before.
  write_defaults '--time=1:00:00'
  refused "-g/--gpus: 'x' is not accepted; accepted: a whole number of GPUs per node, 0 to 999999" -g x
}

@test "the file is read only as the user's own regular file: a link, a FIFO, an over-long file are refused, never hang" {
  printf -- '--time=2:00:00\n' >"$tmp/elsewhere"
  rm -f -- "$defaults"
  ln -s "$tmp/elsewhere" "$defaults"
  refused "hpc_files/defaults: is not a regular file of ${USER:-this user} (or is a link); accepted: your own file of settings, or none" -g 0
  rm -f -- "$defaults"
  mkfifo "$defaults"
  refused "hpc_files/defaults: is not a regular file of ${USER:-this user} (or is a link); accepted: your own file of settings, or none" -g 0
  rm -f -- "$defaults"
  { for ((i = 0; i < 3000; i++)); do printf '# a comment line to make the file long %s\n' "$i"; done; } >"$defaults"
  refused "hpc_files/defaults: larger than 16384 bytes; accepted: a short file of settings" -g 0
}

@test "another user's defaults file is refused (exit 2, one line): its settings never reach a job" {
  load '../helpers/mate'
  mate_ready
  write_defaults '--account=theirs'
  chown hpc_mate "$defaults"
  refused "hpc_files/defaults: is not a regular file of ${USER:-this user} (or is a link); accepted: your own file of settings, or none" -g 0
}

@test "the manifest records each value's origin; resubmit runs what ran after the file changed" {
  write_defaults '--time=2:00:00'
  submit -y -g 0 -e rec
  assert_success
  local manifest=$outputs/manifests/rec_4242.manifest
  run grep -E '^setting	' "$manifest"
  assert_output "setting	-g/--gpus=0 (command line)
setting	-e/--exp-name=rec (command line)
setting	-t/--time=2:00:00 (hpc_files/defaults line 1)
setting	-c/--cpus=1 (cluster profile local)
setting	-p/--partition=debug (cluster profile local)
setting	--signal-lead=30 (cluster profile local)"
  assert_equal "$(sbatch_arg 1 time)" "2:00:00"
  # The file changes, even to one that would be refused: resubmit runs the job as it ran.
  write_defaults '--time=3:00:00' '--bogus=1'
  submit resubmit rec
  assert_success
  grep -q '^#SBATCH --time="2:00:00"$' "$stub_log/sbatch.2.script" || fail "resubmit did not keep --time 2:00:00: $(grep -- --time "$stub_log/sbatch.2.script")"
}

@test "interactive: the file's values apply, and those interactive refuses (--requeue) are left out, not refused" {
  mkdir -p "$BATS_TEST_TMPDIR/salloc_bin"
  printf '#!/bin/bash\nexit 0\n' >"$BATS_TEST_TMPDIR/salloc_bin/salloc"
  chmod +x "$BATS_TEST_TMPDIR/salloc_bin/salloc"
  export PATH=$BATS_TEST_TMPDIR/salloc_bin:$PATH
  write_defaults '--time=2:00:00' '--requeue=2'
  submit interactive --dry-run -g 0
  assert_success
  assert_output --partial "--time=2:00:00"
  refute_output --partial "--requeue"
  submit interactive --dry-run -g 0 --requeue 1
  assert_equal "$status" 2
}
