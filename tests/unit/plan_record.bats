#!/usr/bin/env bats
# The plan is one record (hpc_plan_record, hpc_files/lib/hpc_plan.bash): written once per job as
# ${outputs_dir}/${exp_name}_${kind}_<stamp>.plan before sbatch, the only place the job's values
# are written. The job script names it and holds none of them; the manifest and the dry run are
# derived from it. Without SLURM: the PATH stubs of tests/fixtures/submitter/bin.

bats_require_minimum_version 1.5.0

setup_file() {
  load '../helpers/common'
  load '../helpers/submitter'
  hpc_test_warm_profiles
}

setup() {
  load '../helpers/common'
  # shellcheck source=tests/helpers/submitter.bash
  source "$BATS_TEST_DIRNAME/../helpers/submitter.bash"
  hpc_test_submitter_setup scratch --venv
}

# submit ARGS...: runs the submitter (stdin not a terminal), stdout and stderr apart.
submit() {
  run --separate-stderr bash "$submitter" "$@" </dev/null
}

# plan_fields: prints the plan's scalar fields, a line '--', its array fields, a line '--', and
# its 'FIELD KEY' pairs whose manifest key differs (hpc_plan.bash's list and table, with the
# map's fields, which hpc_map_submit.bash adds).
plan_fields() {
  bash -c 'source "$1/hpc_files/lib/hpc_common.bash" && source "$1/hpc_files/lib/hpc_plan.bash" &&
    printf "%s\n" "${hpc_plan_fields[@]}" -- "${hpc_plan_array_fields[@]}" -- &&
    for f in "${!hpc_plan_manifest_keys[@]}"; do printf "%s %s\n" "$f" "${hpc_plan_manifest_keys[$f]}"; done' _ "$HPC_ROOT"
}

