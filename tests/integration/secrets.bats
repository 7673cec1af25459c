#!/usr/bin/env bats
# The secret scan on the local cluster: sentinel values of WANDB_API_KEY and DB_PASS, passed to
# the program by the configs file ($WANDB_API_KEY, ${DB_PASS}), used through bash -x of the
# submitter (a submission, a --dry-run, a W&B sweep with the wandb stand-in), while every
# process's command line is sampled; then searched for in the traces, the samples (but the
# program's own command line, which holds them by the configs file's will), the job logs'
# toolkit lines, `logs`, the manifests and kept job scripts, SLURM's copies of the batch scripts
# and `scontrol show job -dd`. The sentinels are in the jobs' environment (sbatch passes it on:
# expected) and in the program's own output (the user's: `logs` masks it).
# shellcheck disable=SC2016 # configs lines and expected $NAME texts are single-quoted on purpose

# Values no other test uses: the sampler reads every process of the machine, and unit tests run
# beside this one (tests/unit/secrets.bats has sentinels of its own).
SENTINEL_KEY=sentinel-9f8e7d
SENTINEL_PASS=sentinel-db-5a4b3c

setup_file() {
  load '../helpers/common'
  load '../helpers/cluster'
  hpc_test_project "secret project"
  # The program prints its arguments: the key and the password among them.
  hpc_configs "$PROJECT" 'python probe.py env --key $WANDB_API_KEY --db "${DB_PASS}" --plain x'
}

setup() {
  load '../helpers/common'
  load '../helpers/cluster'
  export HOME="$BATS_TEST_TMPDIR/home"
  mkdir -p "$HOME"
  export WANDB_API_KEY=$SENTINEL_KEY DB_PASS=$SENTINEL_PASS
  export WANDB_STUB_LOG="$BATS_TEST_TMPDIR/wandb log"
  mkdir -p "$WANDB_STUB_LOG"
  export PATH="$HPC_ROOT/tests/fixtures/wandb_stub:$PATH"
  HPC_TEST_SENTINEL_SHA=$(printf '%s' "$SENTINEL_KEY" | sha256sum | cut -d' ' -f1)
  export HPC_TEST_SENTINEL_SHA
}

# sample_cmdlines FILE: until killed, reads every process's command line every 10 ms and appends
# to FILE each one it has not written yet (the same lines as writing all each time, without tens
# of megabytes of repeats to write and search).
sample_cmdlines() {
  exec python3 -c '
import os, sys, time
seen = set()
with open(sys.argv[1], "a") as out:
    while True:
        for pid in os.listdir("/proc"):
            if not pid.isdigit():
                continue
            try:
                fd = os.open(f"/proc/{pid}/cmdline", os.O_RDONLY)
                try:
                    chunks = []
                    while chunk := os.read(fd, 65536):
                        chunks.append(chunk)
                finally:
                    os.close(fd)
            except OSError:
                continue
            line = b"".join(chunks)
            if line not in seen:
                seen.add(line)
                out.write(line.replace(b"\0", b" ").decode("utf-8", "replace") + "\n")
        out.flush()
        time.sleep(0.01)' "$1"
}

# submitted OUTPUT: the job id in the submitter's OUTPUT.
submitted() {
  sed -n 's/^Submitted job \([0-9][0-9]*\).*/\1/p' <<<"$1"
}

@test "the sentinels are nowhere: bash -x (submit, --dry-run, sweep), command lines, toolkit log lines, logs, manifests, scripts, scontrol show job -dd" {
  local dir=$BATS_TEST_TMPDIR submitter=$PROJECT/hpc_files/job_submitter.sh out id sweep_id
  sample_cmdlines "$dir/cmdlines" &
  local sampler=$!
  sleep 0.3
  out=$(bash -x "$submitter" --dry-run -g 0 -e dry 2>"$dir/trace.dry") || fail "dry run failed: $out"
  printf '%s\n' "$out" >"$dir/out.dry"
  [[ $out == *'configs file uses $WANDB_API_KEY: from this shell: (masked)'* ]] || fail "no masked key in: $out"
  out=$(bash -x "$submitter" -y -g 0 -e secret 2>"$dir/trace.submit") || fail "submission failed: $out"
  printf '%s\n' "$out" >"$dir/out.submit"
  id=$(submitted "$out")
  out=$(bash -x "$submitter" -y -w me/proj/abc123 --num-sweeps 1 -e sweep 2>"$dir/trace.sweep") ||
    fail "sweep submission failed: $out"
  printf '%s\n' "$out" >"$dir/out.sweep"
  sweep_id=$(submitted "$out")
  [[ -n $id && -n $sweep_id ]] || fail "no job ids: $id $sweep_id"
  hpc_wait_job "$id" 120
  hpc_wait_job "$sweep_id" 120
  kill "$sampler"
  wait "$sampler" || true
  [ -s "$dir/cmdlines" ]

  # The jobs ran with the secrets: the program got them as arguments, the agent its key.
  assert_equal "$(hpc_job_state "$id")" "COMPLETED 0:0"
  assert_equal "$(hpc_job_state "${sweep_id}_1")" "COMPLETED 0:0"
  run grep -x "key: sentinel" "$WANDB_STUB_LOG/${sweep_id}_1"
  assert_success
  local log="$SCRATCH/secret project/hpc_outputs/secret_venv-none_$id.out"
  run grep -c "\"argv\": \[\"--key\", \"$SENTINEL_KEY\", \"--db\", \"$SENTINEL_PASS\"" "$log"
  assert_output 1
  # The toolkit's own lines of the job log: masked, the starting line among them.
  run grep '^\[hpc ' "$log"
  assert_line --partial "starting after "
  assert_line --partial " --key (masked) --db (masked) --plain x"
  refute_output --partial sentinel

  # logs: the program's line too.
  run bash "$submitter" logs secret
  assert_success
  assert_line --partial '"argv": ["--key", "(masked)", "--db", "(masked)", "--plain", "x"]'
  refute_output --partial sentinel

  # Everything else, whole; of the command lines, all but the program's own, which the configs
  # file asked to hold the secrets.
  grep -v '^python probe.py env --key ' "$dir/cmdlines" >"$dir/cmdlines.toolkit" || true
  [ -s "$dir/cmdlines.toolkit" ]
  local -a places=("$dir"/trace.* "$dir"/out.* "$dir/cmdlines.toolkit")
  local job
  for job in "$id" "${sweep_id}_1"; do
    scontrol show job -dd "$job" >"$dir/show_$job"
    places+=("$dir/show_$job")
    (cd "$dir" && scontrol write batch_script "$job" "batch_$job" >/dev/null) && places+=("$dir/batch_$job")
  done
  mapfile -t found < <(find "$SCRATCH/secret project/hpc_outputs" -type f \( -name '*.sh' -o -name '*.manifest' -o -name 'sweep_*.out' \))
  ((${#found[@]} >= 5)) || fail "expected job scripts, manifests and the sweep's output, got: ${found[*]}"
  places+=("${found[@]}")
  local place
  for place in "${places[@]}"; do
    if grep -qF -e "$SENTINEL_KEY" -e "$SENTINEL_PASS" "$place"; then
      fail "a sentinel is in $place: $(grep -F -e "$SENTINEL_KEY" -e "$SENTINEL_PASS" "$place" | head -3)"
    fi
  done
}
