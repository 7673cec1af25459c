#!/usr/bin/env bats
# job_submitter.sh without SLURM: a project installed with install.sh in a folder whose path has
# a space, SCRATCH in a temporary folder, and PATH stubs of sbatch, squeue, scontrol and srun
# (tests/fixtures/submitter/bin) that record their arguments in $HPC_STUB_LOG and answer like
# SLURM. Profiles come from a cache compiled once for the run, so most tests run no Python.
# Here: --help, what SLURM is asked, the golden job scripts, --dry-run, the confirmation and
# sbatch's answer. The venv and its install job: job_submitter_venv.bats, its rebuilds:
# job_submitter_rebuild.bats; the profile cache, the current directory, what the cluster has and
# smaller things: job_submitter_cluster.bats. Their shared helpers: tests/helpers/job_submitter.bash.
#
# Golden job scripts: tests/fixtures/submitter/golden/*.sh are the job scripts generated for a few
# representative submissions, with the temporary folder and the date line replaced by
# placeholders (see normalise). After an intended change of the job script, regenerate them with
#   HPC_UPDATE_GOLDEN=1 node_modules/bats/bin/bats tests/unit/job_submitter.bats
# and review the diff of the golden files like code before committing it.

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

# sorted_options: argv's options (up to the script's name, if one is given), sorted, one per line.
sorted_options() {
  local a
  for a in "${argv[@]}"; do
    [[ $a == -* ]] || break
    printf '%s\n' "$a"
  done | LC_ALL=C sort
}

# ---------------------------------------------------------------------------------------------
# 1. --help

@test "--help and -h print the usage block, exit 0 and create or submit nothing" {
  local before
  before=$(listing "$tmp")
  # A stub without a plan: any sbatch fails the test.
  stub sbatch
  for words in "--help" "-h" "-g 2 --help" "--help --gpus 2"; do
    read -ra args <<<"$words"
    run --separate-stderr bash "$submitter" "${args[@]}"
    assert_equal "$status" 0
    assert_equal "$stderr" ""
    assert_line --index 0 "Usage: bash job_submitter.sh [options]"
    assert_line "  -W, --which-distributed L  The launcher L, one of the files in hpc_files/lib/launchers/:"
    assert_line "Arrays (one at a time):"
    assert_line "Each option is given once, except -d/--data and --copy-back, whose paths add up."
    refute_line --regexp '^#'
    assert_equal "${lines[${#lines[@]} - 1]}" "After submitting: bash job_submitter.sh status | logs EXP | cancel EXP | resubmit EXP --failed"
  done
  # SCRATCH is not needed for the help.
  SCRATCH='' run --separate-stderr bash "$submitter" --help
  assert_equal "$status" 0
  assert_line --index 0 "Usage: bash job_submitter.sh [options]"
  assert_equal "$(listing "$tmp")" "$before"
  unstub sbatch
}

@test "--help names every value -W accepts, none included" {
  run --separate-stderr bash "$submitter" -W bogus </dev/null
  assert_equal "$status" 2
  assert_equal "$stderr" "job_submitter.sh: -W/--which-distributed: 'bogus' is not accepted; accepted: $(hpc_test_launcher_names)"
  run --separate-stderr bash "$submitter" --help
  assert_equal "$status" 0
  # The -W block: from its first line up to the next option.
  block=$(sed -n '/^  -W, --which-distributed/,/^  --label-ranks/p' <<<"$output")
  # Every launcher file, each by its own description's first line, and the old name.
  for file in "$HPC_ROOT"/hpc_files/lib/launchers/*.bash; do
    value=${file##*/}
    value=${value%.bash}
    [[ $block == *"$value"* ]] || fail "--help's -W block does not name '$value'"
    # shellcheck source=/dev/null
    first=$(source "$file" && "hpc_launcher_${value}_describe" | head -n 1)
    assert_line "                             $first"
  done
  [[ $block == *script* ]] || fail "--help's -W block does not name 'script'"
  assert_line "                             Without -W, or with -W none: one process on one node."
}

# ---------------------------------------------------------------------------------------------
# 2. Bad input: the table of refusals is tests/unit/bad_input.bats.

