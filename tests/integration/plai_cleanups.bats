#!/usr/bin/env bats
# plai_cleanups on the local cluster: leftovers planted in both nodes' local scratch roots
# ($HPC_CLUSTER_DIR/scratch/n1 and n2, what the local profile's ${HPC_LOCAL_SCRATCH:-/tmp}
# expands to in jobs) with made-up ids of jobs that never ran here, next to a real running job's
# folder and things that must survive; then submit_plai_cleanup --cluster local --wait.
# Everything planted is removed in teardown, and the sleeping job is cancelled.

bats_require_minimum_version 1.5.0

setup_file() {
  load '../helpers/common'
  load '../helpers/cluster'
  hpc_cluster_require
  export PYTHONDONTWRITEBYTECODE=1
  export HPC_CACHE_DIR="$BATS_FILE_TMPDIR/profile cache"
}

setup() {
  load '../helpers/common'
  load '../helpers/cluster'
  work=$(hpc_test_tmp)
  reports=$work/reports
  user=${USER:-$(id -un)}
  n1=$HPC_CLUSTER_DIR/scratch/n1
  n2=$HPC_CLUSTER_DIR/scratch/n2
  mkdir -p "$n1" "$n2"
  # Job ids far above any this cluster hands out, different for each test process.
  base=$((900000000 + (BASHPID % 100000) * 100))
  planted=() mounts=() sleeper='' can_mount=0
  unset HPC_CLUSTER
  cd "$HPC_ROOT" || return
}

teardown() {
  local m p
  [[ -z $sleeper ]] || scancel "$sleeper" 2>/dev/null || true
  for m in "${mounts[@]}"; do
    umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || true
  done
  for p in "${planted[@]}"; do
    if [[ -L $p ]]; then rm -f -- "$p"; elif [[ -e $p ]]; then rm -rf --one-file-system -- "$p"; fi
  done
}

# plant PATH [RECORD]: a leftover folder as the toolkit makes it: mode 0700, the record
# .hpc_tmpdir (RECORD, by default the job id at the end of PATH), some content.
plant() {
  planted+=("$1")
  mkdir -m 700 "$1"
  printf '%s\n' "${2:-${1##*.}}" >"$1/.hpc_tmpdir"
  head -c 20000 /dev/zero >"$1/data.bin"
  mkdir "$1/sub"
  printf 'x\n' >"$1/sub/file.txt"
}

# plant_mount PATH: a tmpfs mounted at PATH (made); sets can_mount=1 when that worked.
plant_mount() {
  planted+=("$1")
  mkdir -p "$1"
  if mount -t tmpfs -o size=1m tmpfs "$1" 2>/dev/null; then
    mounts=("$1" "${mounts[@]}")
    can_mount=1
    return 0
  fi
  can_mount=0
  return 1
}

# start_sleeper: a job sleeping on n1, waited for until it runs; sets sleeper to its id.
start_sleeper() {
  local i state
  sleeper=$(hpc_sbatch --nodelist=n1 -N1 -n1 --cpus-per-task=1 --mem=100M -t 00:05:00 -J plai-cleanup-sleeper \
    -o /dev/null --wrap 'sleep 300')
  for ((i = 0; i < 300; i++)); do
    state=$(squeue -h -j "$sleeper" -o '%T' 2>/dev/null) || state=
    [[ $state == RUNNING ]] && return 0
    sleep 0.2
  done
  fail "the sleeping job $sleeper did not start within 60 s (state: $state)"
}

# plant_everything: on n1 a finished job's folder, the running job's, ${USER}x's, one of this
# user's name owned by nobody, nobody's, a symlink with a matching name (and its target), a
# tmpfs mounted with a matching name; on n2 two finished jobs' folders (the earlier and today's
# layout) and one with a tmpfs mounted inside. Sets removable_n1 and removable_n2 (the names a run must remove).
plant_everything() {
  start_sleeper
  plant "$n1/hpc_tmpdir.$user.$((base + 1))"
  plant "$n1/hpc_tmpdir.$user.$sleeper"
  plant "$n1/hpc_tmpdir.${user}x.$((base + 3))"
  plant "$n1/hpc_tmpdir.$user.$((base + 4))"
  chown -R nobody "$n1/hpc_tmpdir.$user.$((base + 4))"
  plant "$n1/hpc_tmpdir.nobody.$((base + 5))"
  chown -R nobody "$n1/hpc_tmpdir.nobody.$((base + 5))"
  target="$work/link target"
  mkdir "$target"
  printf '%s\n' "$((base + 6))" >"$target/.hpc_tmpdir"
  printf 'precious\n' >"$target/precious.txt"
  planted+=("$n1/hpc_tmpdir.$user.$((base + 6))")
  ln -s "$target" "$n1/hpc_tmpdir.$user.$((base + 6))"
  if plant_mount "$n1/hpc_tmpdir.$user.$((base + 7))"; then
    printf '%s\n' "$((base + 7))" >"$n1/hpc_tmpdir.$user.$((base + 7))/.hpc_tmpdir"
    printf 'on tmpfs\n' >"$n1/hpc_tmpdir.$user.$((base + 7))/keep.txt"
  fi
  plant "$n2/hpc_tmpdir.$user.$((base + 11))"
  plant "$n2/hpc_tmpdir.$user.$((base + 12)).0123456789abcdef" "$((base + 12))"
  plant "$n2/hpc_tmpdir.$user.$((base + 13))"
  if plant_mount "$n2/hpc_tmpdir.$user.$((base + 13))/sub/inner"; then
    printf 'inside\n' >"$n2/hpc_tmpdir.$user.$((base + 13))/sub/inner/keep.txt"
  fi
  removable_n1="hpc_tmpdir.$user.$((base + 1))"
  removable_n2="hpc_tmpdir.$user.$((base + 11)) hpc_tmpdir.$user.$((base + 12)).0123456789abcdef"
  ((can_mount)) || removable_n2+=" hpc_tmpdir.$user.$((base + 13))"
}

