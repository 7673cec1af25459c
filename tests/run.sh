#!/usr/bin/env bash
# Usage: bash tests/run.sh [--no-install] [--no-cluster] [--no-lint] [--no-pytest] [--bats PATH]...
#
# The whole test suite: installs what it needs (tests/install_deps.sh), brings the local SLURM
# cluster up, runs the linters (shellcheck -x and shfmt -d on every shell file, ruff, mypy --strict), bats
# (tests/unit, then tests/integration on the cluster; the unit tests' own shells with set -u, see
# tests/helpers/strict_env.bash) and pytest (tests/python), and brings the
# cluster down again even when tests fail, if it was this run that brought it up.
# Prints each runner's own summary, then one line 'suite: N passed, N failed'; exits 1 when any
# check or test failed.
#
#   --no-install   skip tests/install_deps.sh
#   --no-cluster   do not start the cluster (integration tests then fail; use with --bats)
#   --no-lint      skip shellcheck, shfmt, ruff and mypy
#   --no-pytest    skip pytest
#   --bats PATH    run these bats files or folders instead of tests/unit and tests/integration
#
# The cluster lives in HPC_CLUSTER_DIR (default .local_cluster) on HPC_CLUSTER_PORT_BASE. When
# tests/integration/second_cluster.bats is among the bats paths, the second configuration
# (local_cluster.sh --config second) runs beside it in HPC_SECOND_CLUSTER_DIR (default
# .local_cluster_second) on HPC_SECOND_CLUSTER_PORT_BASE (default: the first's base + 50), brought
# down at the end too if this run started it.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

install=1 cluster=1 lint=1 pytest=1 bats_paths=()
while (($#)); do
  case $1 in
    --no-install) install=0 ;;
    --no-cluster) cluster=0 ;;
    --no-lint) lint=0 ;;
    --no-pytest) pytest=0 ;;
    --bats)
      (($# >= 2)) || { echo "run.sh: --bats: needs a path" >&2 && exit 2; }
      bats_paths+=("$2")
      shift
      ;;
    -h | --help)
      sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "${BASH_SOURCE[0]}"
      exit 0
      ;;
    *) echo "run.sh: $1: unknown option; see --help" >&2 && exit 2 ;;
  esac
  shift
