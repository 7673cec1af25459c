# shellcheck shell=bash
# bench/map_chunked.bash: bench/map chunked N (sourced by bench/map; its header says what is
# measured): a chunked map of N one-line Python items against a bare array of the same width
# running the same items in a loop, in the same run.

# bench_wait_array ID: waits until every task of the array ID has ended (squeue forgets them).
bench_wait_array() {
  while [[ -n $(squeue -h -j "$1" -o %i 2>/dev/null) ]]; do sleep 0.2; done
}

# bench_chunked REPO N: the chunked case (bench/map's header) with the toolkit of REPO, one run
# of each; prints the times.
bench_chunked() {
  local repo=$1 n=$2 width=8 work project out id start k tasks t_floor t_toolkit t_plain plain_n python
  [[ $n =~ ^[1-9][0-9]*$ ]] || { echo "bench/map: chunked N: '$n' is not a positive whole number" >&2 && exit 2; }
  bash "$repo/hpc_files/local_cluster.sh" up >/dev/null
  export SLURM_CONF=${HPC_CLUSTER_DIR:-$repo/.local_cluster}/etc/slurm.conf HPC_CLUSTER=local
  work=$(mktemp -d "${TMPDIR:-/tmp}/hpc bench.XXXXXX")
  # shellcheck disable=SC2064 # the folder is fixed now
  trap "scancel --name=bench-chunk-floor 2>/dev/null; scancel --name='bench project-chunkbench' 2>/dev/null; \
    scancel --name='bench project-plainbench' 2>/dev/null; rm -rf -- '${work:?}'" EXIT
  project="$work/bench project"
  export SCRATCH=$work/scratch
  mkdir -p "$SCRATCH"
  bench_project "$repo" "$project"
  python=$project/virtual_env/bin/python
  [[ -x $python ]] || python=python3
  # --chunk auto's K for N items at this throttle (hpc_map_chunk_rule; MaxArraySize is larger).
  k=$(((n + width - 1) / width)) tasks=$(((n + k - 1) / k))
  # shellcheck disable=SC2016 # the task's own variable, expanded when it runs
  printf '#!/bin/bash\nt=$SLURM_ARRAY_TASK_ID\nfor ((i = t * %s; i < (t + 1) * %s && i < %s; i++)); do\n' \
    "$k" "$k" "$n" >"$work/floor.sh"
  printf '  %q -c pass\ndone\n' "$python" >>"$work/floor.sh"
  start=$(bench_now_us)
  id=$(sbatch --parsable --job-name=bench-chunk-floor --nodes=1 --ntasks-per-node=1 --cpus-per-task=1 --mem=1G \
    --time=00-01:00:00 --output=/dev/null --chdir="$project" --array="0-$((tasks - 1))%$width" "$work/floor.sh")
  bench_wait_array "${id%%;*}"
  t_floor=$(($(bench_now_us) - start))
  start=$(bench_now_us)
  out=$(bash "$project/hpc_files/job_submitter.sh" -y -g 0 --map-range "0-$((n - 1))" --chunk auto \
    --max-concurrent "$width" -e chunkbench 2>&1)
  id=$(sed -n 's/^Map [^ ]*: array job \([0-9]*\) .*/\1/p' <<<"$out")
  [[ -n $id ]] || { echo "bench/map: the chunked map was not submitted: $out" >&2 && exit 1; }
  bench_wait_array "$id"
  t_toolkit=$(($(bench_now_us) - start))
  local done_n
  done_n=$(cat "$SCRATCH/bench project/hpc_outputs/map/chunkbench/"*/tasks/*/status.json |
    grep -c '"state": "COMPLETED"')
  # For scale: a sixteenth of the items without --chunk (one array task per item).
  plain_n=$(((n + 15) / 16))
  start=$(bench_now_us)
  out=$(bash "$project/hpc_files/job_submitter.sh" -y -g 0 --map-range "0-$((plain_n - 1))" \
    --max-concurrent "$width" -e plainbench 2>&1)
  id=$(sed -n 's/^Map [^ ]*: array job \([0-9]*\) .*/\1/p' <<<"$out")
  bench_wait_array "$id"
  t_plain=$(($(bench_now_us) - start))
  awk -v n="$n" -v k="$k" -v t="$tasks" -v w="$width" -v f="$t_floor" -v c="$t_toolkit" -v d="$done_n" \
    -v pn="$plain_n" -v p="$t_plain" -v l="$(cut -d' ' -f1-3 /proc/loadavg)" 'BEGIN {
    printf "bench/map chunked: %d items (python -c pass), %d tasks of %d, %d at once; load %s\n", n, t, k, w, l
    printf "  floor: bare array, items in a loop      %8.1f s   1.00x\n", f / 1e6
    printf "  map --chunk auto (job_submitter)        %8.1f s   %.2fx   (target <= 2x)", c / 1e6, c / f
    printf "; %d items COMPLETED\n", d
    printf "  above the floor, per item of a task     %8.1f ms (wall)\n", (c - f) / 1e3 * t / n
    printf "  without --chunk: %d items, one task each %6.1f s", pn, p / 1e6
    printf "   (%.1f ms per item vs %.1f chunked)\n", p / 1e3 / pn, c / 1e3 / n
  }'
}
