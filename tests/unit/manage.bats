#!/usr/bin/env bats
# The manifest of each submission and the commands that read it (status, logs, cancel, resubmit),
# without SLURM: a project installed with install.sh in a folder whose path has a space, SCRATCH
# in a temporary folder, and PATH stubs of squeue, sacct, scontrol, scancel and sbatch
# (tests/fixtures/manage/bin) that record their arguments in $HPC_STUB_LOG and answer from a
# table of jobs ($HPC_STUB_JOBS: 'SOURCE KEY JOBID STATE EXIT' per line, SOURCE being the command
# that knows the job). Manifests are written by the library itself (make_manifest) or by a real
# submission through job_submitter.sh.
# shellcheck disable=SC2016 # bash -c scripts in single quotes get their values as arguments, on purpose
# shellcheck disable=SC2030,SC2031 # each @test and make_manifest run in subshells: what they set stays there, on purpose

bats_require_minimum_version 1.5.0

# Set by hpc_manifest_expand_array and hpc_manifest_ranges (hpc_manifest_read.bash, loaded by
# their stubs); declared for shellcheck.
declare -g hpc_manifest_indices hpc_manifest_throttle hpc_manifest_ranges

setup_file() {
  load '../helpers/common'
  load '../helpers/submitter'
  # One project for the file (the commands only read it); the profiles compiled once for the run.
  hpc_test_warm_profiles
  export PROJECT="$BATS_FILE_TMPDIR/my project"
  cp -R "$HPC_TEST_PROJECT" "$PROJECT"
  printf 'python main.py --lr 0.1\n' >"$PROJECT/hpc_files/experiment_configurations.txt"
}

setup() {
  load '../helpers/common'
  load '../helpers/stub'
  tmp=$(hpc_test_tmp)
  submitter=$PROJECT/hpc_files/job_submitter.sh
  stub_log="$BATS_TEST_TMPDIR/stub log"
  mkdir -p "$stub_log" "$tmp/scratch"
  cp -R "$HPC_WARM_CACHE" "$tmp/cache"
  unset HPC_STUB_SQUEUE HPC_STUB_SACCT HPC_STUB_SBATCH HPC_STUB_JOB_ID HPC_STUB_MAX_ARRAY_SIZE
  export SCRATCH=$tmp/scratch HPC_CLUSTER=local HPC_CACHE_DIR=$tmp/cache HPC_STUB_LOG=$stub_log
  export HPC_STUB_JOBS=$tmp/jobs
  export PATH=$HPC_ROOT/tests/fixtures/manage/bin:$PATH
  outputs="$SCRATCH/my project/hpc_outputs"
  manifests=$outputs/manifests
  mkdir -p "$outputs"
  : >"$HPC_STUB_JOBS"
}

# manage ARGS...: runs a command of the submitter (status, logs, ...), stdout and stderr apart.
manage() {
  run --separate-stderr bash "$submitter" "$@" </dev/null
}

# calls COMMAND: how many times the stub COMMAND was called.
calls() {
  local n=0
  while [[ -e $stub_log/$1.$((n + 1)).args ]]; do n=$((n + 1)); done
  printf '%s\n' "$n"
}

