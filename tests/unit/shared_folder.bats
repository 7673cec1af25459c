#!/usr/bin/env bats
# A lab's shared group folder (SCRATCH group-writable, umask 002, another member of the group):
# what the toolkit runs again (kept job scripts, a map's task.sh and gather.sh, manifests and
# records) is the user's alone, and what is not the user's own or that others can change is
# refused before anything runs. The other member is a real second Unix user (made here; the
# suite runs as root). Without SLURM: the PATH stubs of tests/fixtures/submitter/bin.

bats_require_minimum_version 1.5.0

setup_file() {
  load '../helpers/common'
  load '../helpers/submitter'
  hpc_test_warm_profiles
}

setup() {
  load '../helpers/common'
  load '../helpers/mate'
  # shellcheck source=tests/helpers/submitter.bash
  source "$BATS_TEST_DIRNAME/../helpers/submitter.bash"
  # The shared folder: outside bats' own temporary folders (0700), so that the other member can
  # reach it, as on a cluster's /project/<group>.
  lab=$(mktemp -d "/tmp/hpc lab.XXXXXX")
  chmod 755 "$lab"
  hpc_test_submitter_project "$(hpc_test_tmp)/cache" "$lab/scratch"
  outputs="$SCRATCH/my project/hpc_outputs"
  hpc_test_venv_built "$project"
  ran=$lab/planted-command-ran
}

teardown() {
  rm -rf -- "${lab:?}"
}

# submit ARGS...: runs the submitter with umask 002 (a lab's shared folder), stdout and stderr apart.
submit() {
  run --separate-stderr bash -c 'umask 002 && exec bash "$@" </dev/null' _ "$submitter" "$@"
}

@test "umask 002: the kept job script, the manifest and the plan file are the user's alone (0600); a map's folder 0700, its task.sh, gather.sh, items.txt and manifest.json 0600" {
  submit -y -g 0 -e one
  assert_success
  assert_equal "$(stat -c %a "$outputs/one_venv-none_4242.sh" "$outputs/manifests/one_4242.manifest" "$outputs"/one_venv-none_*.plan)" "600
600
600"
  printf 'a\nb\n' >"$lab/list.txt"
  HPC_STUB_MAX_ARRAY_SIZE=1001 submit -y -g 0 --map-over "$lab/list.txt" --gather 'python gather.py' -e mapped
  assert_success
  local map_dir
  map_dir=$(sed -n 's/^Map [^ ]*: array job [0-9]* ([^)]*), folder //p' <<<"$output")
  [[ -d $map_dir ]] || fail "no map folder in: $output"
  assert_equal "$(stat -c '%a %n' "$map_dir" "$map_dir"/{task.sh,gather.sh,items.txt,manifest.json} | sed "s|$map_dir|M|")" "700 M
600 M/task.sh
600 M/gather.sh
600 M/items.txt
600 M/manifest.json"
}

@test "another member of the group: cannot edit the kept script; theirs in its place, a link, or an older group-writable one: resubmit refuses with one line naming it and the planted command never runs" {
  submit -y -g 0 -e victim
  assert_success
  mate_ready
  local script=$outputs/victim_venv-none_4242.sh planted
  printf -v planted '#!/bin/bash\ntouch %q\n' "$ran"
  # An edit: refused by the file's mode.
  # shellcheck disable=SC2016 # expanded by the other member's shell
  run as_mate 'printf "%s" "$2" >>"$1"' _ "$script" "$planted"
  assert_failure
  assert_output --partial "Permission denied"
  # Their own file in its place (the folder is the group's: they may rename in it).
  # shellcheck disable=SC2016 # expanded by the other member's shell
  as_mate 'mv -- "$1" "$1.orig" && printf "%s" "$2" >"$1"' _ "$script" "$planted"
  submit resubmit victim
  assert_equal "$status" 1
  assert_equal "$stderr" "job_submitter.sh: the kept job script '$script' of job 4242 is not a regular file of ${USER:-this user} (or is a link): not run; nothing was submitted"
  [[ ! -e $stub_log/sbatch.2.args ]] || fail "sbatch was called"
  # A link to their file.
  # shellcheck disable=SC2016 # expanded by the other member's shell
  as_mate 'mv -- "$1" "$1.theirs" && ln -s -- "$1.theirs" "$1"' _ "$script"
  submit resubmit victim
  assert_equal "$status" 1
  assert_equal "$stderr" "job_submitter.sh: the kept job script '$script' of job 4242 is not a regular file of ${USER:-this user} (or is a link): not run; nothing was submitted"
  # The user's own, but group-writable (written by an older version under umask 002), edited.
  rm -f -- "$script"
  cp -- "$script.orig" "$script"
  printf 'touch %q\n' "$ran" >>"$script"
  chmod 664 "$script"
  submit resubmit victim
  assert_equal "$status" 1
  assert_equal "$stderr" "job_submitter.sh: the kept job script '$script' of job 4242 can be changed by others (mode 664): not run; nothing was submitted"
  [[ ! -e $stub_log/sbatch.2.args ]] || fail "sbatch was called"
  [[ ! -e $ran ]] || fail "the planted command ran"
  # The user's own, theirs alone: resubmitted, from the text of the file that was checked.
  cp -- "$script.orig" "$script.new" && chmod 600 "$script.new" && mv -fT -- "$script.new" "$script"
  submit resubmit victim
  assert_success
  [[ $(<"$stub_log/sbatch.2.script") == "$(<"$script")" ]] || fail "not the kept script"
}

