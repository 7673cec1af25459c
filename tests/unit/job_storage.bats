#!/usr/bin/env bats
# hpc_files/lib/hpc_job.bash without SLURM: which SLURM_TMPDIR a job uses (never one inherited
# from the submitting shell), the emulated one's unguessable per-node name, and copy-back that
# leaves either the whole result or nothing under its name. Test folders stand in for the node.
# shellcheck disable=SC2030,SC2031 # each @test runs in its own subshell: what it exports stays there, on purpose

setup() {
  load '../helpers/common'
  tmp=$(hpc_test_tmp)
  # shellcheck source=/dev/null # hpc_job.bash is linted on its own (tests/run.sh)
  source "$HPC_ROOT/hpc_files/lib/hpc_job.bash"
  unset SLURM_TMPDIR HPC_JOB_TMPDIR_TOKEN HPC_JOB_TMPDIR_MODE
  export SLURM_JOB_ID=4242 SLURMD_NODENAME=n1 USER=${USER:-$(id -un)}
  hpc_plan_tmpdir_root="$tmp/local scratch"
  mkdir -p "$hpc_plan_tmpdir_root"
  mounts=()
}

teardown() {
  local m
  for m in "${mounts[@]}"; do umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || true; done
}

# small_disk DIR SIZE: mounts a tmpfs of SIZE at DIR (made); skips without one (needs root).
small_disk() {
  mkdir -p "$1"
  mount -t tmpfs -o "size=$2" tmpfs "$1" 2>/dev/null || skip "cannot mount a tmpfs here"
  mounts=("$1" "${mounts[@]}")
}

# --- which SLURM_TMPDIR ------------------------------------------------------------------------

@test "tmpdir.provided false: a SLURM_TMPDIR inherited from the submitting shell is ignored; the job makes its own" {
  mkdir -p "$tmp/mine/data"
  export SLURM_TMPDIR=$tmp/mine
  hpc_job_tmpdir_choose false
  assert_equal "$HPC_JOB_TMPDIR_MODE" emulated
  [ -z "${SLURM_TMPDIR+set}" ]
  [[ $HPC_JOB_TMPDIR_TOKEN =~ ^[0-9a-f]{32}$ ]]
}

@test "tmpdir.provided auto: an inherited SLURM_TMPDIR not made for this job is ignored, and the log says so" {
  mkdir -p "$tmp/mine" "$tmp/job4242x" "$tmp/slurm/job4242"
  for inherited in "$tmp/mine" "$tmp/job42420" "$tmp/nonexistent/job4242"; do
    export SLURM_TMPDIR=$inherited
    run hpc_job_tmpdir_choose auto
    assert_success
    assert_output "[hpc n1] ignoring SLURM_TMPDIR=$inherited: it was not made by the cluster for job 4242 (inherited from the submitting shell?); this job makes its own"
    export SLURM_TMPDIR=$inherited
    hpc_job_tmpdir_choose auto 2>/dev/null
    assert_equal "$HPC_JOB_TMPDIR_MODE" emulated
    [ -z "${SLURM_TMPDIR+set}" ]
  done
  # The cluster's own: a real folder of this user, named for this job.
  export SLURM_TMPDIR=$tmp/slurm/job4242
  run hpc_job_tmpdir_choose auto
  assert_output ""
  hpc_job_tmpdir_choose auto
  assert_equal "$HPC_JOB_TMPDIR_MODE" provided
  assert_equal "$SLURM_TMPDIR" "$tmp/slurm/job4242"
  # A symlink with the job's name is not the cluster's folder.
  ln -s "$tmp/mine" "$tmp/link4242"
  export SLURM_TMPDIR=$tmp/link4242
  hpc_job_tmpdir_choose auto 2>/dev/null
  assert_equal "$HPC_JOB_TMPDIR_MODE" emulated
}

@test "tmpdir.provided true: the cluster's SLURM_TMPDIR is used; none at all fails" {
  mkdir -p "$tmp/slurm/given"
  export SLURM_TMPDIR=$tmp/slurm/given
  hpc_job_tmpdir_choose true
  assert_equal "$HPC_JOB_TMPDIR_MODE" provided
  unset SLURM_TMPDIR
  run hpc_job_tmpdir_choose true
  assert_failure 1
}

# --- the emulated SLURM_TMPDIR's name ----------------------------------------------------------