# manifest_values FILE KEY: prints the values of KEY in the manifest FILE, one per line, decoded.
manifest_values() {
  local line value
  while IFS= read -r line; do
    [[ $line == "$2"$'\t'* ]] || continue
    value=${line#*$'\t'}
    printf '%b\n' "$value"
  done <"$1"
}

# manifest_table FILE: sets the caller's associative array manifest_of[KEY] to what
# `$(manifest_values FILE KEY)` gives, for every KEY of the manifest FILE, in one reading.
manifest_table() {
  local line key value
  while IFS= read -r line; do
    [[ $line == *$'\t'* ]] || continue
    key=${line%%$'\t'*}
    printf -v value '%b\n' "${line#*$'\t'}"
    manifest_of[$key]+=$value
  done <"$1"
  for key in "${!manifest_of[@]}"; do
    value=${manifest_of[$key]}
    while [[ $value == *$'\n' ]]; do value=${value%$'\n'}; done
    manifest_of[$key]=$value
  done
}

# plan_table PLAN SCALAR... -- ARRAY...: sets the caller's associative array plan_of[NAME] to
# the value of hpc_plan_NAME in the plan file PLAN (an array's values one a line), each as
# `$(source PLAN && printf ...)` would give it, sourced once in one subshell for all of them.
plan_table() {
  local plan=$1 name value
  local -a pairs
  shift
  # shellcheck disable=SC1090 # the plan file under test
  mapfile -d '' -t pairs < <(
    source "$plan" || exit 1
    array=0
    for name in "$@"; do
      if [[ $name == -- ]]; then
        array=1
        continue
      fi
      ref=hpc_plan_$name
      if ((array)); then
        ref="hpc_plan_${name}[@]"
        values=(${!ref+"${!ref}"})
        printf '%s\0' "$name"
        { ((${#values[@]} == 0)) || printf '%s\n' "${values[@]}"; }
        printf '\0'
      else
        printf '%s\0%s\0' "$name" "${!ref-}"
      fi
    done
  )
  for ((name = 0; name + 1 < ${#pairs[@]}; name += 2)); do
    value=${pairs[name + 1]}
    while [[ $value == *$'\n' ]]; do value=${value%$'\n'}; done
    plan_of[${pairs[name]}]=$value
  done
}

@test "a submission writes its plan file beside the output before sbatch; the job script names it and holds no plan value; the manifest's plan values equal the file's" {
  use_dir=$tmp/work
  submit -y -W torchrun -g 2 -n 2 -e rec --copy-back 'a b' --copy-back c --label-ranks --workdir "$use_dir" -t 00:20:00
  assert_equal "$status" 0
  local plans=("$outputs"/rec_venv-torchrun_*.plan)
  assert_equal "${#plans[@]}" 1
  local plan=${plans[0]}
  [[ -f $plan && ! -L $plan ]] || fail "no plan file: $plan"
  [[ ${plan##*/} =~ ^rec_venv-torchrun_[0-9]+-[0-9]+\.plan$ ]] || fail "name: $plan"
  # It existed before sbatch ran: the script sbatch got names it, and the stub saw the file.
  local script=$outputs/rec_venv-torchrun_4242.sh quoted
  [[ $(<"$script") == "$(<"$stub_log/sbatch.1.script")" ]] || fail "the kept script is not the one submitted"
  printf -v quoted '%q' "$plan"
  assert_equal "$(tail -n 1 "$script")" "hpc_job_main $quoted"
  # The script: #SBATCH lines, comments, and the fixed lines; no value of the plan, but its
  # token (the plan file's identity: its last line).
  local line token
  token=$(sed -n 's/^hpc_plan_token=//p' "$plan")
  [[ -n $token && $(tail -n 1 "$plan") == "hpc_plan_token=$token" ]] || fail "no token as the plan's last line"
  # shellcheck disable=SC2016 # the script's own $EPOCHREALTIME, compared as text
  while IFS= read -r line; do
    case $line in
      '' | '#'* | 'set -euo pipefail' | 'HPC_JOB_T0=$EPOCHREALTIME' | "hpc_job_main $quoted") ;;
      "export HPC_JOB_PLAN_TOKEN=$token") ;;
      "source $(printf '%q' "$project/hpc_files/lib/hpc_job.bash")") ;;
      *) fail "the job script holds '$line'" ;;
    esac
  done <"$script"
  # The manifest: a plan line, and each value derived from a field equal to the file's.
  local manifest="$outputs/manifests/rec_4242.manifest" name key expected actual
  assert_equal "$(manifest_values "$manifest" plan)" "$plan"
  local -a scalars=() arrays=()
  local -A keys=()
  local part=0
  while IFS= read -r line; do
    if [[ $line == -- ]]; then
      part=$((part + 1))
      continue
    fi
    case $part in
      0) scalars+=("$line") ;;
      1) arrays+=("$line") ;;
      *) keys[${line% *}]=${line#* } ;;
    esac
  done < <(plan_fields)
  ((${#scalars[@]} > 30 && ${#arrays[@]} == 5)) || fail "the field list: ${scalars[*]} -- ${arrays[*]}"
  # The plan sourced once and the manifest read once for all fields (a subshell for each field
  # and each key cost seconds).
  local -A plan_of=() manifest_of=()
  hpc_test_untraced plan_table "$plan" "${scalars[@]}" -- "${arrays[@]}"
  hpc_test_untraced manifest_table "$manifest"
  for name in "${scalars[@]}" "${arrays[@]}"; do
    key=${keys[$name]:-$name}
    [[ -n ${plan_of[$name]+set} ]] || fail "$name: not read from the plan"
    expected=${plan_of[$name]}
    actual=${manifest_of[$key]-}
    assert_equal "$name ($key): $actual" "$name ($key): $expected"
  done
  # A few values, to see that the file holds the job's.
  grep -qxF "hpc_plan_copy_back=( a\\ b c )" "$plan"
  grep -qxF "hpc_plan_label_ranks=1" "$plan"
  grep -qxF "hpc_plan_workdir=$(printf '%q' "$use_dir")" "$plan"
  grep -qxF "hpc_plan_num_processes=4" "$plan"

  # The dry run of the same options prints the same record as its plan section, creating nothing.
  local before after text section
  before=$(find "$SCRATCH" | sort)
  submit --dry-run -W torchrun -g 2 -n 2 -e rec --copy-back 'a b' --copy-back c --label-ranks --workdir "$use_dir" -t 00:20:00
  assert_equal "$status" 0
  after=$(find "$SCRATCH" | sort)
  assert_equal "$after" "$before"
  assert_line "== plan (written as $outputs/rec_venv-torchrun_STAMP.plan when submitted)"
  section=${output#*$'\n== plan (written as '*$' when submitted)\n'}
  section=${section%%$'\n\n== job script\n'*}
  # The file's text, but its identity (its last two lines: a comment and the token).
  text=$(head -n -2 "$plan")
  assert_equal "$section" "$text"
  assert_line "hpc_job_main ${quoted%_*.plan}_STAMP.plan"
}

@test "sbatch refusing the job leaves no plan file, in a new outputs folder or in one that was there" {
  HPC_STUB_SBATCH=refuse submit -y -g 0 -e refused
  assert_equal "$status" 1
  [[ ! -e $outputs ]] || [[ -z $(find "$outputs" -name '*.plan') ]] || fail "a plan file was left: $(find "$outputs" -name '*.plan')"
  mkdir -p "$outputs"
  printf 'mine\n' >"$outputs/keep.plan"
  HPC_STUB_SBATCH=refuse submit -y -g 0 -e refused
  assert_equal "$status" 1
  assert_equal "$(cd "$outputs" && find . -name '*.plan')" "./keep.plan"
  assert_equal "$(cat "$outputs/keep.plan")" mine
}

@test "sbatch refusing the job after another file took its plan file's place: that file is not removed (only what this submission wrote)" {
  HPC_STUB_SBATCH=swap-refuse submit -y -g 0 -e swapped
  assert_equal "$status" 1
  local plans=("$outputs"/swapped_*.plan)
  assert_equal "${#plans[@]}" 1
  [[ -f ${plans[0]} ]] || fail "the file put in the plan's place was removed"
  assert_equal "$(cat "${plans[0]}")" theirs
}

# plan_of MODE OPTIONS... [-- OPTIONS...]: in one process, as a scaling study makes one plan per
# run, makes the plan of each group of OPTIONS (the submitter's steps up to hpc_plan_make) and
# prints each record after a line '== N'. With MODE 'mode' the first plan also gets a mode's
# values (array, data archive, a map field), as hpc_sweep_plan, hpc_submit_main and hpc_map_plan
# set them; 'plain': none.
plan_of() {
  bash -c '
    set -euo pipefail
    hpc_files_dir=$1/hpc_files mode=$2
    shift 2
    for lib in hpc_common hpc_options hpc_profile hpc_configs hpc_plan hpc_submit hpc_manifest; do
      source "$hpc_files_dir/lib/$lib.bash"
    done
    hpc_submit_locate
    source "$hpc_files_dir/lib/hpc_map_submit.bash"
    n=0
    while (($#)); do
      args=()
      while (($#)) && [[ $1 != -- ]]; do args+=("$1") && shift; done
      (($# == 0)) || shift
      hpc_opt_defaults
      hpc_opt_parse "${args[@]}"
      hpc_submit_runner_check
      hpc_profile_load "$hpc_opt_cluster"
      hpc_submit_configs
      hpc_plan_make
      if ((n == 0)) && [[ $mode == mode ]]; then
        hpc_plan_mode=repeat hpc_plan_array=0-3%2 hpc_plan_data_archive=/data.tar hpc_plan_map_dir=/map
      fi
      hpc_plan_record
      printf "== %s\n%s" "$n" "$hpc_plan_text"
      n=$((n + 1))
    done
  ' _ "$project" "$@"
}

@test "two plans made in one process (a scaling study's runs) do not leak values into each other" {
  local first second alone
  run plan_of mode -W torchrun -g 2 -n 2 --copy-back ck --label-ranks --workdir "$tmp/w" -e one -- -g 0 -e two
  assert_success
  first=${output%%$'\n== 1\n'*}
  second=${output#*$'\n== 1\n'}
  [[ $first == *"hpc_plan_copy_back=( ck )"* && $first == *"hpc_plan_map_dir=/map"* ]] || fail "first: $first"
  run plan_of plain -g 0 -e two
  assert_success
  alone=${output#'== 0'$'\n'}
  diff <(printf "%s\n" "$alone") <(printf "%s\n" "$second") || fail "the second plan differs from the same plan made alone"
  [[ $second == *"hpc_plan_copy_back=( )"* && $second == *"hpc_plan_map_dir=''"* && $second == *"hpc_plan_data_archive=''"* ]] ||
    fail "second: $second"
}

@test "resubmit of a job whose plan file is gone is refused with one line saying to submit again; with it there, the kept script is submitted as it is" {
  submit -y -g 0 -e again
  assert_equal "$status" 0
  local plans=("$outputs"/again_venv-none_*.plan)
  run --separate-stderr bash "$submitter" resubmit again </dev/null
  assert_equal "$status" 0
  # The kept script, which names the same plan file.
  [[ $(<"$stub_log/sbatch.2.script") == "$(<"$outputs/again_venv-none_4242.sh")" ]] || fail "not the kept script"
  rm -- "${plans[0]}"
  run --separate-stderr bash "$submitter" resubmit again </dev/null
  assert_equal "$status" 1
  assert_equal "$stderr" "job_submitter.sh: the plan file '${plans[0]}' of job 4243 is gone; submit again with: bash job_submitter.sh -y -g 0 -e again"
  [[ ! -e $stub_log/sbatch.3.args ]] || fail "sbatch was called"
}

@test "the plan file is the user's alone (0600) whatever the umask: on a shared scratch nobody else reads it or changes what the job sources; the job refuses a plan file others can write" {
  umask 0002
  submit -y -g 0 -e shared
  assert_equal "$status" 0
  local plans=("$outputs"/shared_venv-none_*.plan)
  assert_equal "$(stat -c %a "${plans[0]}")" 600
  # One that a group member could have changed (an older plan file, a chmod): not sourced.
  cp -- "${plans[0]}" "$tmp/open.plan"
  printf 'touch %q\n' "$tmp/ran" >>"$tmp/open.plan"
  chmod 664 "$tmp/open.plan"
  run bash -c 'source "$1/hpc_files/lib/hpc_job.bash" && hpc_job_plan_load "$2"' _ "$HPC_ROOT" "$tmp/open.plan"
  assert_equal "$status" 1
  assert_output --partial "FAILED at step 'plan': the plan file '$tmp/open.plan' can be changed by others (mode 664): not read"
  [[ ! -e $tmp/ran ]] || fail "the plan file was sourced"
}

@test "resubmit of a job whose plan file others can write, or that is now a link: refused with one line naming it, nothing submitted (the job would refuse it at its start)" {
  submit -y -g 0 -e opened
  assert_equal "$status" 0
  local plans=("$outputs"/opened_venv-none_*.plan)
  chmod 664 "${plans[0]}"
  run --separate-stderr bash "$submitter" resubmit opened </dev/null
  assert_equal "$status" 1
  assert_equal "$stderr" "job_submitter.sh: the plan file '${plans[0]}' of job 4242 can be changed by others (mode 664): not read; nothing was submitted"
  [[ ! -e $stub_log/sbatch.2.args ]] || fail "sbatch was called"
  chmod 600 "${plans[0]}"
  mv -- "${plans[0]}" "$tmp/moved.plan"
  ln -s "$tmp/moved.plan" "${plans[0]}"
  run --separate-stderr bash "$submitter" resubmit opened </dev/null
  assert_equal "$status" 1
  assert_equal "$stderr" "job_submitter.sh: the plan file '${plans[0]}' of job 4242 is not a regular file of ${USER:-this user} (or is a link): not read; nothing was submitted"
  [[ ! -e $stub_log/sbatch.2.args ]] || fail "sbatch was called"
}

@test "a TERM or HUP that reaches the submitter while sbatch runs: the job SLURM accepted keeps its plan file, kept script and manifest; the submitter says so and ends by the signal" {
  mkdir -p "$BATS_TEST_TMPDIR/bin"
  # shellcheck disable=SC2016 # the stand-in's own "$@"
  printf '#!/usr/bin/env bash\n: >%q\nsleep 1\nexec %q "$@"\n' "$BATS_TEST_TMPDIR/in-sbatch" "$fixtures/bin/sbatch" >"$BATS_TEST_TMPDIR/bin/sbatch"
  chmod +x "$BATS_TEST_TMPDIR/bin/sbatch"
  local sig pid rc n=0 plans code
  for sig in TERM HUP; do
    n=$((n + 1))
    rm -f -- "$BATS_TEST_TMPDIR/in-sbatch"
    PATH=$BATS_TEST_TMPDIR/bin:$PATH bash "$submitter" -y -g 0 -e "sig$sig" </dev/null >"$tmp/out" 2>"$tmp/err" &
    pid=$!
    for _ in {1..200}; do
      [[ -e $BATS_TEST_TMPDIR/in-sbatch ]] && break
      sleep 0.05
    done
    kill -s "$sig" "$pid"
    rc=0
    wait "$pid" || rc=$?
    code=$((4242 + n - 1))
    assert_equal "$rc" "$((128 + $(kill -l "$sig")))"
    assert_equal "$(<"$tmp/err")" "job_submitter.sh: stopped by SIG$sig after job $code was submitted (its plan file, script and manifest are kept; cancel it with: scancel $code)"
    plans=$(find "$outputs" -name "sig${sig}_*.plan" | wc -l)
    assert_equal "$plans" 1
    [[ -f $outputs/sig${sig}_venv-none_$code.sh && -f $outputs/manifests/sig${sig}_$code.manifest ]] || fail "$sig: $(ls "$outputs" "$outputs/manifests")"
  done
}

# job_signalled SIGNAL[@group] EXP: sends SIGNAL while a plain job (EXP) is submitted and checks
# that the job sbatch accepted keeps its kept script and manifest, that the submitter says so and
# ends by the signal.
job_signalled() {
  local sig=${1%@group}
  hpc_test_slow_sbatch 1
  hpc_test_signal_during_sbatch "$1" -y -g 0 -e "$2"
  assert_equal "$hpc_test_rc" "$((128 + $(kill -l "$sig")))"
  assert_equal "$(<"$tmp/err")" "job_submitter.sh: stopped by SIG$sig after job 4242 was submitted (its plan file, script and manifest are kept; cancel it with: scancel 4242)"
  [[ -f $outputs/$2_venv-none_4242.sh && -f $outputs/manifests/$2_4242.manifest ]] || fail "$(ls "$outputs" "$outputs/manifests")"
}

# map_gather_signalled SIGNAL[@group] EXP: sends SIGNAL while the gather of a map (EXP, 4 tasks)
# is submitted (its second sbatch) and checks that the held array and the gather are cancelled,
# the map's plan files and folder removed, and that the submitter ends by the signal.
map_gather_signalled() {
  local sig=${1%@group}
  rm -f -- "$stub_log"/*
  hpc_test_slow_sbatch 2
  HPC_STUB_MAX_ARRAY_SIZE=1001 hpc_test_signal_during_sbatch "$1" -y -g 0 --map-range 0-3 --gather "python -c pass" -e "$2"
  assert_equal "$hpc_test_rc" "$((128 + $(kill -l "$sig")))"
  assert_equal "$(hpc_test_cancelled)" "4242 4243"
  assert_equal "$(<"$tmp/err")" "job_submitter.sh: stopped by SIG$sig; the map (job 4242, gather 4243) was cancelled"
  [[ -z $(find "$outputs" -name "$2_*.plan") ]] || fail "plan files left: $(find "$outputs" -name '*.plan')"
  [[ -z $(find "$outputs/map/$2" -mindepth 1 -maxdepth 1 2>/dev/null) ]] || fail "a map folder was left"
}

@test "Ctrl-C (INT to the whole foreground process group, sbatch too) while sbatch runs: sbatch still answers; the job it submitted keeps its plan file, kept script and manifest; the submitter says so and ends by SIGINT" {
  job_signalled INT@group sigint
}

@test "Ctrl-C while a scaling study's run or a map's gather is being submitted: sbatch still answers, and every job of it so far, that one too, is cancelled; nothing is left" {
  hpc_test_venv_built "$project"
  hpc_test_slow_sbatch 3
  hpc_test_signal_during_sbatch INT@group -y --scaling-test --scale-nodes 1,2 --scale-gpus 1 -W torchrun -e intstudy
  assert_equal "$hpc_test_rc" 130
  assert_equal "$(hpc_test_cancelled)" "4242 4243 4244"
  assert_equal "$(<"$tmp/err")" "job_submitter.sh: stopped by SIGINT; the study's jobs (4242 4243 4244) were cancelled"
  [[ -z $(find "$outputs/scaling/intstudy" -mindepth 1 -maxdepth 1 2>/dev/null) ]] || fail "a study folder was left"
  # The gather is submitted from a subshell of the submitter, which the group's INT reaches too.
  map_gather_signalled INT@group intmap
}

@test "a TERM while a scaling study's run is being submitted: every job of the study so far, the one sbatch was submitting too, is cancelled (none is left held), its folder and plan files removed; the submitter ends by the signal" {
  hpc_test_venv_built "$project"
  hpc_test_slow_sbatch 3
  hpc_test_signal_during_sbatch TERM -y --scaling-test --scale-nodes 1,2 --scale-gpus 1 -W torchrun -e sigstudy
  assert_equal "$hpc_test_rc" 143
  # sbatch accepted 4242 (the report), 4243 (a run) and 4244 (the run it was submitting).
  assert_equal "$(hpc_test_cancelled)" "4242 4243 4244"
  assert_equal "$(<"$tmp/err")" "job_submitter.sh: stopped by SIGTERM; the study's jobs (4242 4243 4244) were cancelled"
  [[ -z $(find "$outputs" -name 'sigstudy_*.plan') ]] || fail "plan files left: $(find "$outputs" -name '*.plan')"
  [[ -z $(find "$outputs/scaling/sigstudy" -mindepth 1 -maxdepth 1 2>/dev/null) ]] || fail "a study folder was left"
}

@test "a TERM while a map's gather is being submitted: the held array and the gather are cancelled, the map's folder and plan files removed; the submitter ends by the signal" {
  hpc_test_venv_built "$project"
  map_gather_signalled TERM sigmap
}

@test "a TERM while a map's held array is being submitted: the array is cancelled, never left held; nothing of the map is left" {
  hpc_test_venv_built "$project"
  hpc_test_slow_sbatch 1
  HPC_STUB_MAX_ARRAY_SIZE=1001 hpc_test_signal_during_sbatch TERM -y -g 0 --map-range 0-3 --gather "python -c pass" -e sigarr
  assert_equal "$hpc_test_rc" 143
  assert_equal "$(hpc_test_cancelled)" "4242"
  assert_equal "$(<"$tmp/err")" "job_submitter.sh: stopped by SIGTERM; the map (job 4242) was cancelled"
  [[ -z $(find "$outputs" -name 'sigarr_*.plan') ]] || fail "plan files left: $(find "$outputs" -name '*.plan')"
}

@test "a TERM while a map split by MaxArraySize is released: released, so kept; the advice names every array and the gather, and the command that cancels them all" {
  hpc_test_venv_built "$project"
  # A slow release: the signal comes while scontrol releases the map's arrays.
  mkdir -p "$BATS_TEST_TMPDIR/bin"
  cat >"$BATS_TEST_TMPDIR/bin/scontrol" <<STUB
#!/usr/bin/env bash
if [[ \$1 == release ]]; then
  : >'$BATS_TEST_TMPDIR/in-sbatch'
  sleep 1
fi
exec '$fixtures/bin/scontrol' "\$@"
STUB
  chmod +x "$BATS_TEST_TMPDIR/bin/scontrol"
  HPC_STUB_MAX_ARRAY_SIZE=4 hpc_test_signal_during_sbatch TERM -y -g 0 --map-range 0-9 --gather "python -c pass" -e sigrel
  assert_equal "$hpc_test_rc" 143
  assert_equal "$(hpc_test_cancelled)" ""
  assert_equal "$(<"$tmp/err")" "job_submitter.sh: stopped by SIGTERM after jobs 4242 4243 4244 4245 were submitted and released (their plan files, scripts and manifests are kept; cancel them all with: bash job_submitter.sh cancel sigrel)"
}

@test "a TERM while a map's folder is being made (its held array submitted, no gather): the array is cancelled, not released; nothing of the map is left" {
  hpc_test_venv_built "$project"
  # A slow mkdir of the map's tasks/ folder: the signal comes after sbatch, before the release.
  mkdir -p "$BATS_TEST_TMPDIR/bin"
  cat >"$BATS_TEST_TMPDIR/bin/mkdir" <<STUB
#!/usr/bin/env bash
if [[ \${*: -1} == */tasks ]]; then
  : >'$BATS_TEST_TMPDIR/in-sbatch'
  sleep 1
fi
exec /bin/mkdir "\$@"
STUB
  chmod +x "$BATS_TEST_TMPDIR/bin/mkdir"
  HPC_STUB_MAX_ARRAY_SIZE=1001 hpc_test_signal_during_sbatch TERM -y -g 0 --map-range 0-3 -e sigdir
  assert_equal "$hpc_test_rc" 143
  assert_equal "$(hpc_test_cancelled)" "4242"
  assert_equal "$(<"$tmp/err")" "job_submitter.sh: stopped by SIGTERM; the map (job 4242) was cancelled"
  ! grep -qzx release "$stub_log"/scontrol.*.args 2>/dev/null || fail "the map was released"
  [[ -z $(find "$outputs" -name 'sigdir_*.plan') ]] || fail "plan files left: $(find "$outputs" -name '*.plan')"
  [[ -z $(find "$outputs/map/sigdir" -mindepth 1 -maxdepth 1 2>/dev/null) ]] || fail "a map folder was left"
}

@test "a second Ctrl-C while a map's or a study's jobs are being cancelled (after the first during sbatch): scancel still runs, and every job of it is cancelled; none is left held" {
  # The scancel stand-in's first call sends INT to its own process group (the submitter's, as the
  # terminal would), then cancels (a scancel killed by it cancels nothing).
  mkdir -p "$BATS_TEST_TMPDIR/bin"
  cat >"$BATS_TEST_TMPDIR/bin/scancel" <<STUB
#!/usr/bin/env bash
if [[ ! -e '$BATS_TEST_TMPDIR/second-int' ]]; then
  : >'$BATS_TEST_TMPDIR/second-int'
  kill -s INT 0
  sleep 1
fi
exec '$fixtures/bin/scancel' "\$@"
STUB
  chmod +x "$BATS_TEST_TMPDIR/bin/scancel"
  hpc_test_slow_sbatch 2
  HPC_STUB_MAX_ARRAY_SIZE=1001 hpc_test_signal_during_sbatch INT@group -y -g 0 --map-range 0-3 --gather "python -c pass" -e twicemap
  assert_equal "$hpc_test_rc" 130
  assert_equal "$(hpc_test_cancelled)" "4242 4243"
  assert_equal "$(<"$tmp/err")" "job_submitter.sh: stopped by SIGINT; the map (job 4242, gather 4243) was cancelled"
  rm -f -- "$stub_log"/* "$BATS_TEST_TMPDIR/second-int"
  hpc_test_slow_sbatch 3
  hpc_test_signal_during_sbatch INT@group -y --scaling-test --scale-nodes 1,2 --scale-gpus 1 -W torchrun -e twicestudy
  assert_equal "$hpc_test_rc" 130
  assert_equal "$(hpc_test_cancelled)" "4242 4243 4244"
  assert_equal "$(<"$tmp/err")" "job_submitter.sh: stopped by SIGINT; the study's jobs (4242 4243 4244) were cancelled"
}

@test "a TERM to the submitter's whole process group (timeout(1), a service's stop) while sbatch runs: sbatch still answers; a single job is kept and named, a map is cancelled whole; the submitter ends by SIGTERM" {
  job_signalled TERM@group termgroup
  map_gather_signalled TERM@group termmap
}

@test "SBATCH_WAIT in the submitting shell does not reach sbatch: a held map's sbatch would wait for a job that is released only after it answers, with Ctrl-C ignored" {
  mkdir -p "$BATS_TEST_TMPDIR/bin"
  # The stand-in refuses where the real sbatch would wait for the job's end.
  cat >"$BATS_TEST_TMPDIR/bin/sbatch" <<STUB
#!/usr/bin/env bash
[[ -z \${SBATCH_WAIT+set} ]] || { echo 'sbatch: SBATCH_WAIT: waiting for the job to end' >&2; exit 1; }
exec '$fixtures/bin/sbatch' "\$@"
STUB
  chmod +x "$BATS_TEST_TMPDIR/bin/sbatch"
  PATH=$BATS_TEST_TMPDIR/bin:$PATH SBATCH_WAIT=1 HPC_STUB_MAX_ARRAY_SIZE=1001 submit -y -g 0 --map-range 0-3 --gather "python -c pass" -e nowait
  assert_equal "$stderr" ""
  assert_equal "$status" 0
}

@test "a map's gather plan file put in its place by someone else while the gather's sbatch runs (which then refuses) is not removed with the map" {
  mkdir -p "$BATS_TEST_TMPDIR/bin"
  cat >"$BATS_TEST_TMPDIR/bin/sbatch" <<STUB
#!/usr/bin/env bash
n=1
while [[ -e \$HPC_STUB_LOG/sbatch.\$n.args ]]; do n=\$((n + 1)); done
if ((n == 2)); then
  for plan in '$outputs'/*-gather_*.plan; do
    rm -f -- "\$plan"
    printf 'theirs\n' >"\$plan"
  done
  export HPC_STUB_SBATCH=refuse
fi
exec '$fixtures/bin/sbatch' "\$@"
STUB
  chmod +x "$BATS_TEST_TMPDIR/bin/sbatch"
  PATH=$BATS_TEST_TMPDIR/bin:$PATH HPC_STUB_MAX_ARRAY_SIZE=1001 submit -y -g 0 --map-range 0-3 --gather "python -c pass" -e swapgather
  assert_equal "$status" 1
  assert_equal "${stderr##*$'\n'}" "job_submitter.sh: the gather job was not submitted (see above); the map (job 4242) was cancelled"
  local plans=("$outputs"/swapgather_*.plan)
  assert_equal "${#plans[@]}" 1
  [[ ${plans[0]} == *-gather_*.plan && $(<"${plans[0]}") == theirs ]] || fail "left: ${plans[*]}"
}

@test "an sbatch that answers without a job id (exit 0) is never taken for one: a plain job, a map's gather and a study's run end with one line naming it; the group's other jobs are cancelled" {
  hpc_test_venv_built "$project"
  HPC_STUB_SBATCH_NOID=1 run --separate-stderr bash "$submitter" -y -g 0 -e noid </dev/null
  assert_equal "$status" 1
  # Such an answer may hide a job SLURM took: the submission's record stays, and the user is told.
  assert_equal "$stderr" "job_submitter.sh: sbatch gave no job id: Submitted batch job
job_submitter.sh: an sbatch's answer was lost: if SLURM took its job all the same, 'bash job_submitter.sh status' lists it"
  [[ -z $(find "$outputs" -name 'noid_*.sh' -o -name 'noid_*.manifest') ]] || fail "kept: $(ls "$outputs")"
  rm -f "$stub_log"/*
  HPC_STUB_MAX_ARRAY_SIZE=1001 HPC_STUB_SBATCH_NOID=2 run --separate-stderr bash "$submitter" -y -g 0 --map-range 0-1 \
    --gather "python -c pass" -e noidmap </dev/null
  assert_equal "$status" 1
  assert_equal "${stderr##*$'\n'}" "job_submitter.sh: the gather job was not submitted (see above); the map (job 4242) was cancelled"
  [[ $stderr == *"sbatch gave no job id for the gather job: Submitted batch job"* ]] || fail "$stderr"
  rm -f "$stub_log"/*
  HPC_STUB_SBATCH_NOID=3 run --separate-stderr bash "$submitter" -y --scaling-test --scale-gpus 1,2 -e noidstudy </dev/null
  assert_equal "$status" 1
  assert_equal "${stderr##*$'\n'}" "job_submitter.sh: run 1x2-r1 was not submitted; the study's jobs (4242 4243) were cancelled"
  [[ $stderr == *"sbatch gave no job id: Submitted batch job"* ]] || fail "$stderr"
}
