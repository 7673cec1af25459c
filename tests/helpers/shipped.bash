# shellcheck shell=bash
# Loaded by the tests that read the shipped code as text (style.bats, facts.bats,
# slurm_client.bats), from the repository's root.

# shipped_bash: prints the toolkit's shipped Bash files (not tests), one a line.
shipped_bash() {
  git ls-files -- 'hpc_files/*' 'plai_cleanups/*' 'virtual_env_hpc_files/*' 'singularity_hpc_files/*' |
    while IFS= read -r f; do
      [[ $f == *.bash || $f == *.sh ]] || head -n 1 -- "$f" | grep -qE '^#!.*\b(ba)?sh\b' || continue
      printf '%s\n' "$f"
    done
}