done
((${#bats_paths[@]})) || bats_paths=(tests/unit tests/integration)

passed=0 failed=0
failures=()
# record NAME STATUS: counts one check (lint, a runner) that is not itself a test runner.
record() {
  if (($2 == 0)); then passed=$((passed + 1)); else failed=$((failed + 1)) && failures+=("$1"); fi
}

if ((install)); then
  bash tests/install_deps.sh
fi

export HPC_SECOND_CLUSTER_DIR=${HPC_SECOND_CLUSTER_DIR:-$root/.local_cluster_second}
export HPC_SECOND_CLUSTER_PORT_BASE=${HPC_SECOND_CLUSTER_PORT_BASE:-$((${HPC_CLUSTER_PORT_BASE:-17817} + 50))}
second=(--dir "$HPC_SECOND_CLUSTER_DIR" --port-base "$HPC_SECOND_CLUSTER_PORT_BASE")
# wants_second: whether a bats path is (or holds) the second configuration's test file.
wants_second() {
  local path file
  file=$(realpath tests/integration/second_cluster.bats)
  for path in "${bats_paths[@]}"; do
    path=$(realpath -- "$path" 2>/dev/null) || continue
    [[ $file == "$path" || $file == "$path"/* ]] && return 0
  done
  return 1
}

started_cluster=0 started_second=0
stop_cluster() {
  if ((started_second)); then bash hpc_files/local_cluster.sh "${second[@]}" down || true; fi
  if ((started_cluster)); then bash hpc_files/local_cluster.sh down || true; fi
}
trap stop_cluster EXIT
if ((cluster)); then
  if ! bash hpc_files/local_cluster.sh status >/dev/null 2>&1; then started_cluster=1; fi
  bash hpc_files/local_cluster.sh up
  if wants_second; then
    if ! bash hpc_files/local_cluster.sh "${second[@]}" status >/dev/null 2>&1; then started_second=1; fi
    bash hpc_files/local_cluster.sh "${second[@]}" --config second up
  fi
fi
export SLURM_CONF=${HPC_CLUSTER_DIR:-$root/.local_cluster}/etc/slurm.conf

if ((lint)); then
  echo "== lint"
  mapfile -t shell_files < <(
    git ls-files --cached --others --exclude-standard -- '*.sh' '*.bash' '*.bats' |
      while IFS= read -r f; do [[ -f $f ]] && printf '%s\n' "$f"; done
    git ls-files --cached --others --exclude-standard | while IFS= read -r f; do
      [[ -f $f && $f != *.* ]] && head -n 1 -- "$f" | grep -qE '^#!.*\b(ba)?sh\b' && printf '%s\n' "$f"
    done
  )
  status=0 start=$SECONDS
  shellcheck -x "${shell_files[@]}" || status=1
  echo "shellcheck: ${#shell_files[@]} files, status $status, $((SECONDS - start)) s"
  record shellcheck "$status"
  # shfmt -d: the style of .editorconfig. The golden job scripts are the renderer's output,
  # compared byte for byte: not reformatted.
  status=0
  shfmt_files=()
  for f in "${shell_files[@]}"; do [[ $f == tests/fixtures/submitter/golden/* ]] || shfmt_files+=("$f"); done
  shfmt -d "${shfmt_files[@]}" || status=1
  echo "shfmt: ${#shfmt_files[@]} files, status $status"
  record shfmt "$status"
  status=0
  ruff check python_helpers tests/python bench || status=1
  record ruff "$status"
  status=0
  mypy --strict python_helpers/src || status=1
  record mypy "$status"
fi

echo "== bats ${bats_paths[*]}"
bats_log=$(mktemp)
status=0
reports=$(mktemp -d)
# The unit tests run with set -u (tests/helpers/strict_env.bash): no second run, no extra cost.
BASH_ENV=$root/tests/helpers/strict_env.bash \
  node_modules/bats/bin/bats --recursive --timing --formatter tap \
  --report-formatter junit --output "$reports" "${bats_paths[@]}" | tee "$bats_log" || status=$?
bats_ok=$(grep -c '^ok ' "$bats_log" || true)
bats_not_ok=$(grep -c '^not ok ' "$bats_log" || true)
rm -f "$bats_log"
echo "bats: $bats_ok passed, $bats_not_ok failed"
passed=$((passed + bats_ok))
failed=$((failed + bats_not_ok))
# bats failing before any test (a syntax error, a missing file) must fail the suite too.
if ((status != 0 && bats_not_ok == 0)); then record "bats (exit $status)" 1; fi
((bats_not_ok == 0)) || failures+=("bats")

if ((pytest)); then
  echo "== pytest"
  junit=$reports/pytest.xml
  status=0
  python3 -m pytest -q -p no:cacheprovider --junitxml="$junit" tests/python || status=$?
  read -r py_tests py_fail < <(python3 -c '
import sys, xml.etree.ElementTree as ET
r = ET.parse(sys.argv[1]).getroot()
s = r if r.tag == "testsuite" else r.find("testsuite")
t = int(s.get("tests", 0)); f = int(s.get("failures", 0)) + int(s.get("errors", 0)); k = int(s.get("skipped", 0))
print(t - k, f)' "$junit" 2>/dev/null || echo "0 0")
  passed=$((passed + py_tests - py_fail))
  failed=$((failed + py_fail))
  ((py_fail == 0)) || failures+=("pytest")
  # exit 5 is "no tests collected": a suite that ran nothing has failed too.
  if ((status != 0 && py_fail == 0)); then record "pytest (exit $status)" 1; fi
fi

echo "== timing"
python3 tests/slowest.py "$reports"/*.xml || true
rm -rf -- "${reports:?}"
echo "wall: $((SECONDS / 60)) min $((SECONDS % 60)) s"
echo "suite: $passed passed, $failed failed"
if ((failed)); then
  echo "failed: ${failures[*]}" >&2
  exit 1
fi