@test "emulated name: unguessable (a random token per run), the same for every task of a node, different per node" {
  hpc_job_tmpdir_choose false
  local first n1 again n2
  first=$HPC_JOB_TMPDIR_TOKEN
  n1=$(hpc_job_tmpdir_path)
  [[ $n1 =~ ^"$hpc_plan_tmpdir_root"/hpc_tmpdir\.$USER\.4242\.[0-9a-f]{16}$ ]] || fail "$n1"
  # Another task on n1 (a fresh shell with the job's environment and plan file) finds the same folder.
  printf 'hpc_plan_tmpdir_root=%q\n' "$hpc_plan_tmpdir_root" >"$tmp/job.plan"
  chmod 600 "$tmp/job.plan"
  again=$(bash -c 'source "$1/hpc_files/lib/hpc_job.bash" && hpc_job_plan_load "$2" && hpc_job_tmpdir_path' _ "$HPC_ROOT" "$tmp/job.plan")
  assert_equal "$again" "$n1"
  n2=$(SLURMD_NODENAME=n2 hpc_job_tmpdir_path)
  [ "$n2" != "$n1" ]
  # The token is not in the name: a name seen in one node's log tells nothing about another's.
  [[ $n1 != *"$first"* && $n1 != *"${first:0:16}"* ]]
  # A new run (a requeue) gets another name.
  hpc_job_tmpdir_choose false
  [ "$HPC_JOB_TMPDIR_TOKEN" != "$first" ]
  [ "$(hpc_job_tmpdir_path)" != "$n1" ]
  # Without the job's token there is no name at all.
  unset HPC_JOB_TMPDIR_TOKEN
  run hpc_job_tmpdir_path
  assert_failure 1
  assert_output "[hpc n1] this job's SLURM_TMPDIR token (HPC_JOB_TMPDIR_TOKEN) is missing from its environment"
}

@test "emulated make: 0700 with the job's record; anything already there with the name is refused and left alone" {
  hpc_job_tmpdir_choose false
  local path
  path=$(hpc_job_tmpdir_path)
  hpc_job_tmpdir_make "$path"
  assert_equal "$(stat -c %a "$path")" 700
  assert_equal "$(cat "$path/.hpc_tmpdir")" 4242
  # Made once per run: a second make (or someone's planted folder) is refused, untouched.
  printf 'keep\n' >"$path/result"
  run hpc_job_tmpdir_make "$path"
  assert_failure 1
  assert_output "[hpc n1] cannot make SLURM_TMPDIR $path: something else already has that name"
  assert_equal "$(cat "$path/result")" keep
  hpc_job_tmpdir_remove "$path"
  [ ! -e "$path" ]
}

# --- copy-back ---------------------------------------------------------------------------------

# copy_back_env: a job's SLURM_TMPDIR ($tmp/tmpdir) with results, and its copy-back settings.
copy_back_env() {
  export scratch_dir="$tmp/scratch dir" exp_name=exp
  mkdir -p "$tmp/tmpdir/checkpoints/sub" "$scratch_dir"
  head -c 600000 /dev/urandom >"$tmp/tmpdir/checkpoints/state.bin"
  printf 'small\n' >"$tmp/tmpdir/checkpoints/sub/small.txt"
  printf 'metrics\n' >"$tmp/tmpdir/metrics.csv"
  hpc_plan_copy_back=(metrics.csv checkpoints)
}

@test "copy-back: files and folders arrive whole; into an existing folder they are merged, other files kept" {
  copy_back_env
  mkdir -p "$scratch_dir/exp/checkpoints"
  printf 'older\n' >"$scratch_dir/exp/checkpoints/older.txt"
  printf 'stale\n' >"$scratch_dir/exp/metrics.csv"
  run hpc_job_copy_back "$tmp/tmpdir"
  assert_success
  assert_output "[hpc n1] copied back to $scratch_dir/exp: metrics.csv checkpoints"
  cmp "$tmp/tmpdir/checkpoints/state.bin" "$scratch_dir/exp/checkpoints/state.bin"
  cmp "$tmp/tmpdir/checkpoints/sub/small.txt" "$scratch_dir/exp/checkpoints/sub/small.txt"
  assert_equal "$(cat "$scratch_dir/exp/metrics.csv")" metrics
  assert_equal "$(cat "$scratch_dir/exp/checkpoints/older.txt")" older
  # No temporary name is left behind.
  run find "$scratch_dir" -name '.hpc_copy_back.*'
  assert_output ""
}