# report_of NODE: the report file the last run printed for NODE.
report_of() {
  local line
  for line in "${lines[@]}"; do
    if [[ $line == "$1: job "*", report "* ]]; then
      printf '%s\n' "${line#*, report }"
      return 0
    fi
  done
  fail "no report printed for $1"
}

# names_in REPORT PREFIX: the names of the report's lines 'PREFIX: NAME ...', sorted.
names_in() {
  sed -n "s/^$2: \\([^ ]*\\) .*/\\1/p" "$1" | LC_ALL=C sort
}

# ours: what this test planted in the roots (entries only), sorted.
ours() {
  find "$n1" "$n2" -mindepth 1 -maxdepth 1 \( -name "hpc_tmpdir.*.$((base / 100))??" -o -name "hpc_tmpdir.*.$((base / 100))??.*" -o -name "hpc_tmpdir.*.$sleeper" \) \
    -printf '%p|%y|%u\n' | LC_ALL=C sort
}

# assert_survivors: everything but the removable folders is still there, content and all.
assert_survivors() {
  [ -f "$n1/hpc_tmpdir.$user.$sleeper/sub/file.txt" ]
  [ -f "$n1/hpc_tmpdir.${user}x.$((base + 3))/data.bin" ]
  [ -f "$n1/hpc_tmpdir.$user.$((base + 4))/data.bin" ]
  [ -f "$n1/hpc_tmpdir.nobody.$((base + 5))/data.bin" ]
  [ -L "$n1/hpc_tmpdir.$user.$((base + 6))" ]
  [ "$(cat "$target/precious.txt")" = precious ]
  if ((can_mount)); then
    [ "$(cat "$n1/hpc_tmpdir.$user.$((base + 7))/keep.txt")" = "on tmpfs" ]
    [ "$(cat "$n2/hpc_tmpdir.$user.$((base + 13))/sub/inner/keep.txt")" = inside ]
    [ -f "$n2/hpc_tmpdir.$user.$((base + 13))/data.bin" ]
  fi
}

# assert_row NODE REPORT: the table's row for NODE agrees with the node's report.
assert_row() {
  local removed kept
  removed=$(grep -cE '^(removed|would remove): ' "$2") || true
  kept=$(grep -c '^kept: ' "$2") || true
  assert_line --regexp "^$1 +[0-9]+ +$removed +[0-9.]+ (B|KiB|MiB) +$kept +.*$"
}

