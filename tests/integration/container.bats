#!/usr/bin/env bats
# Container jobs on the local cluster, through the apptainer stand-in (tests/fixtures/apptainer:
# no real Apptainer or Singularity can be installed here): binds, one container per node for
# torchrun, errors at the right moment.
# shellcheck disable=SC2016 # configs lines are single-quoted on purpose
# Set by hpc_run_job or hpc_submit_job (helpers/cluster.bash); declared for shellcheck.
declare -g job_id job_out job_state

setup_file() {
  load '../helpers/common'
  load '../helpers/cluster'
  hpc_cluster_require
  # Not under /tmp: the container gets its own /tmp, which would hide the project.
  WORK=$(mktemp -d /var/tmp/hpc-container-tests.XXXXXX)
  export WORK
  export HPC_CLUSTER=local
  export SCRATCH="$WORK/scratch"
  export PROJECT="$WORK/box project"
  mkdir -p "$SCRATCH"
  hpc_project_make "$PROJECT"
  cp "$HPC_ROOT/tests/fixtures/project/container_probe.py" "$PROJECT/"
  bash "$HPC_ROOT/tests/fixtures/apptainer/make_sif.sh" "$PROJECT/app.sif"
  # The stand-in first on the PATH the jobs inherit; a HOME that the home bind may hide; the
  # Python with torch first on the container's PATH.
  export PATH="$HPC_ROOT/tests/fixtures/apptainer/bin:$PATH"
  export HOME="$WORK/home"
  mkdir -p "$HOME"
  APPTAINERENV_PREPEND_PATH=$(dirname "$(python3 -c 'import sys; print(sys.executable)')")
  export APPTAINERENV_PREPEND_PATH
  export APPTAINER_STANDIN_LOG="$WORK/argv"
  mkdir -p "$APPTAINER_STANDIN_LOG"
}

teardown_file() {
  rm -rf -- "${WORK:?}"
}

setup() {
  load '../helpers/common'
  load '../helpers/cluster'
}

@test "a single-node container job writes to /scratch_storage, /tmp, /db, \$HOME and the workdir; only /scratch_storage stays" {
  hpc_configs "$PROJECT" "python3 '$PROJECT/container_probe.py'"
  hpc_run_job "$PROJECT" -s "$PROJECT/app.sif" --workdir /code -g 0 -e boxed
  assert_equal "$job_state" "COMPLETED 0:0"
  run sed -n 's/^CONTAINER //p' "$job_out"
  assert_equal "${#lines[@]}" 1
  json=${lines[0]}
  for key in scratch_storage tmp db home workdir; do
    [[ $json == *"\"$key\": \"written\""* ]] || fail "$key: $json"
  done
  [[ $json == *'"cwd": "/code"'* && $json == *'"exp_name": "boxed"'* && $json == *'"scratch_dir": "/scratch_storage"'* ]] ||
    fail "$json"
  kept=("$SCRATCH/box project/boxed/singularity_${job_id}_0")
  assert_equal "$(cat "${kept[0]}/result.txt")" scratch_storage
  # Everything else lived under SLURM_TMPDIR, which the cluster removed with the job.
  [ ! -e "$HPC_CLUSTER_DIR/scratch/n1/slurm_tmpdir/job$job_id" ]
}

