#!/usr/bin/env bats
# QOS limits on the site configuration (local_cluster.sh --config site; its QOS 'limited':
# MaxSubmitJobsPerUser=4): a map larger than the limit is refused by SLURM at submission; the
# submitter says SLURM's reason in one line and leaves nothing behind.
# shellcheck disable=SC2016 # configs lines are single-quoted on purpose: the job expands them

# Set by hpc_submit_job (helpers/cluster.bash); declared for shellcheck.
declare -g job_id

bats_require_minimum_version 1.5.0

setup_file() {
  load '../helpers/common'
  load '../helpers/cluster'
  load '../helpers/site'
  hpc_site_cluster_use
  hpc_test_project "limits project"
  cp "$HPC_ROOT/tests/fixtures/map/featurize.py" "$PROJECT/"
  hpc_warm_venv "$PROJECT" 'python probe.py exit 0' -e warm
}

setup() {
  load '../helpers/common'
  load '../helpers/cluster'
  load '../helpers/site'
  outputs="$SCRATCH/limits project/hpc_outputs"
}

@test "site: a map beyond the QOS's MaxSubmitJobsPerUser: one line with SLURM's reason and what to do; nothing submitted, recorded or made" {
  local before
  hpc_site_lock qos
  printf '%s\n' a b c d e f >"$BATS_TEST_TMPDIR/items.txt"
  hpc_configs "$PROJECT" 'python featurize.py --index ${map_index} --item "${map_item}" --out ${task_dir}'
  before=$(find "$outputs" "$SCRATCH/limits project" | sort)
  SBATCH_QOS=limited run --separate-stderr bash "$PROJECT/hpc_files/job_submitter.sh" -y -g 0 \
    --map-over "$BATS_TEST_TMPDIR/items.txt" -e bigmap </dev/null
  assert_equal "$status" 1
  assert_equal "${#stderr_lines[@]}" 1
  [[ $stderr == "job_submitter.sh: sbatch refused the job: "*QOSMaxSubmitJobPerUserLimit*"; "*"Job violates accounting/QOS policy"*"sacctmgr show qos"* ]] ||
    fail "not one line with SLURM's reason and the way out: $stderr"
  assert_equal "$(find "$outputs" "$SCRATCH/limits project" | sort)" "$before"
  run squeue -h -n "limits project-bigmap"
  assert_output ''
}

@test "site: a job held by the QOS's MaxJobsPerUser: status shows it PENDING, held by that limit" {
  local ids=() i
  hpc_site_lock qos
  cp "$HPC_ROOT/tests/fixtures/manage/tasks.py" "$PROJECT/"
  hpc_configs "$PROJECT" 'python tasks.py sleep 120'
  # The QOS lets 2 of them run at once: the third waits for a limit, not for resources.
  for i in 1 2 3; do
    SBATCH_QOS=limited hpc_submit_job "$PROJECT" -g 0 -e "held$i"
    ids+=("$job_id")
  done
  local start=$SECONDS
  until [[ $(squeue -h -j "${ids[2]}" -o %r) == QOSMaxJobsPerUserLimit ]]; do
    ((SECONDS - start < 60)) || fail "job ${ids[2]} not held by QOSMaxJobsPerUserLimit: $(squeue -h -j "${ids[2]}" -o '%T %r')"
    sleep 0.5
  done
  run --separate-stderr bash "$PROJECT/hpc_files/job_submitter.sh" status held3
  assert_equal "$status" 0
  local want="${ids[2]} held3 venv-none PENDING (held by a limit of the QOS or association: QOSMaxJobsPerUserLimit) -"
  [[ $(grep -E "^${ids[2]} " <<<"$output" | tr -s ' ') == "$want "* ]] || fail "status does not say the limit: $output"
}

teardown() {
  local i
  for i in 1 2 3; do scancel --name="limits project-held$i" 2>/dev/null || true; done
}