@test "accepted spellings: --num_nodes, --gpus=2, --cpu, -W script (a note, then torchrun), python3.11 by path" {
  make_ready_venv
  cd "$fixtures/configs"
  while IFS='|' read -r words note expected; do
    forget_calls
    read -ra args <<<"$words"
    submit -y "${args[@]}"
    assert_equal "$words -> $status" "$words -> 0"
    assert_equal "$stderr" "$note"
    argv_of sbatch 1
    read -ra want <<<"$expected"
    for arg in "${want[@]}"; do
      has_arg "$arg" || fail "$words: sbatch was not given $arg: ${argv[*]}"
    done
  done <<'EOT'
--num_nodes 2 -W torchrun||--nodes=2 --ntasks-per-node=1
--num-nodes=2 -W lightning -g 2||--nodes=2 --ntasks-per-node=2
--gpus=2||--gres=gpu:2 --mem=2G
--gpus 02 --cpu 3||--gres=gpu:2 --cpus-per-task=6
-W script -g 2|job_submitter.sh: note: -W script is the old name of -W torchrun (torch.distributed.launch became torchrun)|--ntasks-per-node=1 --cpus-per-task=2
-W none -g 0||--ntasks-per-node=1 --mem=1G
-g 0 -m 4G|job_submitter.sh: note: -m/--mem-per-gpu is ignored without GPUs; the job gets 1G|--mem=1G
-t 12:00:00 --exp-name=e.1+x||--time=12:00:00
-W torchrun -C python_path.txt||--ntasks-per-node=1
EOT
  # -W script is torchrun: the job's plan says so and the script is named after it.
  forget_calls
  rm -rf -- "$outputs"
  submit -y -W script -g 2
  assert_equal "$status" 0
  job_plan "$outputs/default_venv-torchrun_4242.sh" | grep -qx 'hpc_plan_launcher=torchrun'
}

# ---------------------------------------------------------------------------------------------
# 3. What SLURM is asked

