#!/usr/bin/env bats
# The core user paths on the second configuration of the local cluster (local_cluster.sh --config
# second: nodes named by address, 4000 MB per node, typed GPUs gpu:a100:2, a partition that is not
# the default, SLURM_TMPDIR provided), with the generic profile, as on a cluster the toolkit has
# no profile for: the partition comes from SBATCH_PARTITION or -p, as users give it there.
# Beside the core paths, the newer ones: -W accelerate, a map + gather with status and resubmit
# --failed, a chunked map (--chunk auto), a scaling test and its report job, and the refusals of
# what no node here could run.
# tests/run.sh brings this cluster up beside the default one (HPC_SECOND_CLUSTER_DIR and
# HPC_SECOND_CLUSTER_PORT_BASE). The cluster's Python packages reach the venv through PYTHONPATH,
# as a module system provides them (nothing can be downloaded here).
# shellcheck disable=SC2016 # configs lines are single-quoted on purpose
# Set by hpc_run_job or hpc_submit_job (helpers/cluster.bash); declared for shellcheck.
declare -g job_id job_out job_state

SENTINEL_KEY=hpc-sentinel-key-0123456789abcdef

bats_require_minimum_version 1.5.0

setup_file() {
  load '../helpers/common'
  load '../helpers/cluster'
  hpc_cluster_use "${HPC_SECOND_CLUSTER_DIR:-$HPC_ROOT/.local_cluster_second}" \
    "${HPC_SECOND_CLUSTER_PORT_BASE:-$((${HPC_CLUSTER_PORT_BASE:-17817} + 50))}"
  [[ $(sinfo -h -o '%P %N %G' 2>/dev/null) == "compute 127.0.0.[1-2] gpu:a100:2" ]] ||
    fail "the second cluster is not up in $HPC_CLUSTER_DIR: run 'bash hpc_files/local_cluster.sh --dir $HPC_CLUSTER_DIR --port-base $HPC_CLUSTER_PORT_BASE --config second up' (or tests/run.sh)"
  export HPC_CLUSTER=generic SBATCH_PARTITION=compute
  # Where torch is, found without importing it (3 CPU-s).
  PYTHONPATH=$(python3 -c 'import importlib.util, os; print(os.path.dirname(os.path.dirname(importlib.util.find_spec("torch").origin)))')
  export PYTHONPATH
  # Not under /tmp: container jobs get their own /tmp, which would hide the project.
  WORK=$(mktemp -d /var/tmp/hpc-second-tests.XXXXXX)
  export WORK
  export SCRATCH="$WORK/scratch dir"
  export PROJECT="$WORK/second project"
  mkdir -p "$SCRATCH/second project/datasets/d1/sub"
  hpc_project_make "$PROJECT"
  # The first submission builds the venv with an install job; later ones reuse it. The tests that
  # submit through the toolkit need it; the others run without.
  local why
  why=$(warm_up 2>&1) || printf '%s\n' "$why" >"$BATS_FILE_TMPDIR/warm-up failed"
}

# warm_up: a first job through the toolkit (it builds the venv); fails saying why.
warm_up() {
  local state
  hpc_configs "$PROJECT" 'python probe.py env'
  hpc_submit_job "$PROJECT" -g 0 -e warmup || return 1
  hpc_wait_job "$job_id" 180 || return 1
  state=$(hpc_job_state "$job_id")
  [[ $state == "COMPLETED 0:0" ]] || fail "warm-up job: $state: $(cat "$job_out")"
}

# needs_venv: fails the test when the warm-up job failed, with its reason.
needs_venv() {
  [[ ! -e "$BATS_FILE_TMPDIR/warm-up failed" ]] || fail "$(cat "$BATS_FILE_TMPDIR/warm-up failed")"
}

teardown_file() {
  rm -rf -- "${WORK:?}"
}

setup() {
  load '../helpers/common'
  load '../helpers/cluster'
}

