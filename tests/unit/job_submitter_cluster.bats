#!/usr/bin/env bats
# job_submitter.sh without SLURM (split from job_submitter.bats, whose header says how): the
# profile cache, any current directory, what the cluster has (sinfo, cached per cluster) and
# smaller things: a symlinked submitter, options given again, what it says of arrays.

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

# ---------------------------------------------------------------------------------------------
# 7. The profile cache

@test "profile cache: compiled once, then no Python; an edited profile is compiled again" {
  make_ready_venv
  rm -rf -- "$HPC_CACHE_DIR"
  HPC_STUB_REAL_PYTHON=$(command -v python3)
  export HPC_STUB_REAL_PYTHON
  export PATH=$fixtures/python_bin:$PATH

  HPC_STUB_PYTHON=pass submit -y
  assert_equal "$status" 0
  [[ $(calls python3) -gt 0 ]]
  [[ -n $(find "$HPC_CACHE_DIR" -type f) ]]

  # The stub fails: only the cached profile can make this submission work.
  forget_calls
  submit -y
  assert_equal "$status" 0
  assert_equal "$stderr" ""
  assert_equal "$(calls python3)" 0
  argv_of sbatch 1
  has_arg --time=00-00:10:00

  # A changed profile is compiled again, and its values are used.
  forget_calls
  sed -i 's/^  time: 00-00:10:00$/  time: 00-00:20:00/' "$project/hpc_files/clusters/local.yaml"
  grep -qx '  time: 00-00:20:00' "$project/hpc_files/clusters/local.yaml"
  HPC_STUB_PYTHON=pass submit -y
  assert_equal "$status" 0
  [[ $(calls python3) -gt 0 ]]
  argv_of sbatch 1
  has_arg --time=00-00:20:00

  # And cached again.
  forget_calls
  submit -y
  assert_equal "$status" 0
  assert_equal "$(calls python3)" 0
  argv_of sbatch 1
  has_arg --time=00-00:20:00
}

# ---------------------------------------------------------------------------------------------
# 8. Any current directory

@test "works from any current directory: source_dir is the project" {
  make_ready_venv
  local quoted
  printf -v quoted '%q' "$project"
  for dir in / "$project/hpc_files" "$tmp"; do
    forget_calls
    cd "$dir"
    submit -y
    assert_equal "$dir -> $status" "$dir -> 0"
    argv_of sbatch 1
    has_arg --chdir="$project"
    has_arg --output="$outputs/default_venv-none_%j.out"
    job_plan "$outputs/default_venv-none_4242.sh" | grep -qxF "hpc_plan_source_dir=$quoted"
    job_plan "$outputs/default_venv-none_4242.sh" | grep -qxF 'hpc_plan_project_name=my\ project'
    grep -qxF "source $quoted/hpc_files/lib/hpc_job.bash" "$outputs/default_venv-none_4242.sh"
  done
  # -C is read relative to the current directory.
  cd "$fixtures/configs"
  forget_calls
  submit -y -C lightning.txt
  assert_equal "$status" 0
  job_plan "$outputs/default_venv-none_4242.sh" | grep -qF 'hpc_plan_command=( python train.py'
}

@test "straight from this repository, the repository is the project" {
  cd /
  run --separate-stderr bash "$HPC_ROOT/hpc_files/job_submitter.sh" --dry-run -g 0 </dev/null
  assert_equal "$status" 0
  assert_line "source_dir=$HPC_ROOT"
  assert_line --partial "--chdir=$(printf '%q' "$HPC_ROOT") "
}

# ---------------------------------------------------------------------------------------------
# 9. What the cluster has: sinfo, cached per cluster

# sinfo_cache: the cached sinfo answer of the local profile's cluster.
sinfo_cache() {
  printf '%s\n' "$HPC_CACHE_DIR/slurm/local.txt"
}

@test "sinfo is asked once and cached; a cache too old or of another SLURM_CONF is asked again" {
  make_ready_venv
  local ask='-h -e -o %P|%D|%c|%m|%G'
  stub_through sinfo "$fixtures/bin/sinfo" "$ask"
  submit -y
  unstub sinfo
  assert_equal "$status" 0
  [[ -f $(sinfo_cache) ]]
  # The next submissions run no sinfo.
  stub sinfo
  submit -y
  assert_equal "$status" 0
  submit -y --dry-run
  assert_equal "$status" 0
  unstub sinfo
  # Ten minutes later, it is asked again.
  local stamp
  stamp=$(head -n 1 "$(sinfo_cache)")
  sed -i "1s/.*/$((stamp - 600))/" "$(sinfo_cache)"
  stub_through sinfo "$fixtures/bin/sinfo" "$ask"
  submit -y
  unstub sinfo
  assert_equal "$status" 0
  # Another cluster's configuration: asked again.
  stub_through sinfo "$fixtures/bin/sinfo" "$ask"
  SLURM_CONF=/elsewhere/slurm.conf submit -y
  unstub sinfo
  assert_equal "$status" 0
}

