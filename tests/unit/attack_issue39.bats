#!/usr/bin/env bats
# Attacks on what issue 39 merged (chunked maps, the manifests' index, status's views, the SLURM
# client): each test a defect found, failing before its fix. Without SLURM: the table-driven
# stand-ins of tests/fixtures/manage/bin (as tests/unit/status_scale.bats).

bats_require_minimum_version 1.5.0

setup_file() {
  load '../helpers/common'
  load '../helpers/manage_fixture'
  manage_fixture_project
}

setup() {
  load '../helpers/common'
  load '../helpers/stub'
  # shellcheck source=tests/helpers/manage_fixture.bash
  source "$BATS_TEST_DIRNAME/../helpers/manage_fixture.bash"
  manage_fixture_setup
  manage_timeout=20
}

# chunk_map ID COUNT K: a chunked map's array ID of COUNT items, K per task, in the folder dir, its
# manifest.json as the submitter writes its fields that status reads.
chunk_map() {
  local id=$1 count=$2 k=$3 tasks
  tasks=$(((count + k - 1) / k))
  make_manifest c "$id" "0-$((tasks - 1))" map
  dir=$outputs/map/c/20300101-000000-$id
  mkdir -p "$dir/tasks"
  printf '{"first": 0, "last": %s, "count": %s, "chunk": %s, "array_ids": ["%s"], "chunks": {"%s": {"chunk": %s, "first": 0, "last": %s}}}\n' \
    "$((count - 1))" "$count" "$k" "$id" "$id" "$k" "$((count - 1))" >"$dir/manifest.json"
}

# item_status INDEX TASK STATE: item INDEX's status.json, written by array task TASK of $id.
item_status() {
  mkdir -p "$dir/tasks/$1"
  printf '{"index": %s, "array_job_id": "%s", "task_id": "%s", "state": "%s", "exit_code": 0, "chunk": %s}\n' \
    "$1" "$id" "$2" "$3" "$k" >"$dir/tasks/$1/status.json"
}

@test "status of a chunked map whose manifest.json a task replaced by a FIFO or a link to an endless file: no hang, no unbounded read; the items still counted" {
  local id=700 k=2
  chunk_map "$id" 4 "$k"
  item_status 0 0 COMPLETED
  item_status 1 0 COMPLETED
  rm -- "$dir/manifest.json"
  mkfifo "$dir/manifest.json"
  manage status c
  [[ $status != 124 ]] || fail "status hung on a FIFO manifest.json"
  assert_equal "$status" 0
  assert_output --partial 'items: 2 COMPLETED'
  rm -- "$dir/manifest.json"
  ln -s /dev/zero "$dir/manifest.json"
  manage status c
  [[ $status != 124 ]] || fail "status read /dev/zero without end"
  assert_equal "$status" 0
  assert_output --partial 'items: 2 COMPLETED'
}

@test "status of a chunked map: an item's status written by a task whose chunk does not hold it (forged by another chunk's task) is INCONSISTENT, never COMPLETED, as the gather reads it" {
  local id=710 k=2
  chunk_map "$id" 6 "$k"
  # Task 0 runs items 0-1, task 1 items 2-3, task 2 items 4-5 (SLURM still holds 1 and 2).
  item_status 0 0 COMPLETED
  item_status 1 0 RUNNING
  # Task 0 forges items 2 and 4 (naming itself), and item 5 naming task 1, whose chunk is 2-3.
  item_status 2 0 COMPLETED
  item_status 4 0 COMPLETED
  item_status 5 1 FAILED
  printf 'squeue %s_0 %s RUNNING -\nsqueue %s_1 %s PENDING -\nsqueue %s_2 %s PENDING -\n' \
    "$id" "$id" "$id" "$id" "$id" "$id" >"$HPC_STUB_JOBS"
  manage status c
  assert_equal "$status" 0
  assert_output --partial "map c/20300101-000000-$id: 6 items: 1 COMPLETED, 1 RUNNING, 1 not started, 3 INCONSISTENT"
  # A resubmission's layout (its list of indices) counts too: its task 0 runs items 2 and 5.
  local doc
  doc=$(<"$dir/manifest.json")
  printf '%s\n' "${doc%\}\}\}*}}, \"720\": {\"chunk\": 2, \"indices\": [2, 5]}}}" >"$dir/manifest.json"
  item_status 2 0 COMPLETED
  sed -i "s/\"$id\"/\"720\"/" "$dir/tasks/2/status.json"
  item_status 5 0 COMPLETED
  sed -i "s/\"$id\"/\"720\"/" "$dir/tasks/5/status.json"
  item_status 4 0 COMPLETED
  sed -i "s/\"$id\"/\"720\"/" "$dir/tasks/4/status.json"
  manage status c
  assert_equal "$status" 0
  assert_output --partial "map c/20300101-000000-$id: 6 items: 3 COMPLETED, 1 RUNNING, 1 not started, 1 INCONSISTENT"
}

