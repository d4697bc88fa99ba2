#!/bin/bash
# One device call: sample the pending perf configs of the suites' operators on an H200
# (.gpu/tasks.tsv: op, configs, pending), plus the lg_group_norm what-runs probe (cubins the
# card loads for the backward f16 16x12x3x4096). Runs in the repository root of the copied tree.
set -u
T0=$(date +%s); BUDGET=${BUDGET:-540}; DEADLINE=$((T0 + BUDGET))
G=$PWD/.gpu
mkdir -p /tmp/T "$OUT/ops"
log() { echo "[$(( $(date +%s) - T0 ))s] $*" | tee -a "$OUT/call.txt"; }
tar -C /tmp/T -xJf "$G/cu13-tile.tar.xz"
tar -xJf "$G/results.tar.xz"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site "$G"/whl/*.whl
export PYTHONPATH=/tmp/site:$PWD PATH="/tmp/T/cu13/bin:$PATH" PYTHONUNBUFFERED=1
export CUTILE_TILEIRAS_PATH=/tmp/T/cu13/bin/tileiras TILEPORT_TILEIRAS=/tmp/T/cu13/bin/tileiras
unset CUDA_HOME
nvidia-smi --query-gpu=name,uuid,driver_version,clocks.max.sm --format=csv,noheader | tee -a "$OUT/call.txt"
DEV=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
log "setup done on $DEV ($(git rev-parse --short HEAD 2>/dev/null))"
probes() {
  # the probes: compile-only into empty caches of their own, the bytecode dumped (cubins as the card loads them)
  while read -r op cfgs; do
    P=/tmp/probe/$op; mkdir -p $P/jit $P/ct $P/bc
    TILEPORT_JIT_CACHE=$P/jit CUDA_TILE_CACHE_DIR=$P/ct CUDA_TILE_DUMP_BYTECODE=$P/bc \
      python3 -m tileport.gpu.bench --op $op --gpu required --compile-only --configs "$cfgs" > "$P/probe.log" 2>&1 < /dev/null
    log "probe $op rc=$? $(tail -1 "$P/probe.log")"
  done < "$G/probes.tsv"
  tar -C /tmp/probe -cJf "$OUT/probe.tar.xz" . 2>/dev/null
}
case "$DEV" in *H200*) ;; *) probes; log "not an H200: no benchmark (kept rows are the H200's)"; exit 0;; esac
# compile the chosen configs ahead, 8 processes at a time (tileiras on the CPU), then time one op at a time
cut -f1,2 "$G/tasks.tsv" | while IFS=$'\t' read -r op cfgs; do echo "$op $cfgs"; done > /tmp/tasks
xargs -P 8 -L 1 sh -c 'python3 -m tileport.gpu.bench --op "$0" --gpu required --compile-only --configs "$1" > /tmp/c-$0.log 2>&1; echo "$0 $(tail -1 /tmp/c-$0.log)"' < /tmp/tasks \
  | tee -a "$OUT/call.txt" > /dev/null &
CPID=$!
# the compile of later ops overlaps the timing of none: wait for it, but not past a third of the budget
while kill -0 $CPID 2>/dev/null && [ $(( $(date +%s) - T0 )) -lt $(( BUDGET / 3 )) ]; do sleep 2; done
kill $CPID 2>/dev/null; pkill -f -- "--compile-only" 2>/dev/null; sleep 1
log "compile-ahead done"
while read -r op cfgs; do
  left=$(( DEADLINE - $(date +%s) ))
  [ $left -lt 15 ] && { log "deadline: $op and later not started"; break; }
  python3 -m tileport.gpu.bench --op "$op" --gpu required --configs "$cfgs" --budget-s $(( left - 10 )) \
    > "$OUT/ops/bench-$op.log" 2>&1 < /dev/null
  log "$op rc=$? $(tail -1 "$OUT/ops/bench-$op.log" | cut -c1-200)"
  mkdir -p /tmp/ops/$op; cp results/$op/bench.json results/$op/bench.csv "$OUT/ops/bench-$op.log" /tmp/ops/$op/ 2>/dev/null
  tar -C /tmp -cJf "$OUT/ops.tar.xz.tmp" ops && mv "$OUT/ops.tar.xz.tmp" "$OUT/ops.tar.xz"
done < /tmp/tasks
rm -rf "$OUT/ops"
[ $(( DEADLINE - $(date +%s) )) -gt 60 ] && probes
log "end"