@test "torchrun in containers, 2 nodes x 2 GPUs: one container per node, 4 ranks, all-reduce 6" {
  hpc_configs "$PROJECT" "python '$PROJECT/probe.py' ddp"
  rm -f "$APPTAINER_STANDIN_LOG"/*
  hpc_run_job "$PROJECT" -s "$PROJECT/app.sif" -W torchrun --gpus 2 --num-nodes 2 -e boxddp
  assert_equal "$job_state" "COMPLETED 0:0"
  assert_equal "$(grep -c '^DDP .*world=4 sum=6 .*source=torchrun' "$job_out")" 4
  assert_equal "$(grep -c '^DDP .*node=n1 ' "$job_out")" 2
  assert_equal "$(grep -c '^DDP .*node=n2 ' "$job_out")" 2
  # One container started per node.
  assert_equal "$(grep -lZ 'torch.distributed.run' "$APPTAINER_STANDIN_LOG"/* | tr -cd '\0' | wc -c)" 2
}

@test "bad container input at submission: missing image, wrong extension, relative --workdir -> exit 2" {
  touch "$WORK/not-an-image.img"
  run bash "$PROJECT/hpc_files/job_submitter.sh" -y -s "$WORK/missing.sif"
  assert_equal "$status" 2
  assert_output --partial "-s/--singularity-container: '$WORK/missing.sif': "
  run bash "$PROJECT/hpc_files/job_submitter.sh" -y -s "$WORK/not-an-image.img"
  assert_equal "$status" 2
  assert_output --partial "-s/--singularity-container: '$WORK/not-an-image.img': "
  run bash "$PROJECT/hpc_files/job_submitter.sh" -y -s "$PROJECT/app.sif" --workdir code
  assert_equal "$status" 2
  assert_output --partial "--workdir: 'code': "
}

@test "no container runtime on the node: the job fails, naming both, before the program" {
  hpc_configs "$PROJECT" "python3 '$PROJECT/container_probe.py'"
  PATH=${PATH#"$HPC_ROOT/tests/fixtures/apptainer/bin:"} hpc_run_job "$PROJECT" -s "$PROJECT/app.sif" -g 0 -e noruntime
  assert_equal "$job_state" "FAILED 1:0"
  run cat "$job_out"
  assert_output --partial "neither apptainer nor singularity is on this node"
  refute_output --partial "CONTAINER "
}

@test "a container sweep task gets the W&B key only through the environment: in no argv of the runtime" {
  sentinel=hpc-container-sentinel-0123456789
  printf '%s\n' "$sentinel" >"$HOME/wandb_credentials.txt"
  chmod 600 "$HOME/wandb_credentials.txt"
  rm -f "$APPTAINER_STANDIN_LOG"/*
  # Inside the container: the recording wandb stand-in first on PATH (copied out of the
  # repository, which may be under /tmp, hidden by the container's own /tmp), writing its record
  # to /scratch_storage (the only place there that outlives the container).
  mkdir -p "$WORK/wandb_bin"
  cp "$HPC_ROOT/tests/fixtures/wandb_stub/wandb" "$WORK/wandb_bin/"
  APPTAINERENV_PREPEND_PATH="$WORK/wandb_bin:$APPTAINERENV_PREPEND_PATH" \
    WANDB_STUB_LOG=/scratch_storage \
    APPTAINERENV_HPC_TEST_SENTINEL_SHA=$(printf '%s' "$sentinel" | sha256sum | cut -d' ' -f1) \
    hpc_submit_job "$PROJECT" -s "$PROJECT/app.sif" -w me/proj/abc123 --num-sweeps 1 -e boxsweep
  hpc_wait_job "$job_id" 120
  assert_equal "$(hpc_job_state "${job_id}_1")" "COMPLETED 0:0"
  run cat "$SCRATCH/box project/boxsweep/singularity_$(hpc_job_field "${job_id}_1" JobId)_1/${job_id}_1"
  assert_line "argv: agent --count 1 me/proj/abc123"
  assert_line "key: sentinel"
  run grep -rlF "$sentinel" "$APPTAINER_STANDIN_LOG"
  assert_failure
  [ "$(find "$APPTAINER_STANDIN_LOG" -type f | wc -l)" -ge 1 ]
}

@test "the time-limit warning in a container: a program without a handler is not signalled through the runtime, runs on to TIMEOUT" {
  # The runtime (the stand-in, as Apptainer's starter) catches USR1 and passes it on: the toolkit
  # looks through it and finds no process that takes the warning.
  cp "$HPC_ROOT/tests/fixtures/project/oblivious.py" "$PROJECT/"
  hpc_configs "$PROJECT" "python3 '$PROJECT/oblivious.py' 600"
  # The shortest limit; the warning is sent once it ticks (hpc_warn_job: with a lead of 0 SLURM
  # sends none before the limit).
  hpc_submit_job "$PROJECT" -s "$PROJECT/app.sif" -g 0 --time 00:01:00 --signal-lead 0 -e boxwarn
  hpc_warn_job "$job_id" "$job_out" '^TICK 2$'
  hpc_wait_job "$job_id" 180
  job_state=$(hpc_job_state "$job_id")
  [[ $job_state == "TIMEOUT "* ]] || fail "job $job_id ended $job_state: $(cat "$job_out")"
  assert_equal "$(grep -c '^\[hpc n1\] no process of the program catches SIGUSR1 (yet)' "$job_out")" 1
  run grep -E 'passed to|exit (code|status) 138' "$job_out"
  assert_output ''
  last=$(sed -n 's/^TICK //p' "$job_out" | tail -n 1)
  ((last >= 45)) || fail "the program stopped after $last s: $(cat "$job_out")"
}

@test "a map in containers (-s): each task sees its variables with container paths (task_dir=/map/tasks/I), writes its status and result; the gather sums them" {
  cp "$HPC_ROOT/tests/fixtures/map/"{featurize,gather}.py "$PROJECT/"
  hpc_configs "$PROJECT" "python3 '$PROJECT/featurize.py' --index \${map_index} --item \"\${map_item}\" --out \${task_dir}"
  list="$WORK/box list.txt"
  printf '%s\n' 'first item' 'it'"'"'s $(second)' 'third' >"$list"
  out=$(MAP_SLEEP=0 bash "$PROJECT/hpc_files/job_submitter.sh" -y -s "$PROJECT/app.sif" -g 0 --map-over "$list" \
    --gather "python3 '$PROJECT/gather.py'" -e boxmap 2>&1) || fail "submission failed: $out"
  job_id=$(sed -n 's/^Submitted job \([0-9][0-9]*\).*/\1/p' <<<"$out")
  gather_id=$(sed -n 's/^Gather job \([0-9][0-9]*\):.*/\1/p' <<<"$out")
  map_dir=$(sed -n 's/^Map [^ ]*: array job [0-9]* ([^)]*), folder //p' <<<"$out")
  [[ -n $job_id && -n $gather_id && -d $map_dir ]] || fail "no ids or map folder in: $out"
  hpc_wait_job "$job_id" 180
  hpc_wait_job "$gather_id" 120
  assert_equal "$(hpc_job_state "$gather_id")" "COMPLETED 0:0"
  run cat "$map_dir/gather_$gather_id.out"
  assert_line "GATHER sum=5 n_ok=3 failed=''"
  [[ -f $map_dir/sum.json ]] || fail "the gather wrote no sum.json in the map folder"
  items=('first item' 'it'"'"'s $(second)' 'third')
  for i in 0 1 2; do
    run python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(d["state"], d["index"])' "$map_dir/tasks/$i/status.json"
    assert_output "COMPLETED $i"
    run python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["item"])' "$map_dir/tasks/$i/result.json"
    assert_output "${items[i]}"
    run cat "$SCRATCH/box project/hpc_outputs/"boxmap_*_"${job_id}_$i.out"
    assert_line --partial "FEATURIZE index=$i "
    assert_line --partial " out=/map/tasks/$i"
  done
}
