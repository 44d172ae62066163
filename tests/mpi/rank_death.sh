#!/usr/bin/env bash
# A rank that dies while the other waits in a collective ends the whole run:
# mpirun returns non-zero within seconds (not at the 60 s guard) and what it
# prints names the rank. Each way of dying (an error returned from main, an
# explicit abortAll, SIGKILL) with rank 0 waiting in a blocking all-reduce
# and in each kind of bucket (a gradient mean, a sharded step's
# reduce-scatter and all-gather).
#   rank_death.sh MPIRUN CommMpiRankDeath
set -u
mpirun="$1" prog="$2"
fail=0
for how in error abort kill; do
  for where in allreduce bucket scatter gather; do
    start=$(date +%s%N)
    out=$(timeout 60 "$mpirun" -np 2 --oversubscribe "$prog" "$how" "$where" 2>&1)
    rc=$?
    ms=$((($(date +%s%N) - start) / 1000000))
    case "$how" in
      kill) names='process rank 1 .* exited on signal 9' ;;
      # Open MPI's "MPI_ABORT was invoked on rank 1" is sometimes lost
      # (ORTE_ERROR_LOG ... show_help.c) when the job ends first; tcc's
      # own line is written before the abort.
      *) names='tcc: MPI rank 1 of 2 failed (exit status [13])' ;;
    esac
    why=""
    if [ "$rc" -eq 0 ]; then why="mpirun returned 0"
    elif [ "$rc" -eq 124 ]; then why="the run hung (killed after 60 s)"
    elif [ "$ms" -gt 15000 ]; then why="took $ms ms"
    elif ! grep -q "$names" <<<"$out"; then why="output does not name rank 1"
    elif [ "$how" = error ] && ! grep -q "error: rank 1 failed on purpose" <<<"$out"; then
      why="rank 1's error is not in the output"
    fi
    if [ -n "$why" ]; then
      echo "FAIL $how/$where: $why (rc $rc)"; echo "$out"; fail=1
    else
      echo "ok   $how/$where: rc $rc after $ms ms"
    fi
  done
done
exit $fail
