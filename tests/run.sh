#!/usr/bin/env bash
# Usage: bash tests/run.sh [--no-install] [--no-cluster] [--no-lint] [--no-pytest] [--jobs N] [--clusters N] [--bats PATH]...
#
# The whole test suite: installs what it needs (tests/install_deps.sh), brings the local SLURM
# clusters up, runs the linters (shellcheck -x and shfmt -d on every shell file, ruff, mypy
# --strict), bats (tests/unit, and tests/integration on the clusters as soon as they are up,
# beside the rest, which then runs niced; the unit tests' own shells with set -u, see
# tests/helpers/strict_env.bash) and pytest (tests/python), and brings the
# clusters down again even when tests fail, if it was this run that brought them up. Prints each
# runner's own summary, each phase's wall time, the slowest files and tests, the wall time, then
# one line 'suite: N passed, N failed'; exits 1 when any check or test failed. shellcheck runs only
# on the files whose answer may have changed since it last passed (tests/shellcheck_keys.py), remembered
# in HPC_LINT_CACHE (default ~/.cache/hpc_toolkit/shellcheck; remove it to lint every file);
# mypy's cache is HPC_MYPY_CACHE (default ~/.cache/hpc_toolkit/mypy). Where HPC_TEST_KEEP_REPORTS
# names a folder, the run's JUnit reports are copied there at the end (to refresh the durations).
#
#   --no-install   skip tests/install_deps.sh
#   --no-cluster   do not start the clusters (integration tests then fail; use with --bats)
#   --no-lint      skip shellcheck, shfmt, ruff and mypy
#   --no-pytest    skip pytest
#   --jobs N       lint and unit test files N at a time [HPC_TEST_JOBS]; default: the CPUs + 2
#                  (some unit tests wait: on 2 cores, 3 at a time left them 12 % idle)
#   --clusters N   integration test files N at a time, each on a cluster of its own
#                  [HPC_TEST_CLUSTERS]; default 3
#   --bats PATH    run these bats files or folders instead of tests/unit and tests/integration
#                  (the files under tests/integration/ run on the clusters, beside the others)
#
# Side by side needs GNU parallel (bats --jobs): where it is missing the files run one at a time,
# except in CI (CI set), where that fails the suite. Clusters: the first lives in HPC_CLUSTER_DIR
# (default .local_cluster) on HPC_CLUSTER_PORT_BASE (default 17817), so a cluster already up for
# `make demo` serves; cluster K in .local_cluster_K on that base + 100 (K - 1). A test file picks
# its cluster from its GNU parallel job slot (tests/helpers/cluster.bash). When
# tests/integration/second_cluster.bats is among the bats paths, the second configuration
# (local_cluster.sh --config second) runs beside them in HPC_SECOND_CLUSTER_DIR (default
# .local_cluster_second) on HPC_SECOND_CLUSTER_PORT_BASE (default: the first base + 50). When a
# file named site_*.bats is, the site configuration (--config site: slurmdbd, preemption, limits)
# runs beside them in HPC_SITE_CLUSTER_DIR (default .local_cluster_site) on
# HPC_SITE_CLUSTER_PORT_BASE (default: the first base + 30); only those files use it.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

install=1 cluster=1 lint=1 pytest=1 bats_paths=()
jobs=${HPC_TEST_JOBS:-$(($(nproc) + 2))} clusters=${HPC_TEST_CLUSTERS:-3}
while (($#)); do
  case $1 in
    --no-install) install=0 ;;
    --no-cluster) cluster=0 ;;
    --no-lint) lint=0 ;;
    --no-pytest) pytest=0 ;;
    --bats | --jobs | --clusters)
      (($# >= 2)) || { echo "run.sh: $1: needs a value" >&2 && exit 2; }
      case $1 in
        --bats) bats_paths+=("$2") ;;
        --jobs) jobs=$2 ;;
        --clusters) clusters=$2 ;;
      esac
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
for n in "$jobs" "$clusters"; do
  [[ $n =~ ^[1-9][0-9]?$ ]] || { echo "run.sh: --jobs and --clusters take 1 to 99, got '$n'" >&2 && exit 2; }
