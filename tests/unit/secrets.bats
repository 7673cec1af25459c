#!/usr/bin/env bats
# Secrets (hpc_common.bash): which variables count as secrets, masking by value in strings,
# arrays, quoted argument lines and streams, and no secret in a bash -x trace of the functions
# that handle them (the masking functions, the dry run's environment, the job's key loading),
# nor in a manifest. The whole submission on the cluster: tests/integration/secrets.bats.
# shellcheck disable=SC2016 # bash -c scripts in single quotes get their values as arguments, on purpose

bats_require_minimum_version 1.5.0

setup() {
  load '../helpers/common'
  TMP=$(hpc_test_tmp)
  export HOME="$TMP/home"
  mkdir -p "$HOME"
  # The sentinels: a W&B key, a password, and a password inside a URL of a harmless name.
  export WANDB_API_KEY=sentinel-unit-4d3c2b DB_PASS='pa$$ w0rd!' DB_URL='postgres://u:pa$$ w0rd!@db/x'
  export SHORT_TOKEN=abc
}

# lib SCRIPT ARGS...: runs SCRIPT in a fresh bash with hpc_common.bash loaded, stdout and stderr apart.
lib() {
  local script=$1
  shift
  run --separate-stderr bash -c 'set -euo pipefail; source "$HPC_ROOT/hpc_files/lib/hpc_common.bash"; hpc_program=job_submitter.sh
    '"$script" _ "$@"
}

@test "names: KEY, TOKEN, SECRET, PASS, CREDENTIAL, AUTH (any case) and *_PWD are secrets; PWD, HOME, PATH are not" {
  source "$HPC_ROOT/hpc_files/lib/hpc_common.bash"
  local name
  for name in WANDB_API_KEY wandb_api_key DB_PASS DB_PASSWORD PASSPHRASE GITHUB_TOKEN HF_TOKEN \
    AWS_SECRET_ACCESS_KEY AWS_ACCESS_KEY_ID MY_CREDENTIALS GOOGLE_APPLICATION_CREDENTIALS HTTP_AUTH \
    MYSQL_PWD ApiKey; do
    hpc_secret_name "$name" || fail "$name should be a secret's name"
  done
  for name in PWD OLDPWD HOME PATH USER SCRATCH exp_name SLURM_JOB_ID LANG; do
    if hpc_secret_name "$name"; then fail "$name is no secret's name"; fi
  done
}

@test "mask: every occurrence of every secret (longest first) in strings and arrays; short or unexported values stay" {
  export LONG_KEY=sentinel-unit-4d3c2b-and-more
  lib 'NOT_EXPORTED_SECRET=sentinel-not-exported
    s="k=sentinel-unit-4d3c2b,sentinel-unit-4d3c2b; p=pa\$\$ w0rd!; long=sentinel-unit-4d3c2b-and-more; abc; sentinel-not-exported"
    a=("x sentinel-unit-4d3c2b y" "" "pa\$\$ w0rd!" "plain")
    hpc_mask_vars s a
    printf "%s\n" "$s" "${a[@]}"'
  assert_success
  assert_output 'k=(masked),(masked); p=(masked); long=(masked); abc; sentinel-not-exported
x (masked) y

(masked)
plain'
}

@test "mask: the W&B key of ~/wandb_credentials.txt, and a value of several lines line by line" {
  unset WANDB_API_KEY
  printf 'sentinel-from-file\n' >"$HOME/wandb_credentials.txt"
  chmod 600 "$HOME/wandb_credentials.txt"
  export SSH_PRIVATE_KEY=$'-----BEGIN KEY-----\nsentinel-line-one\nsentinel-line-two\n-----END KEY-----'
  lib 's="a sentinel-from-file b sentinel-line-two c"; hpc_mask_vars s; printf "%s\n" "$s"'
  assert_success
  assert_output 'a (masked) b (masked) c'
}

@test "mask: a W&B key exported by the shell after it started (the job's key loading) is masked too" {
  unset WANDB_API_KEY
  lib 'export WANDB_API_KEY=sentinel-exported-late; s="a sentinel-exported-late b"; hpc_mask_vars s; printf "%s\n" "$s"'
  assert_success
  assert_output 'a (masked) b'
}

