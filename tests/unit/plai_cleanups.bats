#!/usr/bin/env bats
# plai_cleanups without SLURM. The per-node rule (plai_cleanups/hpc_cleanup.bash) on a temporary
# local scratch root whose path has a space, and the submitter (submit_plai_cleanup) with PATH
# stubs of squeue, sinfo and sbatch (tests/fixtures/plai_cleanups/bin) that record their
# arguments in $HPC_STUB_LOG; the sbatch stub can run each job at once, as its node would.
# shellcheck disable=SC2030,SC2031 # each @test runs in its own subshell: what it exports or sets stays there, on purpose

bats_require_minimum_version 1.5.0
# Set by hpc_test_user_copy (helpers/common.bash); declared for shellcheck.
declare -g user_copy

setup_file() {
  load '../helpers/common'
  # Python (profiles, hostlists) must not write __pycache__ into the repository; the compiled
  # profiles go to a cache of this file's own.
  export PYTHONDONTWRITEBYTECODE=1
  export HPC_CACHE_DIR="$BATS_FILE_TMPDIR/profile cache"
}

setup() {
  load '../helpers/common'
  load '../helpers/stub'
  fixtures=$HPC_ROOT/tests/fixtures/plai_cleanups
  submitter=$HPC_ROOT/plai_cleanups/submit_plai_cleanup
  tmp=$(hpc_test_tmp)
  root=$tmp/scratch
  mkdir -p "$root"
  # Outside $tmp, so that listings of $tmp do not see the stubs' records.
  stub_log="$BATS_TEST_TMPDIR/stub log"
  mkdir -p "$stub_log"
  unset HPC_STUB_SQUEUE HPC_STUB_SQUEUE_RC HPC_STUB_SQUEUE_JOB_RC HPC_STUB_SINFO HPC_STUB_SINFO_RC \
    HPC_STUB_SBATCH_RUN HPC_STUB_SBATCH_REFUSE HPC_STUB_JOB_ID HPC_CLUSTER HPC_HOSTNAME SLURM_JOB_ID
  export HPC_STUB_LOG=$stub_log PATH=$fixtures/bin:$PATH SLURMD_NODENAME=n1 SCRATCH=$tmp/scratch_shared
  mounts=() immutables=() others=()
  hpc_program=cleanup_node
  # shellcheck source=plai_cleanups/hpc_cleanup.bash
  source "$HPC_ROOT/plai_cleanups/hpc_cleanup.bash"
  user=$(hpc_cleanup_user)
  uid=$(id -u)
}

teardown() {
  local m
  for m in "${mounts[@]}"; do
    umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || true
  done
  for m in "${immutables[@]}"; do chattr -i "$m" 2>/dev/null || true; done
  for m in "${others[@]}"; do rm -rf --one-file-system -- "$m"; done
}

# leftover NAME [RECORD]: a leftover folder ROOT/NAME as the toolkit makes it (mode 0700, the
# record .hpc_tmpdir holding RECORD, by default the job id at the end of NAME) with some content.
leftover() {
  local dir=$root/$1
  mkdir -m 700 "$dir"
  printf '%s\n' "${2:-${1##*.}}" >"$dir/.hpc_tmpdir"
  head -c 3000 /dev/zero >"$dir/data.bin"
  mkdir "$dir/sub"
  printf 'x\n' >"$dir/sub/file.txt"
}

# bytes PATH: what the cleanup reports as freed for PATH.
bytes() {
  du -sbx -- "$1" | cut -f1
}

# try_mount DIR: mounts a small tmpfs at DIR (made); skips the test when mounting is not permitted.
try_mount() {
  mkdir -p "$1"
  mount -t tmpfs -o size=1m tmpfs "$1" 2>/dev/null || skip "mount -t tmpfs is not permitted here"
  mounts=("$1" "${mounts[@]}")
}

# clean [1]: runs the node's cleanup of $root (1: dry run), as its job would.
clean() {
  run hpc_cleanup_node "$root" "${1:-0}"
}

# argv_of COMMAND N: sets the array argv to the arguments of the stub's N-th call.
argv_of() {
  [[ -e $stub_log/$1.$2.args ]] || fail "$1 was not called $2 time(s)"
  mapfile -d '' argv <"$stub_log/$1.$2.args"
}

# listing DIR: everything under DIR, with type, size, mode and owner.
listing() {
  find "$1" -printf '%P|%y|%s|%m|%u|%l\n' | LC_ALL=C sort
}