@test "a refusal is confirmed with a fresh sinfo: an old cache never refuses what the cluster now has" {
  make_ready_venv
  # The cluster had 4 nodes of 32 CPUs (the stub's table) and now has 64 CPUs per node.
  submit -y
  assert_equal "$status" 0
  forget_calls
  local ask='-h -e -o %P|%D|%c|%m|%G'
  stub_through sinfo "$fixtures/bin/sinfo" "$ask"
  HPC_STUB_SINFO_TABLE='debug*|4|64|256000|gpu:8' submit -y -c 40
  unstub sinfo
  assert_equal "$status" 0
  argv_of sbatch 1
  has_arg --cpus-per-task=40
  # More than the cache says: refused only after asking again, with what sinfo says now.
  stub_through sinfo "$fixtures/bin/sinfo" "$ask"
  stub sbatch
  submit -y -c 65
  unstub sinfo
  unstub sbatch
  assert_equal "$status" 2
  assert_equal "$stderr" "job_submitter.sh: -c/--cpus: 65 CPUs per process (x 1) is more than a node of partition debug has (32); accepted: 1 to 32"
}

@test "refusals and dry runs write no sinfo cache; without sinfo's answer SLURM alone judges" {
  make_ready_venv
  stub_through sinfo "$fixtures/bin/sinfo" '-h -e -o %P|%D|%c|%m|%G' '-h -e -o %P|%D|%c|%m|%G'
  submit -y -c 999
  assert_equal "$status" 2
  submit --dry-run
  unstub sinfo
  assert_equal "$status" 0
  [[ ! -e $(sinfo_cache) ]]
  # sinfo fails: the request goes to sbatch as it is, and nothing is cached.
  forget_calls
  HPC_STUB_SINFO=fail submit -y -c 999
  assert_equal "$status" 0
  argv_of sbatch 1
  has_arg --cpus-per-task=999
  [[ ! -e $(sinfo_cache) ]]
}

@test "a cluster the toolkit does not know (nodes of 4000 MB): no memory asked for, the install job asks for little" {
  export HPC_STUB_SINFO_TABLE='batch*|2|4|4000|gpu:2'
  submit -y --cluster generic -g 1
  assert_equal "$status" 0
  # The install job, then the job: neither asks for more memory than a node has.
  argv_of sbatch 1
  has_arg --mem=2G
  argv_of sbatch 2
  for arg in "${argv[@]}"; do [[ $arg != --mem=* ]] || fail "the job asks for memory: $arg"; done
  assert_line --index 0 --partial "memory (SLURM's default) per node"
  # Asked for, it is checked against the nodes.
  submit -y --cluster generic -g 2 -m 3G
  assert_equal "$status" 2
  assert_equal "$stderr" "job_submitter.sh: -m/--mem-per-gpu: 3G x 2 GPU(s) is more memory than a node of partition batch has (4000M); accepted: at most 2000M"
  # No default partition: said in one line, with the cluster's partitions; nothing made.
  rm -rf -- "$SCRATCH/my project" "$HPC_CACHE_DIR/slurm"
  HPC_STUB_SINFO_TABLE=$'batch|2|4|4000|gpu:2\nlong|1|4|4000|(null)' submit -y --cluster generic
  assert_equal "$status" 2
  assert_equal "$stderr" "job_submitter.sh: -p/--partition: the cluster has no default partition and none was given; accepted: batch long"
  [[ ! -e "$SCRATCH/my project" ]]
  # A partition given: accepted.
  HPC_STUB_SINFO_TABLE=$'batch|2|4|4000|gpu:2\nlong|1|4|4000|(null)' submit -y --cluster generic -p batch
  assert_equal "$status" 0
  # Or given as users do, in SBATCH_PARTITION, which sbatch reads: accepted too.
  HPC_STUB_SINFO_TABLE=$'batch|2|4|4000|gpu:2\nlong|1|4|4000|(null)' SBATCH_PARTITION=long submit -y --cluster generic -g 0
  assert_equal "$status" 0
  # A cluster that puts jobs into partitions itself (profile partition_routed: Cedar): accepted.
  unset HPC_STUB_SINFO_TABLE
  forget_calls
  HPC_STUB_SINFO=nodefault submit -y --cluster cedar -g 1
  assert_equal "$status" 0
  argv_of sbatch 1
  for arg in "${argv[@]}"; do [[ $arg != --partition=* ]] || fail "a partition was chosen: $arg"; done
}

