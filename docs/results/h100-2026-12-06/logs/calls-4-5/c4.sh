#!/usr/bin/env bash
# this session's device calls: GPU tests of TESTOPS (parallel) beside bench --compile-only of warm-tasks,
# then the --pending-only benchmarks of bench-ops in one process until DL s from the call's start
export START=$(date +%s)
G=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
nvidia-smi -L
bash "$G/run.sh" setup
if [ -n "${TESTOPS:-}" ]; then (T=${TT:-240} P=8 bash "$G/run.sh" test $TESTOPS > /tmp/log.testphase 2>&1) & fi
if [ "${WARM:-1}" = 1 ]; then T=${TW:-200} P=${P:-12} bash "$G/run.sh" warm | tail -${WTAIL:-15}; fi
wait
cat /tmp/log.testphase 2>/dev/null
echo "pre-bench phase $(( $(date +%s) - START )) s"
DL=${DL:-585} bash "$G/run.sh" multi ${BENCHOPS:-$(cat "$G/bench-ops")}
echo "call wall $(( $(date +%s) - START )) s"