# names PREFIX: the names of the output lines that start with 'PREFIX: ', sorted, one a line.
names() {
  local line
  for line in "${lines[@]}"; do
    [[ $line == "$1: "* ]] || continue
    line=${line#"$1: "}
    printf '%s\n' "${line%% *}"
  done | LC_ALL=C sort
}

# --- the per-node rule ---------------------------------------------------------------------

@test "a finished job's folder is removed with all it holds, the bytes freed reported, before and after listed" {
  leftover "hpc_tmpdir.$user.101"
  leftover "hpc_tmpdir.$user.102"
  b101=$(bytes "$root/hpc_tmpdir.$user.101")
  b102=$(bytes "$root/hpc_tmpdir.$user.102")
  export HPC_STUB_SQUEUE="101 COMPLETED
55 RUNNING"
  clean
  assert_success
  assert_line --index 0 "hpc-cleanup on n1: user $user (uid $uid), root $root (from $root), removing"
  assert_line --index 1 "before: 2 entries named hpc_tmpdir.* in $root"
  assert_line --index 2 "  drwx------ $user hpc_tmpdir.$user.101"
  assert_line --index 3 "  drwx------ $user hpc_tmpdir.$user.102"
  assert_line "removed: hpc_tmpdir.$user.101 (job 101 ended: COMPLETED; $b101 bytes freed)"
  assert_line "removed: hpc_tmpdir.$user.102 (job 102 ended: squeue no longer lists it; $b102 bytes freed)"
  assert_line "after: 0 entries named hpc_tmpdir.* in $root"
  assert_line --index $((${#lines[@]} - 1)) \
    "summary node=n1 mode=real removed=2 freed_bytes=$((b101 + b102)) kept=0 why=- status=ok"
  [ ! -e "$root/hpc_tmpdir.$user.101" ]
  [ ! -e "$root/hpc_tmpdir.$user.102" ]
  [ -d "$root" ]
}

@test "today's layout, hpc_tmpdir.<user>.<job id>.<16 hex digits>: an ended job's folder goes, a running one's stays" {
  leftover "hpc_tmpdir.$user.151.0123456789abcdef" 151
  leftover "hpc_tmpdir.$user.152.fedcba9876543210" 152
  leftover "hpc_tmpdir.$user.153.00000000aaaaaaaa" 153
  b151=$(bytes "$root/hpc_tmpdir.$user.151.0123456789abcdef")
  export HPC_STUB_SQUEUE="151 COMPLETED
152 RUNNING"
  clean
  assert_success
  assert_line "removed: hpc_tmpdir.$user.151.0123456789abcdef (job 151 ended: COMPLETED; $b151 bytes freed)"
  assert_line "kept: hpc_tmpdir.$user.152.fedcba9876543210 (job-active: job 152 is RUNNING)"
  assert_line --regexp "^removed: hpc_tmpdir\.$user\.153\.00000000aaaaaaaa \(job 153 ended: squeue no longer lists it; [0-9]+ bytes freed\)$"
  [ ! -e "$root/hpc_tmpdir.$user.151.0123456789abcdef" ]
  [ -f "$root/hpc_tmpdir.$user.152.fedcba9876543210/sub/file.txt" ]
}

@test "a preempted job's folder is removed: PREEMPTED has ended, as status counts it" {
  leftover "hpc_tmpdir.$user.161.0123456789abcdef" 161
  b161=$(bytes "$root/hpc_tmpdir.$user.161.0123456789abcdef")
  export HPC_STUB_SQUEUE="161 PREEMPTED"
  clean
  assert_success
  assert_line "removed: hpc_tmpdir.$user.161.0123456789abcdef (job 161 ended: PREEMPTED; $b161 bytes freed)"
  [ ! -e "$root/hpc_tmpdir.$user.161.0123456789abcdef" ]
}

@test "a job preempted to be requeued keeps its folder: SLURM shows it COMPLETING, REQUEUED, then PENDING, never PREEMPTED" {
  # Seen on the local cluster (partition_prio, PreemptMode=REQUEUE): RUNNING -> COMPLETING ->
  # PENDING (BeginTime); PREEMPTED only with PreemptMode=CANCEL, after which nothing comes back.
  local state
  leftover "hpc_tmpdir.$user.171.0123456789abcdef" 171
  for state in COMPLETING REQUEUED PENDING REQUEUE_HOLD; do
    export HPC_STUB_SQUEUE="171 $state"
    clean
    assert_success
    assert_line "kept: hpc_tmpdir.$user.171.0123456789abcdef (job-active: job 171 is $state)"
    [ -f "$root/hpc_tmpdir.$user.171.0123456789abcdef/.hpc_tmpdir" ]
  done
}

@test "today's layout: other suffixes, another job's record, symlinks and other owners are kept, untouched" {
  for name in "hpc_tmpdir.$user.161.0123456789abcde" "hpc_tmpdir.$user.162.0123456789ABCDEF" \
    "hpc_tmpdir.$user.163.0123456789abcdefa" "hpc_tmpdir.$user.164.0123456789abcdef.x" "hpc_tmpdir.$user.165.g123456789abcdef"; do
    leftover "$name" "$(cut -d. -f3 <<<"$name")"
  done
  leftover "hpc_tmpdir.$user.166.0123456789abcdef" 167
  leftover "hpc_tmpdir.$user.168.0123456789abcdef" 168
  chown -R nobody "$root/hpc_tmpdir.$user.168.0123456789abcdef"
  ln -s "$root/hpc_tmpdir.$user.166.0123456789abcdef" "$root/hpc_tmpdir.$user.169.0123456789abcdef"
  before=$(listing "$root")
  clean
  assert_success
  for id in 161 162 163 164 165; do
    assert_line --regexp "^kept: hpc_tmpdir\.$user\.$id\.[^ ]+ \(name: not named hpc_tmpdir\.$user\.<job id>\.<16 hex digits>\)$"
  done
  assert_line "kept: hpc_tmpdir.$user.166.0123456789abcdef (no-record: no .hpc_tmpdir record of job 166 in it: not made by the toolkit for that job)"
  assert_line "kept: hpc_tmpdir.$user.168.0123456789abcdef (owner: not owned by $user)"
  assert_line "kept: hpc_tmpdir.$user.169.0123456789abcdef (symlink: a symbolic link, never followed)"
  assert_line "summary node=n1 mode=real removed=0 freed_bytes=0 kept=8 why=name:5,symlink:1,owner:1,no-record:1 status=ok"
  [ "$(listing "$root")" = "$before" ]
}

@test "a running job's folder is kept, and so are pending, suspended, completing and requeued ones" {
  for id in 201 202 203 204 205 206 207; do leftover "hpc_tmpdir.$user.$id"; done
  export HPC_STUB_SQUEUE="201 RUNNING
202 PENDING
203 SUSPENDED
204 COMPLETING
205 REQUEUED
206 CANCELLED
207 TIMEOUT"
  clean
  assert_success
  for pair in 201:RUNNING 202:PENDING 203:SUSPENDED 204:COMPLETING 205:REQUEUED; do
    assert_line "kept: hpc_tmpdir.$user.${pair%:*} (job-active: job ${pair%:*} is ${pair#*:})"
    [ -f "$root/hpc_tmpdir.$user.${pair%:*}/sub/file.txt" ]
  done
  assert_line --regexp "^removed: hpc_tmpdir\.$user\.206 \(job 206 ended: CANCELLED; [0-9]+ bytes freed\)$"
  assert_line --regexp "^removed: hpc_tmpdir\.$user\.207 \(job 207 ended: TIMEOUT; [0-9]+ bytes freed\)$"
  assert_line --regexp "^summary node=n1 mode=real removed=2 freed_bytes=[0-9]+ kept=5 why=job-active:5 status=ok$"
}

@test "names other than exactly hpc_tmpdir.<user>.<job id> are kept: \${USER}x, another user's, a prefix, odd ids" {
  prefix_user=${user%?}
  for name in "hpc_tmpdir.${user}x.301" "hpc_tmpdir.nobody.302" "hpc_tmpdir.$prefix_user.303" \
    "hpc_tmpdir.$user." "hpc_tmpdir.$user.0304" "hpc_tmpdir.$user.305.old" "hpc_tmpdir.$user.306x" \
    "hpc_tmpdir.$user.-307" "hpc_tmpdir.$user.3 08"; do
    leftover "$name" 301
  done
  chown -R nobody "$root/hpc_tmpdir.nobody.302"
  before=$(listing "$root")
  # Nothing of this user's to ask about: squeue is not even called.
  stub squeue
  clean
  unstub squeue
  assert_success
  assert_line "kept: hpc_tmpdir.${user}x.301 (name: not named hpc_tmpdir.$user.<job id>.<16 hex digits>)"
  assert_line "kept: hpc_tmpdir.nobody.302 (name: not named hpc_tmpdir.$user.<job id>.<16 hex digits>)"
  assert_line "kept: hpc_tmpdir.$prefix_user.303 (name: not named hpc_tmpdir.$user.<job id>.<16 hex digits>)"
  assert_line "kept: hpc_tmpdir.$user.0304 (name: not named hpc_tmpdir.$user.<job id>.<16 hex digits>)"
  assert_line "kept: hpc_tmpdir.$user.3\\ 08 (name: not named hpc_tmpdir.$user.<job id>.<16 hex digits>)"
  assert_line "summary node=n1 mode=real removed=0 freed_bytes=0 kept=9 why=name:9 status=ok"
  [ "$(listing "$root")" = "$before" ]
}

@test "bob's cleanup never touches bobby's folders (the user name is compared as a string)" {
  leftover hpc_tmpdir.bobby.401
  leftover hpc_tmpdir.bob.402
  leftover hpc_tmpdir.bo.403
  USER=bob clean
  assert_success
  assert_line "kept: hpc_tmpdir.bobby.401 (name: not named hpc_tmpdir.bob.<job id>.<16 hex digits>)"
  assert_line "kept: hpc_tmpdir.bo.403 (name: not named hpc_tmpdir.bob.<job id>.<16 hex digits>)"
  assert_line --regexp '^removed: hpc_tmpdir\.bob\.402 '
  [ -d "$root/hpc_tmpdir.bobby.401" ]
  [ -d "$root/hpc_tmpdir.bo.403" ]
  [ ! -e "$root/hpc_tmpdir.bob.402" ]
}

@test "a folder with this user's name but another owner (nobody) is kept with all it holds" {
  leftover "hpc_tmpdir.$user.501"
  chown -R nobody "$root/hpc_tmpdir.$user.501"
  before=$(listing "$root")
  clean
  assert_success
  assert_line "kept: hpc_tmpdir.$user.501 (owner: not owned by $user)"
  assert_line "  drwx------ nobody hpc_tmpdir.$user.501"
  [ "$(listing "$root")" = "$before" ]
}

@test "a symlink planted with a matching name is kept and never followed: it and its target survive" {
  target="$tmp/target dir"
  mkdir "$target"
  printf '601\n' >"$target/.hpc_tmpdir"
  printf 'precious\n' >"$target/precious.txt"
  ln -s "$target" "$root/hpc_tmpdir.$user.601"
  ln -s "$target/precious.txt" "$root/hpc_tmpdir.$user.602"
  ln -s "$tmp/nowhere" "$root/hpc_tmpdir.$user.603"
  before=$(listing "$tmp")
  clean
  assert_success
  for id in 601 602 603; do
    assert_line "kept: hpc_tmpdir.$user.$id (symlink: a symbolic link, never followed)"
  done
  assert_line "  lrwxrwxrwx $user hpc_tmpdir.$user.601 -> $(printf '%q' "$target")"
  [ "$(listing "$tmp")" = "$before" ]
  [ "$(cat "$target/precious.txt")" = precious ]
}

@test "a plain file, and folders without the toolkit's record of their job, are kept" {
  printf '701\n' >"$root/hpc_tmpdir.$user.701"
  mkdir -m 700 "$root/hpc_tmpdir.$user.702"
  leftover "hpc_tmpdir.$user.703" 999
  mkdir -m 700 "$root/hpc_tmpdir.$user.704"
  printf '704\n' >"$tmp/record"
  ln -s "$tmp/record" "$root/hpc_tmpdir.$user.704/.hpc_tmpdir"
  mkdir -p "$root/hpc_tmpdir.$user.705/.hpc_tmpdir"
  before=$(listing "$root")
  clean
  assert_success
  assert_line "kept: hpc_tmpdir.$user.701 (not-dir: not a directory)"
  for id in 702 703 704 705; do
    assert_line "kept: hpc_tmpdir.$user.$id (no-record: no .hpc_tmpdir record of job $id in it: not made by the toolkit for that job)"
  done
  assert_line "summary node=n1 mode=real removed=0 freed_bytes=0 kept=5 why=not-dir:1,no-record:4 status=ok"
  [ "$(listing "$root")" = "$before" ]
}

@test "a folder on another file system (a tmpfs mounted there) is kept, and so is one with a mount inside" {
  try_mount "$root/hpc_tmpdir.$user.801"
  printf '801\n' >"$root/hpc_tmpdir.$user.801/.hpc_tmpdir"
  printf 'on tmpfs\n' >"$root/hpc_tmpdir.$user.801/keep.txt"
  leftover "hpc_tmpdir.$user.802"
  try_mount "$root/hpc_tmpdir.$user.802/sub/inner mount"
  printf 'inside\n' >"$root/hpc_tmpdir.$user.802/sub/inner mount/keep.txt"
  leftover "hpc_tmpdir.$user.803"
  clean
  assert_success
  assert_line "kept: hpc_tmpdir.$user.801 (other-fs: a mount point of another file system than the root)"
  assert_line "kept: hpc_tmpdir.$user.802 (mount: another file system is mounted inside it)"
  assert_line --regexp "^removed: hpc_tmpdir\.$user\.803 "
  [ "$(cat "$root/hpc_tmpdir.$user.801/keep.txt")" = "on tmpfs" ]
  [ "$(cat "$root/hpc_tmpdir.$user.802/sub/inner mount/keep.txt")" = inside ]
  [ -f "$root/hpc_tmpdir.$user.802/data.bin" ]
}

@test "a folder that rm cannot wholly remove (an immutable file inside) is reported kept (rm-failed); the node's job fails" {
  leftover "hpc_tmpdir.$user.851"
  leftover "hpc_tmpdir.$user.852"
  chattr +i "$root/hpc_tmpdir.$user.851/sub/file.txt" 2>/dev/null || skip "chattr +i is not permitted here"
  immutables+=("$root/hpc_tmpdir.$user.851/sub/file.txt")
  clean
  assert_failure 1
  assert_line --regexp "^kept: hpc_tmpdir\.$user\.851 \(rm-failed: rm could not remove all of it \([0-9]+ bytes were freed\)\)$"
  assert_line --regexp "^removed: hpc_tmpdir\.$user\.852 "
  assert_line --regexp "^summary node=n1 mode=real removed=1 freed_bytes=[0-9]+ kept=1 why=rm-failed:1 status=rm-failed$"
  [ -f "$root/hpc_tmpdir.$user.851/sub/file.txt" ]
}

@test "as an ordinary user (nobody): its own leftovers go, unwritable folders inside too; root's folder with its name stays" {
  command -v runuser >/dev/null || skip "no runuser"
  # A scratch root as on a cluster (sticky, open to all), which nobody can reach.
  scratch=$(mktemp -d "/tmp/plai cleanups.XXXXXX")
  others+=("$scratch")
  chmod 1777 "$scratch"
  # nobody runs copies (the script and the libraries it sources, the squeue stub, BASH_ENV's
  # file): the checkout's parents may be private to its owner.
  hpc_test_user_copy nobody plai_cleanups hpc_files/lib tests/fixtures/plai_cleanups/bin \
    tests/helpers/strict_env.bash
  copy=$user_copy
  others+=("$copy")
  as_nobody() {
    runuser -u nobody -- env -u HPC_STUB_LOG PATH="$copy/tests/fixtures/plai_cleanups/bin:$PATH" \
      BASH_ENV="$copy/tests/helpers/strict_env.bash" USER=nobody SLURMD_NODENAME=n1 \
      HPC_STUB_SQUEUE="${HPC_STUB_SQUEUE:-}" "$@"
  }
  # shellcheck disable=SC2016 # the script's own $1 and $d
  as_nobody bash -c 'd=$1/hpc_tmpdir.nobody.1701 && mkdir -m 700 "$d" && echo 1701 >"$d/.hpc_tmpdir" &&
    mkdir -p "$d/ro/deep" && echo x >"$d/ro/deep/f" && chmod a-w "$d/ro/deep" "$d/ro"' _ "$scratch"
  mkdir -m 700 "$scratch/hpc_tmpdir.nobody.1702"
  printf '1702\n' >"$scratch/hpc_tmpdir.nobody.1702/.hpc_tmpdir"
  leftover_root=$scratch/hpc_tmpdir.$user.1703
  mkdir -m 700 "$leftover_root"
  printf '1703\n' >"$leftover_root/.hpc_tmpdir"
  run as_nobody bash "$copy/plai_cleanups/cleanup_node.sh" --root "$scratch"
  assert_success
  assert_line --regexp "^removed: hpc_tmpdir\.nobody\.1701 \(job 1701 ended: squeue no longer lists it; [0-9]+ bytes freed\)$"
  assert_line "kept: hpc_tmpdir.nobody.1702 (owner: not owned by nobody)"
  assert_line "kept: hpc_tmpdir.$user.1703 (name: not named hpc_tmpdir.nobody.<job id>.<16 hex digits>)"
  [ ! -e "$scratch/hpc_tmpdir.nobody.1701" ]
  [ -f "$scratch/hpc_tmpdir.nobody.1702/.hpc_tmpdir" ]
  [ -f "$leftover_root/.hpc_tmpdir" ]
}

@test "a failing squeue: nothing is deleted, the report says why, the node's job fails" {
  leftover "hpc_tmpdir.$user.901"
  leftover "hpc_tmpdir.$user.902"
  leftover "hpc_tmpdir.${user}x.903"
  before=$(listing "$root")
  export HPC_STUB_SQUEUE_RC=1
  clean
  assert_failure 1
  assert_line "squeue: error: slurm_load_jobs error: Unable to contact slurm controller (connect failure)"
  assert_line "NOTHING REMOVED: squeue failed with exit status 1: whether these jobs have ended is unknown"
  for id in 901 902; do
    assert_line "kept: hpc_tmpdir.$user.$id (squeue: squeue failed with exit status 1: whether these jobs have ended is unknown)"
  done
  refute_line --regexp '^(removed|would remove):'
  assert_line "summary node=n1 mode=real removed=0 freed_bytes=0 kept=3 why=name:1,squeue:2 status=squeue-failed"
  [ "$(listing "$root")" = "$before" ]
}

@test "squeue answering something that is not 'JOBID STATE' counts as a failure: nothing is deleted" {
  leftover "hpc_tmpdir.$user.911"
  before=$(listing "$root")
  export HPC_STUB_SQUEUE="slurm_load_jobs error: Socket timed out on send/recv operation"
  clean
  assert_failure 1
  assert_line --partial "NOTHING REMOVED: squeue printed a line that is not 'JOBID STATE': "
  [ "$(listing "$root")" = "$before" ]
}

@test "squeue is asked once, for every job of this user in every state" {
  for id in 1001 1002 1003; do leftover "hpc_tmpdir.$user.$id"; done
  stub_through squeue "$fixtures/bin/squeue" "-h -u $uid -t all -o '%A %T'"
  clean
  unstub squeue
  assert_success
}

@test "--dry-run lists exactly what the real run then removes, and removes nothing" {
  for id in 1101 1102 1103 1104; do leftover "hpc_tmpdir.$user.$id"; done
  leftover "hpc_tmpdir.${user}x.1105"
  ln -s "$root/hpc_tmpdir.$user.1101" "$root/hpc_tmpdir.$user.1106"
  leftover "hpc_tmpdir.$user.1107" 1
  export HPC_STUB_SQUEUE="1102 RUNNING
1103 COMPLETED"
  before=$(listing "$tmp")
  clean 1
  assert_success
  assert_line --index 0 "hpc-cleanup on n1: user $user (uid $uid), root $root (from $root), dry run: removing nothing"
  would=$(names 'would remove')
  would_kept=$(names kept)
  dry_summary=${lines[${#lines[@]} - 1]}
  [ "$(listing "$tmp")" = "$before" ]
  assert_equal "$would" "hpc_tmpdir.$user.1101
hpc_tmpdir.$user.1103
hpc_tmpdir.$user.1104"

  clean
  assert_success
  assert_equal "$(names removed)" "$would"
  assert_equal "$(names kept)" "$would_kept"
  assert_equal "${lines[${#lines[@]} - 1]}" "${dry_summary/mode=dry-run/mode=real}"
  for name in $would; do [ ! -e "$root/$name" ]; done
  [ -d "$root/hpc_tmpdir.$user.1102" ]
  [ -L "$root/hpc_tmpdir.$user.1106" ]
  [ -d "$root/hpc_tmpdir.$user.1107" ]
}

@test "the root is expanded from the node's environment; missing there: nothing to clean; relative: refused" {
  leftover "hpc_tmpdir.$user.1201"
  # shellcheck disable=SC2016 # the template is expanded by the cleanup, from the environment
  MY_SCRATCH=$root run hpc_cleanup_node '${MY_SCRATCH:-/nonexistent}' 0
  assert_success
  assert_line --index 0 "hpc-cleanup on n1: user $user (uid $uid), root $root (from \${MY_SCRATCH:-/nonexistent}), removing"
  assert_line --regexp "^removed: hpc_tmpdir\.$user\.1201 "

  # shellcheck disable=SC2016 # the same template, now without MY_SCRATCH
  run hpc_cleanup_node '${MY_SCRATCH:-/nonexistent}' 0
  assert_success
  assert_line "the root /nonexistent does not exist on n1: nothing to clean"
  assert_line "summary node=n1 mode=real removed=0 freed_bytes=0 kept=0 why=- status=ok"

  run hpc_cleanup_node 'relative/root' 0
  assert_failure 1
  assert_line "the root relative/root is not an absolute path: nothing done"
  assert_line "summary node=n1 mode=real removed=0 freed_bytes=0 kept=0 why=- status=bad-root"
}

@test "cleanup_node.sh, the job's script: finds the library with --lib from a copy elsewhere (as sbatch runs it); bad words exit 2" {
  leftover "hpc_tmpdir.$user.1301"
  cp "$HPC_ROOT/plai_cleanups/cleanup_node.sh" "$BATS_TEST_TMPDIR/slurm_script"
  cd "$BATS_TEST_TMPDIR"
  run bash slurm_script --lib "$HPC_ROOT/plai_cleanups" --root "$root" --dry-run
  assert_success
  assert_line --regexp "^would remove: hpc_tmpdir\.$user\.1301 "
  run bash slurm_script --lib "$HPC_ROOT/plai_cleanups" --root "$root"
  assert_success
  assert_line --regexp "^removed: hpc_tmpdir\.$user\.1301 "
  run bash slurm_script --lib "$HPC_ROOT/plai_cleanups"
  assert_failure 2
  assert_output "cleanup_node: --root: needs a value (the local scratch root)"
  run bash slurm_script --root "$root" --force
  assert_failure 2
  assert_output "cleanup_node: --force: unknown; accepted: --lib DIR, --root ROOT, --dry-run"
}

# --- the submitter ------------------------------------------------------------------------

@test "--help and -h print the usage block and submit nothing" {
  stub sbatch
  stub sinfo
  for flag in --help -h; do
    run --separate-stderr bash "$submitter" "$flag"
    assert_success
    assert_line --index 0 "Usage: bash plai_cleanups/submit_plai_cleanup [--dry-run] [--wait] [--partition P] [--nodes HOSTLIST] [options]"
    assert_line "  --dry-run             Submit the same jobs, but each only lists what it would remove (the"
    [ -z "$stderr" ]
  done
  unstub sbatch
  unstub sinfo
}

@test "bad input: <args> -> exit 2, one line 'submit_plai_cleanup: <option>: <what is accepted>', nothing submitted" {
  before=$(listing "$tmp")
  # A stub without a plan: any sbatch fails the test.
  stub sbatch
  while IFS='|' read -r words message; do
    read -ra args <<<"$words"
    run --separate-stderr bash "$submitter" "${args[@]}" </dev/null
    assert_equal "$words -> $status" "$words -> 2"
    assert_equal "$words -> $output" "$words -> "
    assert_equal "$words -> $stderr" "$words -> submit_plai_cleanup: ${message//@PROFILES@/$(hpc_test_profile_names)}"
    [[ $(listing "$tmp") == "$before" ]] || fail "$words: created or changed something under $tmp"
  done <<'EOT'
--bogus|--bogus: unknown option; see 'bash plai_cleanups/submit_plai_cleanup --help'
-x|-x: unknown option; see 'bash plai_cleanups/submit_plai_cleanup --help'
n1|n1: unexpected word; this command takes only options (see --help)
--wait now|now: unexpected word; this command takes only options (see --help)
--dry-run=yes|--dry-run: takes no value
--wait=1|--wait: takes no value
--partition|-p/--partition: needs a value
-p --wait|-p/--partition: needs a value
--partition=|-p/--partition: '' is not accepted; accepted: one partition name (letters, digits, _ . -)
-p a,b|-p/--partition: 'a,b' is not accepted; accepted: one partition name (letters, digits, _ . -)
-p a/b|-p/--partition: 'a/b' is not accepted; accepted: one partition name (letters, digits, _ . -)
--nodes|--nodes: needs a value
--nodes=|--nodes: '' is not accepted; accepted: a hostlist of node names and ranges, e.g. 'plai[01-04],plai07'
--nodes n1;rm|--nodes: 'n1;rm' is not accepted; accepted: a hostlist of node names and ranges, e.g. 'plai[01-04],plai07'
--cluster local --nodes n[1-|--nodes: 'n[1-' is not accepted; accepted: a hostlist of node names and ranges, e.g. 'plai[01-04],plai07'
--cluster local --nodes n[2-1]|--nodes: 'n[2-1]' is not accepted; accepted: a hostlist of node names and ranges, e.g. 'plai[01-04],plai07'
--cluster local --nodes n9|--nodes: 'n9' is not a node of partition debug; accepted: n1 n2
--cluster local --nodes n[1-3]|--nodes: 'n3' is not a node of partition debug; accepted: n1 n2
--cluster mars|--cluster: 'mars' is not a known cluster; accepted: @PROFILES@
--cluster ../clusters/local|--cluster: '../clusters/local' is not accepted; accepted: the name of a profile in hpc_files/clusters/
--cluster=|--cluster: '' is not accepted; accepted: the name of a profile in hpc_files/clusters/
--cluster cedar|--cluster: the cluster 'cedar' gives every job SLURM_TMPDIR (tmpdir.provided: true), so the toolkit leaves no folders there; accepted: a cluster without it, or --root
--root relative/path|--root: 'relative/path' is not accepted; accepted: an absolute path, which may start with $VAR or ${VAR:-/default} (expanded on each node)
--root=|--root: '' is not accepted; accepted: an absolute path, which may start with $VAR or ${VAR:-/default} (expanded on each node)
--reports /tmp/a%jb|--reports: '/tmp/a%jb' is not accepted; accepted: a folder that the nodes can write to (no % in its path)
--reports=|--reports: '' is not accepted; accepted: a folder that the nodes can write to (no % in its path)
--timeout 0|--timeout: '0' is not accepted; accepted: a whole number of seconds, 1 to 999999
--timeout ten|--timeout: 'ten' is not accepted; accepted: a whole number of seconds, 1 to 999999
--timeout=-5|--timeout: '-5' is not accepted; accepted: a whole number of seconds, 1 to 999999
EOT
  unstub sbatch
}

@test "one job per node of the profile's partition, pinned to it, with the profile's root; job ids and reports printed" {
  # sinfo once; sbatch once per node, exactly these arguments; without --wait no squeue.
  stub_through sinfo "$fixtures/bin/sinfo" "-N -h -o '%N %t' -p debug"
  local n pattern
  local -a expected plans=()
  for n in 1 2; do
    # shellcheck disable=SC2016 # the profile's root, passed on unexpanded
    expected=(--parsable "--nodelist=n$n" --nodes=1 --ntasks=1 --cpus-per-task=1 --time=00:05:00 --mem=100M
      --job-name=hpc-cleanup --no-requeue "--output=$tmp/reports/hpc_cleanup_n${n}_%j.out" "--chdir=$tmp/reports"
      --partition=debug "$HPC_ROOT/plai_cleanups/cleanup_node.sh" --lib "$HPC_ROOT/plai_cleanups"
      --root '${HPC_LOCAL_SCRATCH:-/tmp}')
    printf -v pattern '%q ' "${expected[@]}"
    plans+=("$pattern")
  done
  stub_through sbatch "$fixtures/bin/sbatch" "${plans[@]}"
  stub squeue
  run --separate-stderr bash "$submitter" --cluster local --reports "$tmp/reports"
  unstub sinfo
  unstub sbatch
  unstub squeue
  assert_success
  assert_equal "$output" "cluster local, partition debug, local scratch root \${HPC_LOCAL_SCRATCH:-/tmp}, user $user: removing the leftovers of ended jobs
n1: job 5000, report $tmp/reports/hpc_cleanup_n1_5000.out
n2: job 5001, report $tmp/reports/hpc_cleanup_n2_5001.out"
  [ -d "$tmp/reports" ]
}

@test "HPC_CLUSTER picks the profile; --nodes takes a hostlist; -p another partition; --dry-run reaches the jobs; reports default to \$SCRATCH" {
  export HPC_STUB_SINFO="n1 idle
n2 mix
n3 alloc" HPC_CLUSTER=plai
  stub_through sinfo "$fixtures/bin/sinfo" "-N -h -o '%N %t' -p gpu"
  stub_through sbatch "$fixtures/bin/sbatch" '--parsable --nodelist=n2 *' '--parsable --nodelist=n3 *'
  run --separate-stderr bash "$submitter" --nodes 'n[2-3]' -p gpu --dry-run
  unstub sinfo
  unstub sbatch
  assert_success
  assert_line --index 0 "cluster plai, partition gpu, local scratch root /scratch-ssd, user $user: dry run: each job only lists what it would remove"
  assert_line "n2: job 5000, report $SCRATCH/hpc_cleanup_reports/hpc_cleanup_n2_5000.out"
  assert_line "n3: job 5001, report $SCRATCH/hpc_cleanup_reports/hpc_cleanup_n3_5001.out"
  argv_of sbatch 1
  assert_equal "${argv[1]} ${argv[11]} ${argv[*]: -5}" "--nodelist=n2 --partition=gpu --lib $HPC_ROOT/plai_cleanups --root /scratch-ssd --dry-run"
  argv_of sbatch 2
  assert_equal "${argv[1]}" "--nodelist=n3"
}

@test "nodes down, drained, draining, failed or not responding get no job and are listed as skipped" {
  export HPC_STUB_SINFO="n1 idle
n2 down*
n3 drain
n4 drng
n5 idle*
n6 mix
n7 fail
n8 maint
n1 idle"
  stub_through sbatch "$fixtures/bin/sbatch" '--parsable --nodelist=n1 *' '--parsable --nodelist=n6 *'
  run --separate-stderr bash "$submitter" --cluster local --reports "$tmp/reports"
  unstub sbatch
  assert_success
  for pair in n2:down* n3:drain n4:drng n5:idle* n7:fail n8:maint; do
    assert_line "${pair%%:*}: skipped, its state is ${pair#*:} (no job can start there now)"
  done
  assert_line "n1: job 5000, report $tmp/reports/hpc_cleanup_n1_5000.out"
  assert_line "n6: job 5001, report $tmp/reports/hpc_cleanup_n6_5001.out"
}

@test "--wait: every node's job runs, then a table per node: removed, freed, kept and why; exit 0" {
  export HPC_STUB_SBATCH_RUN=1 HPC_STUB_SQUEUE="1402 RUNNING"
  for node in n1 n2; do mkdir -p "$tmp/nodes/$node"; done
  root=$tmp/nodes/n1
  leftover "hpc_tmpdir.$user.1401"
  leftover "hpc_tmpdir.${user}x.1409"
  root=$tmp/nodes/n2
  leftover "hpc_tmpdir.$user.1402"
  leftover "hpc_tmpdir.$user.1403"
  leftover "hpc_tmpdir.$user.1404"
  ln -s "$tmp" "$root/hpc_tmpdir.$user.1405"
  run --separate-stderr bash "$submitter" --cluster local --wait --reports "$tmp/reports" --root "$tmp/nodes/\${SLURMD_NODENAME}"
  assert_success
  assert_line "waiting for 2 job(s), at most 600 s ..."
  assert_line --regexp '^node +job +removed +freed +kept +why kept$'
  assert_line --regexp '^n1 +5000 +1 +[0-9.]+ KiB +1 +1 other name$'
  assert_line --regexp '^n2 +5001 +2 +[0-9.]+ KiB +2 +1 job not ended, 1 symlink$'
  assert_line --regexp '^all +3 +[0-9.]+ KiB +3$'
  [ ! -e "$tmp/nodes/n1/hpc_tmpdir.$user.1401" ]
  [ ! -e "$tmp/nodes/n2/hpc_tmpdir.$user.1403" ]
  [ -d "$tmp/nodes/n2/hpc_tmpdir.$user.1402" ]
  [ -L "$tmp/nodes/n2/hpc_tmpdir.$user.1405" ]
  run grep -c '^summary node=n2 mode=real removed=2 ' "$tmp/reports/hpc_cleanup_n2_5001.out"
  assert_output 1
}

@test "--dry-run --wait: the table says what would be removed, and nothing is" {
  export HPC_STUB_SBATCH_RUN=1 HPC_STUB_SINFO="n1 idle"
  leftover "hpc_tmpdir.$user.1501"
  before=$(listing "$root")
  run --separate-stderr bash "$submitter" --cluster local --wait --dry-run --reports "$tmp/reports" --root "$root"
  assert_success
  assert_line --regexp '^node +job +would remove +would free +kept +why kept$'
  assert_line --regexp '^n1 +5000 +1 +[0-9.]+ KiB +0 +-$'
  [ "$(listing "$root")" = "$before" ]
}

@test "--wait: a node whose squeue failed removed nothing; its row says so and the command exits 1" {
  export HPC_STUB_SBATCH_RUN=1 HPC_STUB_SINFO="n1 idle" HPC_STUB_SQUEUE_JOB_RC=1
  leftover "hpc_tmpdir.$user.1601"
  run --separate-stderr bash "$submitter" --cluster local --wait --reports "$tmp/reports" --root "$root"
  assert_failure 1
  assert_line --regexp '^n1 +5000 +0 +0 B +1 +1 squeue failed$'
  assert_line --regexp "^ +\^ squeue-failed: see $tmp/reports/hpc_cleanup_n1_5000.out$"
  [ -d "$root/hpc_tmpdir.$user.1601" ]
}

@test "--wait --timeout: jobs still queued then: exit 1, the table shows them without a summary, they stay queued" {
  export HPC_STUB_SINFO="n1 idle" HPC_STUB_SQUEUE="5000 PENDING"
  run --separate-stderr bash "$submitter" --cluster local --wait --timeout 1 --reports "$tmp/reports"
  assert_failure 1
  assert_line --regexp "^n1 +5000 +no summary in its report \(job PENDING\): see $tmp/reports/hpc_cleanup_n1_5000.out$"
  assert_equal "$stderr" "submit_plai_cleanup: the jobs did not all end within 1s; they stay queued, and their reports will be in $tmp/reports"
}

@test "sinfo failing: exit 1 with the reason, nothing submitted" {
  export HPC_STUB_SINFO_RC=1
  stub sbatch
  run --separate-stderr bash "$submitter" --cluster local --reports "$tmp/reports"
  unstub sbatch
  assert_failure 1
  assert_equal "$stderr" "sinfo: error: Unable to contact slurm controller (connect failure)
submit_plai_cleanup: sinfo -N -h -o %N %t -p debug failed (exit status 1): cannot list the nodes"
}

@test "sbatch refusing one node's job: the others are submitted, and the command exits 1 with sbatch's reason" {
  export HPC_STUB_SBATCH_REFUSE=n1
  run --separate-stderr bash "$submitter" --cluster local --reports "$tmp/reports"
  assert_failure 1
  assert_equal "$stderr" "submit_plai_cleanup: n1: sbatch refused the job: sbatch: error: Batch job submission failed: Requested node configuration is not available"
  assert_line "n2: job 5001, report $tmp/reports/hpc_cleanup_n2_5001.out"
}