# use_wandb_stub: the recording wandb stand-in first on PATH, as tests/integration/sweeps.bats.
use_wandb_stub() {
  export HOME="$BATS_TEST_TMPDIR/home" WANDB_STUB_LOG="$BATS_TEST_TMPDIR/wandb log"
  mkdir -p "$HOME" "$WANDB_STUB_LOG"
  export PATH="$HPC_ROOT/tests/fixtures/wandb_stub:$PATH"
  HPC_TEST_SENTINEL_SHA=$(printf '%s' "$SENTINEL_KEY" | sha256sum | cut -d' ' -f1)
  export HPC_TEST_SENTINEL_SHA
  unset WANDB_API_KEY
}

# use_apptainer_standin: the apptainer stand-in and an image, as tests/integration/container.bats.
use_apptainer_standin() {
  cp "$HPC_ROOT/tests/fixtures/project/container_probe.py" "$PROJECT/"
  [[ -e $PROJECT/app.sif ]] || bash "$HPC_ROOT/tests/fixtures/apptainer/make_sif.sh" "$PROJECT/app.sif"
  export PATH="$HPC_ROOT/tests/fixtures/apptainer/bin:$PATH"
  export HOME="$BATS_TEST_TMPDIR/home" APPTAINER_STANDIN_LOG="$BATS_TEST_TMPDIR/argv"
  mkdir -p "$HOME" "$APPTAINER_STANDIN_LOG"
  # The Python with torch first on the container's PATH.
  APPTAINERENV_PREPEND_PATH=$(dirname "$(python3 -c 'import sys; print(sys.executable)')")
  export APPTAINERENV_PREPEND_PATH
}

# on_both_nodes PATTERN: the number of output lines matching PATTERN on each node, "N1 N2".
on_both_nodes() {
  printf '%s %s\n' "$(grep -c "$1.*127\.0\.0\.1\b" "$job_out")" "$(grep -c "$1.*127\.0\.0\.2\b" "$job_out")"
}

@test "a standard job: one task, a typed GPU of the node named by address, the cluster's SLURM_TMPDIR" {
  needs_venv
  hpc_configs "$PROJECT" 'python probe.py env'
  hpc_run_job "$PROJECT" --gpus 2 --cpus 2 -e std
  assert_equal "$job_state" "COMPLETED 0:0"
  assert_equal "$(hpc_job_field "$job_id" Partition)" compute
  assert_equal "$(hpc_job_field "$job_id" NumTasks)" 1
  assert_equal "$(hpc_job_field "$job_id" NumCPUs)" 4
  node=$(hpc_job_field "$job_id" NodeList)
  [[ $node == 127.0.0.[12] ]] || fail "node: $node"
  run sed -n 's/^PROBE //p' "$job_out"
  assert_output --partial "\"SLURMD_NODENAME\": \"$node\""
  assert_output --partial "\"SLURM_TMPDIR\": \"$HPC_CLUSTER_DIR/scratch/$node/slurm_tmpdir/job$job_id\""
  assert_output --partial '"CUDA_VISIBLE_DEVICES": "0,1"'
  assert_output --partial '"tmpdir_is_dir": true'
}

@test "a GPU type: the node's (a100) runs with the typed GRES; another is refused in one line naming -G and the types sinfo shows, and nothing is queued" {
  needs_venv
  hpc_configs "$PROJECT" 'python probe.py env'
  run --separate-stderr bash "$PROJECT/hpc_files/job_submitter.sh" -y -g 1 -G v100 -e gtype
  assert_equal "$status" 2
  assert_equal "$stderr" "job_submitter.sh: -G/--gpu-type: 'v100' is not a GPU type of partition compute; accepted: a100"
  run squeue -h -n "${PROJECT##*/}-gtype"
  assert_output ""
  hpc_run_job "$PROJECT" -g 1 -G a100 -e gtype
  assert_equal "$job_state" "COMPLETED 0:0"
  run scontrol show job "$job_id"
  assert_output --regexp '(TresPerNode|Gres)=(gres[:/])?gpu:a100:1'
}

