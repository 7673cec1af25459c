# Helpers for the usage sampler's unit tests (usage_truth.bats, usage_task_end.bats): a fake
# job made of real processes, as SLURM's proctrack lists it. Needs T (the test's folder).

# fake_listpids STEP LOCALID GLOBALID: writes $T/listpids.sh, which answers scontrol listpids
# 4242 n1 as SLURM's proctrack/linuxproc would: the fake job is the process whose pid is in
# $T/root and its descendants, each listed in step STEP with LOCALID and GLOBALID (the batch
# step: batch - -; an srun step: 0 0 0).
fake_listpids() {
  local row
  printf -v row "printf '%%-8s %%-8s %%-8s %%-7s %%-7s\\\\n' \"\$p\" 4242 %s %s %s" "$1" "$2" "$3"
  cat >"$T/listpids.sh" <<EOF2
root=\$(<"\$T/root")
declare -A parent=()
for f in /proc/[0-9]*/stat; do
  { read -r s <"\$f"; } 2>/dev/null || continue
  rest=\${s##*) }
  read -r _ ppid _ <<<"\$rest"
  p=\${f#/proc/}
  parent[\${p%/stat}]=\$ppid
done
printf 'PID      JOBID    STEPID   LOCALID GLOBALID\n'
for p in "\${!parent[@]}"; do
  q=\$p
  while [[ -n \$q && \$q != 0 && \$q != "\$root" ]]; do q=\${parent[\$q]:-}; done
  [[ \$q != "\$root" ]] || $row
done
EOF2
}

# wait_for FILE: until FILE exists (60 s at most).
wait_for() {
  local deadline=$((SECONDS + 60))
  until [[ -e $1 ]]; do
    ((SECONDS < deadline)) || fail "never made: $1"
    sleep 0.1
  done
}
