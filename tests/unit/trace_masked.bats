#!/usr/bin/env bats
# bash -x of the submitter with a secret's value written literally (not $NAME) in the configs
# file, or typed as an option's value: the trace masks it by value, as logs and manifests do. With the
# PATH stubs of tests/fixtures/submitter/bin (no SLURM).

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
  hpc_test_venv_built "$project"
  sentinel="sentinel-literal-7c6b5a"
  printf 'python main.py --key %s\n' "$sentinel" >"$project/hpc_files/experiment_configurations.txt"
}

@test "bash -x, a submission: the literal value of WANDB_API_KEY in the configs file is masked in the trace; status and output unchanged" {
  WANDB_API_KEY=$sentinel run --separate-stderr bash -x "$submitter" -y -g 0 -e x </dev/null
  assert_equal "$status" 0
  [[ $output == *'Submitted job 4242'* ]] || fail "no submission: $output"
  [[ $stderr != *"$sentinel"* && $output != *"$sentinel"* ]] ||
    fail "the key is in the trace: $(grep -m3 -F -- "$sentinel" <<<"$stderr$output")"
  # The trace is there, masked, and goes on to the end.
  [[ $stderr == *'(masked)'* ]] || fail "no masked value in the trace"
  [[ $stderr == *'+ exec sbatch --parsable '* ]] || fail "the trace stops before sbatch"
}

@test "bash -x, a dry run and a refused option: masked, and the exit status is the submitter's" {
  WANDB_API_KEY=$sentinel run --separate-stderr bash -x "$submitter" --dry-run -g 0 -e x </dev/null
  assert_equal "$status" 0
  [[ $stderr != *"$sentinel"* && $output != *"$sentinel"* ]] ||
    fail "the key is in the trace: $(grep -m3 -F -- "$sentinel" <<<"$stderr$output")"
  WANDB_API_KEY=$sentinel run --separate-stderr bash -x "$submitter" -g "$sentinel" </dev/null
  assert_equal "$status" 2
  [[ $stderr != *"$sentinel"* ]] || fail "the key is in the trace: $(grep -m3 -F -- "$sentinel" <<<"$stderr")"
  [[ $stderr == *'job_submitter.sh: '*'(masked)'* ]] || fail "no one-line refusal: $stderr"
}

@test "bash -x: the job does not inherit the marker of the masked trace (sbatch's environment)" {
  mkdir -p "$BATS_TEST_TMPDIR/bin"
  # shellcheck disable=SC2016 # the stand-in's own $@
  printf '#!/usr/bin/env bash\nenv >%q\nexec %q "$@"\n' "$BATS_TEST_TMPDIR/sbatch env" "$fixtures/bin/sbatch" \
    >"$BATS_TEST_TMPDIR/bin/sbatch"
  chmod +x "$BATS_TEST_TMPDIR/bin/sbatch"
  WANDB_API_KEY=$sentinel PATH=$BATS_TEST_TMPDIR/bin:$PATH run --separate-stderr bash -x "$submitter" -y -g 0 -e x </dev/null
  assert_equal "$status" 0
  run grep -c '^HPC_TRACE' "$BATS_TEST_TMPDIR/sbatch env"
  assert_output 0
  run grep -c '^WANDB_API_KEY=' "$BATS_TEST_TMPDIR/sbatch env"
  assert_output 1
}

@test "bash -x: a secret exported after the shell started (a wrapper that sources the submitter, a BASH_ENV file) is masked in the trace" {
  # Not in /proc/self/environ, which holds only what the process was started with.
  # shellcheck disable=SC2016 # the wrapper's own $1 and $@
  run --separate-stderr bash -c 'export MY_DB_PASS=$1; shift; set -x; . "$@"' _ "$sentinel" "$submitter" -y -g 0 -e x </dev/null
  assert_equal "$status" 0
  [[ $output == *'Submitted job 4242'* ]] || fail "no submission: $output"
  [[ $stderr != *"$sentinel"* && $output != *"$sentinel"* ]] ||
    fail "the sourced submitter traces the secret: $(grep -m3 -F -- "$sentinel" <<<"$stderr$output")"
  [[ $stderr == *'(masked)'* ]] || fail "no masked value in the trace"
  # The BASH_ENV file hides its own line from the trace (the submitter cannot: it runs after).
  printf '{ set +x; } 2>/dev/null; export MY_DB_PASS=%q; set -x\n' "$sentinel" >"$BATS_TEST_TMPDIR/env.bash"
  BASH_ENV=$BATS_TEST_TMPDIR/env.bash run --separate-stderr bash -x "$submitter" -y -g 0 -e x </dev/null
  assert_equal "$status" 0
  [[ $stderr != *"$sentinel"* && $output != *"$sentinel"* ]] ||
    fail "a secret of BASH_ENV is traced: $(grep -m3 -F -- "$sentinel" <<<"$stderr$output")"
  [[ $stderr == *'(masked)'* ]] || fail "no masked value in the trace"
}
