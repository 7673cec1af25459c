#!/usr/bin/env bats
# A secret that the configs file puts on the program's command line (--key ${WANDB_API_KEY}) is
# masked in every record, yet `ps` shows the program's arguments to every user of the node: the
# submission says so in one line (stderr, not a refusal), naming the variable, never its value.
# Without SLURM: the PATH stubs of tests/fixtures/submitter/bin.

# shellcheck disable=SC2030,SC2031 # each @test runs in a subshell: what it exports stays there, on purpose

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
  configs=$project/hpc_files/experiment_configurations.txt
  sentinel='sentinel-unit-4d3c2b6c'
}

# advice NAME: the line that names the secret variable NAME on the command line.
advice() {
  printf '%s' "job_submitter.sh: the configs file puts \$$1 on the program's command line, where ps shows" \
    " its value to every user of the node (masked only in the toolkit's records): pass it in the" \
    " environment instead (the job has it) and read it there (os.environ[\"$1\"] in Python)"
}

@test "a secret referenced on the command line: one line at submission (stderr), and in the dry run's environment (stdout), naming the variable, never its value; the job is submitted" {
  # shellcheck disable=SC2016 # expanded in the job
  printf 'python main.py --key ${WANDB_API_KEY} --lr 0.1\n' >"$configs"
  export WANDB_API_KEY=$sentinel
  run --separate-stderr bash "$submitter" -y -g 0 -e keyed </dev/null
  assert_success
  assert_equal "$stderr" "$(advice WANDB_API_KEY)"
  [[ -e $stub_log/sbatch.1.args ]] || fail "nothing was submitted"
  run --separate-stderr bash "$submitter" --dry-run -g 0 -e keyed </dev/null
  assert_success
  assert_equal "$stderr" ""
  assert_line "$(advice WANDB_API_KEY | sed 's/^job_submitter.sh: //')"
  [[ $output != *"$sentinel"* ]] || fail "the value is in the dry run"
}

@test "a variable not named as a secret that holds one (a URL with a password), in a quoted word: named; the secret's own name too, once each; a plain reference is not" {
  # shellcheck disable=SC2016 # expanded in the job
  printf 'python main.py --db="$DB_URL" --epochs $EPOCHS --token $HF_TOKEN --again ${HF_TOKEN:-x}\n' >"$configs"
  export DB_PASS=$sentinel DB_URL="postgres://u:$sentinel@db/x" EPOCHS=12 HF_TOKEN=hf-token-value
  run --separate-stderr bash "$submitter" -y -g 0 -e db </dev/null
  assert_success
  assert_equal "$stderr" "$(advice DB_URL)
$(advice HF_TOKEN)"
}

@test "no secret on the command line: no such line (a secret in the environment that the command does not use, a reference to a plain variable)" {
  # shellcheck disable=SC2016 # expanded in the job
  printf 'python main.py --epochs ${EPOCHS:-3}\n' >"$configs"
  export WANDB_API_KEY=$sentinel EPOCHS=12
  run --separate-stderr bash "$submitter" -y -g 0 -e plain </dev/null
  assert_success
  assert_equal "$stderr" ""
}
