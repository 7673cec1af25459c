#!/usr/bin/env bats
# The one SLURM client (hpc_files/lib/hpc_slurm.bash): every login-side call of sbatch, scontrol,
# squeue, scancel and sacct goes through it, and sbatch's answer is read in one place, so a rule
# about that answer (no job id: refused; a lost answer: the record stays) holds for every path.
# Without SLURM: the PATH stubs of tests/fixtures/manage/bin (job ids 5000, 5001, ...).

bats_require_minimum_version 1.5.0

setup_file() {
  load '../helpers/common'
  export PYTHONDONTWRITEBYTECODE=1
  export PROJECT="$BATS_FILE_TMPDIR/my project"
  mkdir -p "$PROJECT"
  bash "$HPC_ROOT/hpc_files/install.sh" "$PROJECT" >/dev/null
  printf 'python main.py --lr 0.1\n' >"$PROJECT/hpc_files/experiment_configurations.txt"
  # The profiles compiled once for the whole bats run, by the first file that asks.
  # shellcheck source=tests/helpers/submitter.bash
  source "$BATS_TEST_DIRNAME/../helpers/submitter.bash"
  hpc_test_warm_profiles
  hpc_test_venv_built "$PROJECT"
}

setup() {
  load '../helpers/common'
  load '../helpers/shipped'
  tmp=$(hpc_test_tmp)
  submitter=$PROJECT/hpc_files/job_submitter.sh
  stub_log="$BATS_TEST_TMPDIR/stub log"
  mkdir -p "$stub_log" "$tmp/scratch" "$tmp/bin"
  cp -R "$HPC_WARM_CACHE" "$tmp/cache"
  # The cluster's one partition, for every sinfo the submission asks.
  printf '#!/usr/bin/env bash\necho "debug*|2|4|8000|gpu:2"\n' >"$tmp/bin/sinfo"
  chmod +x "$tmp/bin/sinfo"
  unset HPC_STUB_SQUEUE HPC_STUB_SACCT HPC_STUB_SBATCH HPC_STUB_JOB_ID HPC_STUB_MAX_ARRAY_SIZE
  export SCRATCH=$tmp/scratch HPC_CLUSTER=local HPC_CACHE_DIR=$tmp/cache HPC_STUB_LOG=$stub_log
  export HPC_STUB_JOBS=$tmp/jobs
  export PATH=$HPC_ROOT/tests/fixtures/manage/bin:$tmp/bin:$PATH
  outputs="$SCRATCH/my project/hpc_outputs"
  : >"$HPC_STUB_JOBS"
}

# submit ARGS...: runs the submitter (a submission or a command), stdout and stderr apart.
submit() {
  run --separate-stderr bash "$submitter" "$@" </dev/null
}

# tag_of N: the submission tag of the stub's N-th sbatch call, without its prefix.
tag_of() {
  local -a argv
  mapfile -d '' argv <"$stub_log/sbatch.$1.args"
  [[ ${argv[-1]-} == --comment=hpc-toolkit:* ]] || fail "sbatch $1 has no tag"
  printf '%s\n' "${argv[-1]#--comment=hpc-toolkit:}"
}

# records: the names of the submissions' records that have not ended, one per line.
records() {
  local f
  for f in "$outputs"/submissions/*; do
    [[ ! -s $f || $(head -n 1 "$f") == ended ]] || printf '%s\n' "${f##*/}"
  done
}

@test "gather EXP whose sbatch answers without a job id (exit 0): refused with one line naming it, the answer taken for a lost one (the record stays); no id recorded in manifest.json, no manifest for it" {
  printf 'item%s\n' 0 1 >"$tmp/items.txt"
  HPC_STUB_MAX_ARRAY_SIZE=10 submit -y -g 0 -e noidgather --map-over "$tmp/items.txt" --gather 'python gather.py'
  assert_success
  local map_dir before
  map_dir=$(sed -n 's/^Map [^ ]*: array job [0-9]* ([^)]*), folder //p' <<<"$output")
  [[ -d $map_dir ]] || fail "no map folder in: $output"
  before=$(cat "$map_dir/manifest.json")
  HPC_STUB_SBATCH_NOID=3 submit gather noidgather
  assert_equal "$status" 1
  assert_equal "$stderr" "job_submitter.sh: sbatch gave no job id for the gather job: Submitted batch job
job_submitter.sh: an sbatch's answer was lost: if SLURM took its job all the same, 'bash job_submitter.sh status' lists it"
  refute_output --partial 'Gather job'
  assert_equal "$(cat "$map_dir/manifest.json")" "$before"
  [[ -z $(find "$outputs/manifests" -name '*Submitted*') ]] || fail "$(ls "$outputs/manifests")"
  assert_equal "$(records)" "$(tag_of 3)"
}