@test "resource ratios: sbatch gets <nodes, tasks, CPUs, memory, GRES, account, partition, time>" {
  make_ready_venv
  # args | nodes | tasks per node | CPUs per task | mem | gres | account | partition | time | exp | kind | warning signal | requeue
  while IFS='|' read -r words nodes tasks cpus mem gres account partition time exp kind signal requeue; do
    forget_calls
    read -ra args <<<"$words"
    submit -y "${args[@]}"
    assert_equal "$words -> $status" "$words -> 0"
    argv_of sbatch 1
    want=(--parsable --job-name="my project-$exp" --nodes="$nodes" --ntasks-per-node="$tasks"
      --cpus-per-task="$cpus" --time="$time"
      --output="$outputs/${exp}_${kind}_%j.out" --chdir="$project" --signal="$signal")
    if [[ $requeue == yes ]]; then want+=(--requeue --open-mode=append); else want+=(--no-requeue --open-mode=append); fi
    # No memory in the profile or on the command line: none asked for, SLURM's default applies.
    [[ -z $mem ]] || want+=(--mem="$mem")
    [[ -z $gres ]] || want+=(--gres="$gres")
    [[ -z $account ]] || want+=(--account="$account")
    [[ -z $partition ]] || want+=(--partition="$partition")
    assert_equal "$words: $(sorted_options)" "$words: $(printf '%s\n' "${want[@]}" | LC_ALL=C sort)"
    # The job script SLURM got is kept beside the outputs, under the job's id.
    assert_equal "$(<"$outputs/${exp}_${kind}_4242.sh")" "$(<"$stub_log/sbatch.1.script")"
    [[ -d "$SCRATCH/my project/$exp/checkpoints" ]]
  done <<'EOT'
-g 2 -c 3 -m 5G|1|1|6|10G|gpu:2||debug|00-00:10:00|default|venv-none|B:USR1@30|no
-g 1|1|1|1|1G|gpu:1||debug|00-00:10:00|default|venv-none|B:USR1@30|no
-g 0 -c 3|1|1|3|1G|||debug|00-00:10:00|default|venv-none|B:USR1@30|no
-W lightning -n 3 -g 2 -c 4 -m 2G|3|2|4|4G|gpu:2||debug|00-00:10:00|default|venv-lightning|B:USR1@30|no
-W torchrun -n 2 -g 2 -c 3|2|1|6|2G|gpu:2||debug|00-00:10:00|default|venv-torchrun|B:USR1@30|no
-W torchrun -g 1 -c 2 -e one|1|1|2|1G|gpu:1||debug|00-00:10:00|one|venv-torchrun|B:USR1@30|no
-p gpu -e exp1 -t 1-00:00:00 -a my-lab|1|1|1|1G|gpu:1|my-lab|gpu|1-00:00:00|exp1|venv-none|B:USR1@30|no
--cluster cedar -G v100l -g 2 -t 00-02:00:00|1|1|4|20G|gpu:v100l:2|rrg-kevinlb||00-02:00:00|default|venv-none|B:USR1@300|no
--cluster cedar -W lightning -n 2 -g 4 -G p100 -a def-fwood -m 16G|2|4|2|64G|gpu:p100:4|def-fwood||00-01:00:00|default|venv-lightning|B:USR1@300|no
--cluster cedar -g 1|1|1|2|10G|gpu:v100l:1|rrg-kevinlb||00-01:00:00|default|venv-none|B:USR1@300|no
--cluster cedar -g 0|1|1|2|8G||rrg-kevinlb||00-01:00:00|default|venv-none|B:USR1@300|no
--cluster plai -W torchrun -n 2 -g 8|2|1|16|80G|gpu:8||plai|00-01:00:00|default|venv-torchrun|B:USR1@300|no
--cluster generic -g 3|1|1|6||gpu:3|||00-01:00:00|default|venv-none|B:USR1@300|no
--cluster generic -g 0|1|1|2|||||00-01:00:00|default|venv-none|B:USR1@300|no
--cluster generic -g 2 -m 3G|1|1|4|6G|gpu:2|||00-01:00:00|default|venv-none|B:USR1@300|no
-g 0 --requeue 3 --signal-lead 90 -e rq|1|1|1|1G|||debug|00-00:10:00|rq|venv-none|B:USR1@90|yes
-g 0 --requeue=0 --signal-lead=0|1|1|1|1G|||debug|00-00:10:00|default|venv-none|B:USR1@0|no
-g 0 -t 00:01:10 --signal-lead 60|1|1|1|1G|||debug|00:01:10|default|venv-none|B:USR1@60|no
EOT
}

@test "without --signal-lead a short --time never refuses: the profile's lead is shortened to leave 60 s, or no warning when none fits; the dry run and the summary say so" {
  make_ready_venv
  # The generic profile's lead of 300 s, with a time limit of 2 minutes: 60 s.
  submit --dry-run --cluster generic -g 0 -t 00:02:00
  assert_equal "$status" 0
  assert_line --partial "time 00:02:00, signal lead 60 s (the profile's 300 s shortened to fit --time 00:02:00), output"
  assert_line '#SBATCH --signal="B:USR1@60"'
  forget_calls
  submit -y --cluster generic -g 0 -t 00:02:00
  assert_equal "$status" 0
  assert_line --index 0 --partial "time 00:02:00, signal lead 60 s (the profile's 300 s shortened to fit --time 00:02:00), output"
  run grep -c '^#SBATCH --signal="B:USR1@60"$' "$outputs/default_venv-none_4242.sh"
  assert_output 1
  # The local profile's 30 s with a time limit of one minute: no lead fits, no warning signal.
  forget_calls
  submit -y -g 0 -t 00:00:20 -e short
  assert_equal "$status" 0
  assert_line --index 0 --partial "time 00:00:20, no time-limit warning signal (the profile's lead of 30 s does not fit --time 00:00:20), output"
  run grep -c -- '--signal' "$outputs/short_venv-none_4242.sh"
  assert_output 0
  # A lead that fits is the profile's, and the summary says nothing of it.
  forget_calls
  submit -y -g 0 -t 00:01:30 -e fits
  assert_equal "$status" 0
  refute_output --partial "signal"
  run grep -c '^#SBATCH --signal="B:USR1@30"$' "$outputs/fits_venv-none_4242.sh"
  assert_output 1
}