# status_full_disk: status --all where every write beyond 2 KiB fails (EFBIG, as ENOSPC would).
status_full_disk() {
  # shellcheck disable=SC2016 # the script of bash -c: the submitter as its $0
  run --separate-stderr bash -c 'trap "" XFSZ; ulimit -f 2; exec timeout "$1" bash "$0" status --all' "$submitter" "$HPC_TEST_HANG_S"
}

@test "a full disk while the index is written: status still answers, and neither a truncated index nor a half-written temporary file is left (the write undone)" {
  local i manifests=$outputs/manifests text
  make_manifest h0 1000
  text=$(<"$manifests/h0_1000.manifest")
  for i in $(seq 1001 1039); do
    (umask 077 && printf '%s\n' "${text//1000/$i}" >"$manifests/h0_$i.manifest")
  done
  # The index of 40 manifests is larger than 2 KiB.
  status_full_disk
  assert_equal "$status" 0
  assert_equal "$(grep -c '^10[0-9][0-9] ' <<<"$output")" 40
  [[ ! -e $manifests/.index ]] || fail "a truncated index was left: $(wc -c <"$manifests/.index") bytes"
  manage status --all
  assert_equal "$status" 0
  [[ -f $manifests/.index ]] || fail "no index"
  local before
  before=$(<"$manifests/.index")
  # A new manifest: the index written anew fails; the old one stays whole, nothing else is left.
  (umask 077 && printf '%s\n' "${text//1000/1040}" >"$manifests/h0_1040.manifest")
  status_full_disk
  assert_equal "$status" 0
  assert_equal "$(grep -c '^10[0-9][0-9] ' <<<"$output")" 41
  assert_equal "$(<"$manifests/.index")" "$before"
  run ls -A "$manifests"
  refute_output --partial '.index.new'
}

@test "sbatch answering a job id SLURM never gives (0089, 24 digits) is no job id; a manifest or an index row with one is not read, and status of the rest still answers" {
  local answer
  mkdir -p "$tmp/sbatch"
  for answer in 0089 123456789012345678901234 0; do
    printf '#!/usr/bin/env bash\ncat >/dev/null\necho %s\n' "$answer" >"$tmp/sbatch/sbatch"
    chmod +x "$tmp/sbatch/sbatch"
    run bash -c 'source "$1/hpc_files/lib/hpc_common.bash" && source "$1/hpc_files/lib/hpc_slurm.bash" &&
      PATH=$2:$PATH && hpc_slurm_sbatch "the job" "#!/bin/bash" || { echo "refused: $hpc_slurm_error"; exit 1; }
      echo "id $hpc_slurm_id"' _ "$HPC_ROOT" "$tmp/sbatch"
    assert_equal "$status" 1
    assert_output "refused: sbatch gave no job id for the job: $answer"
  done
  make_manifest a 4242
  make_manifest b 0089
  make_manifest c 123456789012345678901234
  manage status --all
  assert_equal "$status" 0
  assert_line --regexp '^4242 +a '
  # An index row that says so (written by an earlier version) is not taken either.
  rm -- "$outputs/manifests/b_0089.manifest" "$outputs/manifests/c_123456789012345678901234.manifest"
  local index
  index=$(<"$outputs/manifests/.index")
  printf '%s\n' "${index//$'\x1f'4242$'\x1f'/$'\x1f'0042$'\x1f'}" >"$outputs/manifests/.index"
  manage status --all
  assert_equal "$status" 0
  assert_line --regexp '^4242 +a '
}