@test "another member's manifest planted among the user's (it names their script): not read, status says so; the user's own are" {
  submit -y -g 0 -e victim
  assert_success
  mate_ready
  local planted_script=$SCRATCH/theirs.sh forged
  # Theirs: a manifest like the user's (the format is no secret) naming their script.
  forged=$(sed "s|^script\t.*|script\t$planted_script|; s|^job_id\t.*|job_id\t4343|; s|^origin\t.*|origin\t4343|; s|^exp_name\t.*|exp_name\tplanted|" \
    "$outputs/manifests/victim_4242.manifest")
  # shellcheck disable=SC2016 # expanded by the other member's shell
  as_mate 'printf "#!/bin/bash\ntouch %q\n" "$2" >"$1" && printf "%s\n" "$3" >"$4"' \
    _ "$planted_script" "$ran" "$forged" "$outputs/manifests/planted_4343.manifest"
  submit resubmit planted
  assert_equal "$status" 2
  assert_equal "${stderr%%$'\n'*}" "job_submitter.sh: not read: 1 manifest(s) in $outputs/manifests that others can change or that are not your own files (planted_4343.manifest); if they are yours, make them yours alone: chmod go-w"
  [[ $stderr == *"planted: unknown experiment"* ]] || fail "not refused as unknown: $stderr"
  [[ ! -e $stub_log/sbatch.2.args ]] || fail "sbatch was called"
  [[ ! -e $ran ]] || fail "the planted command ran"
  # status lists the user's own, and says what it did not read (SLURM: manage.bats' stand-ins).
  printf 'scontrol 4242 4242 COMPLETED 0:0\n' >"$lab/jobs"
  PATH=$HPC_ROOT/tests/fixtures/manage/bin:$PATH HPC_STUB_JOBS=$lab/jobs HPC_STUB_SACCT=fail submit status
  assert_success
  assert_output --partial "victim"
  refute_output --partial "planted"
  [[ $stderr == "job_submitter.sh: not read: 1 manifest(s) in "* ]] || fail "status said nothing of it: $stderr"
}