# ---------------------------------------------------------------------------------------------
# 4. Golden job scripts

@test "golden job scripts: the generated script of <name> matches golden/<name>.sh" {
  make_ready_venv
  # name | configs fixture | options | the generated script (EXP_KIND)
  while IFS='|' read -r name configs words script; do
    forget_calls
    use_configs "$configs"
    read -ra args <<<"$words"
    submit -y "${args[@]}"
    assert_equal "$name -> $status" "$name -> 0"
    assert_line --index 0 --regexp "^Submitted job 4242 \\("
    actual=$(normalise "$outputs/${script}_4242.sh")
    golden=$fixtures/golden/$name.sh
    if [[ -n ${HPC_UPDATE_GOLDEN:-} ]]; then
      printf '%s\n' "$actual" >"$golden"
    fi
    diff -u "$golden" - <<<"$actual" || fail "$name: the job script differs from $golden (HPC_UPDATE_GOLDEN=1 regenerates it)"
    # Its plan file, beside the output: every value of the job.
    plans=("$outputs/${script}"_*.plan)
    assert_equal "${#plans[@]}" 1
    actual=$(normalise "${plans[0]}")
    golden=$fixtures/golden/$name.plan
    if [[ -n ${HPC_UPDATE_GOLDEN:-} ]]; then
      printf '%s\n' "$actual" >"$golden"
    fi
    diff -u "$golden" - <<<"$actual" || fail "$name: the plan file differs from $golden (HPC_UPDATE_GOLDEN=1 regenerates it)"
  done <<'EOT'
standard_cpu|standard.txt|-g 0 -c 4 -e cpu-run|cpu-run_venv-none
torchrun_2x2|torchrun.txt|-W torchrun -n 2 -g 2 -c 2 -e ddp -t 00:30:00|ddp_venv-torchrun
lightning_cedar|lightning.txt|--cluster cedar -W lightning -n 2 -g 4 -G v100l -m 16G -a def-fwood -e big -t 1-12:00:00|big_venv-lightning
EOT
}

# ---------------------------------------------------------------------------------------------
# 5. --dry-run