@test "torchrun, 2 nodes x 2 GPUs, partition by -p: 4 ranks, all-reduce 6, two on each address-named node" {
  needs_venv
  unset SBATCH_PARTITION
  hpc_configs "$PROJECT" 'python probe.py ddp'
  hpc_run_job "$PROJECT" -p compute -W torchrun --gpus 2 --num-nodes 2 -e tr
  assert_equal "$job_state" "COMPLETED 0:0"
  assert_equal "$(hpc_job_field "$job_id" NodeList)" "127.0.0.[1-2]"
  assert_equal "$(grep -c '^DDP rank=[0-3] world=4 sum=6 .*source=torchrun' "$job_out")" 4
  assert_equal "$(on_both_nodes '^DDP ')" "2 2"
}

@test "lightning, 2 nodes x 1 GPU: a real Trainer with world size 2 across the address-named nodes, one rank on each" {
  needs_venv
  # What this cluster changes for Lightning is the nodes' names (addresses) and the typed GRES: one
  # rank per node proves the multi-node world across them. Two ranks per node under Lightning are
  # job_submitter.bats' 2x2 (the node's name plays no part in a rank's local rank), and two per
  # address-named node are this file's torchrun and accelerate 2x2 tests (Lightning's rank costs
  # 8 CPU-s of imports).
  hpc_configs "$PROJECT" 'python lightning_train.py --num_nodes ${num_nodes} --devices ${gpus_per_node} --steps 2 --run-name second'
  hpc_run_job "$PROJECT" -W lightning --gpus 1 --num-nodes 2 -e lt
  assert_equal "$job_state" "COMPLETED 0:0"
  run sed -n 's/^LIGHTNING //p' "$job_out"
  assert_equal "${#lines[@]}" 2
  assert_equal "$(grep -c '"world_size": 2' <<<"$output")" 2
  assert_equal "$(grep -c '"global_rank": 0, ' <<<"$output")" 1
  assert_equal "$(grep -c '"global_rank": 1, ' <<<"$output")" 1
  assert_equal "$(grep -c '"node": "127.0.0.1"' <<<"$output")" 1
  assert_equal "$(grep -c '"node": "127.0.0.2"' <<<"$output")" 1
}

@test "--data: both nodes see the same tree as the source, unpacked into the cluster's SLURM_TMPDIR" {
  needs_venv
  data="$SCRATCH/second project"
  for i in $(seq 1 10); do head -c $((i * 100)) /dev/urandom >"$data/datasets/d1/sub/f$i.bin"; done
  printf 'labels\n' >"$data/labels.csv"
  hpc_configs "$PROJECT" 'python tree_sums.py - datasets/d1 labels.csv'
  hpc_run_job "$PROJECT" -W lightning --gpus 1 --num-nodes 2 -e data --data datasets/d1 labels.csv
  assert_equal "$job_state" "COMPLETED 0:0"
  want=$(python3 "$PROJECT/tree_sums.py" "$data" datasets/d1 labels.csv | cut -d' ' -f3)
  run sed -n 's/^TREE //p' "$job_out"
  assert_equal "$(sort <<<"$output")" "127.0.0.1 $want
127.0.0.2 $want"
}

@test "a 2-agent W&B sweep (the wandb stand-in) is one array; each task ran its agent with one typed GPU" {
  needs_venv
  use_wandb_stub
  printf '%s\n' "$SENTINEL_KEY" >"$HOME/wandb_credentials.txt"
  chmod 600 "$HOME/wandb_credentials.txt"
  hpc_submit_job "$PROJECT" -w me/proj/abc123 --num-sweeps 2 -e sweep
  hpc_wait_job "$job_id" 120
  run bash -c "scontrol show job $job_id | sed -n 's/.*JobState=\([A-Z_]*\).*/\1/p'"
  assert_output "COMPLETED
COMPLETED"
  for task in 1 2; do
    run cat "$WANDB_STUB_LOG/${job_id}_$task"
    assert_line "argv: agent --count 1 me/proj/abc123"
    assert_line "key: sentinel"
    assert_line --regexp '^node: 127\.0\.0\.[12]$'
    assert_line --regexp '^gpus: [01]$'
  done
}