@test "a map's task.sh or gather.sh that is not the user's own, or that others can change: resubmit --failed and gather refuse with one line naming it, nothing submitted" {
  printf 'a\nb\n' >"$lab/list.txt"
  HPC_STUB_MAX_ARRAY_SIZE=1001 submit -y -g 0 --map-over "$lab/list.txt" --gather 'python gather.py' -e mapped
  assert_success
  local map_dir i
  map_dir=$(sed -n 's/^Map [^ ]*: array job [0-9]* ([^)]*), folder //p' <<<"$output")
  for i in 0 1; do
    mkdir -p "$map_dir/tasks/$i"
    printf '{"index": %s, "array_job_id": "4242", "task_id": "%s", "state": "FAILED", "exit_code": 1, "attempt": 1}\n' \
      "$i" "$i" >"$map_dir/tasks/$i/status.json"
  done
  rm -f "$stub_log"/*
  cp -- "$map_dir/task.sh" "$lab/task.orig"
  printf 'touch %q\n' "$ran" >>"$map_dir/task.sh"
  chmod 664 "$map_dir/task.sh"
  submit resubmit mapped --failed
  assert_equal "$status" 1
  assert_equal "${stderr##*$'\n'}" "job_submitter.sh: the map's kept task script $map_dir/task.sh can be changed by others (mode 664): not run; nothing was submitted"
  chmod 600 "$map_dir/task.sh"
  printf 'touch %q\n' "$ran" >>"$map_dir/gather.sh"
  chmod 666 "$map_dir/gather.sh"
  submit resubmit mapped --failed
  assert_equal "$status" 1
  assert_equal "${stderr##*$'\n'}" "job_submitter.sh: the map's kept gather script $map_dir/gather.sh can be changed by others (mode 666): not run; nothing was submitted"
  submit gather mapped
  assert_equal "$status" 1
  assert_equal "${stderr##*$'\n'}" "job_submitter.sh: the map's kept gather script $map_dir/gather.sh can be changed by others (mode 666): not run; nothing was submitted"
  chmod 600 "$map_dir/gather.sh"
  chmod 664 "$map_dir/manifest.json"
  submit gather mapped
  assert_equal "$status" 1
  assert_equal "${stderr##*$'\n'}" "job_submitter.sh: the map's record $map_dir/manifest.json can be changed by others (mode 664): not read; nothing was submitted"
  [[ ! -e $stub_log/sbatch.1.args ]] || fail "sbatch was called"
  [[ ! -e $ran ]] || fail "the planted command ran"
}

@test "a study: its folder 0700, job.sh, report.sh and study.json 0600; a run's job.sh, report.sh or study.json that others can change: resubmit --failed and scaling-report refuse with one line naming it, nothing left submitted" {
  submit --scaling-test --scale-gpus 1,2 -e probe -y
  assert_success
  local study_dir
  study_dir=$(echo "$outputs"/scaling/probe/*-4242)
  [[ -f $study_dir/study.json ]] || fail "no study in $outputs/scaling/probe"
  assert_equal "$(stat -c '%a %n' "$study_dir" "$study_dir"/{report.sh,study.json,runs/1x2-r1/job.sh} | sed "s|$study_dir|S|")" "700 S
600 S/report.sh
600 S/study.json
600 S/runs/1x2-r1/job.sh"
  printf '{"job_id": "4243", "state": "COMPLETED", "exit_code": 0}\n' >"$study_dir/runs/1x1-r1/status.json"
  printf '{"job_id": "4244", "state": "FAILED", "exit_code": 3}\n' >"$study_dir/runs/1x2-r1/status.json"
  hpc_test_squeue_like_slurm ''
  local file
  for file in runs/1x2-r1/job.sh report.sh study.json; do
    rm -f "$stub_log"/*
    [[ $file != *.sh ]] || printf '\ntouch %q\n' "$ran" >>"$study_dir/$file"
    chmod 664 "$study_dir/$file"
    HPC_STUB_JOB_ID=5000 submit resubmit probe --failed
    assert_equal "$file -> $status" "$file -> 1"
    case $file in
      study.json) assert_equal "$stderr" "job_submitter.sh: the study's record $study_dir/study.json can be changed by others (mode 664): not read; nothing was submitted" ;;
      report.sh) [[ $stderr == *"the kept report script $study_dir/report.sh can be changed by others (mode 664): not run; the resubmission (jobs 5000) was cancelled" ]] || fail "$stderr" ;;
      *) [[ $stderr == *"the kept job script $study_dir/$file of run 1x2-r1 can be changed by others (mode 664): not run"* ]] || fail "$stderr" ;;
    esac
    [[ ! -e $ran ]] || fail "the planted command ran"
    chmod 600 "$study_dir/$file"
  done
  # Its own record: read (the report says every run failed: no run measured anything here).
  submit scaling-report probe
  assert_output --partial "report=$study_dir/report.md"
  chmod 664 "$study_dir/study.json"
  submit scaling-report probe
  assert_equal "$status" 1
  assert_equal "$stderr" "job_submitter.sh: the study's record $study_dir/study.json can be changed by others (mode 664): not read"
}