@test "--dry-run prints the invocation, the script, the environment and the summary, asks sbatch --test-only, creates nothing" {
  make_ready_venv
  use_configs environment.txt
  export MY_API_KEY=s3cret-value wandb_api_key=w4ndb-value
  local before
  before=$(listing "$tmp")
  submit --dry-run -g 2 -c 3
  assert_equal "$status" 0
  assert_equal "$stderr" ""
  assert_equal "$(listing "$tmp")" "$before"

  # The invocation, shell-quoted.
  local out=$outputs/default_venv-none_%j.out
  want=(--job-name="my project-default" --nodes=1 --ntasks-per-node=1 --cpus-per-task=6 --mem=2G
    --time=00-00:10:00 --output="$out" --chdir="$project" --signal=B:USR1@30 --no-requeue --open-mode=append
    --gres=gpu:2 --partition=debug)
  assert_line --index 0 "== sbatch invocation"
  assert_line --index 1 "sbatch$(printf ' %q' "${want[@]}") JOB_SCRIPT"

  # The script, exactly what SLURM was asked to validate.
  script=$(sed -n '/^== job script$/,/^== environment of the program$/p' <<<"$output" | sed '1d;$d')
  assert_equal "$script" "$(<"$stub_log/sbatch.1.script")"
  [[ $script == '#!/bin/bash'* ]]

  # The environment: references flagged, secrets masked (in any case), never printed.
  assert_line "source_dir=$project"
  assert_line "scratch_dir=$SCRATCH/my project"
  assert_line "num_nodes=1"
  assert_line "gpus_per_node=2"
  environment=$(grep '^configs file uses' <<<"$output")
  assert_equal "$environment" "configs file uses \$SLURM_TMPDIR: defined by the job
configs file uses \$NOPE: NOT DEFINED: the job will fail before the program starts
configs file uses \$MY_API_KEY: from this shell: (masked)
configs file uses \$wandb_api_key: from this shell: (masked)
configs file uses \$OPTIONAL: not defined: its default is used
configs file uses \$name: NOT DEFINED: the job will fail before the program starts
configs file uses \$HOME: from this shell: $HOME"
  refute_output --partial s3cret-value
  refute_output --partial w4ndb-value

  # The summary, SLURM's answer, and nothing submitted.
  assert_line "venv-none job on local: 1 node(s) x 1 task(s) x 6 CPU(s) x 2 GPU per node, memory 2G per node, time 00-00:10:00, output $out"
  assert_line "== SLURM says (sbatch --test-only)"
  assert_line "sbatch: Job 4243 to start at 2030-01-01T12:00:00 using 1 processors on nodes node1 in partition debug"
  assert_equal "${lines[${#lines[@]} - 1]}" "Dry run: nothing was submitted or created."
  refute_line --partial "would be built first"
  assert_equal "$(calls sbatch)" 1
  argv_of sbatch 1
  assert_equal "${argv[0]}" --test-only
  # Validated with the output left to SLURM (its folder does not exist), and no script file.
  assert_equal "$(printf '%s\n' "${argv[@]:1}" | LC_ALL=C sort)" \
    "$(printf '%s\n' "${want[@]/#--output=*/--output=/dev/null}" | LC_ALL=C sort)"
}

@test "--dry-run masks a secret written literally into the configs file, in the job script it prints" {
  make_ready_venv
  printf 'python train.py --password hunter2-sentinel\n' >"$project/hpc_files/experiment_configurations.txt"
  DB_PASS=hunter2-sentinel submit --dry-run -g 0
  assert_equal "$status" 0
  [[ $output != *hunter2-sentinel* && $stderr != *hunter2-sentinel* ]] || fail "the secret was printed: $output"
  assert_output --partial '--password (masked)'
}

@test "--dry-run shows the same job script a real submission writes" {
  make_ready_venv
  use_configs standard.txt
  submit --dry-run -W torchrun -g 2 -n 2
  assert_equal "$status" 0
  printf '%s\n' "$(<"$stub_log/sbatch.1.script")" >"$BATS_TEST_TMPDIR/dry.sh"
  submit -y -W torchrun -g 2 -n 2
  assert_equal "$status" 0
  assert_equal "$(normalise "$outputs/default_venv-torchrun_4243.sh")" "$(normalise "$BATS_TEST_TMPDIR/dry.sh")"
}

@test "--label-ranks reaches the job's plan as hpc_plan_label_ranks=1, and only when given" {
  make_ready_venv
  use_configs standard.txt
  submit -y -W torchrun -g 2 -n 2 --label-ranks
  assert_equal "$status" 0
  assert_equal "$(job_plan "$outputs/default_venv-torchrun_4242.sh" | grep -c '^hpc_plan_label_ranks=1$')" 1
  submit -y -W lightning -g 2 -n 2
  assert_equal "$status" 0
  assert_equal "$(job_plan "$outputs/default_venv-lightning_4243.sh" | grep -c '^hpc_plan_label_ranks=0$')" 1
}

@test "every job's plan has num_processes (exported to the program), its total of processes: none 1, lightning and torchrun nodes x GPUs" {
  make_ready_venv
  use_configs standard.txt
  local n=4242 words want
  while IFS='|' read -r words want; do
    read -ra args <<<"$words"
    submit -y "${args[@]}"
    assert_equal "$status" 0
    script=$(printf '%s\n' "$outputs"/*_"$n".sh)
    assert_equal "$(job_plan "$script" | grep -c "^hpc_plan_num_processes=$want\$")" 1
    n=$((n + 1))
  done <<'EOT'
-g 2|1
-W none -g 0|1
-W lightning -g 1 -n 2|2
-W torchrun -g 2 -n 2|4
-W torchrun -g 1|1
EOT
  # The dry run's environment names it too.
  submit --dry-run -W lightning -g 2 -n 2
  assert_equal "$status" 0
  assert_line "num_processes=4"
}

@test "--dry-run without a venv says an install job would come first, and still creates nothing" {
  local before
  before=$(listing "$tmp")
  # One sbatch, --test-only; no squeue.
  stub_through sbatch "$fixtures/bin/sbatch" '--test-only *'
  stub squeue
  submit --dry-run
  unstub sbatch
  unstub squeue
  assert_equal "$status" 0
  assert_line "The virtual environment $project/virtual_env would be built first by an install job."
  assert_equal "$(listing "$tmp")" "$before"
}

@test "--dry-run with an empty profile cache adds only the compiled profile, under HPC_CACHE_DIR" {
  make_ready_venv
  rm -rf -- "$HPC_CACHE_DIR"
  # Note: PYTHONDONTWRITEBYTECODE=1 (setup_file) is what keeps Python's __pycache__ out of the
  # project's hpc_files/python_helpers when the profile is compiled.
  local before after
  # The listing without $tmp itself, whose time changes when the cache folder is made.
  before=$(listing "$tmp" | grep -v '^|')
  submit --dry-run
  assert_equal "$status" 0
  after=$(listing "$tmp" | grep -v '^|')
  assert_equal "$(comm -23 <(printf '%s\n' "$before") <(printf '%s\n' "$after"))" ""
  added=$(comm -13 <(printf '%s\n' "$before") <(printf '%s\n' "$after"))
  [[ $HPC_CACHE_DIR == "$tmp/cache" ]]
  assert_equal "$(grep -vc '^cache' <<<"$added")" 0
  grep -q '^cache/.*|f|' <<<"$added"
}

@test "--dry-run exits 1 and shows SLURM's answer when sbatch --test-only refuses" {
  make_ready_venv
  HPC_STUB_SBATCH=refuse submit --dry-run --cluster cedar -a def-fwood
  assert_equal "$status" 1
  assert_line "== SLURM says (sbatch --test-only)"
  assert_line "sbatch: error: Batch job submission failed: Invalid account or account/partition combination specified"
  assert_equal "${lines[${#lines[@]} - 1]}" "Dry run: nothing was submitted or created."
  [[ ! -e "$SCRATCH/my project" ]]
}

@test "--dry-run without sbatch on PATH: the plan and the script, SLURM not asked, exit 0, nothing created" {
  make_ready_venv
  local before without_sbatch
  without_sbatch=$(path_without sbatch)
  run env PATH="$without_sbatch" bash -c 'command -v sbatch'
  assert_failure
  before=$(listing "$tmp")
  PATH=$without_sbatch submit --dry-run -g 1
  assert_equal "$status" 0
  assert_equal "$stderr" ""
  assert_line --index 0 "== sbatch invocation"
  assert_line "== job script"
  assert_line "(sbatch is not here: SLURM was not asked to validate the request)"
  assert_equal "${lines[${#lines[@]} - 1]}" "Dry run: nothing was submitted or created."
  assert_equal "$(calls sbatch)" 0
  assert_equal "$(listing "$tmp")" "$before"
}

@test "path_without: the command is gone from PATH, every other command of its folders stays" {
  local stubs=$HPC_ROOT/tests/fixtures/submitter/bin
  [[ -x $stubs/sbatch && -x $stubs/squeue && :$PATH: == *:$stubs:* ]]
  run path_without sbatch
  assert_success
  local new=$output
  run env PATH="$new" bash -c 'command -v sbatch'
  assert_failure
  run env PATH="$new" bash -c 'command -v squeue bash sed'
  assert_success
  assert_equal "${#lines[@]}" 3
  # One folder for each folder, in order.
  assert_equal "$(tr ':' '\n' <<<"$new" | wc -l)" "$(tr ':' '\n' <<<"$PATH" | wc -l)"
}

# ---------------------------------------------------------------------------------------------
# 6. Confirmation and sbatch's answer

@test "with no terminal on stdin it never asks: it submits and says where the output goes" {
  make_ready_venv
  # One sbatch, --parsable; nothing runs on the login node as a job step, no scontrol.
  stub_through sbatch "$fixtures/bin/sbatch" '--parsable *'
  stub srun
  stub scontrol
  submit
  unstub sbatch
  unstub srun
  unstub scontrol
  assert_equal "$status" 0
  assert_equal "$stderr" ""
  local out=$outputs/default_venv-none_4242.out
  assert_equal "$output" "Submitted job 4242 (venv-none job on local: 1 node(s) x 1 task(s) x 1 CPU(s) x 1 GPU per node, memory 1G per node, time 00-00:10:00, output $outputs/default_venv-none_%j.out)
Job script: $outputs/default_venv-none_4242.sh
Output:     $out
Follow it:  tail -F $(printf '%q' "$out")"
  # The script SLURM was given is the one kept beside the output; no temporary file is left.
  assert_equal "$(<"$outputs/default_venv-none_4242.sh")" "$(<"$stub_log/sbatch.1.script")"
  assert_equal "$(find "$outputs" -name '.*' | wc -l)" 0
  [[ -d "$SCRATCH/my project/default/checkpoints" ]]
}

@test "sbatch refusing the job: exit 1 with 'sbatch refused the job: <message>', no job script left" {
  make_ready_venv
  # One sbatch, not tried again.
  stub_through sbatch "$fixtures/bin/sbatch" '--parsable *'
  HPC_STUB_SBATCH=refuse submit -y
  unstub sbatch
  assert_equal "$status" 1
  assert_equal "$output" ""
  assert_equal "$stderr" "job_submitter.sh: sbatch refused the job: sbatch: error: Batch job submission failed: Invalid account or account/partition combination specified"
  # Nothing of this submission is left: not the folders it made either (SCRATCH was there).
  [[ ! -e "$SCRATCH/my project" ]]
  [[ -d $SCRATCH ]]
}

@test "sbatch refusing the job removes exactly the folders this submission made, never through a symlink" {
  make_ready_venv
  # Compared without times: making and removing a folder changes its parent's.
  shape() { find "$1" -printf '%P|%y|%s|%m|%l\n' | LC_ALL=C sort; }
  # The outputs folder was there, with a file: kept as it was; the experiment's folders go.
  mkdir -p "$outputs"
  printf 'mine\n' >"$outputs/keep.txt"
  local before
  before=$(shape "$SCRATCH")
  HPC_STUB_SBATCH=refuse submit -y -e fresh
  assert_equal "$status" 1
  assert_equal "$stderr" "job_submitter.sh: sbatch refused the job: sbatch: error: Batch job submission failed: Invalid account or account/partition combination specified"
  assert_equal "$(shape "$SCRATCH")" "$before"

  # The experiment's folder is a symlink to a folder elsewhere: the symlink and what it points
  # to stay; only the checkpoints folder made inside it goes.
  mkdir -p "$tmp/elsewhere"
  ln -s "$tmp/elsewhere" "$SCRATCH/my project/linked"
  before=$(shape "$tmp")
  HPC_STUB_SBATCH=refuse submit -y -e linked
  assert_equal "$status" 1
  assert_equal "$(shape "$tmp")" "$before"
  [[ -L "$SCRATCH/my project/linked" && -d $tmp/elsewhere ]]

  # Accepted: the folders stay.
  forget_calls
  submit -y -e fresh
  assert_equal "$status" 0
  [[ -d "$SCRATCH/my project/fresh/checkpoints" && -d $outputs ]]
}

@test "on a terminal it shows the summary and asks: 'n' submits nothing, 'y' submits" {
  command -v script >/dev/null || skip "no script(1) (util-linux) to give the submitter a terminal"
  make_ready_venv
  local command
  command="bash $(printf '%q' "$submitter") -g 0"
  run script -qec "$command" /dev/null <<<"n"
  assert_equal "$status" 1
  assert_output --partial "venv-none job on local: 1 node(s) x 1 task(s) x 1 CPU(s) per node, memory 1G per node"
  assert_output --partial "Submit? [y/N] "
  assert_output --partial "job_submitter.sh: not submitted"
  assert_equal "$(calls sbatch)" 0
  [[ ! -e "$SCRATCH/my project" ]]

  run script -qec "$command" /dev/null <<<"y"
  assert_equal "$status" 0
  assert_output --partial "Submitted job 4242"
  assert_equal "$(calls sbatch)" 1
  # -y never asks, even on a terminal.
  run script -qec "$command -y" /dev/null </dev/null
  assert_equal "$status" 0
  refute_output --partial "Submit?"
  assert_equal "$(calls sbatch)" 2
}