# argv_of COMMAND N: sets the array argv to the arguments of the stub's N-th call (sbatch's
# submission tag apart, in sbatch_tag).
argv_of() {
  [[ -e $stub_log/$1.$2.args ]] || fail "$1 was not called $2 time(s)"
  mapfile -d '' argv <"$stub_log/$1.$2.args"
  # An sbatch call's last argument is the submission's tag (hpc_pending.bash): kept apart.
  sbatch_tag=''
  if [[ $1 == sbatch && ${argv[-1]-} == --comment=hpc-toolkit:* ]]; then
    sbatch_tag=${argv[-1]#--comment=}
    unset 'argv[-1]'
  fi
}

# slurm_plan NAME PATTERNS...: a plan-style stub of NAME (tests/helpers/stub.bash): one call
# expected for each PATTERNS, in order, each answered by the table-driven stand-in of
# tests/fixtures/manage/bin; any other call fails the test at unstub.
slurm_plan() {
  stub_through "$1" "$HPC_ROOT/tests/fixtures/manage/bin/$1" "${@:2}"
}

# slurm_jobs: the table of jobs the stubs know, from stdin.
slurm_jobs() {
  cat >"$HPC_STUB_JOBS"
}

# make_manifest EXP ID [ARRAY]: a submission of experiment EXP, job ID (an array job when ARRAY
# is given), recorded by the library as the submitter does, with its kept job script.
# shellcheck disable=SC2034 # the plan's fields, read by hpc_manifest_write
make_manifest() {
  local exp=$1 id=$2 array=${3-}
  (
    # Without bats' DEBUG trap (set -T hands it to this subshell), which ran before each command of
    # the three libraries and of the writing: 0.45 CPU-s a manifest with it, 0.05 s without. A
    # failure still fails the test, named at the line that called make_manifest.
    trap - DEBUG
    source "$HPC_ROOT/hpc_files/lib/hpc_common.bash"
    source "$HPC_ROOT/hpc_files/lib/hpc_manifest.bash"
    source "$HPC_ROOT/hpc_files/lib/hpc_plan.bash"
    hpc_plan_mode=single hpc_plan_requeue=0
    hpc_plan_source_dir=$PROJECT hpc_plan_project_name="my project"
    hpc_plan_scratch_dir="$SCRATCH/my project" hpc_plan_exp_name=$exp hpc_plan_kind=venv-none
    hpc_plan_cluster=local hpc_plan_launcher=none hpc_plan_runner=venv hpc_plan_nodes=1
    hpc_plan_ntasks_per_node=1 hpc_plan_cpus=1 hpc_plan_cpus_per_task=1 hpc_plan_gpus=0
    hpc_plan_mem=1G hpc_plan_time=00-00:10:00 hpc_plan_partition=debug hpc_plan_array=$array
    hpc_plan_job_name="my project-$exp"
    if [[ -n $array ]]; then
      hpc_plan_output=$outputs/${exp}_venv-none_%A_%a.out
    else
      hpc_plan_output=$outputs/${exp}_venv-none_%j.out
    fi
    hpc_plan_sbatch_args=(--job-name="$hpc_plan_job_name" --nodes=1 --ntasks-per-node=1
      --cpus-per-task=1 --mem=1G --time=00-00:10:00 --output="$hpc_plan_output" --chdir="$PROJECT"
      --signal=B:USR1@30 --no-requeue --open-mode=append --partition=debug)
    [[ -z $array ]] || hpc_plan_sbatch_args+=(--array="$array")
    hpc_plan_command=(python main.py --lr 0.1)
    hpc_submit_argv=(-y -g 0 -e "$exp")
    script=$outputs/${exp}_venv-none_$id.sh
    printf '#!/bin/bash\necho %s\n' "$exp" >"$script"
    hpc_manifest_write "$id" "$script"
  )
}

# row KEY: the status line of KEY (a job id or ARRAYID_TASK), its spaces squeezed.
row() {
  grep -E "^$1 " <<<"$output" | tr -s ' '
}

# ---------------------------------------------------------------------------------------------
# 1. The manifest

@test "manifest round trip: every value comes back exactly (spaces, quotes, \$, backslashes, newlines, tabs, unicode), nothing is evaluated" {
  cd "$tmp"
  run bash -c '
    set -euo pipefail
    source "$HPC_ROOT/hpc_files/lib/hpc_common.bash"
    source "$HPC_ROOT/hpc_files/lib/hpc_manifest.bash"
    source "$HPC_ROOT/hpc_files/lib/hpc_plan.bash"
    hpc_plan_mode=single
    tricky=(
      "plain" "with  two  spaces" "it'"'"'s \"quoted\"" "\$HOME and \${x:-y} and \$(touch pwned)"
      "back\\slash \\n \\t \\\\ \\c \\0101 \\x41 \\u00e9 %b %s"
      "line one
line two" "tab	inside" "carriage$(printf "\r")return" "ünïcödé — 日本語 🚀" "" "  " "trailing\\"
    )
    hpc_plan_source_dir="$PWD" hpc_plan_project_name="p r" hpc_plan_scratch_dir="$PWD/scr atch"
    hpc_plan_exp_name="ex" hpc_plan_kind=venv-none hpc_plan_cluster=local hpc_plan_launcher=none
    hpc_plan_runner=venv hpc_plan_nodes=1 hpc_plan_ntasks_per_node=1 hpc_plan_cpus=2
    hpc_plan_cpus_per_task=2 hpc_plan_gpus=0 hpc_plan_mem=1G hpc_plan_time=00:10:00
    hpc_plan_partition="${tricky[3]}" hpc_plan_account="${tricky[5]}" hpc_plan_array=0-3%2
    hpc_plan_output="$PWD/o %j_%A_%a.out" hpc_plan_job_name="p r-ex"
    hpc_plan_sbatch_args=("${tricky[@]}")
    hpc_plan_command=("${tricky[@]}" "\$LAST")
    hpc_submit_argv=("${tricky[@]}" -y)
    hpc_manifest_write 77 "$PWD/kept ${tricky[8]}.sh"
    file="$PWD/scr atch/hpc_outputs/manifests/ex_77.manifest"
    hpc_manifest_read "$file"
    fail() { printf "MISMATCH %s\n" "$1"; exit 1; }
    [[ ${hpc_mf[partition]} == "${tricky[3]}" ]] || fail partition
    [[ ${hpc_mf[account]} == "${tricky[5]}" ]] || fail account
    [[ ${hpc_mf[script]} == "$PWD/kept ${tricky[8]}.sh" ]] || fail script
    [[ ${hpc_mf[job_id]} == 77 && ${hpc_mf[origin]} == 77 && ${hpc_mf[array]} == 0-3%2 ]] || fail job
    [[ ${hpc_mf[mode]} == single && ${hpc_mf[exp_name]} == ex && ${hpc_mf[project]} == "p r" ]] || fail names
    [[ ${hpc_mf[output]} == "$PWD/o %j_%A_%a.out" ]] || fail output
    [[ ${hpc_mf[output_path]} == "$PWD/o %j_77_%a.out" ]] || fail output_path
    [[ ${hpc_mf[git_commit]} == "" && ${hpc_mf[git_dirty]} == "" ]] || fail git
    [[ "$(declare -p hpc_mf_sbatch)" == "$(declare -p hpc_plan_sbatch_args | sed "s/hpc_plan_sbatch_args/hpc_mf_sbatch/")" ]] || fail sbatch
    [[ "$(declare -p hpc_mf_command)" == "$(declare -p hpc_plan_command | sed "s/hpc_plan_command/hpc_mf_command/")" ]] || fail command
    [[ "$(declare -p hpc_mf_argv)" == "$(declare -p hpc_submit_argv | sed "s/hpc_submit_argv/hpc_mf_argv/")" ]] || fail argv
    # One line per value: the newlines of values are escaped.
    [[ $(grep -c "^sbatch	" "$file") == "${#tricky[@]}" ]] || fail lines
    # Written atomically: no temporary file is left beside it.
    [[ $(ls -A "${file%/*}") == ex_77.manifest ]] || fail leftovers
    echo ok
  '
  assert_output ok
  [ ! -e "$tmp/pwned" ]
}

@test "a real submission records its manifest: options, argv, sbatch options, command, kept script, output; no secret" {
  mkdir -p "$PROJECT/virtual_env/bin"
  : >"$PROJECT/virtual_env/bin/activate"
  (
    # shellcheck source=virtual_env_hpc_files/venv_runner.bash
    source "$PROJECT/hpc_files/virtual_env_hpc_files/venv_runner.bash"
    hpc_venv_expect "$PROJECT"
    printf '%s' "$hpc_venv_stamp" >"$PROJECT/virtual_env/.hpc_deps"
  )
  export WANDB_API_KEY=wandb-s3cret-key MY_TOKEN=t0ken-value DB_PASSWORD=pa55word
  # The fit check asks for the partitions: the embedded cluster's, as sinfo prints them.
  stub sinfo "-h -e -o %P|%D|%c|%m|%G : echo 'debug*|2|4|8000|gpu:2'"
  run --separate-stderr bash "$submitter" -y -g 1 -c 2 -e run.1 -t 01:00:00 </dev/null
  assert_equal "$status" 0
  unstub sinfo
  assert_line --index 0 --regexp '^Submitted job 5000 '
  file=$manifests/run.1_5000.manifest
  [ -f "$file" ]
  # Only the plan's values: no variable of the environment, no secret.
  run grep -rlE 'wandb-s3cret-key|t0ken-value|pa55word' "$SCRATCH"
  assert_output ''
  run grep -lE 'WANDB|TOKEN|PASSWORD|HOME' "$file"
  assert_output ''
  run grep -vcE '^(format|time|plan|project|source_dir|scratch_dir|exp_name|kind|cluster|launcher|runner|nodes|ntasks_per_node|cpus|cpus_per_task|gpus|gpu_type|mem|mem_per_gpu|time_limit|partition|account|requeue|signal|signal_lead|mode|array|job_name|outputs_dir|checkpoints_dir|venv|toolkit_dir|python_helpers|tmpdir_provided|tmpdir_root|image|container_workdir|container_lib|workdir|data_archive|label_ranks|num_processes|job_id|origin|script|output|output_path|git_commit|git_dirty|argv|setting|sbatch|command|offline_commands|copy_back|modules|token|end)	' "$file"
  assert_output 0
  run grep -E '^(exp_name|kind|cluster|nodes|cpus|cpus_per_task|gpus|mem|time_limit|partition|job_id|origin|script|output_path|git_dirty)	' "$file"
  assert_output "cluster	local
kind	venv-none
nodes	1
cpus	2
cpus_per_task	2
gpus	1
mem	1G
time_limit	01:00:00
partition	debug
exp_name	run.1
job_id	5000
origin	5000
script	$outputs/run.1_venv-none_5000.sh
output_path	$outputs/run.1_venv-none_5000.out
git_dirty	"
  assert_equal "$(sed -n 's/^argv\t//p' "$file")" "$(printf '%s\n' -y -g 1 -c 2 -e run.1 -t 01:00:00)"
  assert_equal "$(sed -n 's/^command\t//p' "$file")" "$(printf '%s\n' python main.py --lr 0.1)"
  # The sbatch options are those sbatch got (less --parsable); the kept script is what it ran.
  argv_of sbatch 1
  assert_equal "$(sed -n 's/^sbatch\t//p' "$file")" "$(printf '%s\n' "${argv[@]:1}")"
  assert_equal "$(<"$outputs/run.1_venv-none_5000.sh")" "$(<"$stub_log/sbatch.1.script")"
  # status reads it back.
  printf 'squeue 5000 5000 PENDING -\n' | slurm_jobs
  manage status
  assert_equal "$status" 0
  assert_equal "$(row 5000)" "5000 run.1 venv-none PENDING - $outputs/run.1_venv-none_5000.out"
}

@test "the manifest records the git commit and whether tracked files changed, with one git call; none outside a repository" {
  local repo="$tmp/repo" commit
  mkdir -p "$repo/sub dir"
  git -C "$repo" init -q
  printf 'a\n' >"$repo/tracked.txt"
  git -C "$repo" add tracked.txt
  git -C "$repo" -c user.name=t -c user.email=t@example.invalid commit -q -m one
  commit=$(git -C "$repo" rev-parse HEAD)
  printf 'x\n' >"$repo/untracked.txt"
  for case in "clean|$repo/sub dir|$commit|no" "dirty|$repo/sub dir|$commit|yes" "none|$tmp|"'|'; do
    IFS='|' read -r name dir want_commit want_dirty <<<"$case"
    [[ $name != dirty ]] || printf 'b\n' >>"$repo/tracked.txt"
    run bash -c '
      source "$HPC_ROOT/hpc_files/lib/hpc_manifest.bash"
      hpc_manifest_git "$1"
      printf "%s|%s\n" "$hpc_manifest_git_commit" "$hpc_manifest_git_dirty"' _ "$dir"
    assert_equal "$name: $output" "$name: $want_commit|$want_dirty"
  done
}

@test "array specs: expanded, throttle apart, and indices written back as ranges" {
  source "$HPC_ROOT/hpc_files/lib/hpc_common.bash"
  source "$HPC_ROOT/hpc_files/lib/hpc_manifest.bash"
  while IFS='|' read -r spec indices throttle ranges; do
    if [[ $indices == bad ]]; then
      run hpc_manifest_expand_array "$spec"
      assert_equal "$spec -> $status" "$spec -> 1"
      continue
    fi
    hpc_manifest_expand_array "$spec"
    assert_equal "$spec -> ${hpc_manifest_indices[*]}|$hpc_manifest_throttle" "$spec -> $indices|$throttle"
    hpc_manifest_ranges "${hpc_manifest_indices[@]}"
    assert_equal "$spec -> $hpc_manifest_ranges" "$spec -> $ranges"
  done <<'EOT'
1-4|1 2 3 4||1-4
0-3%2|0 1 2 3|2|0-3
2,4|2 4||2,4
7,1-3,2|1 2 3 7||1-3,7
0-10:5%1|0 5 10|1|0,5,10
5|5||5
|bad||
4-1|bad||
1-x|bad||
1-4%|bad||
1,,2|bad||
EOT
}

@test "MaxArraySize: an array with an index at or above it is refused (exit 2, one line) before sbatch; scontrol asked once" {
  slurm_plan scontrol 'show config'
  run --separate-stderr bash -c '
    source "$HPC_ROOT/hpc_files/lib/hpc_common.bash"
    source "$HPC_ROOT/hpc_files/lib/hpc_manifest.bash"
    hpc_program=job_submitter.sh
    hpc_manifest_check_array_size 1000 && echo "1000 from 0: ok"
    hpc_manifest_check_array_size 1 1001 && echo "1 from 1001: refused?"'
  assert_equal "$status" 2
  assert_equal "$output" "1000 from 0: ok"
  assert_equal "$stderr" "job_submitter.sh: --repeat/--num-sweeps: 1 tasks exceed this cluster's MaxArraySize 1001 (indices 0..1000)"
  unstub scontrol
  while IFS='|' read -r max count first want_status want_stderr; do
    HPC_STUB_MAX_ARRAY_SIZE=$max run --separate-stderr bash -c '
      source "$HPC_ROOT/hpc_files/lib/hpc_common.bash"
      source "$HPC_ROOT/hpc_files/lib/hpc_manifest.bash"
      hpc_program=job_submitter.sh
      hpc_manifest_check_array_size "$@"' _ "$count" ${first:+"$first"}
    assert_equal "$max $count $first -> $status|$stderr" "$max $count $first -> $want_status|$want_stderr"
  done <<'EOT'
1001|1002||2|job_submitter.sh: --repeat/--num-sweeps: 1002 tasks exceed this cluster's MaxArraySize 1001 (indices 0..1000)
1001|1001||0|
1001|1001|1|2|job_submitter.sh: --repeat/--num-sweeps: 1001 tasks exceed this cluster's MaxArraySize 1001 (indices 0..1000)
1001|1000|1|0|
1001|1000|0|0|
4|5||2|job_submitter.sh: --repeat/--num-sweeps: 5 tasks exceed this cluster's MaxArraySize 4 (indices 0..3)
4|4||0|
EOT
  # Without SLURM there is nothing to check against.
  mkdir -p "$tmp/no slurm"
  PATH="$tmp/no slurm" run /bin/bash -c '
    source "$HPC_ROOT/hpc_files/lib/hpc_common.bash"
    source "$HPC_ROOT/hpc_files/lib/hpc_manifest.bash"
    hpc_manifest_check_array_size 5000 && echo ok'
  assert_output ok
}

@test "MaxArraySize through the submitter: --repeat over it is refused before anything is submitted" {
  grep -q -- '--repeat)' "$HPC_ROOT/hpc_files/lib/hpc_options.bash" || skip "--repeat is not in this version"
  stub sbatch
  HPC_STUB_MAX_ARRAY_SIZE=8 run --separate-stderr bash "$submitter" -y -g 0 --repeat 9 </dev/null
  unstub sbatch
  assert_equal "$status" 2
  assert_equal "$stderr" "job_submitter.sh: --repeat/--num-sweeps: 9 tasks exceed this cluster's MaxArraySize 8 (indices 0..7)"
  [ ! -e "$manifests" ]
}

# ---------------------------------------------------------------------------------------------
# 2. status

@test "status: state from squeue, then sacct, then scontrol, else UNKNOWN; array tasks one per line; each source asked once" {
  make_manifest e 100
  make_manifest e 101
  make_manifest f 102
  make_manifest g 103
  make_manifest arr 200 1-4%2
  slurm_jobs <<'EOT'
squeue 100 100 RUNNING -
sacct 100 100 COMPLETED 0:0
scontrol 100 100 COMPLETED 0:0
sacct 101 101 FAILED 2:0
scontrol 101 101 COMPLETED 0:0
scontrol 102 102 TIMEOUT 0:15
squeue 200_1 201 RUNNING -
sacct 200_2 202 CANCELLED+by+0 0:15
scontrol 200_2 202 COMPLETED 0:0
scontrol 200_3 203 NODE_FAIL 0:0
EOT
  # Each source once, asked only about what the ones before did not answer.
  slurm_plan squeue '-h -r -j 100,101,102,103,200 -o %A|%F|%K|%T|%r'
  # sacct: this user's jobs only (job ids come again after a reset of the controller's state).
  slurm_plan sacct "-n -P -X -u $(id -un) -j 101,102,103,200 -o JobID,JobIDRaw,State,ExitCode"
  slurm_plan scontrol '-o show job'
  manage status
  unstub squeue
  unstub sacct
  unstub scontrol
  assert_equal "$status" 0
  assert_equal "$stderr" ""
  assert_equal "${#lines[@]}" 9
  assert_equal "$(tr -s ' ' <<<"${lines[0]}")" "JOB EXP KIND STATE EXIT OUTPUT"
  assert_equal "$(row 100)" "100 e venv-none RUNNING - $outputs/e_venv-none_100.out"
  assert_equal "$(row 101)" "101 e venv-none FAILED 2:0 $outputs/e_venv-none_101.out"
  assert_equal "$(row 102)" "102 f venv-none TIMEOUT 0:15 $outputs/f_venv-none_102.out"
  assert_equal "$(row 103)" "103 g venv-none UNKNOWN (forgotten by SLURM) - $outputs/g_venv-none_103.out"
  assert_equal "$(row 200_1)" "200_1 arr venv-none RUNNING - $outputs/arr_venv-none_200_1.out"
  assert_equal "$(row 200_2)" "200_2 arr venv-none CANCELLED 0:15 $outputs/arr_venv-none_200_2.out"
  assert_equal "$(row 200_3)" "200_3 arr venv-none NODE_FAIL 0:0 $outputs/arr_venv-none_200_3.out"
  assert_equal "$(row 200_4)" "200_4 arr venv-none UNKNOWN (forgotten by SLURM) - $outputs/arr_venv-none_200_4.out"
  # Rows in submission order; columns aligned.
  assert_equal "$(cut -d' ' -f1 <<<"$output" | tr '\n' ' ')" "JOB 100 101 102 103 200_1 200_2 200_3 200_4 "

  # No accounting (sacct fails, as on the local cluster): scontrol answers for 101 and 200_2.
  export HPC_STUB_SACCT=fail
  manage status e
  assert_equal "$status" 0
  assert_equal "${#lines[@]}" 3
  assert_equal "$(row 100)" "100 e venv-none RUNNING - $outputs/e_venv-none_100.out"
  assert_equal "$(row 101)" "101 e venv-none COMPLETED 0:0 $outputs/e_venv-none_101.out"
  manage status arr
  assert_equal "$(row 200_2)" "200_2 arr venv-none COMPLETED 0:0 $outputs/arr_venv-none_200_2.out"
  # One job left to ask scontrol about: asked by its id.
  slurm_plan squeue '-h -r -j 102 -o %A|%F|%K|%T|%r'
  slurm_plan sacct "-n -P -X -u $(id -un) -j 102 -o JobID,JobIDRaw,State,ExitCode"
  slurm_plan scontrol '-o show job 102'
  manage status f
  unstub squeue
  unstub sacct
  unstub scontrol
  assert_equal "$(row 102)" "102 f venv-none TIMEOUT 0:15 $outputs/f_venv-none_102.out"

  # Once SLURM forgets them (squeue: invalid job id), the ended states seen are kept; the last
  # one seen wins; a job never seen ended is unknown.
  : >"$HPC_STUB_JOBS"
  manage status
  assert_equal "$status" 0
  assert_equal "$(row 100)" "100 e venv-none UNKNOWN (forgotten by SLURM) - $outputs/e_venv-none_100.out"
  assert_equal "$(row 101)" "101 e venv-none COMPLETED 0:0 $outputs/e_venv-none_101.out"
  assert_equal "$(row 102)" "102 f venv-none TIMEOUT 0:15 $outputs/f_venv-none_102.out"
  assert_equal "$(row 200_1)" "200_1 arr venv-none UNKNOWN (forgotten by SLURM) - $outputs/arr_venv-none_200_1.out"
  assert_equal "$(row 200_2)" "200_2 arr venv-none COMPLETED 0:0 $outputs/arr_venv-none_200_2.out"
  assert_equal "$(row 200_3)" "200_3 arr venv-none NODE_FAIL 0:0 $outputs/arr_venv-none_200_3.out"
}

@test "status: a job SLURM requeued (PENDING, BeginTime, Restarts>0; or REQUEUED) says requeued and when it restarts" {
  make_manifest e 700
  make_manifest e 701
  make_manifest arr 702 0-1
  slurm_jobs <<'EOT'
squeue 700 700 PENDING/BeginTime -
scontrol 700 700 PENDING/BeginTime 0:0
squeue 701 701 PENDING/BeginTime -
scontrol 701 701 PENDING/BeginTime 0:0
squeue 702_0 703 REQUEUED -
scontrol 702_0 703 REQUEUED 0:0
squeue 702_1 702 RUNNING -
EOT
  # The requeued jobs (what SLURM 22.05 shows during its 120 s requeue delay).
  export HPC_STUB_SCONTROL_EXTRA="Requeue=1 Restarts=1 SubmitTime=2030-01-01T12:00:00 EligibleTime=2030-01-01T12:02:01 StartTime=2030-01-01T12:02:01"
  slurm_plan scontrol '-o show job 700'
  manage status 700
  unstub scontrol
  assert_equal "$status" 0
  assert_equal "$(row 700)" "700 e venv-none PENDING (requeued, restarts at 2030-01-01T12:02:01) - $outputs/e_venv-none_700.out"
  # An array task is asked about by its own job id.
  slurm_plan scontrol '-o show job 703'
  manage status arr
  unstub scontrol
  assert_equal "$(row 702_0)" "702_0 arr venv-none REQUEUED (requeued, restarts at 2030-01-01T12:02:01) - $outputs/arr_venv-none_702_0.out"
  assert_equal "$(row 702_1)" "702_1 arr venv-none RUNNING - $outputs/arr_venv-none_702_1.out"
  # Its start time not known yet: the eligible time; neither: requeued alone.
  export HPC_STUB_SCONTROL_EXTRA="Restarts=2 EligibleTime=2030-01-01T12:02:01 StartTime=Unknown"
  manage status 700
  assert_equal "$(row 700)" "700 e venv-none PENDING (requeued, restarts at 2030-01-01T12:02:01) - $outputs/e_venv-none_700.out"
  export HPC_STUB_SCONTROL_EXTRA="Restarts=2 EligibleTime=Unknown StartTime=Unknown"
  manage status 700
  assert_equal "$(row 700)" "700 e venv-none PENDING (requeued) - $outputs/e_venv-none_700.out"
  # Pending for its --begin time, never restarted: plain PENDING.
  export HPC_STUB_SCONTROL_EXTRA="Restarts=0 EligibleTime=2030-01-01T12:02:01 StartTime=2030-01-01T12:02:01"
  manage status 701
  assert_equal "$(row 701)" "701 e venv-none PENDING - $outputs/e_venv-none_701.out"
  # A plain pending job: scontrol is not asked.
  printf 'squeue 700 700 PENDING -\n' | slurm_jobs
  stub scontrol
  manage status 700
  unstub scontrol
  assert_equal "$(row 700)" "700 e venv-none PENDING - $outputs/e_venv-none_700.out"
}

@test "status: an array task's %j is its own job id; a pending array's tasks each get a line; a job or task alone" {
  make_manifest arr 300 1-3
  # An array whose output names the task's own job id.
  sed -i 's/^output\t\(.*\)_%A_%a\.out$/output\t\1_%j.out/' "$manifests/arr_300.manifest"
  slurm_jobs <<'EOT'
squeue 300_1 301 RUNNING -
squeue 300_2 300 PENDING -
squeue 300_3 300 PENDING -
EOT
  manage status arr
  assert_equal "$status" 0
  assert_equal "$(row 300_1)" "300_1 arr venv-none RUNNING - $outputs/arr_venv-none_301.out"
  assert_equal "$(row 300_2)" "300_2 arr venv-none PENDING - $outputs/arr_venv-none_300.out"
  manage status 300_3
  assert_equal "${#lines[@]}" 2
  assert_equal "$(row 300_3)" "300_3 arr venv-none PENDING - $outputs/arr_venv-none_300.out"
}

@test "status: a job whose log says a --copy-back path was found on no node gets a line saying so" {
  make_manifest e 110
  make_manifest e 111
  slurm_jobs <<'EOT'
scontrol 110 110 COMPLETED 0:0
scontrol 111 111 COMPLETED 0:0
EOT
  printf '%s\n' 'EPOCH 1' '[hpc n1] copy-back WARNING: snapshot.pt was found on none of the 2 node(s): nothing was copied back for it' >"$outputs/e_venv-none_110.out"
  printf '%s\n' 'EPOCH 1' '[hpc n1] copied back to /x: snapshot.pt' >"$outputs/e_venv-none_111.out"
  manage status e
  assert_equal "$status" 0
  assert_equal "${#lines[@]}" 4
  assert_equal "$(row 110)" "110 e venv-none COMPLETED 0:0 $outputs/e_venv-none_110.out"
  assert_equal "${lines[3]}" "110: copy-back WARNING: snapshot.pt was found on none of the 2 node(s): nothing was copied back for it"
}

@test "status: a job that stopped at the time-limit warning (FAILED 138:0) gets a line saying so; a crash does not" {
  make_manifest e 120
  make_manifest e 121
  slurm_jobs <<'EOT'
scontrol 120 120 FAILED 138:0
scontrol 121 121 FAILED 1:0
EOT
  printf '%s\n' '[hpc n1] job 120 (venv, launcher none) on n1: 1 node(s) x 0 GPU(s), restart 0' 'SAVED' \
    '[hpc n1] stopped at the time-limit warning (SIGUSR1): the program exited with 138 (128+SIGUSR1) after 41.000 s; whether it saved its work, its own lines above say' \
    >"$outputs/e_venv-none_120.out"
  printf '%s\n' '[hpc n1] job 121 (venv, launcher none) on n1: 1 node(s) x 0 GPU(s), restart 0' \
    '[hpc n1] the program failed with exit status 1 after 2.000 s' >"$outputs/e_venv-none_121.out"
  manage status e
  assert_equal "$status" 0
  assert_equal "${#lines[@]}" 4
  assert_equal "$(row 120)" "120 e venv-none FAILED 138:0 $outputs/e_venv-none_120.out"
  assert_equal "$(row 121)" "121 e venv-none FAILED 1:0 $outputs/e_venv-none_121.out"
  assert_equal "${lines[3]}" "120: stopped at the time-limit warning (SIGUSR1): the program exited with 138 (128+SIGUSR1) after 41.000 s; whether it saved its work, its own lines above say"
}

@test "status: a job SLURM has forgotten takes its state from its own log (finished, failed, ended by scancel or the time limit, a failed step); a log that says nothing leaves it UNKNOWN" {
  local id
  for id in 130 131 132 133 134 135 136 137; do make_manifest e "$id"; done
  : >"$HPC_STUB_JOBS"
  log() { printf '%s\n' "[hpc n1] job $1 (venv, launcher none) on n1: 1 node(s) x 0 GPU(s), restart 0" "${@:2}" >"$outputs/e_venv-none_$1.out"; }
  log 130 'epoch 1' '[hpc n1] the program finished successfully after 12.000 s'
  log 131 '[hpc n1] the program failed with exit status 3 after 2.000 s'
  log 132 '[hpc n1] received SIGTERM; passing it to the program' \
    '[hpc n1] the program was ended by SLURM (SIGTERM: scancel, a requeue or preemption) after 5.000 s, exit status 143'
  log 133 '[hpc n1] the program was ended by SLURM (SIGTERM: the time limit) after 600.000 s, exit status 143'
  log 134 '[hpc n1] the program finished successfully after 1.000 s' "[hpc n1] FAILED at step 'copy-back': see above"
  log 135 'training...'
  # A log that is a link (to a finished job's), or that another user wrote, says nothing.
  ln -s "$outputs/e_venv-none_130.out" "$outputs/e_venv-none_136.out"
  log 137 '[hpc n1] the program finished successfully after 1.000 s'
  chown nobody "$outputs/e_venv-none_137.out"
  manage status e
  assert_equal "$status" 0
  local forgot='(from its log; SLURM has forgotten it)'
  assert_equal "$(row 130)" "130 e venv-none COMPLETED $forgot 0 $outputs/e_venv-none_130.out"
  assert_equal "$(row 131)" "131 e venv-none FAILED $forgot 3 $outputs/e_venv-none_131.out"
  assert_equal "$(row 132)" "132 e venv-none CANCELLED $forgot - $outputs/e_venv-none_132.out"
  assert_equal "$(row 133)" "133 e venv-none TIMEOUT $forgot - $outputs/e_venv-none_133.out"
  assert_equal "$(row 134)" "134 e venv-none FAILED $forgot - $outputs/e_venv-none_134.out"
  assert_equal "$(row 135)" "135 e venv-none UNKNOWN (forgotten by SLURM) - $outputs/e_venv-none_135.out"
  assert_equal "$(row 136)" "136 e venv-none UNKNOWN (forgotten by SLURM) - $outputs/e_venv-none_136.out"
  assert_equal "$(row 137)" "137 e venv-none UNKNOWN (forgotten by SLURM) - $outputs/e_venv-none_137.out"
}

@test "status: no submission yet says so (exit 0); SLURM unreachable is a failure (exit 1)" {
  manage status
  assert_equal "$status" 0
  assert_output "No submission of project my project is recorded (in $manifests)."
  assert_equal "$(calls squeue)" 0
  make_manifest e 100
  HPC_STUB_SQUEUE=fail manage status
  assert_equal "$status" 1
  assert_equal "$stderr" "job_submitter.sh: squeue failed: squeue: error: Unable to contact slurm controller (connect failure)"
}

# ---------------------------------------------------------------------------------------------
# 3. logs

@test "logs: the newest job of the experiment, a given job, an array task, every task; --follow follows" {
  make_manifest e 300
  make_manifest e 310
  make_manifest f 320
  make_manifest arr 400 1-2
  printf 'old run\n' >"$outputs/e_venv-none_300.out"
  printf 'new run\nsecond line\n' >"$outputs/e_venv-none_310.out"
  printf 'other experiment\n' >"$outputs/f_venv-none_320.out"
  printf 'task one\n' >"$outputs/arr_venv-none_400_1.out"
  printf 'task two\n' >"$outputs/arr_venv-none_400_2.out"
  manage logs e
  assert_equal "$status" 0
  assert_output "new run
second line"
  manage logs 300
  assert_output "old run"
  manage logs 400_2
  assert_output "task two"
  manage logs arr
  assert_output "==> $outputs/arr_venv-none_400_1.out <==
task one
==> $outputs/arr_venv-none_400_2.out <==
task two"
  # None of these needed SLURM: the outputs are named by %j of a job, or %A_%a.
  assert_equal "$(calls squeue)" 0
  # --follow: tail -F from the first line, until stopped: still running once both lines are out
  # (waited for, not a fixed 2 s, which a loaded machine spent before the first line).
  local follow_out=$BATS_TEST_TMPDIR/follow.out follow_pid polls
  timeout 120 bash "$submitter" logs e --follow >"$follow_out" 2>&1 &
  follow_pid=$!
  for ((polls = 0; polls < 600; polls++)); do
    (($(wc -l <"$follow_out") < 2)) || break
    sleep 0.2
  done
  sleep 1
  kill -0 "$follow_pid" || fail "logs --follow ended by itself: $(cat "$follow_out")"
  kill "$follow_pid"
  wait "$follow_pid" || true
  assert_equal "$(cat "$follow_out")" "new run
second line"
  # No output yet.
  make_manifest e 330
  manage logs e
  assert_equal "$status" 1
  assert_equal "$stderr" "job_submitter.sh: no output yet: $outputs/e_venv-none_330.out"
}

# ---------------------------------------------------------------------------------------------
# 4. cancel

@test "cancel: only the recorded jobs still pending or running, one scancel; says what it cancelled" {
  make_manifest e 500
  make_manifest e 501
  make_manifest e 502 1-2
  make_manifest e 503 1-3
  make_manifest other 504
  slurm_jobs <<'EOT'
squeue 500 500 RUNNING -
scontrol 501 501 COMPLETED 0:0
squeue 502_1 502 PENDING -
squeue 502_2 502 PENDING -
scontrol 503_1 505 FAILED 1:0
squeue 503_2 506 RUNNING -
squeue 503_3 503 PENDING -
squeue 504 504 RUNNING -
squeue 999 999 RUNNING -
EOT
  # One scancel per command: a whole array by its id; some of an array's tasks one by one; never
  # another experiment's job. Then a job id, and an array task.
  stub scancel '500 502 503_2 503_3' '504' '502_2'
  manage cancel e
  assert_equal "$status" 0
  assert_equal "$stderr" ""
  assert_output "cancelled 500 (e, was RUNNING)
cancelled 502_1 (e, was PENDING)
cancelled 502_2 (e, was PENDING)
cancelled 503_2 (e, was RUNNING)
cancelled 503_3 (e, was PENDING)"

  manage cancel 504
  assert_output "cancelled 504 (other, was RUNNING)"
  manage cancel 502_2
  assert_output "cancelled 502_2 (e, was PENDING)"

  # Nothing running: says so, exit 0, no scancel (the plan has no fourth call).
  manage cancel 501
  assert_equal "$status" 0
  assert_output "Nothing to cancel: no recorded job of 501 is pending or running."
  unstub scancel
}

# ---------------------------------------------------------------------------------------------
# 4b. Submissions that stopped on the way (hpc_pending.bash)

# ready_venv: the project's venv, current: a submission goes straight to sbatch.
ready_venv() {
  mkdir -p "$PROJECT/virtual_env/bin"
  : >"$PROJECT/virtual_env/bin/activate"
  (
    # shellcheck source=virtual_env_hpc_files/venv_runner.bash
    source "$PROJECT/hpc_files/virtual_env_hpc_files/venv_runner.bash"
    hpc_venv_expect "$PROJECT"
    printf '%s' "$hpc_venv_stamp" >"$PROJECT/virtual_env/.hpc_deps"
  )
}

# records: the names of the submissions' records that have not ended, one per line.
records() {
  local f
  for f in "$outputs"/submissions/*; do
    [[ ! -s $f || $(head -n 1 "$f") == ended ]] || printf '%s\n' "${f##*/}"
  done
}

