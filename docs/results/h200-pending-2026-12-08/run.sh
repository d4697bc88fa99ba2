#!/bin/bash
# One device call: time pending perf configs of suite operators on an H200 (README.md beside this).
# $TASKS (default .gpu/tasks.tsv): op <TAB> mode (configs|pending) <TAB> configs <TAB> cap seconds
set -u
T0=$(date +%s); BUDGET=${BUDGET:-540}; DEADLINE=$((T0 + BUDGET))
G=$PWD/.gpu
mkdir -p /tmp/T "$OUT"
log() { echo "[$(( $(date +%s) - T0 ))s] $*" | tee -a "$OUT/call.txt"; }
if [ ! -x /tmp/T/cu13/bin/tileiras ]; then
  tar -C /tmp/T -xJf "$G/cu13-tile.tar.xz"
  tar -xJf "$G/results.tar.xz"
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site "$G"/whl/*.whl
fi
export PYTHONPATH=/tmp/site:$PWD PATH="/tmp/T/cu13/bin:$PATH" PYTHONUNBUFFERED=1
export CUTILE_TILEIRAS_PATH=/tmp/T/cu13/bin/tileiras TILEPORT_TILEIRAS=/tmp/T/cu13/bin/tileiras
unset CUDA_HOME
nvidia-smi --query-gpu=name,uuid,driver_version,clocks.max.sm --format=csv,noheader | tee -a "$OUT/call.txt"
DEV=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
log "setup done on $DEV"
case "$DEV" in *H200*) ;; *) log "not an H200: no benchmark (kept rows are the H200's)"; exit 0;; esac
TASKS=${TASKS:-$G/tasks.tsv}
# compile ahead, 8 processes (tileiras on the CPU); mode 'pending' compiles the listed configs too
xargs -P 8 -L 1 sh -c 'python3 -m tileport.gpu.bench --op "$0" --gpu required --compile-only --configs "$2" > /tmp/c-$0.log 2>&1; echo "$0 $(tail -1 /tmp/c-$0.log | cut -c1-150)"' < <(cut -f1-3 "$TASKS" | tr '\t' ' ') \
  | tee -a "$OUT/call.txt" > /dev/null &
CPID=$!
while kill -0 $CPID 2>/dev/null && [ $(( $(date +%s) - T0 )) -lt $(( BUDGET * 2 / 5 )) ]; do sleep 2; done
kill $CPID 2>/dev/null; pkill -f -- "--compile-only" 2>/dev/null; sleep 1
log "compile-ahead done"
mkdir -p /tmp/ops
while IFS=$'\t' read -r op mode cfgs cap; do
  left=$(( DEADLINE - $(date +%s) ))
  [ $left -lt 20 ] && { log "deadline: $op and later not started"; break; }
  if [ "$mode" = pending ]; then sel="--pending-only"; else sel="--configs $cfgs"; fi
  python3 -m tileport.gpu.bench --op "$op" --gpu required $sel --budget-s $(( left - 12 < cap ? left - 12 : cap )) \
    > "/tmp/ops/bench-$op.log" 2>&1 < /dev/null
  log "$op rc=$? $(tail -1 "/tmp/ops/bench-$op.log" | cut -c1-220)"
  mkdir -p /tmp/ops/$op; cp results/$op/bench.json results/$op/bench.csv /tmp/ops/$op/ 2>/dev/null
  tar -C /tmp -cJf "$OUT/ops.tar.xz.tmp" ops && mv "$OUT/ops.tar.xz.tmp" "$OUT/ops.tar.xz"
done < "$TASKS"
log "end"