# chunk_job and item_state: a chunked map's task run alone (tests/helpers/chunk_job.bash).
# shellcheck source=tests/helpers/chunk_job.bash
source "$BATS_TEST_DIRNAME/../helpers/chunk_job.bash"

# shellcheck disable=SC2034,SC2154,SC2329 # the variables the sourced library reads and sets; 'program' is run by it
@test "a chunk's task requeued and warned again: the items it completed in its earlier run after a failed one stay COMPLETED, never written over NOT_RUN" {
  chunk_job 0
  program() {
    printf '%s\n' "$map_index" >>"$BATS_TEST_TMPDIR/ran"
    [[ $map_index != 1 ]] || hpc_job_warned=1
  }
  hpc_map_task_setup
  local i state
  for i in 0 1 2 3; do
    state=COMPLETED
    ((i != 1)) || state=FAILED
    printf '{"state": "%s", "array_job_id": "40", "task_id": "0", "attempt": 1}\n' "$state" \
      >"$map_root/dir/tasks/$i/status.json"
  done
  # The restart runs item 1 again (it failed), and the warning comes while it runs.
  SLURM_RESTART_COUNT=1 hpc_map_chunk_run
  run cat "$BATS_TEST_TMPDIR/ran"
  assert_output 1
  assert_equal "$(item_state 0) $(item_state 1) $(item_state 2) $(item_state 3)" "COMPLETED COMPLETED COMPLETED COMPLETED"
  assert_equal "$hpc_job_status" 0
}

@test "status of a chunked map: an item whose file still says RUNNING after SLURM ended its task (killed hard) is LOST, as the gather reads it, not RUNNING for ever" {
  local id=730 k=2
  chunk_map "$id" 4 "$k"
  item_status 0 0 COMPLETED
  item_status 1 0 RUNNING
  item_status 2 1 RUNNING
  # Task 0 ended (SLURM's FAILED: its node died under item 1); task 1 still runs item 2.
  printf 'scontrol %s_0 731 FAILED 1:0\nsqueue %s_1 732 RUNNING -\n' "$id" "$id" >"$HPC_STUB_JOBS"
  manage status c
  assert_equal "$status" 0
  assert_output --partial "map c/20300101-000000-$id: 4 items: 1 COMPLETED, 1 RUNNING, 1 not started, 1 LOST"
  # Once SLURM has forgotten both tasks: no item RUNNING.
  : >"$HPC_STUB_JOBS"
  manage status c
  assert_output --partial "map c/20300101-000000-$id: 4 items: 1 COMPLETED, 1 not started, 2 LOST"
}

@test "gather EXP --here: a map's manifest.json that is a link is not read (one line says so) and nothing runs; one that others can write neither" {
  make_manifest ev 500 0-1 map
  local dir="$outputs/map/ev/500"
  mkdir -p "$dir"
  chmod 700 "$outputs/map" "$outputs/map/ev" "$dir"
  printf '{"first": 0, "last": 1, "policy": "all-ok", "kind": "venv-none", "gather": "touch ran"}\n' >"$tmp/elsewhere.json"
  ln -s "$tmp/elsewhere.json" "$dir/manifest.json"
  printf '#!/bin/bash\n' >"$dir/gather.sh"
  manage gather ev --here
  assert_equal "$status" 1
  assert_equal "${#stderr_lines[@]}" 1
  assert_regex "$stderr" "^job_submitter.sh: the map's record $dir/manifest.json is not a regular file of .* \\(or is a link\\): not read; nothing was run$"
  # A regular file that others can write: refused the same way, naming why.
  rm "$dir/manifest.json"
  cp "$tmp/elsewhere.json" "$dir/manifest.json"
  chmod 666 "$dir/manifest.json"
  manage gather ev --here
  assert_equal "$status" 1
  assert_equal "${#stderr_lines[@]}" 1
  assert_regex "$stderr" "^job_submitter.sh: the map's record $dir/manifest.json .*: not read; nothing was run$"
  [[ ! -e $PROJECT/ran && ! -e $dir/ran ]]
}
