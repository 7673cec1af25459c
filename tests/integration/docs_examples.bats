#!/usr/bin/env bats
# The examples of README.md and the guides (docs/*.md but architecture.md) run as written, on the
# local cluster, in the project the README makes: `make demo`'s demo_project/, made by
# hpc_files/demo.sh (--make-project: the same files, the toolkit installed, its configs file
# `python ddp_demo.py`), SCRATCH its scratch/ as the README's tour exports it, its venv ready
# and make demo's experiment 'demo' run (setup_file). No test program is added: what else an example needs is what the
# guide's own lines around it make (the trak demo's files, a datasets folder, a configs line), and
# the test checks that the guide still says so.
#
# Which lines: in a code block (a fenced block, or lines indented 4 spaces or more), every line
# that starts (after its indentation) with
#   bash job_submitter.sh ...     run in the project's hpc_files/, as a user types it there;
#   bash hpc_files/local_cluster.sh ...   run in this repository (a project has no cluster), on
#                                 the test's cluster (HPC_CLUSTER_DIR, HPC_CLUSTER_PORT_BASE);
#   bash hpc_files/...            anything else of the toolkit, run in the project's folder.
# A line ending in a backslash goes on with the next. Other lines (cd, export, eval, cat, python,
# comments) are not run: the test sets up what they would (per document, in setup_doc).
# A line is not run, and counted as skipped, when it carries the marker 'not runnable here' in
# its trailing comment, or when the line before it is a comment carrying it; each document's
# skips must be exactly its markers. Each example must exit 0; then every job on the cluster must
# end (a bounded wait) and none of the jobs that ended meanwhile (the cluster's jobcomp log, so
# install jobs, array tasks and gather or report jobs too) may end FAILED, TIMEOUT, CANCELLED,
# OUT_OF_MEMORY or NODE_FAIL. Examples run in the order of the document, with stdin not a
# terminal (so the submitter never asks).
# shellcheck disable=SC2016 # configs lines are single-quoted on purpose

bats_require_minimum_version 1.5.0

setup_file() {
  load '../helpers/common'
  load '../helpers/cluster'
  hpc_cluster_require
  export HPC_CLUSTER=local PROJECT=$BATS_FILE_TMPDIR/demo_project
  export SCRATCH=$PROJECT/scratch
  local made
  made=$(bash "$HPC_ROOT/hpc_files/demo.sh" --make-project "$PROJECT" 2>&1) ||
    fail "demo.sh --make-project failed: $made"
  # Each guide starts from the configs file the demo made (a guide may write its own).
  cp "$PROJECT/hpc_files/experiment_configurations.txt" "$BATS_FILE_TMPDIR/demo_configs"
  # local_cluster.sh examples act on the test's cluster.
  export HPC_CLUSTER_DIR HPC_CLUSTER_PORT_BASE=${HPC_CLUSTER_PORT_BASE:-17817}
  # make demo's experiment, its venv ready before the tests (not inside a test's time): a copy of
  # the bats run's build for the demo's requirements (hpc_venv_seed), and the demo's program run
  # from it as one rank (any number of ranks, the README says). Not make demo's 2 x 2 torchrun job
  # (six imports of torch): the README's tour runs that one itself.
  hpc_warm_venv "$PROJECT" 'python ddp_demo.py' --exp-name demo
}

setup() {
  load '../helpers/common'
  load '../helpers/cluster'
  cp "$BATS_FILE_TMPDIR/demo_configs" "$PROJECT/hpc_files/experiment_configurations.txt"
}

teardown() {
  # An example that failed may leave jobs behind: they must not reach the next document's.
  scancel --user "$(id -un)" 2>/dev/null || true
}