@test "a container job (the apptainer stand-in) writes to its binds; only /scratch_storage stays" {
  use_apptainer_standin
  hpc_configs "$PROJECT" "python3 '$PROJECT/container_probe.py'"
  hpc_run_job "$PROJECT" -s "$PROJECT/app.sif" --workdir /code -g 1 -e boxed
  assert_equal "$job_state" "COMPLETED 0:0"
  run sed -n 's/^CONTAINER //p' "$job_out"
  assert_equal "${#lines[@]}" 1
  for key in scratch_storage tmp db home workdir; do
    [[ ${lines[0]} == *"\"$key\": \"written\""* ]] || fail "$key: ${lines[0]}"
  done
  assert_equal "$(cat "$SCRATCH/second project/boxed/singularity_${job_id}_0/result.txt")" scratch_storage
  node=$(hpc_job_field "$job_id" NodeList)
  [ ! -e "$HPC_CLUSTER_DIR/scratch/$node/slurm_tmpdir/job$job_id" ]
}

@test "without a partition (no default here) the submission is refused in one line naming the partitions, and nothing runs" {
  needs_venv
  unset SBATCH_PARTITION
  hpc_configs "$PROJECT" 'python probe.py env'
  run --separate-stderr bash "$PROJECT/hpc_files/job_submitter.sh" -y -g 0 -e nopart
  assert_equal "$status" 2
  assert_equal "$stderr" "job_submitter.sh: -p/--partition: the cluster has no default partition and none was given; accepted: compute"
  [[ ! -e "$SCRATCH/${PROJECT##*/}/nopart" ]] || fail "a folder was made for the refused job"
  run squeue -h -n nopart
  assert_output ""
}

@test "a 2-node job's nodelist of addresses: the Python helpers expand it as scontrol does" {
  out=$BATS_TEST_TMPDIR/nodes
  id=$(hpc_sbatch -N2 -o "$out" --wrap "echo \"list \$SLURM_JOB_NODELIST\"
PYTHONPATH='$HPC_ROOT/python_helpers/src' python3 -m hpc_helpers hostlist \"\$SLURM_JOB_NODELIST\" | sed 's/^/helpers /'
scontrol show hostnames \"\$SLURM_JOB_NODELIST\" | sed 's/^/scontrol /'")
  hpc_wait_job "$id" 60
  run cat "$out"
  assert_output "list 127.0.0.[1-2]
helpers 127.0.0.1
helpers 127.0.0.2
scontrol 127.0.0.1
scontrol 127.0.0.2"
}

@test "accelerate, 2 nodes x 2 GPUs, partition from SBATCH_PARTITION: 4 ranks, all-reduce 6, two on each address-named node, rank 0 on 127.0.0.1" {
  needs_venv
  cp "$HPC_ROOT/tests/fixtures/project/accelerate_sum.py" "$PROJECT/"
  hpc_configs "$PROJECT" 'python accelerate_sum.py'
  hpc_run_job "$PROJECT" -W accelerate --gpus 2 --num-nodes 2 -e acc
  [[ $job_state == "COMPLETED 0:0" ]] || fail "job $job_id ended $job_state: $(cat "$job_out")"
  assert_equal "$(hpc_job_field "$job_id" Partition)" compute
  assert_equal "$(hpc_job_field "$job_id" NodeList)" "127.0.0.[1-2]"
  run sed -n 's/^SUM //p' "$job_out"
  assert_equal "$(sort <<<"$output")" "rank=0 sum=6
rank=1 sum=6
rank=2 sum=6
rank=3 sum=6"
  # Static rendezvous: node i is machine rank i, so ranks 0 and 1 run on the first node.
  assert_equal "$(grep -cE '^ACC rank=[01] world=4 node=127\.0\.0\.1$' "$job_out")" 2
  assert_equal "$(grep -cE '^ACC rank=[23] world=4 node=127\.0\.0\.2$' "$job_out")" 2
}

# submit_map ARGS...: a map with -y -g 0 ARGS, as tests/integration/map_gather.bats; sets job_id
# (the array), gather_id and map_dir.
submit_map() {
  local out
  out=$(bash "$PROJECT/hpc_files/job_submitter.sh" -y -g 0 "$@" 2>&1) || fail "submission failed: $out"
  job_id=$(sed -n 's/^Submitted job \([0-9][0-9]*\).*/\1/p' <<<"$out")
  gather_id=$(sed -n 's/^Gather job \([0-9][0-9]*\):.*/\1/p' <<<"$out")
  map_dir=$(sed -n 's/^Map [^ ]*: array job [0-9]* ([^)]*), folder //p' <<<"$out")
  [[ -n $job_id && -n $gather_id && -d $map_dir ]] || fail "no array id, gather id or map folder in: $out"
}