# killed_map EXP N: submits a map of 10 items over a MaxArraySize of 4 (three held arrays) with a
# gather, its submitter killed (SIGKILL) once sbatch has accepted the N-th job; sets tag to the
# submission's tag.
killed_map() {
  printf 'item%s\n' 0 1 2 3 4 5 6 7 8 9 >"$tmp/items.txt"
  HPC_STUB_MAX_ARRAY_SIZE=4 HPC_STUB_SBATCH_KILL_AT=$2 run --separate-stderr bash "$submitter" -y -g 0 -e "$1" \
    --map-over "$tmp/items.txt" --gather 'python gather.py' </dev/null
  assert_equal "$status" 137
  argv_of sbatch "$2"
  tag=$sbatch_tag
  [[ $tag == hpc-toolkit:* ]] || fail "sbatch $2 has no tag"
}

@test "a submission is recorded before its first sbatch and every sbatch carries its tag; the record goes once the job is recorded, and when sbatch refuses" {
  ready_venv
  export HPC_STUB_PENDING_DIR=$outputs/submissions
  stub sinfo "-h -e -o %P|%D|%c|%m|%G : echo 'debug*|2|4|8000|gpu:2'"
  run --separate-stderr bash "$submitter" -y -g 0 -e tagged </dev/null
  assert_equal "$status" 0
  unstub sinfo
  argv_of sbatch 1
  [[ $sbatch_tag =~ ^hpc-toolkit:[0-9]+\.[0-9]+\.[0-9]+$ ]] || fail "no tag: $sbatch_tag"
  local single=$sbatch_tag
  # While sbatch ran, the record was there, named by the tag.
  assert_equal "$(cat "$stub_log/sbatch.1.pending")" "${single#hpc-toolkit:}"
  assert_equal "$(records)" ""
  # A map: three held arrays and a gather, one tag on all four; released, and the record gone.
  printf 'item%s\n' 0 1 2 3 4 5 6 7 8 9 >"$tmp/items.txt"
  HPC_STUB_MAX_ARRAY_SIZE=4 run --separate-stderr bash "$submitter" -y -g 0 -e mapped --map-over "$tmp/items.txt" --gather 'python gather.py' </dev/null
  assert_equal "$status" 0
  local n first=''
  for n in 2 3 4 5; do
    argv_of sbatch "$n"
    [[ -n $sbatch_tag && $sbatch_tag != "$single" ]] || fail "sbatch $n: tag '$sbatch_tag'"
    first=${first:-$sbatch_tag}
    assert_equal "$sbatch_tag" "$first"
    assert_equal "$(cat "$stub_log/sbatch.$n.pending")" "${first#hpc-toolkit:}"
  done
  assert_equal "$(records)" ""
  # sbatch refusing: nothing submitted, no record left.
  HPC_STUB_SBATCH=refuse run --separate-stderr bash "$submitter" -y -g 0 -e refused </dev/null
  assert_equal "$status" 1
  assert_equal "$(records)" ""
}

