#!/usr/bin/env bash
# this session's device calls: bench --compile-only in parallel processes (warm-tasks), then the
# --pending-only benchmarks of bench-ops in one process until DL s from the call's start
export START=$(date +%s)
G=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
nvidia-smi -L
if [ "${WARM:-1}" = 1 ]; then T=${TW:-380} P=${P:-15} bash "$G/run.sh" warm | tail -${WTAIL:-40}; fi
DL=${DL:-585} bash "$G/run.sh" multi ${BENCHOPS:-$(cat "$G/bench-ops")}
echo "call wall $(( $(date +%s) - START )) s"