# doc_examples FILE: the examples of FILE, one a line: 'run<TAB>COMMAND' or 'skip<TAB>COMMAND'.
doc_examples() {
  awk '
    function emit() { print ((skip || cmd ~ /not runnable here/) ? "skip" : "run") "\t" cmd }
    /^[[:space:]]*```/ { fence = !fence; prev = ""; next }
    {
      text = $0
      sub(/^[[:space:]]+/, "", text)
      if (joining) {
        cmd = cmd " " text
        if (cmd ~ /\\$/) { sub(/[[:space:]]*\\$/, "", cmd); next }
        joining = 0
        emit()
        prev = text
        next
      }
      if (!fence && $0 !~ /^    /) { prev = ""; next }
      if (text ~ /^bash (job_submitter\.sh|hpc_files\/)/) {
        cmd = text
        skip = (prev ~ /^#.*not runnable here/)
        if (cmd ~ /\\$/) { sub(/[[:space:]]*\\$/, "", cmd); joining = 1; next }
        emit()
      }
      prev = text
    }' "$1"
}

# doc_says NAME TEXT: fails unless README.md (NAME README.md) or docs/NAME holds TEXT: what
# setup_doc does in a user's place is what the guide tells the user to do.
doc_says() {
  local file
  [[ $1 == README.md ]] && file=$HPC_ROOT/README.md || file=$HPC_ROOT/docs/$1
  grep -qF -- "$2" "$file" || fail "$1 no longer says '$2': setup_doc does what it said"
}

# setup_doc NAME: what the lines around NAME's examples that are not run would have done, each as
# the guide says it.
setup_doc() {
  case $1 in
    README.md)
      doc_says README.md 'cd demo_project && export SCRATCH=$PWD/scratch'
      ;;
    staging.md)
      doc_says staging.md 'mkdir -p "$SCRATCH/demo_project/datasets"'
      mkdir -p "$SCRATCH/demo_project/datasets"
      printf 'x,y\n1,2\n' >"$SCRATCH/demo_project/datasets/part0.csv"
      ;;
    sweeps.md)
      doc_says sweeps.md 'python ddp_demo.py --seed ${seed}'
      hpc_configs "$PROJECT" 'python ddp_demo.py --seed ${seed}'
      ;;
    map-gather.md)
      doc_says map-gather.md 'cp tests/fixtures/trak_demo/*.py demo_project/ && cd demo_project'
      doc_says map-gather.md 'python make_checkpoints.py "$SCRATCH/demo_project/trak"'
      # shellcheck disable=SC1003 # the backslash continues the configs file's line
      doc_says map-gather.md 'python featurize_and_score.py --model_id ${map_index} --ckpt "${map_item}" \'
      cp "$HPC_ROOT/tests/fixtures/trak_demo/"*.py "$PROJECT/"
      (cd "$PROJECT" && python3 make_checkpoints.py "$SCRATCH/demo_project/trak") >/dev/null ||
        fail "make_checkpoints.py failed"
      # shellcheck disable=SC1003 # the backslash continues the configs file's line
      hpc_configs "$PROJECT" 'python featurize_and_score.py --model_id ${map_index} --ckpt "${map_item}" \' \
        '  --data "${scratch_dir}/trak/data.pt" --out "${task_dir}"'
      ;;
    options.md)
      doc_says options.md '--time=0:10:00'
      doc_says options.md '--requeue=1'
      doc_says options.md 'in `demo_project/hpc_files/defaults`'
      printf -- '--time=0:10:00\n--requeue=1\n' >"$PROJECT/hpc_files/defaults"
      ;;
  esac
}

# wait_cluster_idle TIMEOUT: waits until no job is pending or running on the cluster; on timeout
# cancels them and fails the test.
wait_cluster_idle() {
  local timeout=$1 start=$SECONDS polls=0
  while [[ -n $(squeue -h -o %i 2>/dev/null) ]]; do
    if ((SECONDS - start > timeout)); then
      scancel --user "$(id -un)" 2>/dev/null || true
      fail "jobs still queued after ${timeout}s: $(squeue -h -o '%i %j %T' | tr '\n' ';')"
    fi
    hpc_poll_pause "$((++polls))"
  done
}

# run_doc NAME: runs the examples of README.md (NAME README.md) or docs/NAME as the header says.
run_doc() {
  local name=$1 file kind cmd dir ran=0 skipped=0 markers jobcomp bad
  [[ $name == README.md ]] && file=$HPC_ROOT/README.md || file=$HPC_ROOT/docs/$name
  setup_doc "$name"
  jobcomp=$HPC_CLUSTER_DIR/log/jobcomp.log
  local seen
  seen=$(wc -l <"$jobcomp")
  while IFS=$'\t' read -r kind cmd; do
    if [[ $kind == skip ]]; then
      skipped=$((skipped + 1))
      continue
    fi
    case $cmd in
      'bash job_submitter.sh'*) dir=$PROJECT/hpc_files ;;
      'bash hpc_files/local_cluster.sh'*) dir=$HPC_ROOT ;;
      *) dir=$PROJECT ;;
    esac
    run bash -c "cd \"\$1\" && $cmd" _ "$dir" </dev/null
    printf '$ %s\n%s\n' "$cmd" "$output" >>"$BATS_FILE_TMPDIR/examples.log"
    ((status == 0)) || fail "$name: '$cmd' exited $status: $output"
    wait_cluster_idle 240
    bad=$(tail -n +"$((seen + 1))" "$jobcomp" | grep -E 'JobState=(FAILED|TIMEOUT|CANCELLED|OUT_OF_MEMORY|NODE_FAIL)' || true)
    [[ -z $bad ]] || fail "$name: '$cmd': a job ended badly: $bad (examples so far: $BATS_FILE_TMPDIR/examples.log)"
    seen=$(wc -l <"$jobcomp")
    ran=$((ran + 1))
  done < <(doc_examples "$file")
  markers=$(grep -c 'not runnable here' "$file" || true)
  ((skipped == markers)) || fail "$name: $skipped examples skipped, but $markers markers: a marker beside no example"
  ((ran + skipped > 0)) || fail "$name: no example"
  printf '# %s: %d examples run, %d skipped (marked not runnable here)\n' "$name" "$ran" "$skipped" >&3
}

@test "README.md: the tour (cluster up, a one-node job, status, logs, a 2-node x 2-GPU torchrun job)" {
  run_doc README.md
  run cat "$BATS_FILE_TMPDIR/examples.log"
  assert_line --regexp '^\[rank 3\] rank 3/4 node n2 .*all-reduce of ranks = 6'
}

@test "docs/launchers.md" {
  run_doc launchers.md
}

@test "docs/staging.md" {
  run_doc staging.md
}

@test "docs/time-limits.md" {
  run_doc time-limits.md
  # The copy-back example's comment: the demo program's snapshot reached the experiment's folder.
  [[ -f $SCRATCH/demo_project/saved/snapshot.pt ]] || fail "no snapshot.pt in \${scratch_dir}/saved/"
}

@test "docs/sites.md" {
  run_doc sites.md
  # What the guide says the dry run shows: the one signal for the time limit and the preemption,
  # and the log every run of a requeued job appends to.
  run cat "$BATS_FILE_TMPDIR/examples.log"
  assert_line '#SBATCH --signal="B:USR1@30"'
  assert_line '#SBATCH --open-mode="append"'
}

@test "docs/sweeps.md" {
  run_doc sweeps.md
  # --repeat 3 with the guide's configs line: each task's program shows its seed.
  local seed
  for seed in 0 1 2; do
    grep -rqF "(seed=$seed, exp_name=seeds," "$SCRATCH/demo_project/hpc_outputs" ||
      fail "no task printed seed=$seed"
  done
}

@test "docs/map-gather.md" {
  run_doc map-gather.md
  touch "$BATS_FILE_TMPDIR/map-gather.ran"
}

# The guide's map of the TRAK-shaped demo (its first example) is what this test asserts on: the
# job that the test above ran, or, when it did not run (a filter), the guide's examples run here.
@test "the README's TRAK-shaped demo: four tiny checkpoints featurized on CPU as a map, then averaged by the gather" {
  local log map_dir gather_id
  [[ -f $BATS_FILE_TMPDIR/map-gather.ran ]] || run_doc map-gather.md
  log=$(sed -n '/^\$ bash hpc_files\/job_submitter\.sh --map-over .* -e trak$/,/^\$ /p' "$BATS_FILE_TMPDIR/examples.log")
  map_dir=$(sed -n 's/^Map [^ ]*: array job [0-9]* ([^)]*), folder //p' <<<"$log" | tail -n 1)
  gather_id=$(sed -n 's/^Gather job \([0-9][0-9]*\):.*/\1/p' <<<"$log" | tail -n 1)
  [[ -n $gather_id && -d $map_dir ]] || fail "no gather id or map folder in: $log"
  assert_equal "$(hpc_job_state "$gather_id")" "COMPLETED 0:0"
  run cat "$map_dir/gather_$gather_id.out"
  assert_line --regexp '^averaged 4 checkpoints: features \(64, 9\), mean score [0-9.]+$'
  run python3 - "$map_dir" <<'EOF2'
import json, sys
d = sys.argv[1]
scores = [json.load(open(f"{d}/tasks/{i}/result.json"))["score"] for i in range(4)]
doc = json.load(open(f"{d}/scores.json"))
assert doc["scores"] == scores and abs(doc["mean"] - sum(scores) / 4) < 1e-12, doc
print("ok", len(set(scores)))
EOF2
  assert_output "ok 4"
  [[ -f $map_dir/features_mean.pt ]] || fail "no features_mean.pt"
}

@test "docs/scaling.md" {
  run_doc scaling.md
}

@test "docs/containers.md" {
  run_doc containers.md
}

@test "docs/cluster-profiles.md" {
  run_doc cluster-profiles.md
}

@test "docs/cleanup.md" {
  run_doc cleanup.md
}

@test "docs/troubleshooting.md" {
  run_doc troubleshooting.md
}

@test "docs/interactive.md" {
  run_doc interactive.md
}

@test "docs/options.md" {
  cp -- "$PROJECT/hpc_files/defaults" "$BATS_FILE_TMPDIR/defaults.installed"
  run_doc options.md
  # The dry run said where each value came from; the job ran with the command line's time.
  run cat "$BATS_FILE_TMPDIR/examples.log"
  assert_line -- "-t/--time=0:10:00 (hpc_files/defaults line 1)"
  assert_line -- "--requeue=1 (hpc_files/defaults line 2)"
  grep -q '^#SBATCH --time="0:05:00"$' "$SCRATCH/demo_project/hpc_outputs"/settings_*.sh ||
    fail "the job of '-t 0:05:00' did not get that time"
  # The guides after this one see the file install.sh wrote.
  cp -- "$BATS_FILE_TMPDIR/defaults.installed" "$PROJECT/hpc_files/defaults"
}

@test "every guide README.md links, but architecture.md, has its test here" {
  local link
  while IFS= read -r link; do
    [[ $link == docs/architecture.md || $link == docs/testing.md || $link == docs/benchmarks.md ]] && continue
    grep -qF "@test \"$link\"" "$BATS_TEST_FILENAME" || fail "$link has no test in docs_examples.bats"
  done < <(grep -oE '\]\(docs/[A-Za-z0-9_.-]+\.md\)' "$HPC_ROOT/README.md" | sed 's/^](//; s/)$//' | sort -u)
}