@test "a GPU type no node of the partition has is refused in one line naming -G and the types there (exit 2, nothing made), judged from sinfo's GRES when the profile lists no types; from the cache too" {
  make_ready_venv
  local typed=$'compute*|2|4|4000|gpu:a100:2(S:0-1)\nsmall|1|4|4000|gpu:t4:1,gpu:a100:1'
  HPC_STUB_SINFO_TABLE=$typed submit -y --cluster generic -g 1 -G v100 -e typed
  assert_equal "$status" 2
  assert_equal "$stderr" "job_submitter.sh: -G/--gpu-type: 'v100' is not a GPU type of partition compute; accepted: a100"
  [[ ! -e "$SCRATCH/my project" ]]
  # More GPUs of that type than a node has: refused naming -g.
  HPC_STUB_SINFO_TABLE=$typed submit -y --cluster generic -g 2 -G t4 -p small -e typed
  assert_equal "$status" 2
  assert_equal "$stderr" "job_submitter.sh: -g/--gpus: 2 t4 GPUs per node is more than a node of partition small has; accepted: 0 to 1"
  # A type the partition has: submitted, asking for it; the second time from the cache.
  forget_calls
  HPC_STUB_SINFO_TABLE=$typed submit -y --cluster generic -g 2 -G a100 -e typed
  assert_equal "$status" 0
  argv_of sbatch 1
  has_arg --gres=gpu:a100:2 || fail "no typed GRES: ${argv[*]}"
  [[ -f $HPC_CACHE_DIR/slurm/generic.txt ]]
  HPC_STUB_SINFO_TABLE=$typed submit -y --cluster generic -g 1 -G v100 -e typed
  assert_equal "$status" 2
  assert_equal "$stderr" "job_submitter.sh: -G/--gpu-type: 'v100' is not a GPU type of partition compute; accepted: a100"
  # GPUs without a type (the embedded cluster's): any -G is refused, saying to leave it out.
  rm -rf -- "$HPC_CACHE_DIR/slurm"
  HPC_STUB_SINFO_TABLE=$'batch*|2|4|4000|gpu:2' submit -y --cluster generic -g 1 -G a100 -e typed
  assert_equal "$status" 2
  assert_equal "$stderr" "job_submitter.sh: -G/--gpu-type: 'a100': the GPUs of partition batch have no type; accepted: no -G (any GPU)"
  # No GPUs asked for: the type does not matter.
  HPC_STUB_SINFO_TABLE=$'batch*|2|4|4000|gpu:2' submit -y --cluster generic -g 0 -G a100 -e typed
  assert_equal "$status" 0
}

@test "a map's gather with GPUs gets the tasks' GPU type (-G): judged like theirs, a refusal from the cache judged again from a fresh sinfo" {
  make_ready_venv
  # The cache says the GPUs have no type (the cluster's GPUs were typed since).
  HPC_STUB_SINFO_TABLE=$'batch*|2|4|4000|gpu:2' submit -y --cluster generic -g 0 -e gtype
  assert_equal "$status" 0
  [[ -f $HPC_CACHE_DIR/slurm/generic.txt ]]
  forget_calls
  HPC_STUB_SINFO_TABLE=$'batch*|2|4|4000|gpu:a100:2' submit -y --cluster generic -g 0 -G a100 \
    --map-range 0-1 --gather "python -c pass" --gather-gpus 1 -e gtype
  assert_equal "$status" 0
  argv_of sbatch 2
  has_arg --gres=gpu:a100:1 || fail "the gather has no typed GRES: ${argv[*]}"
}

@test "a partition given in SBATCH_PARTITION is the job's: written in its plan and script, so that resubmit, a gather and a follow-up get it without the variable; a bad one names SBATCH_PARTITION" {
  make_ready_venv
  HPC_STUB_SINFO_TABLE=$'batch|2|4|4000|gpu:2\nlong|1|4|4000|(null)' SBATCH_PARTITION=long submit -y --cluster generic -g 0 -e envpart
  assert_equal "$status" 0
  argv_of sbatch 1
  has_arg --partition=long || fail "sbatch was not given the partition: ${argv[*]}"
  grep -qx 'hpc_plan_partition=long' "$outputs"/envpart_venv-none_*.plan
  grep -qx '#SBATCH --partition="long"' "$outputs/envpart_venv-none_4242.sh"
  # Resubmitted from a shell without the variable: the same partition.
  forget_calls
  submit resubmit envpart
  assert_equal "$status" 0
  grep -qx '#SBATCH --partition="long"' "$stub_log/sbatch.1.script"
  # A partition the cluster does not have, from the variable: one line naming it, exit 2.
  HPC_STUB_SINFO_TABLE=$'batch|2|4|4000|gpu:2\nlong|1|4|4000|(null)' SBATCH_PARTITION=nope submit -y --cluster generic -g 0 -e envpart
  assert_equal "$status" 2
  assert_equal "$stderr" "job_submitter.sh: SBATCH_PARTITION: 'nope' is not a partition of this cluster; accepted: batch long"
  # -p wins over the variable, as with sbatch.
  forget_calls
  HPC_STUB_SINFO_TABLE=$'batch|2|4|4000|gpu:2\nlong|1|4|4000|(null)' SBATCH_PARTITION=long submit -y --cluster generic -g 0 -p batch -e envpart
  assert_equal "$status" 0
  argv_of sbatch 1
  has_arg --partition=batch || fail "sbatch was not given -p: ${argv[*]}"
}

