#!/usr/bin/env bats
# --data from outside ${SCRATCH}/<project>: an absolute path the user can read (a site's
# /datasets, a lab's shared read-only folder) is staged under its own name in SLURM_TMPDIR; its
# archive is cached in the user's scratch (BASE/.staging), keyed by the source's path and listing.
# What is still refused says why, and how to give a path elsewhere. No SLURM: BASE, the shared
# folder and TMPDIR are test folders (hpc_stage_submit.bash, hpc_stage_node.bash).

# Set by hpc_test_user_copy (helpers/common.bash); declared for shellcheck.
declare -g user_copy

setup() {
  load '../helpers/common'
  hpc_program=hpc_stage
  # shellcheck source=hpc_files/lib/hpc_stage_submit.bash
  source "$HPC_ROOT/hpc_files/lib/hpc_stage_submit.bash"
  tmp=$(hpc_test_tmp)
  base="$tmp/scratch/my project"
  shared="$tmp/lab data/datasets"
  node="$tmp/node 1"
  mkdir -p "$base/local" "$shared/mnist/train" "$shared/other" "$node"
  printf 'mine\n' >"$base/local/a.txt"
  printf 'img1\n' >"$shared/mnist/train/1.png"
  head -c 30000 /dev/urandom >"$shared/mnist/train/2.bin"
  printf 'labels\n' >"$shared/mnist/labels.csv"
  printf 'x\n' >"$shared/other/x.txt"
  # Read-only, as a shared data set is to its readers.
  chmod -R a-w "$tmp/lab data"
}

teardown() {
  chmod -R u+w "$tmp/lab data" 2>/dev/null || true
}

# checksums DIR PATH...: the sorted 'sha256  path' list of every file under the paths in DIR.
checksums() {
  local dir=$1
  shift
  (cd "$dir" && find "$@" -type f -print0 | LC_ALL=C sort -z | xargs -0 sha256sum)
}

@test "an absolute path outside BASE that the user can read is accepted as given, beside relative ones; nothing is created" {
  hpc_stage_validate "$base" local "$shared/mnist/" "$shared/other/x.txt"
  assert_equal "$(printf '%s|' "${hpc_stage_paths[@]}")" "$shared/mnist|$shared/other/x.txt|local|"
  [ ! -e "$base/.staging" ]
  # An absolute path inside BASE is one of BASE's, relative.
  hpc_stage_validate "$base" "$base/local"
  assert_equal "${hpc_stage_paths[*]}" local
}

@test "a read-only shared folder is archived into the user's scratch and unpacked under its own name in SLURM_TMPDIR, equal to the source; reused while unchanged" {
  hpc_stage_prepare "$base" "$shared/mnist" local
  [[ $hpc_stage_archive == "$base/.staging/"*/data.tar ]] || fail "archive at $hpc_stage_archive"
  local first
  first=$(stat -L -c '%i %Y' -- "$hpc_stage_archive")
  run hpc_stage_extract "$hpc_stage_archive" "$node"
  assert_success
  assert_equal "$(checksums "$node" mnist)" "$(checksums "$shared" mnist)"
  assert_equal "$(checksums "$node" local)" "$(checksums "$base" local)"
  [ ! -e "$node/lab data" ]
  # Unchanged: the same archive.
  run hpc_stage_prepare "$base" "$shared/mnist" local
  assert_success
  assert_output "hpc_stage: data unchanged: reusing $hpc_stage_archive"
  hpc_stage_prepare "$base" "$shared/mnist" local 2>/dev/null
  assert_equal "$(stat -L -c '%i %Y' -- "$hpc_stage_archive")" "$first"
  # Changed by its owner: archived again, with the new content.
  chmod u+w "$shared/mnist"
  printf 'new\n' >"$shared/mnist/new.txt"
  chmod a-w "$shared/mnist"
  hpc_stage_prepare "$base" "$shared/mnist" local 2>/dev/null
  [[ $(stat -L -c '%i %Y' -- "$hpc_stage_archive") != "$first" ]] || fail "not archived again"
  rm -rf -- "${node:?}"/*
  hpc_stage_extract "$hpc_stage_archive" "$node" >/dev/null
  assert_equal "$(cat "$node/mnist/new.txt")" new
}

@test "the archive is keyed by the source's path: a relative path and a shared one of the same name are two archives" {
  mkdir -p "$base/mnist"
  printf 'a scratch copy\n' >"$base/mnist/1.txt"
  hpc_stage_prepare "$base" mnist 2>/dev/null
  local relative=$hpc_stage_archive
  hpc_stage_prepare "$base" "$shared/mnist" 2>/dev/null
  [[ $(readlink -f -- "$relative") != "$(readlink -f -- "$hpc_stage_archive")" ]] || fail "one archive for both"
  rm -rf -- "${node:?}"/*
  hpc_stage_extract "$hpc_stage_archive" "$node" >/dev/null
  assert_equal "$(cat "$node/mnist/labels.csv")" labels
}

@test "still refused, each with why and what is accepted: a missing path, the root, a folder holding BASE's archive cache, two paths of one name, a path outside BASE written relative" {
  local -A cases=(
    ["$tmp/nope"]="does not exist"
    ["/"]="is the root folder; name the folders or files inside it"
    ["$tmp/scratch"]="holds $base and its archive cache (.staging); name the folders or files inside it"
    ["$base/.staging/x"]="is the toolkit's archive cache"
    ["../x"]="is outside $base; a path elsewhere is given absolute (one you can read, e.g. /datasets/NAME), and is staged under its own name"
  )
  local p
  for p in "${!cases[@]}"; do
    run hpc_stage_validate "$base" local "$p"
    assert_equal "$status" 2
    assert_output "hpc_stage: -d/--data: '$p': ${cases[$p]}"
  done
  mkdir -p "$base/mnist"
  run hpc_stage_validate "$base" mnist "$shared/mnist"
  assert_equal "$status" 2
  assert_output "hpc_stage: -d/--data: '$shared/mnist': would be staged as mnist in SLURM_TMPDIR, as 'mnist' is; give only one of them"
  [ ! -e "$base/.staging" ]
}

@test "a shared folder the user cannot read is refused, saying why (another member's private folder)" {
  load '../helpers/mate'
  local lab
  lab=$(mktemp -d "/tmp/hpc lab.XXXXXX")
  chmod 755 "$lab"
  export SCRATCH=$lab/scratch
  mkdir -p "$SCRATCH/my project" "$lab/private/set"
  chmod 700 "$lab/private"
  mate_ready
  chmod 700 "$lab/private"
  # The code runs from a copy the other member can read (the checkout may be in a private folder).
  hpc_test_user_copy hpc_mate hpc_files
  # shellcheck disable=SC2016 # expanded by the other member's shell
  run as_mate 'source "$1/hpc_files/lib/hpc_stage_submit.bash"; hpc_program=hpc_stage; hpc_stage_validate "$2" "$3"' \
    _ "$user_copy" "$SCRATCH/my project" "$lab/private/set"
  rm -rf -- "${lab:?}" "${user_copy:?}"
  assert_equal "$status" 2
  assert_output "hpc_stage: -d/--data: '$lab/private/set': cannot be read by you (hpc_mate); a shared path must be readable, folders searchable, by whoever submits"
}