@test "leftovers of ended jobs are removed on both nodes; the running job's folder and all the others survive; a summary table" {
  plant_everything
  run --separate-stderr bash plai_cleanups/submit_plai_cleanup --cluster local --wait --timeout 240 --reports "$reports"
  [ "$status" -eq 0 ] || fail "exit $status: $output $stderr"
  assert_line --index 0 "cluster local, partition debug, local scratch root \${HPC_LOCAL_SCRATCH:-/tmp}, user $user: removing the leftovers of ended jobs"
  r1=$(report_of n1)
  r2=$(report_of n2)
  assert_line --regexp '^node +job +removed +freed +kept +why kept$'
  assert_row n1 "$r1"
  assert_row n2 "$r2"
  assert_line --regexp '^all +[0-9]+ +[0-9.]+ (B|KiB|MiB) +[0-9]+$'

  for name in $removable_n1; do
    [ ! -e "$n1/$name" ] || fail "$n1/$name survived"
    grep -qE "^removed: $name \(job [0-9]+ ended: [^;]+; [0-9]+ bytes freed\)$" "$r1"
  done
  for name in $removable_n2; do
    [ ! -e "$n2/$name" ] || fail "$n2/$name survived"
    grep -qE "^removed: $name " "$r2"
  done
  assert_survivors
  grep -qx "kept: hpc_tmpdir.$user.$sleeper (job-active: job $sleeper is RUNNING)" "$r1"
  grep -qx "kept: hpc_tmpdir.${user}x.$((base + 3)) (name: not named hpc_tmpdir.$user.<job id>.<16 hex digits>)" "$r1"
  grep -qx "kept: hpc_tmpdir.$user.$((base + 4)) (owner: not owned by $user)" "$r1"
  grep -qx "kept: hpc_tmpdir.nobody.$((base + 5)) (name: not named hpc_tmpdir.$user.<job id>.<16 hex digits>)" "$r1"
  grep -qx "kept: hpc_tmpdir.$user.$((base + 6)) (symlink: a symbolic link, never followed)" "$r1"
  if ((can_mount)); then
    grep -qx "kept: hpc_tmpdir.$user.$((base + 7)) (other-fs: a mount point of another file system than the root)" "$r1"
    grep -qx "kept: hpc_tmpdir.$user.$((base + 13)) (mount: another file system is mounted inside it)" "$r2"
  fi
  # Each job ran on its own node and saw that node's root; it listed before and after.
  grep -q "^hpc-cleanup on n1: user $user (uid $(id -u)), root $n1 (from \${HPC_LOCAL_SCRATCH:-/tmp}), removing$" "$r1"
  grep -q "^hpc-cleanup on n2: user $user (uid $(id -u)), root $n2 (from \${HPC_LOCAL_SCRATCH:-/tmp}), removing$" "$r2"
  grep -q '^before: [0-9]* entries named hpc_tmpdir\.\* in ' "$r1"
  grep -q '^after: [0-9]* entries named hpc_tmpdir\.\* in ' "$r1"
  grep -q '^summary node=n1 mode=real .* status=ok$' "$r1"
}

@test "--dry-run removes nothing and lists exactly what the real run then removes" {
  plant_everything
  before=$(ours)
  run --separate-stderr bash plai_cleanups/submit_plai_cleanup --cluster local --wait --dry-run --timeout 240 --reports "$reports/dry"
  [ "$status" -eq 0 ] || fail "exit $status: $output $stderr"
  assert_line --regexp '^node +job +would remove +would free +kept +why kept$'
  dry1=$(names_in "$(report_of n1)" 'would remove')
  dry2=$(names_in "$(report_of n2)" 'would remove')
  after=$(ours)
  assert_equal "$after" "$before"
  for name in $removable_n1; do
    [ -d "$n1/$name" ] || fail "the dry run removed $n1/$name"
    grep -qx "$name" <<<"$dry1" || fail "the dry run did not list $n1/$name"
  done
  for name in $removable_n2; do
    [ -d "$n2/$name" ] || fail "the dry run removed $n2/$name"
    grep -qx "$name" <<<"$dry2" || fail "the dry run did not list $n2/$name"
  done
  assert_survivors

  run --separate-stderr bash plai_cleanups/submit_plai_cleanup --cluster local --wait --timeout 240 --reports "$reports/real"
  [ "$status" -eq 0 ] || fail "exit $status: $output $stderr"
  assert_equal "$(names_in "$(report_of n1)" removed)" "$dry1"
  assert_equal "$(names_in "$(report_of n2)" removed)" "$dry2"
  for name in $removable_n1; do [ ! -e "$n1/$name" ]; done
  for name in $removable_n2; do [ ! -e "$n2/$name" ]; done
  assert_survivors
}

@test "squeue failing in the node's job (a stub): nothing is deleted, the report says why, the command exits 1" {
  plant "$n1/hpc_tmpdir.$user.$((base + 21))"
  HPC_REAL_SQUEUE=$(command -v squeue)
  export HPC_REAL_SQUEUE
  # sbatch passes this PATH on to the job, where the stub fails.
  PATH=$HPC_ROOT/tests/fixtures/plai_cleanups/failing_squeue:$PATH \
    run --separate-stderr bash plai_cleanups/submit_plai_cleanup --cluster local --nodes n1 --wait --timeout 240 --reports "$reports"
  assert_failure 1
  assert_line --regexp '^n1 +[0-9]+ +0 +0 B +[0-9]+ +.*squeue failed.*$'
  assert_line --regexp "^ +\\^ squeue-failed: see .*/hpc_cleanup_n1_[0-9]+\\.out$"
  r1=$(report_of n1)
  grep -qx "NOTHING REMOVED: squeue failed with exit status 1: whether these jobs have ended is unknown" "$r1"
  grep -qx "kept: hpc_tmpdir.$user.$((base + 21)) (squeue: squeue failed with exit status 1: whether these jobs have ended is unknown)" "$r1"
  [ -f "$n1/hpc_tmpdir.$user.$((base + 21))/data.bin" ]
}