@test "map + gather: index 3 exits 7, the gather ends FAILED naming it; status shows it; resubmit --failed re-runs exactly index 3 and a gather that sums 14" {
  needs_venv
  cp "$HPC_ROOT/tests/fixtures/map/"{featurize.py,gather.py} "$PROJECT/"
  hpc_configs "$PROJECT" 'python featurize.py --index ${map_index} --item "${map_item}" --out ${task_dir}'
  MAP_FAIL_INDEX=3 MAP_EXIT_CODE=7 MAP_SLEEP=0 submit_map --map-range 0-3 --max-concurrent 2 --gather "python gather.py" -e mapped
  assert_equal "$(hpc_job_field "$job_id" Partition)" compute
  assert_equal "$(hpc_job_field "$gather_id" Partition)" compute
  hpc_wait_job "$job_id" 120
  hpc_wait_job "$gather_id" 60
  gather_state=$(hpc_job_state "$gather_id")
  [[ $gather_state == "FAILED 1:0" ]] || fail "gather $gather_id ended $gather_state: $(cat "$map_dir/gather_$gather_id.out")"
  run cat "$map_dir/gather_$gather_id.out"
  assert_line "gather not run: policy all-ok needs 4/4 tasks, 3 ok; failed: 3 (exit 7); to re-run them: bash job_submitter.sh resubmit mapped --failed"
  run bash "$PROJECT/hpc_files/job_submitter.sh" status mapped
  assert_success
  for i in 0 1 2; do assert_line --regexp "^${job_id}_$i +mapped +venv-none +COMPLETED +0 "; done
  assert_line --regexp "^${job_id}_3 +mapped +venv-none +FAILED +7 "
  assert_line --regexp "^$gather_id +mapped +venv-gather +FAILED +1:0 "
  # The cause fixed: MAP_FAIL_INDEX no longer set in the resubmitting shell.
  run bash "$PROJECT/hpc_files/job_submitter.sh" resubmit mapped --failed
  assert_success
  assert_line --regexp "^Resubmitted task\(s\) 3 of map ${map_dir##*/} as job [0-9]+ \(array 3%2\)$"
  new_id=$(sed -n 's/^Resubmitted .* as job \([0-9]*\) .*/\1/p' <<<"$output")
  new_gather=$(sed -n 's/^Gather job \([0-9]*\):.*/\1/p' <<<"$output")
  [[ -n $new_id && -n $new_gather ]] || fail "no new ids in: $output"
  assert_equal "$(hpc_job_field "$new_id" Partition)" compute
  assert_equal "$(hpc_job_field "$new_gather" Partition)" compute
  hpc_wait_job "$new_id" 60
  hpc_wait_job "$new_gather" 60
  gather_state=$(hpc_job_state "$new_gather")
  [[ $gather_state == "COMPLETED 0:0" ]] || fail "gather $new_gather ended $gather_state: $(cat "$map_dir/gather_$new_gather.out")"
  assert_equal "$(scontrol show job "$new_id" | grep -c 'ArrayTaskId=')" 1
  run cat "$map_dir/gather_$new_gather.out"
  assert_line "GATHER sum=14 n_ok=4 failed=''"
  assert_equal "$(squeue -h -j "$job_id,$gather_id,$new_id,$new_gather" 2>/dev/null)" ""
}