@test "mask: names from /proc/self/environ (a submitter run as a script): the start's secrets and the W&B key exported late; by default every variable of the shell" {
  unset WANDB_API_KEY
  lib 'hpc_secret_names_environ=1; export WANDB_API_KEY=sentinel-exported-late LATE_TOKEN=sentinel-late-token
    s="a sentinel-exported-late b pa\$\$ w0rd! c sentinel-late-token"; hpc_mask_vars s; printf "%s\n" "$s"'
  assert_success
  assert_output 'a (masked) b (masked) c sentinel-late-token'
  lib 'export LATE_TOKEN=sentinel-late-token; s="c sentinel-late-token"; hpc_mask_vars s; printf "%s\n" "$s"'
  assert_success
  assert_output 'c (masked)'
}

@test "mask: the job's 'starting' line: each argument masked, then quoted; the mark stays readable" {
  lib 'argv=(python train.py --key "$WANDB_API_KEY" "--db=$DB_URL" "a b"); hpc_mask_quoted argv'
  assert_success
  assert_output 'python train.py --key (masked) --db=postgres://u:(masked)@db/x a\ b '
}

@test "mask: a stream, line by line, the rest byte for byte; the secrets never on awk's command line" {
  mkdir -p "$TMP/bin"
  printf '#!/bin/bash\nprintf "%%s\\n" "$*" >>"%s/awk.args"\nexec /usr/bin/awk "$@"\n' "$TMP" >"$TMP/bin/awk"
  chmod +x "$TMP/bin/awk"
  printf 'one sentinel-unit-4d3c2b two\n\tpa$$ w0rd! pa$$ w0rd!\nno secret \xc3\xa9 \\ $HOME\nlast without newline sentinel-unit-4d3c2b' >"$TMP/in"
  PATH="$TMP/bin:$PATH" lib 'hpc_mask_stream <"$1"' "$TMP/in"
  assert_success
  assert_output $'one (masked) two\n\t(masked) (masked)\nno secret \xc3\xa9 \\ $HOME\nlast without newline (masked)'
  [ -s "$TMP/awk.args" ]
  run grep -c -e sentinel -e w0rd "$TMP/awk.args"
  assert_output 0
  # No secret at all: the stream is copied as it is.
  env -u WANDB_API_KEY -u DB_PASS -u DB_URL bash -c 'source "$HPC_ROOT/hpc_files/lib/hpc_common.bash"; hpc_mask_stream <"$1"' _ "$TMP/in" >"$TMP/out"
  cmp "$TMP/in" "$TMP/out"
}

@test "bash -x: masking, the dry run's environment and the job's key loading trace no secret, and tracing goes on after them" {
  printf 'sentinel-from-file\n' >"$HOME/wandb_credentials.txt"
  chmod 600 "$HOME/wandb_credentials.txt"
  run --separate-stderr bash -c '
    source "$HPC_ROOT/hpc_files/lib/hpc_common.bash"
    source "$HPC_ROOT/hpc_files/lib/hpc_configs.bash"
    source "$HPC_ROOT/hpc_files/lib/hpc_submit.bash"
    source "$HPC_ROOT/hpc_files/lib/hpc_submit_dry_run.bash"
    source "$HPC_ROOT/hpc_files/lib/hpc_sweep.bash"
    hpc_plan_source_dir=/p hpc_plan_project_name=p hpc_plan_scratch_dir=/s hpc_plan_exp_name=e
    hpc_plan_nodes=1 hpc_plan_gpus=0 hpc_profile_tmpdir_provided=true hpc_plan_launcher=none
    hpc_python_helpers_dir=/h hpc_plan_venv=/p/virtual_env hpc_plan_runner=venv
    hpc_configs_words=(python a.py "\${WANDB_API_KEY}" "\${DB_PASS}" "--db=\${DB_URL}" "\${HOME}")
    # The values are set before tracing starts: the test itself prints none.
    s="x $WANDB_API_KEY" argv=(a "$DB_PASS")
    printf "%s\n" "$DB_URL" >"$1"
    set -x
    hpc_submit_environment
    hpc_mask_vars s
    hpc_mask_quoted argv
    hpc_mask_stream <"$1"
    unset WANDB_API_KEY
    hpc_sweep_load_key
    after_the_secrets=1
    set +x
    [[ $WANDB_API_KEY == sentinel-from-file ]] && echo "key loaded"' _ "$TMP/url"
  assert_success
  assert_line 'configs file uses $WANDB_API_KEY: from this shell: (masked)'
  assert_line 'configs file uses $DB_PASS: from this shell: (masked)'
  assert_line 'configs file uses $DB_URL: from this shell: postgres://u:(masked)@db/x'
  assert_line "configs file uses \$HOME: from this shell: $HOME"
  assert_line 'a (masked) '
  assert_line 'postgres://u:(masked)@db/x'
  assert_line 'key loaded'
  refute_output --partial sentinel
  refute_output --partial 'w0rd'
  # The trace: no value, and tracing was back on after each function.
  [[ $stderr == *'after_the_secrets=1'* ]] || fail "tracing did not come back: $stderr"
  [[ $stderr != *sentinel* && $stderr != *w0rd* ]] || fail "a secret is in the trace: $stderr"
}