@test "resubmit of a plain job whose sbatch answer was lost (a socket timeout after SLURM took it): it fails saying so, and the submission's record stays for status and cancel to find the job by its tag" {
  submit -y -g 0 -e lostagain
  assert_success
  assert_equal "$(records)" ""
  HPC_STUB_SBATCH_LOST=2 submit resubmit lostagain
  assert_equal "$status" 1
  assert_equal "$stderr" "job_submitter.sh: sbatch refused the resubmission: sbatch: error: Batch job submission failed: Socket timed out on send/recv operation
job_submitter.sh: an sbatch's answer was lost: if SLURM took its job all the same, 'bash job_submitter.sh status' lists it"
  assert_equal "$(records)" "$(tag_of 2)"
  # A refusal is no lost answer: nothing was submitted, and no record is left.
  HPC_STUB_SBATCH=refuse submit resubmit lostagain
  assert_equal "$status" 1
  assert_equal "$(records)" "$(tag_of 2)"
}

# slurm_calls FILE...: prints 'FILE:FUNCTION: LINE' for each code line of FILE that runs sbatch,
# scontrol, squeue, scancel or sacct: the command's name as a command word (at a line's start,
# after ; & | { !, $( or =(, exec, env, nohup, then, do, else or timeout N), not a word of a
# message or a case label.
slurm_calls() {
  awk '
    FNR == 1 { fn = "" }
    /^[a-zA-Z_][a-zA-Z0-9_]*\(\) *\{/ { fn = $1; sub(/\(\).*/, "", fn) }
    /^[[:space:]]*#/ { next }
    /(^|[;&|{!]|[$=]\(|(exec|env|nohup|then|do|else|timeout[[:space:]]+[0-9]+[smh]?)[[:space:]])[[:space:]]*(sbatch|scontrol|squeue|scancel|sacct)([[:space:]]|$)/ {
      print FILENAME ":" fn ": " $0
    }
  ' "$@"
}

# Where SLURM's commands may run outside the client, and why: inside a job (the job's side, which
# never loads the client) or as the embedded cluster's own tooling. FILE, or FILE:FUNCTION for a
# file that holds both sides.
slurm_exempt=(
  # The job's side: its batch shell, node steps and the scontrol shim a program calls.
  hpc_files/lib/hpc_job_node.bash hpc_files/lib/hpc_job_signals.bash
  # The interactive session's job side: the first node's shell and the watchdog step.
  hpc_files/lib/hpc_interactive.bash:hpc_interactive_setup hpc_files/lib/hpc_interactive.bash:hpc_interactive_watchdog
  # A task's or a follow-up job's own final state, in its batch shell.
  hpc_files/lib/hpc_followup.bash:hpc_followup_final_state
  # The sampler's and 'stack''s node step: SLURM's list of the job's processes on this node.
  hpc_files/lib/hpc_usage.bash:hpc_usage_job_pids
  # plai_cleanups' node job (cleanup_node.sh): which of the user's jobs still run there.
  plai_cleanups/hpc_cleanup.bash
  # The embedded cluster's tooling (local_cluster.sh) and its demo.
  hpc_files/lib/hpc_cluster.bash hpc_files/demo.sh
)

@test "the client's detector finds a SLURM command run as a command, and not the word in a message, a case label or a call through the client" {
  cat >"$tmp/calls.bash" <<'CODE'
f() {
  out=$(squeue -h -j 1 2>&1)
  cmd=(scancel 1)
  ( trap '' INT; exec sbatch x.sh )
  x=$(timeout 60 sacct -j 1) || true
  true && scontrol release 1
  y=$(hpc_slurm squeue -h)
  hpc_say "sbatch refused the job (scontrol show config); cancel it with: scancel 1"
  case $k in sbatch) ;; esac
  # squeue in a comment
  local command sbatch
}
CODE
  run slurm_calls "$tmp/calls.bash"
  assert_output "$tmp/calls.bash:f:   out=\$(squeue -h -j 1 2>&1)
$tmp/calls.bash:f:   cmd=(scancel 1)
$tmp/calls.bash:f:   ( trap '' INT; exec sbatch x.sh )
$tmp/calls.bash:f:   x=\$(timeout 60 sacct -j 1) || true
$tmp/calls.bash:f:   true && scontrol release 1"
}

@test "no login-side shipped Bash runs sbatch, scontrol, squeue, scancel or sacct but the client (hpc_slurm.bash); each exemption (the job's side, the embedded cluster) still runs one" {
  cd "$HPC_ROOT"
  local -a files
  local entry line where found
  mapfile -t files < <(shipped_bash)
  ((${#files[@]} > 20))
  found=$(slurm_calls "${files[@]}")
  while IFS= read -r line; do
    where=${line%%: *}
    [[ $where == hpc_files/lib/hpc_slurm.bash:* || " ${slurm_exempt[*]} " == *" ${where%%:*} "* ||
      " ${slurm_exempt[*]} " == *" $where "* ]] || printf '%s\n' "$line"
  done <<<"$found" >"$tmp/outside"
  assert_equal "$(cat "$tmp/outside")" ""
  for entry in "${slurm_exempt[@]}"; do
    [[ $entry == *:* ]] || entry+=:
    [[ $found == *"$entry"* ]] || fail "$entry runs no SLURM command any more: drop it from slurm_exempt"
  done
}

@test "sbatch's answer is read in one place: --parsable and the answer's 'ID;CLUSTER' split are written only in hpc_slurm.bash" {
  cd "$HPC_ROOT"
  local -a files
  mapfile -t files < <(shipped_bash)
  run grep -nE -e '--parsable|%%;\*\}' -- "${files[@]}"
  [[ $output == *hpc_files/lib/hpc_slurm.bash:* ]] || fail "the client reads no answer: $output"
  run grep -vE '^hpc_files/lib/hpc_slurm\.bash:|^[^:]+:[0-9]+:[[:space:]]*#' <<<"$output"
  assert_output ''
}

@test "SLURM's times have one reader (hpc_facts_seconds): a task that SLURM shows COMPLETING ended TIMEOUT when its RunTime reached its TimeLimit (D-H:M:S, H:M:S), CANCELLED before" {
  mkdir -p "$tmp/sc"
  # shellcheck disable=SC2016 # the stub's own variable
  printf '#!/usr/bin/env bash\nprintf "JobId=7 JobState=COMPLETING RunTime=%%s TimeLimit=%%s Nodes=1\\n" $HPC_TEST_TIMES\n' \
    >"$tmp/sc/scontrol"
  chmod +x "$tmp/sc/scontrol"
  local times want
  export PATH=$tmp/sc:$PATH SLURM_JOB_ID=7
  while IFS='|' read -r times want; do
    HPC_TEST_TIMES=$times run bash -c 'source "$HPC_ROOT/hpc_files/lib/hpc_common.bash"
      source "$HPC_ROOT/hpc_files/lib/hpc_followup.bash"
      hpc_followup_final_state 0 && printf "%s\n" "$hpc_followup_state"'
    assert_equal "$times -> $output" "$times -> $want"
  done <<'EOT'
00:10:00 00:10:00|TIMEOUT
1-00:00:00 1-00:00:00|TIMEOUT
00:09:59 00:10:00|CANCELLED
23:59:59 1-00:00:00|CANCELLED
EOT
}

@test "durations have one writer (hpc_facts_hms): H:MM:SS, hours beyond a day as they are; the format is written nowhere else" {
  source "$HPC_ROOT/hpc_files/lib/hpc_facts.bash"
  assert_equal "$(hpc_facts_hms 0) $(hpc_facts_hms 59) $(hpc_facts_hms 3661) $(hpc_facts_hms 90000)" \
    "0:00:00 0:00:59 1:01:01 25:00:00"
  cd "$HPC_ROOT"
  local -a files
  mapfile -t files < <(shipped_bash)
  run grep -nF -e '%d:%02d:%02d' -- "${files[@]}"
  assert_output --regexp '^hpc_files/lib/hpc_facts\.bash:[0-9]+:'
  assert_equal "${#lines[@]}" 1
}
