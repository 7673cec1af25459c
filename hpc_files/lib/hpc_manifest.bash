# shellcheck shell=bash
# hpc_manifest.bash: placeholder until the manifest library lands: records nothing.

# hpc_manifest_write JOB_ID SCRIPT: records the submission (not yet).
hpc_manifest_write() { return 0; }

# hpc_manage_main COMMAND ARGS...: status, logs, cancel, resubmit (not yet).
hpc_manage_main() { hpc_die_usage "$1" "not available in this version of the toolkit"; }