# ---------------------------------------------------------------------------------------------
# 10. Smaller things

@test "run through a symlink, the submitter finds its project" {
  make_ready_venv
  ln -s "$submitter" "$tmp/submit"
  cd /
  run --separate-stderr bash "$tmp/submit" -y </dev/null
  assert_equal "$status" 0
  argv_of sbatch 1
  has_arg --chdir="$project"
  # Also a relative symlink in a folder of its own.
  mkdir -p "$tmp/bin"
  ln -s "../my project/hpc_files/job_submitter.sh" "$tmp/bin/submit"
  forget_calls
  run --separate-stderr bash "$tmp/bin/submit" -y </dev/null
  assert_equal "$status" 0
  argv_of sbatch 1
  has_arg --chdir="$project"
}

@test "-d/--data and --copy-back add up when given again; the longest experiment name is accepted" {
  make_ready_venv
  submit -y --copy-back a --copy-back b c
  assert_equal "$status" 0
  job_plan "$outputs/default_venv-none_4242.sh" | grep -qxF "hpc_plan_copy_back=( a b c )"
  local name
  printf -v name '%0220d' 0
  forget_calls
  submit -y -e "$name" -g 0
  assert_equal "$status" 0
  [[ -f $outputs/${name}_venv-none_4242.sh ]]
  # Copied back from a folder inside SLURM_TMPDIR: ./out is fine.
  forget_calls
  submit -y --copy-back ./out
  assert_equal "$status" 0
}

# ---------------------------------------------------------------------------------------------
# Arrays: what the submitter says of them

@test "--repeat: the output and tail -F name task 0's real file, and the others' with the job id filled in" {
  make_ready_venv
  submit -y -g 0 --repeat 3 -e rep
  assert_equal "$status" 0
  local first=$outputs/rep_venv-none_4242_0.out
  assert_line --index 1 "Job script: $outputs/rep_venv-none_4242.sh"
  assert_line --index 2 "Output:     $first (task 0; task %a writes $outputs/rep_venv-none_4242_%a.out, %a = 0-2)"
  assert_line --index 3 "Follow it:  tail -F $(printf '%q' "$first")"
  # Only the summary keeps SLURM's pattern.
  assert_equal "$(grep -c '%A' <<<"$output")" 1
}

@test "--dry-run of --repeat lists seed and checkpoints_dir (first and last task); every job's checkpoints_dir is defined" {
  make_ready_venv
  # shellcheck disable=SC2016 # the references are for the job
  printf 'python main.py --seed $seed --ckpt ${checkpoints_dir}\n' >"$project/hpc_files/experiment_configurations.txt"
  submit --dry-run -g 0 --repeat 3 -e rep
  assert_equal "$status" 0
  local ck="$SCRATCH/my project/rep/checkpoints"
  assert_line "seed=0 (task 0) ... 2 (task 2)"
  assert_line "checkpoints_dir=$ck/task_0 (task 0) ... $ck/task_2 (task 2)"
  assert_equal "$(grep '^configs file uses' <<<"$output")" "configs file uses \$seed: defined by the job
configs file uses \$checkpoints_dir: defined by the job"
  # One task: no range.
  submit --dry-run -g 0 --repeat 1 -e rep
  assert_line "seed=0 (task 0)"
  assert_line "checkpoints_dir=$ck/task_0 (task 0)"
  # Not an array: checkpoints_dir is the experiment's, and there is no seed.
  submit --dry-run -g 0 -e rep
  assert_equal "$status" 0
  assert_line "checkpoints_dir=$ck"
  refute_line --partial "seed="
  assert_equal "$(grep '^configs file uses' <<<"$output")" "configs file uses \$seed: NOT DEFINED: the job will fail before the program starts
configs file uses \$checkpoints_dir: defined by the job"
}
