# shellcheck shell=bash
# modes/single.bash: one job running the configs file's command once. Every hook is the core's
# (hpc_mode_any_*: docs/architecture.md, "Modes").

# hpc_mode_single_describe: one line on the mode.
hpc_mode_single_describe() {
  printf '%s\n' "one job running the configs file's command"
}
