#!/usr/bin/env bats
# The documentation cannot drift: README.md is the short front door (at most 210 lines, opening
# with the two commands CI depends on), every guide it links exists, and every --option named
# in README.md and the guides (docs/*.md but docs/architecture.md) is one that a --help text
# lists: job_submitter.sh's, each command's, local_cluster.sh's, demo.sh's, tests/run.sh's,
# plai_cleanups/submit_plai_cleanup's, bench/staging's usage line. Options of other programs
# (torchrun, srun, sbatch, apptainer, ...) that the docs name are listed in FOREIGN below.
# No cluster: --help reaches no SLURM client.

bats_require_minimum_version 1.5.0

setup() {
  load '../helpers/common'
}

# Options of other programs that the docs name, each where it belongs.
FOREIGN=(
  # torchrun / accelerate launch (the launchers' command lines)
  --nnodes --nproc_per_node --no-python --node_rank --master_addr --standalone
  --multi_gpu --num_machines --machine_rank --num_processes --main_process_ip
  --main_process_port --no_python
  # sbatch, srun, scontrol
  --signal --exclusive --comment --test-only --overlap --label --parsable --nodelist --wait
  --batch --array --dependency --no-requeue --open-mode
  # apptainer
  --nv --cleanenv --containall --no-home --writable-tmpfs --bind --fakeroot
  # pytest-xdist
  --dist
  # the lint's two ShellCheck passes (tests/run.sh)
  --extended-analysis --include
  # wandb, rm
  --count --one-file-system
  # the example programs' own options, in configs file lines
  --ckpt --model_id --seed --out
  # the typo docs/troubleshooting.md shows on purpose
  --num-node
)

# doc_files: README.md and the guides, one path a line.
doc_files() {
  local file
  printf '%s\n' "$HPC_ROOT/README.md"
  for file in "$HPC_ROOT"/docs/*.md; do
    [[ $file == */architecture.md ]] || printf '%s\n' "$file"
  done
}

@test "README.md opens with the title, the fresh-machine line and the two commands, and has at most 210 lines" {
  local readme=$HPC_ROOT/README.md
  run sed -n '1p;3p;5,6p' "$readme"
  assert_output "# hpc toolkit: from a laptop project to a SLURM cluster
On a fresh Debian 12 machine, as root, from this folder:
    make demo     # the main job: a 2-node x 2-GPU torchrun DDP job on the embedded SLURM cluster
    make test     # the whole test suite: installs what it needs, cluster up, lint, bats, pytest, cluster down"
  local lines
  lines=$(wc -l <"$readme")
  ((lines <= 210)) || fail "README.md has $lines lines (at most 210)"
}

@test "README.md links every guide, and every guide it links exists and has a runnable example" {
  local guide link found
  local -a links
  mapfile -t links < <(grep -oE '\]\(docs/[A-Za-z0-9_.-]+\.md\)' "$HPC_ROOT/README.md" | sed 's/^](//; s/)$//' | sort -u)
  ((${#links[@]} > 0)) || fail "README.md links no guide"
  for link in "${links[@]}"; do
    [[ -f $HPC_ROOT/$link ]] || fail "README.md links $link, which does not exist"
  done
  for guide in launchers staging time-limits sweeps map-gather scaling containers cluster-profiles cleanup troubleshooting; do
    found=0
    for link in "${links[@]}"; do
      [[ $link != "docs/$guide.md" ]] || found=1
    done
    ((found)) || fail "README.md does not link docs/$guide.md"
    grep -qE '^(    |```bash)' "$HPC_ROOT/docs/$guide.md" || fail "docs/$guide.md has no example block"
  done
}

@test "every --option that README.md and the guides name is one a --help lists (or another program's, FOREIGN)" {
  local help option file known
  local -a missing=()
  help=$(
    cd "$HPC_ROOT" || exit 1
    bash hpc_files/job_submitter.sh --help
    for file in hpc_files/lib/commands/*.bash; do
      file=${file##*/}
      bash hpc_files/job_submitter.sh "${file%.bash}" --help
    done
    bash hpc_files/local_cluster.sh --help
    bash hpc_files/demo.sh --help
    bash tests/run.sh --help
    python3 tests/slowest.py --help
    bash plai_cleanups/submit_plai_cleanup --help
    bash bench/staging --help 2>&1 || true
  ) || fail "a --help failed"
  known=$(grep -oE -- '--[A-Za-z][A-Za-z0-9_-]*' <<<"$help" | sort -u)
  while IFS= read -r option; do
    grep -qxF -- "$option" <<<"$known" && continue
    [[ " ${FOREIGN[*]} " == *" $option "* ]] && continue
    missing+=("$option ($(doc_files | xargs -d "\n" grep -lE -- "$option([^A-Za-z0-9_-]|\$)" | sed "s|^$HPC_ROOT/||" | head -n 1))")
  done < <(doc_files | xargs -d "\n" grep -ohE -- '(^|[^A-Za-z0-9_-])--[A-Za-z][A-Za-z0-9_-]*' | sed 's/^[^-]*--/--/' | sort -u)
  ((${#missing[@]} == 0)) || fail "options no --help lists: ${missing[*]}"
}