@test "a chunked map (--chunk auto, the generic profile): 10 items in 2 tasks of 5 on the cluster's partition, item 5 failing; the gather and status count items; resubmit --failed re-runs item 5 alone and the gather sums all 10" {
  needs_venv
  cp "$HPC_ROOT/tests/fixtures/map/"{featurize.py,gather.py} "$PROJECT/"
  hpc_configs "$PROJECT" 'python featurize.py --index ${map_index} --item "${map_item}" --out ${task_dir}'
  local out
  out=$(MAP_FAIL_INDEX=5 MAP_EXIT_CODE=7 MAP_SLEEP=0 bash "$PROJECT/hpc_files/job_submitter.sh" -y -g 0 \
    --map-range 0-9 --chunk auto --max-concurrent 2 --gather "python gather.py" -e chunked 2>&1) ||
    fail "submission failed: $out"
  [[ $out == *'10 items, 5 per task: 2 tasks'* ]] || fail "no chunk line in: $out"
  job_id=$(sed -n 's/^Submitted job \([0-9][0-9]*\).*/\1/p' <<<"$out")
  gather_id=$(sed -n 's/^Gather job \([0-9][0-9]*\):.*/\1/p' <<<"$out")
  map_dir=$(sed -n 's/^Map [^ ]*: array job [0-9]* ([^)]*), folder //p' <<<"$out")
  [[ -n $job_id && -n $gather_id && -d $map_dir ]] || fail "no array id, gather id or map folder in: $out"
  assert_equal "$(hpc_job_field "$job_id" Partition)" compute
  hpc_wait_job "$job_id" 120
  hpc_wait_job "$gather_id" 60
  local i
  for i in 0 1 2 3 4 6 7 8 9; do
    grep -q '"state": "COMPLETED"' "$map_dir/tasks/$i/status.json" ||
      fail "item $i: $(cat "$map_dir/tasks/$i/status.json")"
  done
  grep -q '"state": "FAILED"' "$map_dir/tasks/5/status.json" || fail "item 5: $(cat "$map_dir/tasks/5/status.json")"
  assert_equal "$(hpc_job_state "${job_id}_1")" "FAILED 7:0"
  assert_equal "$(hpc_job_state "${job_id}_0")" "COMPLETED 0:0"
  assert_equal "$(hpc_job_state "$gather_id")" "FAILED 1:0"
  run cat "$map_dir/gather_$gather_id.out"
  assert_output --partial "gather not run: policy all-ok needs 10/10 tasks, 9 ok; failed: 5 (exit 7)"
  run bash "$PROJECT/hpc_files/job_submitter.sh" status chunked
  assert_success
  assert_line --regexp "^map chunked/${map_dir##*/}: 10 items: 9 COMPLETED, 1 FAILED$"
  run bash "$PROJECT/hpc_files/job_submitter.sh" resubmit chunked --failed
  assert_success
  assert_line --regexp "^Resubmitted item\(s\) 5 of map ${map_dir##*/} as job [0-9]+ \(array 0-0%2, 1 item\(s\) per task\)$"
  local new_id new_gather
  new_id=$(sed -n 's/^Resubmitted item(s) 5 of map [^ ]* as job \([0-9]*\) .*/\1/p' <<<"$output")
  new_gather=$(sed -n 's/^Gather job \([0-9][0-9]*\):.*/\1/p' <<<"$output")
  [[ -n $new_id && -n $new_gather ]] || fail "no new ids in: $output"
  assert_equal "$(hpc_job_field "$new_id" Partition)" compute
  hpc_wait_job "$new_id" 60
  hpc_wait_job "$new_gather" 60
  assert_equal "$(hpc_job_state "$new_gather")" "COMPLETED 0:0"
  run cat "$map_dir/gather_$new_gather.out"
  assert_line "GATHER sum=285 n_ok=10 failed=''"
}