@test "an sbatch whose answer was lost (a socket timeout after SLURM took the job): the submission fails, its record stays, and status lists the job SLURM holds by its tag; a map undone so keeps it too" {
  ready_venv
  stub sinfo "-h -e -o %P|%D|%c|%m|%G : echo 'debug*|2|4|8000|gpu:2'"
  HPC_STUB_SBATCH_LOST=1 manage -y -g 0 -e lost
  unstub sinfo
  assert_equal "$status" 1
  assert_equal "$stderr" "job_submitter.sh: sbatch refused the job: sbatch: error: Batch job submission failed: Socket timed out on send/recv operation
job_submitter.sh: an sbatch's answer was lost: if SLURM took its job all the same, 'bash job_submitter.sh status' lists it"
  argv_of sbatch 1
  local tag=$sbatch_tag
  assert_equal "$(records)" "${tag#hpc-toolkit:}"
  slurm_jobs <<EOT
squeue 5000 5000 PENDING - $tag
EOT
  manage status lost
  assert_equal "$status" 0
  assert_line --partial "SLURM still holds 5000"
  # A map whose gather's answer was lost: the array is cancelled, the record stays for the gather.
  printf 'item%s\n' 0 1 >"$tmp/items.txt"
  HPC_STUB_MAX_ARRAY_SIZE=10 HPC_STUB_SBATCH_LOST=3 manage -y -g 0 -e lostmap --map-over "$tmp/items.txt" \
    --gather 'python gather.py'
  assert_equal "$status" 1
  argv_of sbatch 3
  records | grep -qxF "${sbatch_tag#hpc-toolkit:}" || fail "no record of the map: $(records)"
}