done
((${#bats_paths[@]})) || bats_paths=(tests/unit tests/integration)

if ((install)); then
  bash tests/install_deps.sh
fi
# python3 itself, not pyenv's shim, for everything below (tests/helpers/python_direct.bash).
# shellcheck source=tests/helpers/python_direct.bash
source tests/helpers/python_direct.bash
hpc_test_python_direct

side_by_side=1
if ! command -v parallel >/dev/null; then
  if [[ -n ${CI:-} ]]; then
    echo "run.sh: GNU parallel is missing (apt-get install parallel, or tests/install_deps.sh)" >&2
    exit 1
  fi
  echo "run.sh: GNU parallel is missing: test files run one at a time" >&2
  side_by_side=0
fi

# The bats files of the paths, split: those under tests/integration/ need a cluster.
unit_files=() integration_files=() missing=()
integration_dir=$root/tests/integration
for path in "${bats_paths[@]}"; do
  if [[ ! -e $path ]]; then
    missing+=("$path")
    continue
  fi
  while IFS= read -r -d '' file; do
    file=$(realpath -- "$file")
    if [[ $file == "$integration_dir"/* ]]; then integration_files+=("$file"); else unit_files+=("$file"); fi
  done < <(if [[ -d $path ]]; then find "$path" -name '*.bats' -type f -print0 | sort -z; else printf '%s\0' "$path"; fi)
done

# longest_first DIR FILE...: prints FILEs, the longest first as DIR/durations has them (seconds,
# rounded, from a whole run's 'slowest files'), unlisted ones last: side by side, the last to
# start are then short.
longest_first() {
  local dir=$1 file
  shift
  for file in "$@"; do
    printf '%s\t%s\n' "$(awk -v f="${file##*/}" '$2 == f {print $1}' "$dir/durations" 2>/dev/null)" "$file"
  done | sort -t$'\t' -k1,1nr -k2,2 | cut -f2
}
if ((${#unit_files[@]} > 1)); then mapfile -t unit_files < <(longest_first "$root/tests/unit" "${unit_files[@]}"); fi
if ((${#integration_files[@]} > 1)); then
  mapfile -t integration_files < <(longest_first "$integration_dir" "${integration_files[@]}")
fi

((${#integration_files[@]} > 0 && side_by_side)) || clusters=1
((clusters <= ${#integration_files[@]} || ${#integration_files[@]} == 0)) || clusters=${#integration_files[@]}
first_dir=${HPC_CLUSTER_DIR:-$root/.local_cluster}
first_base=${HPC_CLUSTER_PORT_BASE:-17817}
cluster_list=''
for ((k = 1; k <= clusters; k++)); do
  if ((k == 1)); then
    cluster_list+="$first_dir $first_base"$'\n'
  else
    cluster_list+="$root/.local_cluster_$k $((first_base + 100 * (k - 1)))"$'\n'
  fi
done
export HPC_SECOND_CLUSTER_DIR=${HPC_SECOND_CLUSTER_DIR:-$root/.local_cluster_second}
export HPC_SECOND_CLUSTER_PORT_BASE=${HPC_SECOND_CLUSTER_PORT_BASE:-$((first_base + 50))}
export HPC_SITE_CLUSTER_DIR=${HPC_SITE_CLUSTER_DIR:-$root/.local_cluster_site}
export HPC_SITE_CLUSTER_PORT_BASE=${HPC_SITE_CLUSTER_PORT_BASE:-$((first_base + 30))}
wants_second=0 wants_site=0
for file in "${integration_files[@]}"; do
  [[ ${file##*/} != second_cluster.bats ]] || wants_second=1
  [[ ${file##*/} != site_*.bats ]] || wants_site=1
done

reports=$(mktemp -d)
# count PASSED FAILED LABEL: adds to the suite's counts (a file: the streams below are subshells);
# LABEL names what failed.
count() {
  printf '%s %s %s\n' "$1" "$2" "$3" >>"$reports/counts"
}
# record LABEL STATUS: counts one check (lint, a runner) that is not itself a test runner.
record() {
  if (($2 == 0)); then count 1 0 "$1"; else count 0 1 "$1"; fi
}
# phase NAME START: records the wall time of the phase NAME, begun at START (its $SECONDS), for the
# phases' table at the end (a file: some phases run in subshells).
phase() {
  printf '%s\t%s\n' "$1" "$((SECONDS - $2))" >>"$reports/phases"
}

# Clusters this run brought up ("DIR PORT_BASE" each), brought down at the end, tests failed or
# not; a cluster that was up before stays up.
started=()
stop_clusters() {
  local entry dir base
  for entry in ${started[@]+"${started[@]}"}; do
    read -r dir base <<<"$entry"
    bash hpc_files/local_cluster.sh --dir "$dir" --port-base "$base" down >/dev/null 2>&1 || true
  done
  [[ -z ${HPC_TEST_KEEP_REPORTS:-} ]] || cp -r -- "${reports:?}/." "$HPC_TEST_KEEP_REPORTS/" || true
  rm -rf -- "${reports:?}"
}
trap stop_clusters EXIT
# Every cluster of this run, "DIR PORT_BASE [CONFIG]" a line.
all_clusters=$cluster_list
((! wants_second)) || all_clusters+="$HPC_SECOND_CLUSTER_DIR $HPC_SECOND_CLUSTER_PORT_BASE second"$'\n'
((! wants_site)) || all_clusters+="$HPC_SITE_CLUSTER_DIR $HPC_SITE_CLUSTER_PORT_BASE site"$'\n'
# up_clusters: brings every cluster of this run up, all at once (each waits seconds for its
# nodes); prints what failed.
up_clusters() {
  local dir base config pid status=0
  local -a pids=()
  while read -r dir base config; do
    [[ -n $dir ]] || continue
    bash hpc_files/local_cluster.sh --dir "$dir" --port-base "$base" ${config:+--config "$config"} up >/dev/null &
    pids+=($!)
  done <<<"$all_clusters"
  for pid in "${pids[@]}"; do wait "$pid" || status=1; done
  return "$status"
}
if ((cluster && ${#integration_files[@]})); then
  while read -r dir base _; do
    [[ -n $dir ]] || continue
    bash hpc_files/local_cluster.sh --dir "$dir" --port-base "$base" status >/dev/null 2>&1 || started+=("$dir $base")
  done <<<"$all_clusters"
fi

# lint: shellcheck -x and shfmt -d on every shell file, ruff, mypy --strict: shfmt and ruff, and
# mypy, beside shellcheck (each a process of its own, independent of the others), so that the
# lint does not end with them one after another; their output follows shellcheck's.
lint() {
  local f status start pid
  local -a shell_files shfmt_files=() beside=()
  mapfile -t shell_files < <(
    git ls-files --cached --others --exclude-standard -- '*.sh' '*.bash' '*.bats' |
      while IFS= read -r f; do [[ -f $f && ! -L $f ]] && printf '%s\n' "$f"; done
    git ls-files --cached --others --exclude-standard | while IFS= read -r f; do
      [[ -f $f && ! -L $f && $f != *.* ]] && head -n 1 -- "$f" | grep -qE '^#!.*\b(ba)?sh\b' && printf '%s\n' "$f"
    done
  )
  # shfmt -d: the style of .editorconfig. The golden job scripts are the renderer's output,
  # compared byte for byte: not reformatted.
  for f in "${shell_files[@]}"; do [[ $f == tests/fixtures/submitter/golden/* ]] || shfmt_files+=("$f"); done
  {
    status=0
    shfmt -d "${shfmt_files[@]}" || status=1
    echo "shfmt: ${#shfmt_files[@]} files, status $status"
    record shfmt "$status"
    status=0
    ruff check python_helpers tests/python bench || status=1
    record ruff "$status"
  } >"$reports/lint-style.log" 2>&1 &
  beside+=($!)
  # mypy's cache in the user's cache folder, not the clone's .mypy_cache: a fresh clone (make
  # check's first run) then checks its files against what another clone cached (24 CPU-s cold,
  # under 1 warm); mypy compares each file's content, so a changed file is checked again.
  local mypy_cache=${HPC_MYPY_CACHE:-${XDG_CACHE_HOME:-${HOME:-$root}/.cache}/hpc_toolkit/mypy}
  {
    status=0 start=$SECONDS
    mypy --strict --cache-dir "$mypy_cache" python_helpers/src || status=1
    echo "mypy: status $status, $((SECONDS - start)) s"
    record mypy "$status"
  } >"$reports/lint-mypy.log" 2>&1 &
  beside+=($!)
  status=0 start=$SECONDS
  # Two passes of shellcheck, so that no file pays the dataflow analysis (extended analysis, two
  # thirds of a cold -x lint's CPU) for the libraries it follows: every file with -x and without
  # it (what it follows still defines and reads variables: SC2154, SC2034 and the rest see the
  # whole program; SC2086 is stricter without it, as no variable is known clean); then the shipped
  # files (all but tests/) alone, with it, for the checks only it makes (SC2218 SC2309 SC2317
  # SC2318 SC2319 SC2320 SC2324 SC2329), each file's own flow (docs/testing.md).
  local -a passes=("-x --extended-analysis=false"
    "--extended-analysis=true --include=SC2218,SC2309,SC2317,SC2318,SC2319,SC2320,SC2324,SC2329")
  local -a shipped_files=()
  for f in "${shell_files[@]}"; do [[ $f == tests/* ]] || shipped_files+=("$f"); done
  # One shellcheck per few files, JOBS at a time. Only the files whose answer may have changed
  # since it last passed: tests/shellcheck_keys.py keys each file by shellcheck's version, the
  # pass's options and the content of the file and of everything it may follow; a group of files
  # that passes leaves their keys in the cache, the user's (content, not place, decides: another
  # clone of the same files may use them).
  local cache=${HPC_LINT_CACHE:-${XDG_CACHE_HOME:-${HOME:-$root}/.cache}/hpc_toolkit/shellcheck}
  local -a todo=()
  local pass key path
  mkdir -p "$cache"
  for pass in 0 1; do
    if ((pass == 0)); then set -- "${shell_files[@]}"; else set -- "${shipped_files[@]}"; fi
    if printf '%s\0' "$@" |
      python3 tests/shellcheck_keys.py "$cache" "${passes[pass]}" >"$reports/shellcheck.todo"; then
      while IFS= read -r -d '' key && IFS= read -r -d '' path; do
        todo+=("${passes[pass]}" "$key" "$path")
      done <"$reports/shellcheck.todo"
    else
      status=1
    fi
  done
  # Without -x (the second pass), shellcheck still follows a file that its command line names
  # too: each file alone there, so that its answer is its own flow's, whatever files it is
  # checked with (and none pays the dataflow of another's libraries: 29 -> 24 CPU-s cold).
  # shellcheck disable=SC2016 # the script of bash -c: OPTIONS KEY PATH triples as its arguments
  ((${#todo[@]} == 0)) || printf '%s\0' "${todo[@]}" | xargs -0 -n 24 -P "$jobs" bash -c '
    cache=$1 rc=0
    shift
    while (($# >= 3)); do
      options=$1 keys=() files=()
      while (($# >= 3)) && [[ $1 == "$options" ]]; do
        keys+=("$2") files+=("$3") && shift 3
        [[ " $options " == *" -x "* ]] || break
      done
      read -ra words <<<"$options"
      if shellcheck "${words[@]}" -- "${files[@]}"; then
        for key in "${keys[@]}"; do : >"$cache/$key"; done
      else
        rc=1
      fi
    done
    exit "$rc"' _ "$cache" || status=1
  echo "shellcheck: ${#shell_files[@]} files, $((${#todo[@]} / 3)) checks, two passes (the others passed unchanged)," \
    "status $status, $((SECONDS - start)) s"
  record shellcheck "$status"
  for pid in "${beside[@]}"; do wait "$pid" || true; done
  cat "$reports/lint-style.log" "$reports/lint-mypy.log"
}

# run_bats NAME JOBS FILE...: one bats run over FILEs, JOBS files at a time (tests within a file
# one after another: they share what setup_file made), its TAP on stdout, its JUnit report in
# $reports/NAME; counts its tests.
run_bats() {
  local name=$1 n=$2 log status=0 ok not_ok
  shift 2
  local -a side=()
  ((n < 2)) || side=(--jobs "$n" --no-parallelize-within-files)
  echo "== bats $name: $# files${side[*]:+, $n at a time}"
  log=$reports/$name.tap
  mkdir -p "$reports/$name"
  # The unit tests run with set -u (tests/helpers/strict_env.bash): no second run, no extra cost.
  BASH_ENV=$root/tests/helpers/strict_env.bash \
    node_modules/bats/bin/bats --timing --formatter tap "${side[@]}" \
    --report-formatter junit --output "$reports/$name" "$@" | tee "$log" || status=$?
  ok=$(grep -c '^ok ' "$log" || true)
  not_ok=$(grep -c '^not ok ' "$log" || true)
  echo "bats $name: $ok passed, $not_ok failed"
  count "$ok" "$not_ok" "bats-$name"
  # bats failing before any test (a syntax error, a missing file) must fail the suite too.
  if ((status != 0 && not_ok == 0)); then record "bats-$name(exit-$status)" 1; fi
}

# run_pytest: pytest over tests/python, counted from its JUnit report. One worker per CPU
# (pytest-xdist) where there are more than two CPUs; on two or fewer, one process: each worker
# imports and collects everything again (about 20 CPU-s more than one process on two CPUs, which
# the lint and the unit tests beside it keep busy anyway). HPC_PYTEST_WORKERS sets the count
# (0: one process). The tests of one xdist_group run on one worker (--dist loadgroup): a module
# whose fixture starts torch in a child once for all its tests marks itself so, and the rest are
# shared out as they come.
run_pytest() {
  local junit=$reports/pytest.xml status=0 py_tests py_fail workers=auto
  (($(nproc) > 2)) || workers=0
  workers=${HPC_PYTEST_WORKERS:-$workers}
  python3 -m pytest -q -p no:cacheprovider -n "$workers" --dist loadgroup --junitxml="$junit" tests/python ||
    status=$?
  read -r py_tests py_fail < <(python3 -c '
import sys, xml.etree.ElementTree as ET
r = ET.parse(sys.argv[1]).getroot()
s = r if r.tag == "testsuite" else r.find("testsuite")
t = int(s.get("tests", 0)); f = int(s.get("failures", 0)) + int(s.get("errors", 0)); k = int(s.get("skipped", 0))
print(t - k, f)' "$junit" 2>/dev/null || echo "0 0")
  count "$((py_tests - py_fail))" "$py_fail" pytest
  # exit 5 is "no tests collected": a suite that ran nothing has failed too.
  if ((status != 0 && py_fail == 0)); then record "pytest(exit-$status)" 1; fi
}

# integration: brings the clusters up (unless --no-cluster), then runs the integration files on
# them, CLUSTERS at a time; a cluster that does not come up fails the suite.
integration() {
  local start status=0
  if ((cluster)); then
    start=$SECONDS
    up_clusters >"$reports/clusters.log" 2>&1 || status=$?
    phase "clusters up" "$start"
    if ((status)); then
      cat "$reports/clusters.log"
      echo "run.sh: a cluster did not come up"
      record "clusters" 1
      return 0
    fi
  fi
  export HPC_TEST_CLUSTER_LIST=$cluster_list
  local file site_pid=''
  local -a site=() rest=()
  for file in "${integration_files[@]}"; do
    if [[ ${file##*/} == site_*.bats ]]; then site+=("$file"); else rest+=("$file"); fi
  done
  start=$SECONDS
  if ((${#site[@]} && ${#rest[@]})); then
    # The site configuration's files, one after another in a lane of their own beside the rest:
    # they share one cluster and mostly wait (grace times, the controller forgetting a job), and
    # among the rest those that preempt would hold a slot waiting for another's lock.
    (
      run_bats integration-site 1 "${site[@]}" >"$reports/integration-site.log" 2>&1
      phase "integration (site lane)" "$start"
    ) &
    site_pid=$!
    run_bats integration "$clusters" "${rest[@]}"
    wait "$site_pid" || true
    cat "$reports/integration-site.log"
  else
    run_bats integration "$clusters" "${integration_files[@]}"
  fi
  phase integration "$start"
}

if ((${#missing[@]})); then
  echo "run.sh: no such bats file or folder: ${missing[*]}" >&2
  record "bats(missing)" 1
fi
# The integration tests start as soon as the clusters are up, beside what needs no cluster: the
# lint, the unit tests, pytest (side by side too; each prints its output when all three are done,
# in that order, then the integration tests' output follows, live from there on). Their waits are
# bounded: what needs no cluster then runs at a lower priority (nice 10), many processes as it has
# at once, so that it takes the CPU they leave while they wait for SLURM and does not stretch them.
integration_pid=''
if ((${#integration_files[@]} && side_by_side)); then
  # Made here, not by the child's redirection: the tail below may open it first.
  : >"$reports/integration.log"
  integration >"$reports/integration.log" 2>&1 &
  integration_pid=$!
fi
streams=()
((! lint)) || streams+=(lint)
((${#unit_files[@]} == 0)) || streams+=(unit)
((! pytest)) || streams+=(pytest)
pids=()
first_start=$SECONDS
for stream in ${streams[@]+"${streams[@]}"}; do
  {
    [[ -z $integration_pid ]] || renice -n 10 -p "$BASHPID" >/dev/null 2>&1 || true
    start=$SECONDS
    case $stream in
      lint) lint ;;
      unit) run_bats unit "$((side_by_side ? jobs : 1))" "${unit_files[@]}" ;;
      pytest) run_pytest ;;
    esac
    phase "$stream" "$start"
  } >"$reports/$stream.log" 2>&1 &
  pids+=($!)
  # Without GNU parallel, one after another.
  ((side_by_side)) || wait "$!" || true
done
echo "== ${streams[*]:-nothing}$( ((${#streams[@]} < 2 || ! side_by_side)) || echo ' side by side')$(
  [[ -z $integration_pid ]] || echo ', the integration tests beside them once the clusters are up'
)"
for pid in ${pids[@]+"${pids[@]}"}; do wait "$pid" || true; done
((${#streams[@]} < 2)) || phase "${streams[*]}$( ((side_by_side)) && echo ' (side by side)')" "$first_start"
for stream in ${streams[@]+"${streams[@]}"}; do
  echo "== $stream"
  cat "$reports/$stream.log"
done

if [[ -n $integration_pid ]]; then
  # Its output so far, then the rest as it comes, until it ends (tail reads to the end after).
  tail -n +1 -f --pid="$integration_pid" "$reports/integration.log"
  wait "$integration_pid" || true
elif ((${#integration_files[@]})); then
  integration
fi

echo "== phases (wall time, s)"
[[ ! -f $reports/phases ]] || awk -F'\t' '{printf "%6d  %s\n", $2, $1}' "$reports/phases"
echo "== timing"
python3 tests/slowest.py "$reports"/*/report.xml "$reports"/pytest.xml || true
echo "wall: $((SECONDS / 60)) min $((SECONDS % 60)) s"
read -r passed failed < <(awk '{p += $1; f += $2} END {print p + 0, f + 0}' "$reports/counts" 2>/dev/null || echo "0 0")
echo "suite: $passed passed, $failed failed"
if ((failed)); then
  echo "failed: $(awk '$2 > 0 {printf "%s ", $3}' "$reports/counts")" >&2
  exit 1
fi