@test "copy-back never writes through a symlinked folder in the results: the file it points to is untouched" {
  copy_back_env
  mkdir -p "$tmp/victim" "$tmp/tmpdir/out" "$scratch_dir/exp"
  printf 'precious\n' >"$tmp/victim/res.txt"
  printf 'new\n' >"$tmp/tmpdir/out/res.txt"
  ln -s "$tmp/victim" "$scratch_dir/exp/out"
  # shellcheck disable=SC2034 # read by hpc_job.bash
  hpc_plan_copy_back=(out/res.txt metrics.csv)
  run hpc_job_copy_back "$tmp/tmpdir"
  assert_failure 1
  assert_line "[hpc n1] copy-back of out/res.txt FAILED: $scratch_dir/exp/out is a symbolic link, and the toolkit never writes through one; nothing was changed"
  assert_line "[hpc n1] copy-back INCOMPLETE: not copied back to $scratch_dir/exp: out/res.txt"
  assert_equal "$(cat "$tmp/victim/res.txt")" precious
  assert_equal "$(cat "$scratch_dir/exp/metrics.csv")" metrics
}

@test "copy-back onto a full disk: no truncated file under a result's name, the older copy intact, the log names what is incomplete" {
  copy_back_env
  small_disk "$scratch_dir/exp" 300k
  mkdir "$scratch_dir/exp/checkpoints"
  head -c 100000 /dev/urandom >"$scratch_dir/exp/checkpoints/state.bin"
  local older
  older=$(sha256sum <"$scratch_dir/exp/checkpoints/state.bin")
  run hpc_job_copy_back "$tmp/tmpdir"
  assert_failure 1
  assert_line --regexp "^\[hpc n1\] copy-back of checkpoints FAILED: .*No space left on device.*; $scratch_dir/exp/checkpoints was not changed$"
  assert_line "[hpc n1] copied back to $scratch_dir/exp: metrics.csv"
  assert_line "[hpc n1] copy-back INCOMPLETE: not copied back to $scratch_dir/exp: checkpoints"
  # The metrics fit and arrived whole; the checkpoint keeps its older, complete version.
  assert_equal "$(cat "$scratch_dir/exp/metrics.csv")" metrics
  assert_equal "$(sha256sum <"$scratch_dir/exp/checkpoints/state.bin")" "$older"
  [ ! -e "$scratch_dir/exp/checkpoints/sub" ]
  run find "$scratch_dir/exp" -name '.hpc_copy_back.*'
  assert_output ""
}

@test "the plan file swapped for a link to someone's code between its checks and its reading (a group-writable outputs folder): not sourced, the job fails naming it" {
  local dir="$tmp/outputs" real_stat
  mkdir -p "$dir" "$tmp/bin"
  printf 'hpc_plan_tmpdir_root=%q\n' "$tmp" >"$dir/job.plan"
  chmod 600 "$dir/job.plan"
  printf 'touch %q\n' "$tmp/ran" >"$tmp/evil.plan"
  real_stat=$(command -v stat)
  # A stat that answers for the checked file, then swaps it (the window between check and read).
  # shellcheck disable=SC2016 # the stand-in's own "$@" and $rc
  printf '#!/usr/bin/env bash\n%q "$@"\nrc=$?\nmv -f -- %q %q && ln -s %q %q\nexit $rc\n' \
    "$real_stat" "$dir/job.plan" "$tmp/moved.plan" "$tmp/evil.plan" "$dir/job.plan" >"$tmp/bin/stat"
  chmod +x "$tmp/bin/stat"
  # shellcheck disable=SC2016 # the script's own $1 and $2
  run env PATH="$tmp/bin:$PATH" bash -c 'source "$1/hpc_files/lib/hpc_job.bash" && hpc_job_plan_load "$2"' _ "$HPC_ROOT" "$dir/job.plan"
  [[ ! -e $tmp/ran ]] || fail "the swapped-in file was sourced"
  assert_failure 1
  assert_output --partial "FAILED at step 'plan': the plan file '$dir/job.plan'"
}

# --- status writes on a full disk --------------------------------------------------------------

@test "a task's status write on a full disk fails and leaves no temporary file to keep the disk full; the old status stays whole" {
  # shellcheck source=hpc_files/lib/hpc_followup.bash
  source "$HPC_ROOT/hpc_files/lib/hpc_followup.bash"
  small_disk "$tmp/disk" 64k
  hpc_followup_status_write "$tmp/disk/status.json" state=RUNNING
  assert_equal "$(<"$tmp/disk/status.json")" '{"state": "RUNNING"}'
  head -c 200000 /dev/zero >"$tmp/disk/filler" 2>/dev/null || true
  run hpc_followup_status_write "$tmp/disk/status.json" state=COMPLETED "item=$(head -c 100000 /dev/zero | tr '\0' x)"
  assert_failure
  assert_equal "$(find "$tmp/disk" -mindepth 1 -printf '%f\n' | sort)" "filler
status.json"
  assert_equal "$(<"$tmp/disk/status.json")" '{"state": "RUNNING"}'
}