@test "manifest: a secret typed in the submitter's words or the command is masked; the sbatch options stay exact" {
  cd "$TMP"
  run bash -c '
    set -euo pipefail
    source "$HPC_ROOT/hpc_files/lib/hpc_common.bash"
    source "$HPC_ROOT/hpc_files/lib/hpc_manifest.bash"
    source "$HPC_ROOT/hpc_files/lib/hpc_plan.bash"
    hpc_plan_source_dir="$PWD" hpc_plan_project_name=p hpc_plan_scratch_dir="$PWD/s"
    hpc_plan_exp_name=ex hpc_plan_kind=venv-none hpc_plan_cluster=local hpc_plan_launcher=none
    hpc_plan_runner=venv hpc_plan_nodes=1 hpc_plan_ntasks_per_node=1 hpc_plan_cpus=1
    hpc_plan_cpus_per_task=1 hpc_plan_gpus=0 hpc_plan_mem=1G hpc_plan_time=00:10:00
    hpc_plan_output="$PWD/o_%j.out" hpc_plan_job_name=p-ex
    hpc_plan_sbatch_args=(--job-name=p-ex --output="$PWD/o_%j.out")
    hpc_plan_command=(python a.py --key sentinel-unit-4d3c2b "\${DB_PASS}")
    hpc_submit_argv=(-y -e ex --comment "pa\$\$ w0rd!")
    hpc_manifest_write 7 "$PWD/kept.sh"
    cat "$PWD/s/hpc_outputs/manifests/ex_7.manifest"'
  assert_success
  refute_output --partial sentinel
  refute_output --partial 'w0rd'
  assert_line $'argv\t(masked)'
  assert_line $'command\t(masked)'
  assert_line $'command\t${DB_PASS}'
  assert_line $'sbatch\t--job-name=p-ex'
}

@test "mask: each line is passed on as it comes, not when 4 KiB or the end have arrived (Debian's mawk): logs --follow shows a running job's lines" {
  local go=$TMP/go i seen=''
  : >"$TMP/out"
  # A growing log: one line, then nothing more until the test has looked (at most 20 s).
  # shellcheck disable=SC2016 # the inner shell's own $1
  bash -c 'printf "step 1 loss 0.5 sentinel-unit-4d3c2b\n"; for _ in {1..200}; do [[ -e $1 ]] && break; sleep 0.1; done' _ "$go" |
    bash -c 'source "$HPC_ROOT/hpc_files/lib/hpc_common.bash"; hpc_mask_stream' >"$TMP/out" &
  for ((i = 0; i < 150; i++)); do
    [[ $(<"$TMP/out") == "step 1 loss 0.5 (masked)" ]] && seen=$i && break
    sleep 0.1
  done
  : >"$go"
  wait
  assert_equal "$(<"$TMP/out")" "step 1 loss 0.5 (masked)"
  [[ -n $seen ]] || fail "the line was held back while the log grew"
}