@test "scaling test --scale-nodes 1,2 --scale-gpus 1 -W torchrun: 2 runs and a report job, COMPLETED; summary.csv has both configurations, results.csv the address-named nodes" {
  needs_venv
  cp "$HPC_ROOT/tests/fixtures/scaling/sleep_train.py" "$PROJECT/"
  hpc_configs "$PROJECT" 'python sleep_train.py'
  out=$(SCALE_STEPS=4 SCALE_D=0.01 SCALE_C=0 bash "$PROJECT/hpc_files/job_submitter.sh" -y --scaling-test \
    --scale-nodes 1,2 --scale-gpus 1 -W torchrun -e scaled 2>&1) || fail "submission failed: $out"
  study_dir=$(sed -n 's/^Folder: //p' <<<"$out")
  report_id=$(sed -n 's/.*report job \([0-9][0-9]*\) after them.*/\1/p' <<<"$out")
  read -r -a run_ids <<<"$(sed -n 's/.*(jobs \([0-9 ]*\)), report job.*/\1/p' <<<"$out")"
  [[ -n $report_id && -f $study_dir/study.json ]] || fail "no report job or study folder in: $out"
  assert_equal "${#run_ids[@]}" 2
  for id in "${run_ids[@]}" "$report_id"; do assert_equal "$(hpc_job_field "$id" Partition)" compute; done
  hpc_wait_job "$report_id" 120
  for id in "${run_ids[@]}"; do assert_equal "$(hpc_job_state "$id")" "COMPLETED 0:0"; done
  state=$(hpc_job_state "$report_id")
  [[ $state == "COMPLETED 0:0" ]] || fail "report job $report_id ended $state: $(cat "$study_dir/report_$report_id.out")"
  run python3 -c 'import csv,sys; print(*[r["config"] + ":" + r["runs_ok"] + "/" + r["runs_total"] for r in csv.DictReader(open(sys.argv[1]))])' "$study_dir/summary.csv"
  assert_output "1x1:1/1 2x1:1/1"
  run python3 -c 'import csv,sys; print(*[r["config"] + ":" + r["state"] + ":" + r["node_list"] for r in csv.DictReader(open(sys.argv[1]))], sep="\n")' "$study_dir/results.csv"
  assert_line --regexp '^1x1:COMPLETED:127\.0\.0\.[12]$'
  assert_line '2x1:COMPLETED:127.0.0.[1-2]'
}

@test "a gather no node could run, with the partition from SBATCH_PARTITION, is refused in one line naming the option; nothing is made or queued" {
  needs_venv
  cp "$HPC_ROOT/tests/fixtures/map/"{featurize.py,gather.py} "$PROJECT/"
  hpc_configs "$PROJECT" 'python featurize.py --index ${map_index} --item "${map_item}" --out ${task_dir}'
  # 4 CPUs, 2 GPUs and 4000 MB per node.
  run --separate-stderr bash "$PROJECT/hpc_files/job_submitter.sh" -y -g 0 --map-range 0-1 --gather "python gather.py" --gather-cpus 5 -e nofit
  assert_equal "$status" 2
  assert_equal "$stderr" "job_submitter.sh: --gather-cpus: 5 CPUs is more than a node of partition compute has (4); accepted: 1 to 4"
  run --separate-stderr bash "$PROJECT/hpc_files/job_submitter.sh" -y -g 1 -m 3000M --map-range 0-1 --gather "python gather.py" --gather-gpus 2 -e nofit
  assert_equal "$status" 2
  assert_equal "$stderr" "job_submitter.sh: --gather-gpus: 2 GPUs x 3000M (-m/--mem-per-gpu) is more memory than a node of partition compute has (4000M); accepted: 0 to 1"
  [[ ! -e "$SCRATCH/${PROJECT##*/}/hpc_outputs/map/nofit" ]] || fail "a map folder was made for a refused map"
  run squeue -h -n "${PROJECT##*/}-nofit,${PROJECT##*/}-nofit-gather"
  assert_output ""
}

@test "a scaling test without a partition (no default here) is refused in one line naming -p/--partition; no study is made and nothing runs" {
  needs_venv
  unset SBATCH_PARTITION
  cp "$HPC_ROOT/tests/fixtures/scaling/sleep_train.py" "$PROJECT/"
  hpc_configs "$PROJECT" 'python sleep_train.py'
  run --separate-stderr bash "$PROJECT/hpc_files/job_submitter.sh" -y --scaling-test --scale-nodes 1,2 --scale-gpus 1 -W torchrun -e nopartscale
  assert_equal "$status" 2
  assert_equal "$stderr" "job_submitter.sh: -p/--partition: the cluster has no default partition and none was given; accepted: compute"
  [[ ! -e "$SCRATCH/${PROJECT##*/}/hpc_outputs/scaling/nopartscale" ]] || fail "a study folder was made for the refused scaling test"
  run squeue -h -n "nopartscale-scale-1x1-r1,nopartscale-scale-2x1-r1,nopartscale-scale-report"
  assert_output ""
}