@test "a map's submitter killed after its second array: status names the held arrays and the unrecorded one, cancel EXP cancels all three in one scancel and its record goes" {
  ready_venv
  stub sinfo "-h -e -o %P|%D|%c|%m|%G : echo 'debug*|2|4|8000|gpu:2'"
  killed_map m 3
  unstub sinfo
  # Two arrays have manifests (held: the map was never released), the third has none.
  [ -f "$manifests/m_5000.manifest" ] && [ -f "$manifests/m_5001.manifest" ] && [ ! -e "$manifests/m_5002.manifest" ]
  assert_equal "$(records)" "${tag#hpc-toolkit:}"
  slurm_jobs <<EOT
squeue 5000_0 5000 PENDING/JobHeldUser - $tag
squeue 5000_1 5000 PENDING/JobHeldUser - $tag
squeue 5000_2 5000 PENDING/JobHeldUser - $tag
squeue 5000_3 5000 PENDING/JobHeldUser - $tag
squeue 5001_0 5001 PENDING/JobHeldUser - $tag
squeue 5001_1 5001 PENDING/JobHeldUser - $tag
squeue 5001_2 5001 PENDING/JobHeldUser - $tag
squeue 5001_3 5001 PENDING/JobHeldUser - $tag
squeue 5002_0 5002 PENDING/JobHeldUser - $tag
squeue 5002_1 5002 PENDING/JobHeldUser - $tag
squeue 4000 4000 RUNNING - hpc-toolkit:1.2.3
EOT
  manage status m
  assert_equal "$status" 0
  assert_equal "$(row 5002_0)" "5002_0 m unrecorded PENDING (JobHeldUser) - -"
  assert_line --regexp "^m: a submission stopped before it had recorded and released its jobs \(pid [0-9]+ on ${HOSTNAME}, [0-9-]+ [0-9:]+\): SLURM still holds 5000_0 5001_0 5002_0; cancel them with: bash job_submitter.sh cancel m$"
  # Every experiment's status too; a job with another submission's tag is not this one's.
  manage status
  assert_line --partial "SLURM still holds 5000_0 5001_0 5002_0"
  refute_output --partial 4000
  # Each sbatch it started is in its record (a job may reach SLURM after its submitter died).
  assert_equal "$(grep -c '^sbatch=' "$outputs/submissions/${tag#hpc-toolkit:}")" 3
  # One scancel: the unrecorded array and both recorded ones.
  stub scancel '5002 5000 5001'
  manage cancel m
  assert_equal "$status" 0
  unstub scancel
  assert_line "cancelled 5002_0 (m, was PENDING (JobHeldUser); not recorded: its submission stopped first)"
  assert_line "cancelled 5000_3 (m, was PENDING)"
  # Its last sbatch started seconds ago: the record stays until no job of it can come.
  assert_equal "$(records)" "${tag#hpc-toolkit:}"
  : | slurm_jobs
  hpc_pending_settle_s=0 manage cancel m
  assert_output "Nothing to cancel: no recorded job of m is pending or running."
  assert_equal "$(records)" ""
}

@test "a job that reaches SLURM after its submitter died (sbatch still answering when cancel ran): the record stays, status says a job may come, then names it; cancel cancels it" {
  local record=$outputs/submissions/100.1.1
  mkdir -p "$outputs/submissions"
  # A dead process; its sbatch started just now.
  printf 'exp=late\nhost=%s\npid=999999999\nstart=1\ntime=%s\nsbatch=%s\n' "$HOSTNAME" "$(date +%s)" "$(date +%s)" >"$record"
  chmod 600 "$record"
  manage cancel late
  assert_equal "$status" 0
  assert_output "Nothing to cancel: no recorded job of late is pending or running."
  [ -f "$record" ]
  manage status late
  assert_line --regexp "^late: a submission stopped \(pid 999999999 on .*\) while an sbatch of it may still be answering; status late shows its job if one comes$"
  # The job comes.
  printf 'squeue 7000 7000 PENDING/JobHeldUser - hpc-toolkit:100.1.1\n' | slurm_jobs
  manage status late
  assert_equal "$(row 7000)" "7000 late unrecorded PENDING (JobHeldUser) - -"
  stub scancel '7000'
  manage cancel late
  unstub scancel
  assert_line --partial "cancelled 7000 (late,"
}

@test "records read safely: numbers with leading zeros are decimal, only the user's own files, 4 KiB of one at most, names as the toolkit makes them" {
  mkdir -p "$outputs/submissions"
  printf 'exp=zeros\nhost=elsewhere\npid=0042\nstart=\ntime=0999\n' >"$outputs/submissions/0999.2.2"
  chmod 600 "$outputs/submissions/0999.2.2"
  printf 'squeue 7100 7100 PENDING/JobHeldUser - hpc-toolkit:0999.2.2\n' | slurm_jobs
  manage status zeros
  assert_equal "$status" 0
  assert_equal "$stderr" ""
  assert_line --regexp "^zeros: a submission stopped before it had recorded and released its jobs \(pid 42 on elsewhere, 1970-01-01 [0-9:]+\): SLURM still holds 7100; "
  # Another user's file, a name the toolkit does not make: not read (the experiments are unknown).
  printf 'exp=theirs\nhost=elsewhere\npid=1\nstart=\ntime=1\n' >"$outputs/submissions/1.1.1"
  chmod 600 "$outputs/submissions/1.1.1"
  chown 12345 "$outputs/submissions/1.1.1"
  printf 'exp=named\nhost=elsewhere\npid=1\nstart=\ntime=1\n' >"$outputs/submissions/x\$(id)"
  chmod 600 "$outputs/submissions/x\$(id)"
  manage status theirs
  assert_equal "$status" 2
  manage status named
  assert_equal "$status" 2
  # A huge file of the user's own: read 4 KiB of it, at once.
  head -c 50000000 /dev/zero | tr '\0' a >"$outputs/submissions/2.2.2"
  chmod 600 "$outputs/submissions/2.2.2"
  run timeout "$HPC_TEST_HANG_S" bash "$submitter" status zeros
  assert_success
}

@test "the next submission of EXP names what a stopped one left and submits; a stopped submission that left nothing loses its record; no record, no squeue" {
  ready_venv
  stub sinfo "-h -e -o %P|%D|%c|%m|%G : echo 'debug*|2|4|8000|gpu:2'"
  killed_map again 2
  unstub sinfo
  printf 'squeue 5001 5001 PENDING/JobHeldUser - %s\nsqueue 5000_0 5000 PENDING/JobHeldUser - %s\n' "$tag" "$tag" | slurm_jobs
  run --separate-stderr bash "$submitter" -y -g 0 -e again </dev/null
  assert_equal "$status: $stderr" "0: $stderr"
  assert_line --index 0 --regexp '^Submitted job 5002 '
  assert_regex "$stderr" "^job_submitter.sh: warning: an earlier submission of again stopped before it had recorded and released its jobs \(pid [0-9]+ on ${HOSTNAME}, [^)]*\); SLURM still holds 5000_0 5001: see them with 'bash job_submitter.sh status again', cancel them with 'bash job_submitter.sh cancel again'$"
  assert_equal "$(calls squeue)" 1
  # Still there: warned of again, and kept.
  assert_equal "$(records)" "${tag#hpc-toolkit:}"
  # Once SLURM has none of its jobs and none can come (its last sbatch long answered: here at
  # once), the next submission removes the record, silently.
  : | slurm_jobs
  hpc_pending_settle_s=0 run --separate-stderr bash "$submitter" -y -g 0 -e again </dev/null
  assert_equal "$status" 0
  assert_equal "$stderr" ""
  assert_equal "$(records)" ""
  assert_equal "$(calls squeue)" 2
  # No record: squeue is not asked at all.
  run --separate-stderr bash "$submitter" -y -g 0 -e again </dev/null
  assert_equal "$(calls squeue)" 2
}

@test "ended submissions' records are marked without a process and removed in batches: 32 ended ones go at the next submission; one being written (empty) and one of a running submission stay" {
  ready_venv
  mkdir -p "$outputs/submissions"
  local i
  for i in $(seq 1 32); do printf 'ended\n' >"$outputs/submissions/old$i"; done
  : >"$outputs/submissions/young"
  printf 'exp=other\nhost=elsewhere\npid=1\nstart=1\ntime=%s\n' "$(date +%s)" >"$outputs/submissions/running"
  chmod 600 "$outputs/submissions/running"
  stub sinfo "-h -e -o %P|%D|%c|%m|%G : echo 'debug*|2|4|8000|gpu:2'"
  run --separate-stderr bash "$submitter" -y -g 0 -e swept </dev/null
  assert_equal "$status" 0
  unstub sinfo
  run ls "$outputs/submissions"
  assert_equal "$(grep -c '^old' <<<"$output")" 0
  assert_line young
  assert_line running
  # And the new submission's own record, ended.
  assert_equal "${#lines[@]}" 3
  assert_equal "$(calls squeue)" 0
  # Fewer than 32 ended: none is removed (no process).
  run --separate-stderr bash "$submitter" -y -g 0 -e swept </dev/null
  run ls "$outputs/submissions"
  assert_equal "${#lines[@]}" 4
}

@test "an experiment known only by a stopped submission's record: status and cancel find its job; a record others can write or that is a link is not read; a running submission's is said to run" {
  local record=$outputs/submissions/100.1.1
  mkdir -p "$outputs/submissions"
  printf 'exp=lone\nhost=%s\npid=999999999\nstart=1\ntime=100\n' "$HOSTNAME" >"$record"
  chmod 600 "$record"
  printf 'squeue 5000 5000 PENDING/JobHeldUser - hpc-toolkit:100.1.1\n' | slurm_jobs
  manage status lone
  assert_equal "$status" 0
  assert_equal "$(row 5000)" "5000 lone unrecorded PENDING (JobHeldUser) - -"
  # Others can write it: not read (lone is unknown again).
  chmod 620 "$record"
  manage status lone
  assert_equal "$status" 2
  mv "$record" "$tmp/elsewhere"
  chmod 600 "$tmp/elsewhere"
  ln -s "$tmp/elsewhere" "$record"
  manage cancel lone
  assert_equal "$status" 2
  rm "$record"
  # This very shell's process, as a submitter still running: its jobs are not yet recorded.
  local start
  start=$(awk '{ sub(/.*\) /, ""); print $20 }' /proc/$$/stat)
  printf 'exp=lone\nhost=%s\npid=%s\nstart=%s\ntime=%s\n' "$HOSTNAME" "$$" "$start" "$(date +%s)" >"$record"
  chmod 600 "$record"
  manage status lone
  assert_line --regexp "^lone: a submission is still running \(pid $$ on .*\): 5000 not yet recorded or released$"
  stub scancel '5000'
  manage cancel lone
  unstub scancel
  assert_line "cancelled 5000 (lone, was PENDING (JobHeldUser); not recorded: its submission stopped first)"
  # Its record stays: that submission is still running.
  [ -f "$record" ]
}

# ---------------------------------------------------------------------------------------------
# 5. resubmit

@test "resubmit --failed: exactly the FAILED, TIMEOUT, NODE_FAIL and CANCELLED tasks, same options, a linked manifest" {
  make_manifest sweep 600 1-4
  slurm_jobs <<'EOT'
scontrol 600_1 601 COMPLETED 0:0
scontrol 600_2 602 FAILED 3:0
scontrol 600_3 603 COMPLETED 0:0
scontrol 600_4 600 TIMEOUT 0:15
EOT
  export HPC_STUB_SACCT=fail
  manage resubmit sweep --failed
  assert_equal "$status" 0
  assert_equal "$stderr" ""
  assert_output "Resubmitted task(s) 2,4 (array 2,4) of sweep as job 5000
Output: $outputs/sweep_venv-none_5000_%a.out"
  assert_equal "$(calls sbatch)" 1
  argv_of sbatch 1
  # The recorded sbatch options, the array of the failed tasks instead of the old one; the kept
  # script's text on sbatch's standard input (read from the descriptor that was checked).
  want=(--parsable "--job-name=my project-sweep" --nodes=1 --ntasks-per-node=1 --cpus-per-task=1
    --mem=1G --time=00-00:10:00 "--output=$outputs/sweep_venv-none_%A_%a.out" "--chdir=$PROJECT"
    --signal=B:USR1@30 --no-requeue --open-mode=append --partition=debug "--array=2,4")
  assert_equal "$(printf '%s\n' "${argv[@]}")" "$(printf '%s\n' "${want[@]}")"
  assert_equal "$(cat "$stub_log/sbatch.1.script")" "$(cat "$outputs/sweep_venv-none_600.sh")"
  # The new job's manifest: linked to the submission, its own array.
  file=$manifests/sweep_5000.manifest
  run grep -E '^(array|job_id|origin|resubmit_of|resubmit|script)	' "$file"
  assert_output "array	2,4
job_id	5000
origin	600
resubmit_of	600
resubmit	resubmit --failed
script	$outputs/sweep_venv-none_600.sh"
  # The rest is the original's.
  assert_equal "$(grep -vE '^(time|array|job_id|origin|resubmit_of|resubmit|output_path)	' "$file")" \
    "$(grep -vE '^(time|array|job_id|origin|resubmit_of|resubmit|output_path)	' "$manifests/sweep_600.manifest")"

  # status shows both; a second round takes each task's last run: only 4 failed again.
  slurm_jobs <<'EOT'
scontrol 600_1 601 COMPLETED 0:0
scontrol 600_2 602 FAILED 3:0
scontrol 600_3 603 COMPLETED 0:0
scontrol 600_4 600 TIMEOUT 0:15
scontrol 5000_2 5001 COMPLETED 0:0
scontrol 5000_4 5000 NODE_FAIL 0:0
EOT
  manage status sweep
  assert_equal "${#lines[@]}" 7
  assert_equal "$(row 5000_4)" "5000_4 sweep venv-none NODE_FAIL 0:0 $outputs/sweep_venv-none_5000_4.out"
  manage resubmit sweep --failed
  assert_equal "$status" 0
  argv_of sbatch 2
  assert_equal "${argv[-1]}" "--array=4"
  run grep -E '^(origin|resubmit_of)	' "$manifests/sweep_5001.manifest"
  assert_output "origin	600
resubmit_of	5000"

  # Everything has succeeded (or runs): nothing to resubmit, exit 0, no sbatch.
  printf 'squeue 5001_4 5002 RUNNING -\n' >>"$HPC_STUB_JOBS"
  printf 'scontrol 5001_4 5002 COMPLETED 0:0\n' >>"$HPC_STUB_JOBS"
  manage resubmit sweep --failed
  assert_equal "$status" 0
  assert_output "Nothing to resubmit yet: task(s) 4 of sweep still pending or running (job 5001); run 'resubmit sweep --failed' again once they have ended."
  assert_equal "$(calls sbatch)" 2
  # Everything has succeeded: the newest job is named.
  sed -i '/^squeue 5001_4/d' "$HPC_STUB_JOBS"
  manage resubmit sweep --failed
  assert_equal "$status" 0
  assert_output "Nothing to resubmit: no task of sweep (newest job 5001) ended FAILED, TIMEOUT, NODE_FAIL or CANCELLED."
  assert_equal "$(calls sbatch)" 2
}

@test "resubmit --failed: which states count (<states> -> <array>), the throttle is kept" {
  export HPC_STUB_SACCT=fail
  local n=0
  # states of tasks 0..3 | the --array sbatch gets (empty: nothing to resubmit)
  while IFS='|' read -r states want; do
    n=$((n + 1))
    id=$((700 + n * 10))
    make_manifest "s$n" "$id" 0-3%2
    read -ra st <<<"$states"
    for i in 0 1 2 3; do printf 'scontrol %s_%s %s %s 0:0\n' "$id" "$i" "$((id + i))" "${st[i]}"; done | slurm_jobs
    manage resubmit "s$n" --failed
    assert_equal "$states -> $status" "$states -> 0"
    if [[ -z $want ]]; then
      assert_line --index 0 --partial "Nothing to resubmit"
      continue
    fi
    argv_of sbatch "$(calls sbatch)"
    assert_equal "$states -> ${argv[-1]}" "$states -> --array=$want"
  done <<'EOT'
FAILED TIMEOUT NODE_FAIL CANCELLED|0-3%2
COMPLETED FAILED COMPLETED CANCELLED|1,3%2
OUT_OF_MEMORY PREEMPTED BOOT_FAIL COMPLETED|
RUNNING PENDING COMPLETING COMPLETED|
COMPLETED COMPLETED TIMEOUT NODE_FAIL|2-3%2
EOT
}

@test "resubmit --failed judges the newest run: while it is pending or running it names that job and says so, never a replaced one" {
  export HPC_STUB_SACCT=fail
  make_manifest one 800
  printf 'scontrol 800 800 CANCELLED 0:15\n' | slurm_jobs
  manage resubmit one --failed
  assert_output --partial "Resubmitted job 800 of one as job 5000"
  # The resubmission runs, then waits in the queue: named, and what it does.
  local state reason
  for state in RUNNING:None PENDING:Priority; do
    reason=${state#*:} state=${state%:*}
    printf 'squeue 5000 5000 %s %s\nscontrol 800 800 CANCELLED 0:15\nscontrol 5000 5000 %s 0:0\n' "$state" "$reason" "$state" | slurm_jobs
    manage resubmit one --failed
    assert_equal "$status" 0
    assert_output "Nothing to resubmit yet: the newest run of one, job 5000, is still $state; run 'resubmit one --failed' again once it has ended."
  done
  # It ended well: the newest run is named, not the replaced one.
  printf 'scontrol 800 800 CANCELLED 0:15\nscontrol 5000 5000 COMPLETED 0:0\n' | slurm_jobs
  manage resubmit one --failed
  assert_equal "$status" 0
  assert_output "Nothing to resubmit: no run of one (job 5000) ended FAILED, TIMEOUT, NODE_FAIL or CANCELLED."
  assert_equal "$(calls sbatch)" 1

  # An array whose failed task was resubmitted and still runs: that task and its job are named.
  make_manifest many 810 0-3
  printf 'scontrol 810_%s %s %s 0:0\n' 0 811 COMPLETED 1 812 COMPLETED 2 813 FAILED 3 810 COMPLETED | slurm_jobs
  manage resubmit many --failed
  assert_output --partial "as job 5001"
  {
    printf 'scontrol 810_%s %s %s 0:0\n' 0 811 COMPLETED 1 812 COMPLETED 2 813 FAILED 3 810 COMPLETED
    printf 'squeue 5001_2 5001 RUNNING None\nscontrol 5001_2 5001 RUNNING 0:0\n'
  } | slurm_jobs
  manage resubmit many --failed
  assert_equal "$status" 0
  assert_output "Nothing to resubmit yet: task(s) 2 of many still pending or running (job 5001); run 'resubmit many --failed' again once they have ended."
  assert_equal "$(calls sbatch)" 2
}

@test "resubmit: the whole submission again (a job, an array); a single failed job with --failed; script gone; sbatch refusing" {
  export HPC_STUB_SACCT=fail
  make_manifest one 800
  make_manifest many 810 0-7%3
  printf 'scontrol 800 800 FAILED 1:0\nscontrol 5000 5000 FAILED 1:0\n' | slurm_jobs
  manage resubmit one
  assert_equal "$status" 0
  assert_output "Resubmitted job 800 of one as job 5000
Output: $outputs/one_venv-none_5000.out"
  argv_of sbatch 1
  assert_equal "${argv[-1]}" --partition=debug
  assert_equal "$(cat "$stub_log/sbatch.1.script")" "$(cat "$outputs/one_venv-none_800.sh")"
  [[ " ${argv[*]} " != *" --array"* ]]
  manage resubmit many
  assert_output --partial "Resubmitted every task (array 0-7%3) of many as job 5001"
  argv_of sbatch 2
  assert_equal "${argv[-1]}" "--array=0-7%3"
  # --failed on a job without an array: the job itself, when its last run failed.
  manage resubmit one --failed
  assert_output --partial "Resubmitted job 5000 of one as job 5002"
  grep -qx 'resubmit_of	5000' "$manifests/one_5002.manifest"

  rm "$outputs/many_venv-none_810.sh"
  manage resubmit many
  assert_equal "$status" 1
  assert_equal "$stderr" "job_submitter.sh: the kept job script '$outputs/many_venv-none_810.sh' of job 5001 is gone; submit again with: bash job_submitter.sh -y -g 0 -e many"
  HPC_STUB_SBATCH=refuse manage resubmit one
  assert_equal "$status" 1
  assert_equal "$stderr" "job_submitter.sh: sbatch refused the resubmission: sbatch: error: Batch job submission failed: Invalid job array specification"
}

# ---------------------------------------------------------------------------------------------
# 6. Bad input and help

@test "bad input: <args> -> exit 2, one line <message>, SLURM not asked" {
  make_manifest e 100
  make_manifest arr 200 1-4
  # Stubs without a plan: any call of SLURM fails the test.
  for name in squeue sacct scontrol scancel sbatch; do stub "$name"; done
  while IFS='|' read -r words message; do
    read -ra args <<<"$words"
    manage "${args[@]}"
    assert_equal "$words -> $status" "$words -> 2"
    assert_equal "$output" ""
    assert_equal "$words -> $stderr" "$words -> job_submitter.sh: $message"
  done <<'EOT'
status nope|nope: unknown experiment of project my project; known: e arr
status e arr|status: unexpected word 'arr'; usage: status [EXP|JOBID[_TASK]]
status --every|--every: unknown option of 'status'; see 'bash job_submitter.sh status --help'
status ../e|../e: not an experiment name or a job id; known: e arr
status 12345|12345: not a job or an experiment recorded for project my project (see 'bash job_submitter.sh status'); known: e arr
logs|logs: needs an experiment, a job id or JOBID_TASK; known: e arr
logs nope|nope: unknown experiment of project my project; known: e arr
logs 999|999: not a job or an experiment recorded for project my project (see 'bash job_submitter.sh status'); known: e arr
logs 200_9|200_9: job 200 has no array task 9 (its array: 1-4)
logs 100_1|100_1: job 100 has no array task 1 (its array: none)
logs e arr|logs: unexpected word 'arr'; usage: logs EXP|JOBID[_TASK] [--follow]
logs e --tail|--tail: unknown option of 'logs'; see 'bash job_submitter.sh logs --help'
logs e --folow|--folow: unknown option of 'logs'; did you mean --follow? (see 'bash job_submitter.sh logs --help')
logs e -F|-F: unknown option of 'logs'; see 'bash job_submitter.sh logs --help'
cancel|cancel: needs one experiment, job id or JOBID_TASK; usage: cancel EXP|JOBID[_TASK]
cancel e arr|cancel: needs one experiment, job id or JOBID_TASK; usage: cancel EXP|JOBID[_TASK]
cancel --all|--all: unknown option of 'cancel'; see 'bash job_submitter.sh cancel --help'
cancel nope|nope: unknown experiment of project my project; known: e arr
resubmit|resubmit: needs an experiment or a job id; known: e arr
resubmit e --failed --x|--x: unknown option of 'resubmit'; see 'bash job_submitter.sh resubmit --help'
resubmit e --faild|--faild: unknown option of 'resubmit'; did you mean --failed? (see 'bash job_submitter.sh resubmit --help')
status --hepl|--hepl: unknown option of 'status'; did you mean --help? (see 'bash job_submitter.sh status --help')
resubmit e arr|resubmit: unexpected word 'arr'; usage: resubmit EXP|JOBID [--failed]
resubmit 200_2|200_2: resubmit takes an experiment or a job id, not an array task; use --failed
resubmit nope --failed|nope: unknown experiment of project my project; known: e arr
EOT
  # SCRATCH is needed to find the manifests, as for submitting.
  SCRATCH='' manage status
  assert_equal "$status" 2
  assert_equal "$stderr" "job_submitter.sh: SCRATCH: is not set; set it to your scratch folder, e.g. export SCRATCH=/scratch/\$USER in ~/.bashrc"
  SCRATCH=relative manage logs e
  assert_equal "$status" 2
  assert_equal "$stderr" "job_submitter.sh: SCRATCH: 'relative' is not an absolute path"
  # With nothing recorded, the message says where it looked.
  rm -rf -- "$manifests"
  manage logs e
  assert_equal "$status" 2
  assert_equal "$stderr" "job_submitter.sh: e: unknown experiment of project my project; no submission of project my project is recorded in $manifests"
  for name in squeue sacct scontrol scancel sbatch; do unstub "$name"; done
}

@test "--help and -h of every command print that command's usage (its file's), exit 0, without SCRATCH or SLURM" {
  for name in squeue sacct scontrol scancel sbatch; do stub "$name"; done
  for words in "status --help" "logs -h" "cancel --help" "resubmit sweep --failed -h" "status nope -h"; do
    read -ra args <<<"$words"
    SCRATCH='' manage "${args[@]}"
    assert_equal "$words -> $status" "$words -> 0"
    assert_equal "$stderr" ""
    assert_line --index 0 "Usage: bash job_submitter.sh ${args[0]} $(sed -n "s/^# Usage: bash job_submitter.sh ${args[0]} //p" "$HPC_ROOT/hpc_files/lib/commands/${args[0]}.bash")"
    refute_line --regexp '^#'
    refute_output --partial "shellcheck"
    assert_line --regexp '^Exit status: 0 '
  done
  manage resubmit --help
  assert_line "    --failed          Only the array tasks whose last run ended FAILED, TIMEOUT, NODE_FAIL or"
  manage status --help
  assert_line --index 0 "Usage: bash job_submitter.sh status [EXP|JOBID[_TASK]]"
  assert_line "project being the folder that holds this hpc_files/): the options, the sbatch options, the"
  assert_equal "${lines[${#lines[@]} - 1]}" "with the known ones)."
  for name in squeue sacct scontrol scancel sbatch; do unstub "$name"; done
}

@test "commands: a first word naming a file of lib/commands/ runs its hpc_command_NAME with the other words; a new command is one file" {
  local project="$tmp/other project"
  mkdir -p "$project"
  bash "$HPC_ROOT/hpc_files/install.sh" "$project" >/dev/null
  # A user's own command, shaped as the shipped ones: one file, one function ('-' read as '_').
  printf '%s\n' '# shellcheck shell=bash' 'hpc_command_say_hello() {' '  printf "hello [%s]\n" "$@"' '}' \
    >"$project/hpc_files/lib/commands/say-hello.bash"
  run --separate-stderr bash "$project/hpc_files/job_submitter.sh" say-hello "a b" -g </dev/null
  assert_success
  assert_output $'hello [a b]\nhello [-g]'
  # Only a word of lower-case letters and '-' names a command; another first word is refused,
  # naming the command it is near.
  for words in "Say-hello" "say_hello"; do
    run --separate-stderr bash "$project/hpc_files/job_submitter.sh" "$words" </dev/null
    assert_equal "$words -> $status" "$words -> 2"
    assert_equal "$stderr" "job_submitter.sh: unknown command '$words'; did you mean say-hello? (see --help)"
  done
  run --separate-stderr bash "$project/hpc_files/job_submitter.sh" "x_y" </dev/null
  assert_equal "$status" 2
  assert_equal "$stderr" "job_submitter.sh: x_y: unexpected word (every value belongs to an option; see --help)"
  # The shipped commands that take their words from hpc_map.bash and hpc_scaling.bash.
  for name in squeue sacct scontrol scancel sbatch; do stub "$name"; done
  manage gather
  assert_equal "$status" 2
  assert_equal "$stderr" "job_submitter.sh: gather: needs one experiment; usage: gather EXP [--here]"
  manage gather e --her
  assert_equal "$status" 2
  assert_equal "$stderr" "job_submitter.sh: --her: unknown option of 'gather'; did you mean --here? (see 'bash job_submitter.sh gather --help')"
  manage scaling-report
  assert_equal "$status" 2
  assert_equal "$stderr" "job_submitter.sh: scaling-report: needs an experiment or a study folder; usage: scaling-report EXP|PATH [--out DIR]"
  for name in squeue sacct scontrol scancel sbatch; do unstub "$name"; done
}

@test "commands: status loads its own file and what it shares, not the map's, the scaling test's or the other commands'" {
  make_manifest e 100
  printf 'squeue 100 100 RUNNING -\n' | slurm_jobs
  run --separate-stderr bash -c 'PS4="+ \${BASH_SOURCE##*/} "; set -x; . "$1" status' _ "$submitter" </dev/null
  assert_success
  local sourced name
  sourced=" $(grep -oE '^\++ [^ ]+ (source|\.) .+' <<<"$stderr" | sed -E "s|.*/||; s|'$||" | sort -u | tr '\n' ' ')"
  for name in status.bash hpc_manage.bash; do
    [[ $sourced == *" $name "* ]] || fail "status did not source $name: $sourced"
  done
  for name in hpc_map.bash hpc_scaling.bash hpc_followup.bash logs.bash cancel.bash resubmit.bash gather.bash scaling-report.bash; do
    [[ $sourced != *" $name "* ]] || fail "status sourced $name: $sourced"
  done
}
