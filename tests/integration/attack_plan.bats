#!/usr/bin/env bats
# Attacks on a job's plan file (hpc_files/lib/hpc_job.bash: hpc_job_plan_load) on the local
# cluster: replaced before the job starts by a link to a good copy, a FIFO, a folder, a copy that
# others can write, or removed, the job ends FAILED with one line naming the plan file in its
# log, never sources what it found, never hangs, and follows nothing.
# Set by hpc_submit_job (helpers/cluster.bash); declared for shellcheck.
declare -g job_id job_out

bats_require_minimum_version 1.5.0

setup_file() {
  load '../helpers/common'
  load '../helpers/cluster'
  hpc_test_project "plan project"
  rm -f -- "$PROJECT/requirements.txt"
  hpc_warm_venv "$PROJECT" 'python probe.py env' -e warm
}

setup() {
  load '../helpers/common'
  load '../helpers/cluster'
}

# plan_of SCRIPT: the plan file that the kept job script SCRIPT names (hpc_job_main PATH).
plan_of() {
  local line
  line=$(grep '^hpc_job_main ' "$1")
  line=${line#hpc_job_main }
  printf '%s\n' "${line//\\ / }"
}

@test "a plan file replaced before the job starts (a link to a good copy, a FIFO, a folder, a copy others can write, removed): FAILED with the plan's line in the log; nothing sourced, no hang" {
  local how plan state ids=() outs=() plans=() hows=(link fifo folder open gone) i
  hpc_configs "$PROJECT" 'python probe.py env'
  for how in "${hows[@]}"; do
    hpc_submit_held "$PROJECT" -g 0 -e "tamper-$how"
    plan=$(plan_of "${job_out%.out}.sh")
    [[ -f $plan ]] || fail "no plan file $plan"
    cp -- "$plan" "$BATS_TEST_TMPDIR/good-$how.plan"
    printf 'touch %q\n' "$BATS_TEST_TMPDIR/ran-$how" >>"$BATS_TEST_TMPDIR/good-$how.plan"
    rm -- "$plan"
    case $how in
      link) ln -s "$BATS_TEST_TMPDIR/good-$how.plan" "$plan" ;;
      fifo) mkfifo "$plan" ;;
      folder) mkdir "$plan" ;;
      open) cp -- "$BATS_TEST_TMPDIR/good-$how.plan" "$plan" && chmod 666 "$plan" ;;
      gone) ;;
    esac
    ids+=("$job_id") outs+=("$job_out") plans+=("$plan")
  done
  scontrol release "${ids[@]}"
  for i in "${!ids[@]}"; do
    hpc_wait_job "${ids[i]}" 120
    state=$(hpc_job_state "${ids[i]}")
    [[ $state == "FAILED 1:0" ]] || fail "${hows[i]}: job ${ids[i]} ended $state: $(cat "${outs[i]}")"
    run grep -F "FAILED at step 'plan': the plan file '${plans[i]}'" "${outs[i]}"
    assert_success
    [[ ! -e $BATS_TEST_TMPDIR/ran-${hows[i]} ]] || fail "${hows[i]}: the replaced plan was sourced"
  done
}
