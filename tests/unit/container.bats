#!/usr/bin/env bats
# The container runner (singularity_hpc_files/container_runner.bash) and the Apptainer stand-in
# it is verified against (tests/fixtures/apptainer/bin/apptainer, also 'singularity'): the
# stand-in's CLI (options accepted and refused, failures like the real one, --cleanenv, binds,
# argv records, signals), the submit-time checks, the runtime choice, the node setup, the
# runtime's command line, the environment handed to the program, and a whole single-node
# container job simulated without SLURM. No SLURM, no real Apptainer: bwrap (bubblewrap) and
# siftool are needed.
# shellcheck disable=SC2016 # programs for the container and configs templates in single quotes, on purpose
# shellcheck disable=SC2030,SC2031 # each @test runs in its own subshell: what it exports stays there, on purpose

bats_require_minimum_version 1.5.0

setup_file() {
  local missing=() tool
  for tool in bwrap siftool; do
    command -v "$tool" >/dev/null || missing+=("$tool")
  done
  if ((${#missing[@]})); then
    echo "container.bats needs ${missing[*]}: apt-get install -y bubblewrap siftool" >&3
    return 1
  fi
  export CONTAINER_IMAGE_DIR="$BATS_FILE_TMPDIR/image dir"
  mkdir -p "$CONTAINER_IMAGE_DIR"
  bash "$BATS_TEST_DIRNAME/../fixtures/apptainer/make_sif.sh" "$CONTAINER_IMAGE_DIR/app.sif"
}

setup() {
  load '../helpers/common'
  hpc_program=job_submitter.sh
  # shellcheck source=hpc_files/lib/hpc_common.bash
  source "$HPC_ROOT/hpc_files/lib/hpc_common.bash"
  # shellcheck source=hpc_files/lib/hpc_configs.bash
  source "$HPC_ROOT/hpc_files/lib/hpc_configs.bash"
  # shellcheck source=singularity_hpc_files/container_runner.bash
  source "$HPC_ROOT/singularity_hpc_files/container_runner.bash"
  TMP=$(hpc_test_tmp)
  STANDIN_BIN=$HPC_ROOT/tests/fixtures/apptainer/bin
  export PATH="$STANDIN_BIN:$PATH"
  export APPTAINER_STANDIN_LOG="$TMP/argv log"
  mkdir -p "$APPTAINER_STANDIN_LOG" "$TMP/src dir"
  IMAGE="$TMP/images/app.sif"
  mkdir -p "$TMP/images"
  cp "$CONTAINER_IMAGE_DIR/app.sif" "$IMAGE"
  echo 'staged' >"$TMP/src dir/input.txt"
  unset APPTAINERENV_FOO SINGULARITYENV_FOO HOST_ONLY || true
}

# nul_dump ARG...: the arguments as NUL-terminated bytes, shown by od, for exact comparisons.
nul_dump() {
  printf '%s\0' "$@" | od -An -v -c
}

# same_args WHAT ACTUAL_NAME EXPECTED...: fails, showing both, unless the array named
# ACTUAL_NAME holds exactly EXPECTED.
same_args() {
  local what=$1 actual expected
  local -n same_args_actual=$2
  shift 2
  actual=$(nul_dump "${same_args_actual[@]}")
  expected=$(nul_dump "$@")
  if [[ $actual != "$expected" ]]; then
    printf '%s\nexpected:\n%s\nactual:\n%s\n' "$what" "$expected" "$actual"
    return 1
  fi
}

# env_names: the names of the variables in "$output" (env's output), sorted, one per line.
env_names() {
  sed -n 's/^\([A-Za-z_][A-Za-z0-9_]*\)=.*/\1/p' <<<"$output" | sort
}

# ---------------------------------------------------------------------------- the stand-in

@test "make_sif.sh: a real SIF file: launch line, SIF magic, the definition file as its data object" {
  run head -n 1 "$IMAGE"
  assert_output '#!/usr/bin/env run-singularity'
  run bash -c 'head -c 41 "$1" | tail -c 9' _ "$IMAGE"
  assert_output 'SIF_MAGIC'
  run siftool list "$IMAGE"
  assert_success
  assert_output --partial 'Def.FILE'
  run siftool dump 1 "$IMAGE"
  assert_output "$(cat "$HPC_ROOT/singularity_hpc_files/Singularity.def")"
}

@test "stand-in: exec runs the command with its arguments and stdin; the status is the program's" {
  run apptainer exec "$IMAGE" sh -c 'printf "<%s>" "$@"; exit 7' zero 'a b' '' 'c'
  [[ $status -eq 7 ]] || fail "status $status: $output"
  assert_output '<a b><><c>'
  run bash -c 'printf "from stdin\n" | apptainer exec "$1" cat' _ "$IMAGE"
  assert_success
  assert_output 'from stdin'
}

@test "stand-in: run starts the image's %runscript (the template's) with the arguments, from HPC_WORKDIR" {
  APPTAINERENV_HPC_WORKDIR=/etc run apptainer run "$IMAGE" sh -c 'pwd; printf "<%s>" "$@"; echo; echo "PYTHONUNBUFFERED=$PYTHONUNBUFFERED"' zero 'a b' c
  assert_success
  assert_output $'/etc\n<a b><c>\nPYTHONUNBUFFERED=1'
  # Run by hand (no HPC_WORKDIR) it starts where it was called, as Apptainer users expect.
  cd /usr
  run apptainer run "$IMAGE" pwd
  assert_success
  assert_output '/usr'
}

@test "stand-in: accepts the toolkit's options in every spelling the real CLI accepts" {
  local src="$TMP/src dir" spelling
  local -a spellings=(
    '--nv' '--nv=false' '-e' '--cleanenv' '-C' '--containall' '-c' '--contain' '--no-home'
    '--writable-tmpfs' '-i' '--ipc' '-eC' '-ec' '-e=true'
    "-B|$src:/x" "-B$src:/x" "-B=$src:/x" "--bind|$src:/x" "--bind=$src:/x,$src:/y:ro"
    "--bind|$src:/x|--bind|$src:/y:rw" "--bind|$src" '--pwd|/' '--pwd=/' '--env|A=1,B=2' '--env=A=1'
    "-H|$src:/h" "--home|$src" "--home=$src:/h"
  )
  for spelling in "${spellings[@]}"; do
    local -a opts
    IFS='|' read -r -a opts <<<"$spelling"
    run apptainer exec "${opts[@]}" "$IMAGE" true
    [[ $status -eq 0 ]] || fail "exec ${opts[*]}: status $status: $output"
  done
  for spelling in -q --quiet -s --silent -d --debug -v --verbose --nocolor; do
    run apptainer "$spelling" exec "$IMAGE" true
    [[ $status -eq 0 ]] || fail "$spelling exec: status $status: $output"
  done
}

@test "stand-in: refuses unknown options and missing arguments as the real CLI does (exit 1)" {
  local row
  local -a rows=(
    'exec|--bogus|IMG|true=Error for command "exec": unknown flag: --bogus'
    'run|--writable|IMG=Error for command "run": unknown flag: --writable'
    "exec|-x|IMG|true=Error for command \"exec\": unknown shorthand flag: 'x' in -x"
    "exec|-ex|IMG|true=Error for command \"exec\": unknown shorthand flag: 'x' in -ex"
    'exec|--bind=Error for command "exec": flag needs an argument: --bind'
    "exec|-B=Error for command \"exec\": flag needs an argument: 'B' in -B"
    'exec|--nv=maybe|IMG|true=Error for command "exec": invalid argument "maybe" for "--nv" flag: strconv.ParseBool: parsing "maybe": invalid syntax'
    'exec|IMG=Error for command "exec": requires at least 2 arg(s), only received 1'
    'run=Error for command "run": requires at least 1 arg(s), only received 0'
    '--bogus|exec|IMG|true=Error: unknown flag: --bogus'
    'shell|IMG=Error: unknown command "shell" for "apptainer"'
  )
  for row in "${rows[@]}"; do
    local -a args
    IFS='|' read -r -a args <<<"${row%%=Error*}"
    args=("${args[@]/#IMG/$IMAGE}")
    run --separate-stderr apptainer "${args[@]}"
    [[ $status -eq 1 ]] || fail "apptainer ${args[*]}: status $status, expected 1"
    [[ ${stderr_lines[0]} == "Error${row#*=Error}" ]] || fail "apptainer ${args[*]}: stderr '${stderr_lines[0]}'"
  done
}

@test "stand-in: a missing image, a file that is not SIF, a missing bind source fail as the real one (255)" {
  local absent="$TMP/images/missing.sif" text="$TMP/images/text.sif"
  echo 'not an image' >"$text"
  run --separate-stderr apptainer exec "$absent" true
  assert_equal "$status" 255
  assert_equal "$stderr" "FATAL:   could not open image $absent: failed to retrieve path for $absent: lstat $absent: no such file or directory"
  run --separate-stderr apptainer run "$text" true
  assert_equal "$status" 255
  assert_equal "$stderr" "FATAL:   could not open image $text: image format not recognized"
  run --separate-stderr apptainer run "$TMP/images" true
  assert_equal "$status" 255
  assert_equal "$stderr" "FATAL:   could not open image $TMP/images: image format not recognized"
  # A relative image path is reported absolute, as the real one does.
  cd "$TMP"
  run --separate-stderr apptainer exec images/missing.sif true
  assert_equal "$stderr" "FATAL:   could not open image $absent: failed to retrieve path for $absent: lstat $absent: no such file or directory"
  run --separate-stderr apptainer exec --bind "$TMP/no such:/data" "$IMAGE" true
  assert_equal "$status" 255
  assert_equal "$stderr" "FATAL:   container creation failed: mount $TMP/no such->/data error: while mounting $TMP/no such: mount source $TMP/no such doesn't exist"
  run --separate-stderr apptainer exec --bind "$TMP/src dir:relative" "$IMAGE" true
  assert_equal "$status" 255
  assert_equal "$stderr" "FATAL:   while parsing bind path '$TMP/src dir:relative': destination relative must be an absolute path"
}

@test "stand-in: --cleanenv: only APPTAINERENV_/SINGULARITYENV_ variables without the prefix, and the basics" {
  export HOST_ONLY=host SLURM_JOB_ID=77 APPTAINERENV_FOO='foo value' SINGULARITYENV_BAR=bar
  export APPTAINERENV_BOTH=first SINGULARITYENV_BOTH=first APPTAINERENV_DIFF=a SINGULARITYENV_DIFF=b
  run --separate-stderr apptainer exec --cleanenv "$IMAGE" env
  assert_success
  local allowed name
  allowed=' APPTAINER_COMMAND APPTAINER_CONTAINER APPTAINER_NAME SINGULARITY_CONTAINER SINGULARITY_NAME FOO BAR BOTH DIFF HOME LANG LC_ALL PATH PWD OLDPWD SHLVL PYTHONUNBUFFERED TERM http_proxy HTTP_PROXY https_proxy HTTPS_PROXY no_proxy NO_PROXY all_proxy ALL_PROXY ftp_proxy FTP_PROXY '
  for name in $(env_names); do
    [[ $allowed == *" $name "* ]] || fail "$name reached the program under --cleanenv: $output"
  done
  assert_line 'FOO=foo value'
  assert_line 'BAR=bar'
  assert_line 'BOTH=first'
  assert_line 'DIFF=a'
  assert_line 'LANG=C'
  assert_line "HOME=$HOME"
  assert_line 'PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin'
  assert_line "APPTAINER_CONTAINER=$IMAGE"
  refute_line --partial 'HOST_ONLY'
  refute_line --partial 'SLURM_JOB_ID'
  # The real one's notes: a SINGULARITYENV_ alone, and two different values for one name.
  [[ $stderr == *"INFO:    Environment variable SINGULARITYENV_BAR is set, but APPTAINERENV_BAR is preferred"* ]] || fail "$stderr"
  [[ $stderr == *"WARNING: Skipping environment variable [SINGULARITYENV_DIFF=b], DIFF is already overridden with different value [a]"* ]] || fail "$stderr"
  [[ $stderr != *BOTH* ]] || fail "the same value under both prefixes is silent in Apptainer: $stderr"
}

@test "stand-in: without --cleanenv the host's variables pass, but never PATH, HOME or APPTAINER_*; PATH overrides" {
  export HOST_ONLY=host APPTAINER_SOMETHING=x APPTAINERENV_PREPEND_PATH=/opt/first APPTAINERENV_APPEND_PATH=/opt/last
  run --separate-stderr apptainer exec "$IMAGE" env
  assert_success
  assert_line 'HOST_ONLY=host'
  refute_line --partial 'APPTAINER_SOMETHING'
  assert_line 'PATH=/opt/first:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin:/opt/last'
  APPTAINERENV_PATH=/only run --separate-stderr apptainer exec -e "$IMAGE" /usr/bin/env
  assert_success
  assert_line 'PATH=/opt/first:/only:/opt/last'
  APPTAINERENV_HOME=/elsewhere run --separate-stderr apptainer exec -e "$IMAGE" /usr/bin/env
  assert_success
  assert_line "HOME=$HOME"
  [[ $stderr == *'WARNING: Overriding HOME environment variable with APPTAINERENV_HOME is not permitted'* ]] || fail "$stderr"
}

@test "stand-in: run-time variables win over the image's %environment; --env comes after them" {
  printf '%s\n' 'Bootstrap: scratch' '%environment' '    export FOO=image BAR=image' '%runscript' '    exec "$@"' >"$TMP/env.def"
  bash "$HPC_ROOT/tests/fixtures/apptainer/make_sif.sh" "$TMP/images/env.sif" "$TMP/env.def"
  APPTAINERENV_FOO=host run apptainer exec -e "$TMP/images/env.sif" sh -c 'echo "$FOO $BAR"'
  assert_success
  assert_output 'host image'
  APPTAINERENV_FOO=host run apptainer exec -e --env FOO=flag,BAR=flag "$TMP/images/env.sif" sh -c 'echo "$FOO $BAR"'
  assert_output 'host flag'
}

@test "stand-in: each bind is visible and writable at its target, ro when asked; the host is not changed" {
  local src="$TMP/src dir" ro="$TMP/ro dir"
  mkdir -p "$ro"
  echo 'read me' >"$ro/r.txt"
  [[ ! -e '/home/hpc stand-in' ]] || fail "/home/hpc stand-in exists on the host already"
  run apptainer exec --containall --bind "$src:/data,$ro:/opt/ro dir:ro" --bind "$src:/home/hpc stand-in/x y" \
    "$IMAGE" sh -c '
      cat /data/input.txt && echo w1 >/data/w1.txt && echo w2 >"/home/hpc stand-in/x y/w2.txt" &&
      cat "/opt/ro dir/r.txt" && ! (echo x >"/opt/ro dir/x.txt") 2>/dev/null &&
      ! touch /usr/x 2>/dev/null && ! touch /newtop 2>/dev/null && echo ok'
  assert_success
  assert_output $'staged\nread me\nok'
  assert_equal "$(cat "$src/w1.txt") $(cat "$src/w2.txt")" 'w1 w2'
  [[ ! -e "$ro/x.txt" ]] || fail "wrote through a ro bind"
  [[ ! -e '/home/hpc stand-in' && ! -e '/opt/ro dir' ]] || fail "the stand-in made a mount point on the host"
  # --writable-tmpfs: new entries at the root are writable, and gone afterwards.
  run apptainer exec --writable-tmpfs "$IMAGE" sh -c 'echo x >/newtop && cat /newtop'
  assert_success
  assert_output 'x'
  [[ ! -e /newtop ]] || fail "/newtop reached the host"
}

@test "stand-in: --contain gives an empty /tmp and home; without it the host's /tmp and home are shared" {
  local marker
  marker=$(mktemp /tmp/standin-marker.XXXXXX)
  run apptainer exec --contain "$IMAGE" sh -c "ls -A /tmp; ls -A \"\$HOME\"; pwd"
  assert_success
  assert_output "$HOME"
  run apptainer exec "$IMAGE" cat "$marker"
  assert_success
  rm -f "$marker"
  # --no-home with a bind at $HOME: the bind is the home, and the contained program starts there.
  run apptainer exec --containall --no-home --bind "$TMP/src dir:$HOME" "$IMAGE" sh -c 'pwd; ls'
  assert_output "$HOME"$'\ninput.txt'
}

@test "stand-in: --pwd sets the working directory; a missing one is a FATAL error" {
  run apptainer exec --containall --bind "$TMP/src dir:/work dir" --pwd '/work dir' "$IMAGE" sh -c 'pwd; ls'
  assert_success
  assert_output $'/work dir\ninput.txt'
  run --separate-stderr apptainer exec --pwd /no/such "$IMAGE" true
  assert_equal "$status" 255
  assert_equal "$stderr" "FATAL:   can't enter in current working directory: chdir /no/such: no such file or directory"
}

@test "stand-in: every call records its argv, NUL-terminated, in its own file" {
  run apptainer exec --bind "$TMP/src dir:/d" "$IMAGE" true 'a b'
  assert_success
  run apptainer --bogus
  assert_failure
  # Named <program>.<time in microseconds>.<pid>.args: the first call sorts first.
  local files=("$APPTAINER_STANDIN_LOG"/*)
  assert_equal "${#files[@]}" 2
  local recorded
  # shellcheck disable=SC2034 # read by same_args, through its nameref
  mapfile -d '' -t recorded <"${files[0]}"
  same_args "the first call's argv" recorded "$STANDIN_BIN/apptainer" exec --bind "$TMP/src dir:/d" "$IMAGE" true 'a b'
}

@test "stand-in: singularity is the same program" {
  [[ $(readlink "$STANDIN_BIN/singularity") == apptainer ]] || fail "singularity is not a link to apptainer"
  run singularity --version
  assert_output 'apptainer version 1.3.6'
  run singularity exec --cleanenv "$IMAGE" sh -c 'echo "$SINGULARITY_NAME"'
  assert_success
  assert_output 'app.sif'
  run --separate-stderr singularity exec --bogus "$IMAGE" true
  assert_equal "$stderr" 'Error for command "exec": unknown flag: --bogus'
}

@test "stand-in: passes SIGTERM to the program and exits with its status" {
  local dir="$TMP/signal"
  mkdir -p "$dir"
  apptainer exec --containall --bind "$dir:/out" "$IMAGE" sh -c '
    trap "echo got TERM >/out/signal; exit 42" TERM
    echo ready >/out/ready
    while :; do sleep 0.05; done' >"$dir/log" 2>&1 3>&- &
  local pid=$! i
  for ((i = 0; i < 200; i++)); do
    [[ -e $dir/ready ]] && break
    sleep 0.05
  done
  [[ -e $dir/ready ]] || fail "the program did not start: $(cat "$dir/log")"
  kill -TERM "$pid"
  local status=0
  wait "$pid" || status=$?
  assert_equal "$status" 42
  assert_equal "$(cat "$dir/signal")" 'got TERM'
}

@test "stand-in: --nv on a machine without NVIDIA devices prints the real warning and goes on" {
  [[ ! -e /dev/nvidiactl ]] || skip "this machine has NVIDIA devices"
  ! command -v nvidia-smi >/dev/null || skip "this machine has nvidia-smi"
  run --separate-stderr apptainer exec --nv "$IMAGE" true
  assert_success
  assert_equal "$stderr" 'WARNING: Could not find any nv files on this host!'
}

# ------------------------------------------------------------------- submit-time checks

@test "hpc_container_check_image: a missing, misnamed, folder or non-SIF image: exit 2, one line naming the option" {
  local dir="$TMP/images" row path problem
  mkdir -p "$dir/folder.sif"
  cp "$IMAGE" "$dir/app.img"
  echo 'text' >"$dir/text.sif"
  local -a rows=(
    "|no image given: name a .sif file, built with apptainer build IMAGE.sif Singularity.def"
    "$dir/missing.sif|no such file"
    "$dir/folder.sif|is a folder; give the .sif image file (sandbox folders are not supported)"
    "$dir/app.img|not a .sif file: build the image with apptainer build IMAGE.sif Singularity.def"
    "$dir/text.sif|not a SIF image (no SIF header): build it with apptainer build IMAGE.sif Singularity.def"
  )
  for row in "${rows[@]}"; do
    path=${row%%|*} problem=${row#*|}
    run hpc_container_check_image "$path"
    [[ $status -eq 2 ]] || fail "'$path': status $status"
    assert_output "job_submitter.sh: -s/--singularity-container: '$path': $problem"
  done
}

@test "hpc_container_check_image: a good image, given relative, is kept as an absolute path" {
  cd "$TMP"
  hpc_container_check_image images/app.sif
  assert_equal "$hpc_container_image" "$(pwd)/images/app.sif"
  hpc_container_check_image "$IMAGE"
  assert_equal "$hpc_container_image" "$IMAGE"
  mkdir -p "$TMP/a:b"
  cp "$IMAGE" "$TMP/a:b/app.sif"
  run hpc_container_check_image "$TMP/a:b/app.sif"
  assert_equal "$status" 2
  assert_output "job_submitter.sh: -s/--singularity-container: '$TMP/a:b/app.sif': a path with ',' or ':' cannot be bound by Apptainer; move or rename the image"
}

@test "hpc_container_check_workdir: relative, reserved or system paths: exit 2, one line naming the option" {
  local row path problem
  export HOME='/home/some user'
  local -a rows=(
    "|empty: give an absolute path inside the container, e.g. /code"
    "code|not an absolute path: give the folder inside the container, e.g. /code"
    "./code|not an absolute path: give the folder inside the container, e.g. /code"
    "/a:b|',' and ':' cannot be used in a bind target"
    "/a,b|',' and ':' cannot be used in a bind target"
    "/a//b|'//' in the path: write it once, e.g. /code"
    "/a/../b|'.' and '..' are not allowed: give the plain path, e.g. /code"
    "/|the workdir bind would hide the image's /: use a folder of its own, e.g. /code"
    "/usr/|the workdir bind would hide the image's /usr: use a folder of its own, e.g. /code"
    "/opt|the workdir bind would hide the image's /opt: use a folder of its own, e.g. /code"
    "/data|/data is bound by the job itself: use a folder of its own, e.g. /code"
    "/scratch_storage/run|/scratch_storage is bound by the job itself: use a folder of its own, e.g. /code"
    "/tmp/code|/tmp is bound by the job itself: use a folder of its own, e.g. /code"
    "/db|/db is bound by the job itself: use a folder of its own, e.g. /code"
    "/home/some user/|that is \$HOME, which the job binds to a node-local home: use a folder of its own, e.g. /code"
  )
  for row in "${rows[@]}"; do
    path=${row%%|*} problem=${row#*|}
    run hpc_container_check_workdir "$path"
    [[ $status -eq 2 ]] || fail "'$path': status $status"
    assert_output "job_submitter.sh: --workdir: '$path': $problem"
  done
}

@test "hpc_container_check_workdir: an absolute folder of its own is kept, without a trailing slash" {
  hpc_container_check_workdir /code
  assert_equal "$hpc_container_workdir" /code
  hpc_container_check_workdir '/opt/my code/'
  assert_equal "$hpc_container_workdir" '/opt/my code'
  hpc_container_check_workdir /workdir
  assert_equal "$hpc_container_workdir" /workdir
}

@test "hpc_container_check_data: only data/... is visible in a container job" {
  run hpc_container_check_data data data/x ./data/y 'data/with space'
  assert_success
  run hpc_container_check_data data/x datasets/d1
  assert_equal "$status" 2
  assert_output "job_submitter.sh: -d/--data: 'datasets/d1': a container job sees staged data only under /data: stage it from data/ (data/x is /data/x in the container)"
}

# ------------------------------------------------------------------------- on the node

@test "hpc_container_runtime: apptainer when on PATH, else singularity, else one line naming both" {
  local only_sing="$TMP/only singularity" none="$TMP/none"
  mkdir -p "$only_sing" "$none"
  ln -s "$STANDIN_BIN/apptainer" "$only_sing/singularity"
  run hpc_container_runtime
  assert_success
  assert_output apptainer
  PATH=$only_sing run hpc_container_runtime
  assert_success
  assert_output singularity
  PATH=$none run hpc_container_runtime
  assert_equal "$status" 1
  assert_output 'job_submitter.sh: neither apptainer nor singularity is on this node (load the module in the cluster profile)'
}

@test "hpc_container_node_setup: copies the image once per node, makes the bind folders, recopies a changed image" {
  local tmpdir="$TMP/node tmp" inode
  mkdir -m 700 "$tmpdir"
  hpc_container_node_setup "$IMAGE" "$tmpdir"
  cmp "$IMAGE" "$tmpdir/image.sif"
  for dir in data home tmp db workdir; do
    [[ -d $tmpdir/$dir ]] || fail "no $dir"
  done
  inode=$(stat -c %i "$tmpdir/image.sif")
  hpc_container_node_setup "$IMAGE" "$tmpdir"
  assert_equal "$(stat -c %i "$tmpdir/image.sif")" "$inode"
  # A changed image (another size) is copied again.
  printf 'x' >>"$IMAGE"
  hpc_container_node_setup "$IMAGE" "$tmpdir"
  cmp "$IMAGE" "$tmpdir/image.sif"
  # Every task of a node may call it at once: one copy, nothing left half-written.
  rm -f "$tmpdir/image.sif"
  local pids=() pid
  for i in 1 2 3 4; do
    hpc_container_node_setup "$IMAGE" "$tmpdir" 3>&- &
    pids+=($!)
  done
  for pid in "${pids[@]}"; do wait "$pid"; done
  cmp "$IMAGE" "$tmpdir/image.sif"
  run find "$tmpdir" -maxdepth 1 -name '.image.sif.*'
  assert_output ''
}

@test "hpc_container_node_setup: a missing image or SLURM_TMPDIR: status 1 and one line" {
  run hpc_container_node_setup "$TMP/missing.sif" "$TMP"
  assert_equal "$status" 1
  assert_output "job_submitter.sh: container: the image '$TMP/missing.sif' is missing or unreadable on this node"
  run hpc_container_node_setup "$IMAGE" "$TMP/no tmpdir"
  assert_equal "$status" 1
  assert_output "job_submitter.sh: container: SLURM_TMPDIR '$TMP/no tmpdir' is not a folder on this node"
}

@test "hpc_container_argv: the runtime's command line, binds parents first, the per-job scratch folder" {
  local tmpdir="$TMP/node tmp" scratch="$TMP/scratch/my project"
  mkdir -p "$tmpdir"
  hpc_container_node_setup "$IMAGE" "$tmpdir"
  export SLURM_JOB_ID=123 HOME='/home/a user'
  unset SLURM_ARRAY_TASK_ID
  hpc_plan_python_helpers=''

  hpc_container_argv apptainer "$tmpdir" "$scratch" 'exp 1' /code python 'train.py' --lr '0.1 0.2'
  same_args "the command line" hpc_container_cmd apptainer run --nv --cleanenv --containall --no-home --writable-tmpfs \
    --bind "$tmpdir/tmp:/tmp" --bind "$tmpdir/data:/data" --bind "$tmpdir/db:/db" \
    --bind "$scratch/exp 1/singularity_123_0:/scratch_storage" --bind "$tmpdir/home:/home/a user" \
    --bind "$tmpdir/workdir:/code" --pwd /code "$tmpdir/image.sif" python train.py --lr '0.1 0.2'
  [[ -d "$scratch/exp 1/singularity_123_0" ]] || fail "no per-job scratch folder"
  assert_equal "$hpc_container_scratch" "$scratch/exp 1/singularity_123_0"
  # An array task, no exp_name, the default workdir, the helpers and a profile's extra bind.
  export SLURM_ARRAY_TASK_ID=4
  hpc_plan_python_helpers="$TMP/src dir"
  hpc_container_extra_binds=("/cvmfs:/cvmfs:ro")
  hpc_container_argv singularity "$tmpdir" "$scratch" '' '' python
  same_args "the command line" hpc_container_cmd singularity run --nv --cleanenv --containall --no-home --writable-tmpfs \
    --bind "$tmpdir/tmp:/tmp" --bind "$tmpdir/data:/data" --bind "$tmpdir/db:/db" \
    --bind "$scratch/singularity_123_4:/scratch_storage" --bind "$tmpdir/home:/home/a user" \
    --bind "$tmpdir/workdir:/hpc_workdir" --bind "$TMP/src dir:/hpc_python_helpers:ro" --bind /cvmfs:/cvmfs:ro \
    --pwd /hpc_workdir "$tmpdir/image.sif" python
}

@test "hpc_container_argv: refuses paths Apptainer cannot bind and a node without setup (status 1)" {
  local tmpdir="$TMP/node tmp"
  mkdir -p "$tmpdir"
  export SLURM_JOB_ID=123 HOME=/home/user
  run hpc_container_argv apptainer "$tmpdir" "$TMP/scratch" exp /code python
  assert_equal "$status" 1
  assert_output "job_submitter.sh: container: no image in '$tmpdir' (hpc_container_node_setup was not run on this node)"
  hpc_container_node_setup "$IMAGE" "$tmpdir"
  run hpc_container_argv apptainer "$tmpdir" "$TMP/scratch" 'a:b' /code python
  assert_equal "$status" 1
  assert_output "job_submitter.sh: container: '$TMP/scratch/a:b/singularity_123_0' holds ',' or ':', which Apptainer's --bind cannot carry"
  run hpc_container_argv apptainer "$tmpdir" "$TMP/scratch" exp
  assert_equal "$status" 1
  assert_output --partial 'hpc_container_argv RUNTIME TMPDIR SCRATCH_DIR EXP_NAME WORKDIR ARGV... (got 4 arguments)'
}

@test "hpc_container_export_env: both prefixes for names that are set, explicit values, bad names refused" {
  export ONE='a value' EMPTY=''
  unset NOT_SET || true
  hpc_container_export_env ONE EMPTY NOT_SET 'TWO=x=y'
  assert_equal "$APPTAINERENV_ONE|$SINGULARITYENV_ONE" 'a value|a value'
  assert_equal "${APPTAINERENV_EMPTY-unset}|${SINGULARITYENV_EMPTY-unset}" '|'
  assert_equal "${APPTAINERENV_NOT_SET-unset}" unset
  # shellcheck disable=SC2153 # exported by hpc_container_export_env
  assert_equal "$APPTAINERENV_TWO|$SINGULARITYENV_TWO" 'x=y|x=y'
  run bash -c 'env | grep -c "^SINGULARITYENV_ONE="'
  assert_output 1
  run hpc_container_export_env 'BAD-NAME'
  assert_equal "$status" 2
  assert_output "job_submitter.sh: container: 'BAD-NAME' is not a variable name"
}

@test "hpc_container_export_job_env: the documented variables, the container's own paths, nothing else" {
  run env -i PATH="$PATH" HOME=/home/u SLURM_JOB_ID=9 SLURM_ARRAY_TASK_ID=2 SLURM_PROCID=1 SLURM_NODEID=1 \
    SLURMD_NODENAME=n2 SLURM_TMPDIR=/node/tmp SLURM_NTASKS=4 CUDA_VISIBLE_DEVICES=0,1 MASTER_ADDR=n1 \
    MASTER_PORT=29512 project_name=proj exp_name=exp num_nodes=2 gpus_per_node=2 scratch_dir=/scratch/proj \
    source_dir=/home/u/proj WANDB_API_KEY=key WANDB_PROJECT=p \
    HPC_WARNING_SIGNAL=USR1 HPC_RESTART_COUNT=0 OTHER=no PYTHONPATH=/host/lib VIRTUAL_ENV=/venv \
    bash -c 'source "$1/hpc_files/lib/hpc_common.bash" && source "$1/singularity_hpc_files/container_runner.bash" &&
      hpc_plan_python_helpers=$2 hpc_plan_runner=singularity &&
      hpc_container_export_job_env /code && env | grep -E "^(APPTAINER|SINGULARITY)ENV_" | sort' _ "$HPC_ROOT" "$TMP/src dir"
  assert_success
  local expected=('CUDA_VISIBLE_DEVICES=0,1' HPC_PYTHON_HELPERS=/hpc_python_helpers HPC_RESTART_COUNT=0
    HPC_WARNING_SIGNAL=USR1 HPC_WORKDIR=/code
    MASTER_ADDR=n1 MASTER_PORT=29512 NODE_RANK=1 SLURMD_NODENAME=n2 SLURM_ARRAY_TASK_ID=2 SLURM_JOB_ID=9
    SLURM_NODEID=1 SLURM_NTASKS=4 SLURM_PROCID=1 SLURM_TMPDIR=/tmp WANDB_API_KEY=key WANDB_PROJECT=p
    exp_name=exp gpus_per_node=2 num_nodes=2 project_name=proj scratch_dir=/scratch_storage source_dir=/code)
  local want=() line
  for line in "${expected[@]}"; do want+=("APPTAINERENV_$line" "SINGULARITYENV_$line"); done
  assert_output "$(printf '%s\n' "${want[@]}" | sort)"
}

@test "hpc_container_expand: the configs' \$scratch_dir, \$SLURM_TMPDIR and \$source_dir as the program sees them" {
  export scratch_dir=/scratch/proj SLURM_TMPDIR=/node/tmp source_dir=/home/u/proj exp_name=e1
  hpc_container_expand /code python train.py '--out=${scratch_dir}/${exp_name}' '--tmp=$SLURM_TMPDIR' '--src=${source_dir}'
  same_args "the expanded command" hpc_configs_argv python train.py --out=/scratch_storage/e1 --tmp=/tmp --src=/code
  assert_equal "$scratch_dir|$SLURM_TMPDIR|$source_dir" '/scratch/proj|/node/tmp|/home/u/proj'
}

# ------------------------------------------------------------- a whole single-node job

@test "a single-node container job without SLURM: writes everywhere it may, only /scratch_storage's content stays, the key only in the environment" {
  local node="$TMP/node" scratch="$TMP/scratch/proj" sentinel='wandb-sentinel-4f1c9e0b7a'
  local tmpdir="$node/hpc_tmpdir.root.4242"
  mkdir -p "$node" "$scratch"
  mkdir -m 700 "$tmpdir"
  export SLURM_JOB_ID=4242 SLURM_ARRAY_TASK_ID=3 SLURM_PROCID=0 SLURM_LOCALID=0 SLURM_NODEID=0
  export SLURMD_NODENAME=n1 SLURM_JOB_NUM_NODES=1 SLURM_TMPDIR=$tmpdir
  export project_name=proj exp_name='exp one' scratch_dir=$scratch source_dir="$TMP/project" num_nodes=1 gpus_per_node=0
  export HOME='/home/hpc job user' WANDB_API_KEY=$sentinel NOT_FOR_THE_PROGRAM=host-only
  [[ ! -e $HOME ]] || fail "$HOME exists on this machine"

  # The guard's part, once per node; then the data staging (--data data/x) into SLURM_TMPDIR.
  hpc_container_node_setup "$IMAGE" "$SLURM_TMPDIR"
  mkdir -p "$SLURM_TMPDIR/data/x"
  echo 'the staged data' >"$SLURM_TMPDIR/data/x/input.txt"
  # The program: in the workdir here, as the image would hold it at its own path.
  cat >"$SLURM_TMPDIR/workdir/probe.py" <<'EOF'
import json, os, sqlite3, sys
out = sys.argv[1]
data = open("/data/x/input.txt").read().strip()
with open(os.path.join(out, "result.txt"), "w") as f:
    f.write("result from " + data + "\n")
open("/tmp/t.txt", "w").write("tmp\n")
db = sqlite3.connect("/db/run.sqlite")
db.execute("create table t (x)")
db.commit()
db.close()
os.makedirs(os.path.join(os.environ["HOME"], ".cache"), exist_ok=True)
open(os.path.join(os.environ["HOME"], ".cache", "c.txt"), "w").write("cache\n")
open("w.txt", "w").write("workdir\n")
names = ["WANDB_API_KEY", "NOT_FOR_THE_PROGRAM", "SLURM_JOB_ID", "SLURM_ARRAY_TASK_ID", "exp_name",
         "scratch_dir", "SLURM_TMPDIR", "source_dir", "HOME", "HPC_WORKDIR"]
seen = {n: os.environ.get(n) for n in names}
seen["cwd"] = os.getcwd()
print("PROBE " + json.dumps(seen, sort_keys=True))
EOF

  # The task's part: runtime, environment, command, command line; then the job runs it.
  local runtime
  runtime=$(hpc_container_runtime)
  hpc_container_export_job_env /code
  hpc_container_expand /code python3 probe.py '${scratch_dir}'
  hpc_container_argv "$runtime" "$SLURM_TMPDIR" "$scratch_dir" "$exp_name" /code "${hpc_configs_argv[@]}"
  run --separate-stderr "${hpc_container_cmd[@]}"
  assert_success
  local json
  json=$(sed -n 's/^PROBE //p' <<<"$output")
  run python3 -c 'import json, sys; d = json.loads(sys.argv[1]); print("\n".join(f"{k}={d[k]}" for k in sorted(d)))' "$json"
  assert_output "HOME=/home/hpc job user
HPC_WORKDIR=/code
NOT_FOR_THE_PROGRAM=None
SLURM_ARRAY_TASK_ID=3
SLURM_JOB_ID=4242
SLURM_TMPDIR=/tmp
WANDB_API_KEY=$sentinel
cwd=/code
exp_name=exp one
scratch_dir=/scratch_storage
source_dir=/code"

  # Every write landed in its bind source.
  local kept="$scratch/exp one/singularity_4242_3"
  assert_equal "$(cat "$kept/result.txt")" 'result from the staged data'
  assert_equal "$(cat "$SLURM_TMPDIR/tmp/t.txt")" 'tmp'
  [[ -s $SLURM_TMPDIR/db/run.sqlite ]] || fail "no database in SLURM_TMPDIR/db"
  assert_equal "$(cat "$SLURM_TMPDIR/home/.cache/c.txt")" 'cache'
  assert_equal "$(cat "$SLURM_TMPDIR/workdir/w.txt")" 'workdir'
  for path in "$HOME" /code /scratch_storage /db /data; do
    [[ ! -e $path ]] || fail "$path was made on the host"
  done

  # The end of the job: the guard removes SLURM_TMPDIR; only /scratch_storage's content stays.
  rm -rf -- "$SLURM_TMPDIR"
  run find "$TMP/node" "$TMP/scratch" -mindepth 1
  assert_output "$TMP/scratch/proj
$TMP/scratch/proj/exp one
$kept
$kept/result.txt"

  # The key reached the program through the environment only: no recorded argv holds it.
  local records=("$APPTAINER_STANDIN_LOG"/*)
  [[ -e ${records[0]} ]] || fail "the stand-in recorded no call"
  run grep -rlaF -- "$sentinel" "$APPTAINER_STANDIN_LOG"
  assert_failure
  assert_output ''
  run grep -aF -- "$scratch" "${records[0]}"
  assert_success
}
