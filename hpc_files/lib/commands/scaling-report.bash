# shellcheck shell=bash
# Summary: a scaling study's report drawn again
# Usage: bash job_submitter.sh scaling-report EXP|PATH [--out DIR]
#
#   scaling-report EXP  Writes the report of experiment EXP's newest scaling study (submitted
#                       with --scaling-test) again, into the study's folder
#                       ${scratch_dir}/hpc_outputs/scaling/EXP/STUDY/.
#   scaling-report PATH The same for the study folder PATH (a path with a /; a copied one too).
#     --out DIR         Writes it into DIR instead: a new or empty folder, or an earlier report.
#   -h, --help          This text.
#
# Exit status: 0 written, 1 failed, 2 bad input (a folder without study.json, an experiment
# without a study).

# scaling-report.bash: the command 'scaling-report' (bash job_submitter.sh scaling-report EXP|PATH
# [--out DIR]): a scaling study's report drawn again (hpc_scaling.bash).

# What this file reads, set by the others: declared here, not set (values already there are
# kept), so that the linter knows each name and catches a misspelt one.
# hpc_common.bash: the library's folder.
declare -g hpc_lib_dir

# shellcheck source=hpc_files/lib/hpc_manage.bash
source "$hpc_lib_dir/hpc_manage.bash"
# shellcheck source=hpc_files/lib/hpc_group.bash
source "$hpc_lib_dir/hpc_group.bash"
# The report job's script (hpc_group.bash, hpc_plan_write_file) and the Python helpers' interpreter.
hpc_submission_load

# What the command reads, set by hpc_common.bash.
declare -g hpc_python_helpers_dir hpc_trusted_problem hpc_manage_dir

# hpc_command_scaling_report EXP|PATH [--out DIR]: the command: writes the report of
# experiment EXP's newest study, or of the study folder PATH (a copied one too), into the study
# or DIR. Exit 2 on a folder without study.json or an experiment without a study.
hpc_command_scaling_report() {
  local target='' out='' root py study=''
  local usage='usage: scaling-report EXP|PATH [--out DIR]'
  while (($#)); do
    case $1 in
      --out)
        (($# >= 2)) && [[ -n $2 ]] || hpc_die_usage "--out" "needs a folder; $usage"
        out=$2
        shift 2
        ;;
      -*) hpc_commands_die_unknown_option scaling-report "$1" ;;
      *)
        [[ -z $target ]] || hpc_die_usage "scaling-report" "takes one experiment or study folder; $usage"
        target=$1
        shift
        ;;
    esac
  done
  [[ -n $target ]] || hpc_die_usage "scaling-report" "needs an experiment or a study folder; $usage"
  if [[ $target == */* || $target == . || $target == .. ]]; then
    [[ -f $target/study.json ]] ||
      hpc_die_usage "scaling-report" \
        "'$target' has no study.json; accepted: a scaling study's folder, or an experiment with a study"
    study=$target
  else
    [[ $target =~ ^[A-Za-z0-9_.+-]+$ && $target != [.-]* ]] ||
      hpc_die_usage "scaling-report" \
        "'$target' is not an experiment name; accepted: an experiment (-e) or a study folder (a path with a /)"
    hpc_manage_locate
    root=${hpc_manage_dir%/*}/scaling/$target
    # The newest study folder, as resubmit --failed finds it.
    if hpc_group_newest "$root" study.json; then
      study=$hpc_group_dir
    else
      local msg="experiment '$target' has no scaling study under $root; accepted:"
      msg+=" an experiment submitted with --scaling-test, or a study folder"
      hpc_die_usage "scaling-report" "$msg"
    fi
  fi
  # The report is built from what the study's record says: read only as the user's own.
  hpc_trusted_check "$study/study.json" || hpc_die "the study's record $study/study.json $hpc_trusted_problem: not read"
  py=$(hpc_python_for_helpers) || exit 1
  PYTHONDONTWRITEBYTECODE=1 PYTHONPATH="$hpc_python_helpers_dir/src${PYTHONPATH:+:$PYTHONPATH}" \
    "$py" -m hpc_helpers.scaling_report "$study" ${out:+--out "$out"}
}
