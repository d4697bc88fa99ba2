#!/usr/bin/env bash
# on the device, from the repo root:
#   bash .gpu/run.sh test OP...            GPU test, $P at a time, whole phase cut at $T s
#   bash .gpu/run.sh bench B OP...         gpu.bench --pending-only --budget-s B, one at a time, no start past $DL s
#   bash .gpu/run.sh mut OP...             mutation_test, one process per operator, cut at $T s
set -uo pipefail
G=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
R=$(pwd)
mode=$1; shift
if [ ! -x /tmp/T/cu13/bin/tileiras ]; then
  [ -f "$G/cu13-tile.tar.xz" ] || { echo "no tileiras here and none carried"; exit 3; }
  mkdir -p /tmp/T && tar -C /tmp/T -xJf "$G/cu13-tile.tar.xz"
fi
[ -d /tmp/site ] || python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site "$G"/whl/*.whl
for t in "$G"/results*.tar.xz; do [ -f "$t" ] && tar --skip-old-files -xJf "$t"; done
# verdicts of earlier calls: only those this machine lacks (a warm machine keeps newer ones)
[ -f "$G/verdicts.tar.xz" ] && tar --skip-old-files -xJf "$G/verdicts.tar.xz"
export PYTHONPATH=/tmp/site PATH="/tmp/T/cu13/bin:$PATH" PYTHONUNBUFFERED=1
export CUTILE_TILEIRAS_PATH=/tmp/T/cu13/bin/tileiras TILEPORT_TILEIRAS=/tmp/T/cu13/bin/tileiras
unset CUDA_HOME
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader
mkdir -p /tmp/log
[ "$mode" = setup ] && { echo "setup done"; exit 0; }
pack() { (cd "$R" && tar -czf "$OUT/res.tgz" /tmp/log $(ls -d results/*/test.json results/*/bench.json results/*/bench.csv results/mutation/*/*.gpu.json 2>/dev/null) 2>/dev/null); }
export START=${START:-$(date +%s)}
if [ "$mode" = test ]; then
  printf '%s\n' "$@" | timeout "${T:-300}" xargs -P "${P:-7}" -I{} bash -c 'timeout 280 python3 -m tileport.gpu.test --op {} --gpu required > /tmp/log/test-{}.log 2>&1; echo "{} rc=$? $(tail -1 /tmp/log/test-{}.log | cut -c1-200)"'
  pack
elif [ "$mode" = warm ]; then
  # bench --compile-only, one process per line of warm-tasks ("OP K/N"), P at a time, cut at T s
  timeout "${T:-400}" xargs -P "${P:-15}" -L1 bash -c 'f=/tmp/log/warm-$0-${1/\//of}.log; timeout 400 python3 -m tileport.gpu.bench --op $0 --gpu required --compile-only --shard $1 > $f 2>&1; echo "$0 $1 rc=$? $(tail -1 $f | cut -c1-150)"' < "$G/warm-tasks"
  echo "warm phase $(( $(date +%s) - START )) s"
elif [ "$mode" = multi ]; then
  # gpu.bench --pending-only of every operator named, in ONE process (startup paid once), each
  # operator's --budget-s the time left before DL (s from START) less 20 s; a process that dies
  # (a lost CUDA context) is started again on the operators after the one it was timing
  todo="$*"
  while [ -n "$todo" ]; do
    python3 - $todo <<'PY' > /tmp/log/multi.$$.log 2>&1
import os, sys, time, traceback
from tileport.gpu import bench
start, dl = int(os.environ["START"]), int(os.environ["DL"])
for op in sys.argv[1:]:
    left = dl - (time.time() - start) - 20
    if left < 15:
        print(f"MULTI deadline: {op} and later not started", flush=True)
        break
    print(f"MULTI start {op} budget {left:.0f} s", flush=True)
    with open(f"/tmp/log/bench-{op}.log", "a") as log:
        so, se = sys.stdout, sys.stderr
        sys.stdout = sys.stderr = log
        try:
            rc = bench.main(["--op", op, "--gpu", "required", "--pending-only", "--budget-s", str(int(left))])
        except BaseException:
            traceback.print_exc()
            rc = "exception"
        finally:
            sys.stdout, sys.stderr = so, se
    print(f"MULTI done {op} rc={rc}", flush=True)
    os.system(f"cd {os.getcwd()} && tar -czf $OUT/res.tgz /tmp/log results/*/test.json results/*/bench.json results/*/bench.csv 2>/dev/null")
PY
    cat /tmp/log/multi.$$.log; cat /tmp/log/multi.$$.log >> /tmp/log/multi.log
    grep -q "MULTI deadline" /tmp/log/multi.$$.log && break
    last=$(grep "MULTI start" /tmp/log/multi.$$.log | tail -1 | cut -d' ' -f3)
    if [ -z "$last" ] || grep -q "MULTI done $(echo $todo | awk '{print $NF}')" /tmp/log/multi.$$.log; then break; fi
    # the process died while timing $last: go on after it
    todo=$(echo $todo | tr ' ' '\n' | sed -n "/^$last\$/,\$p" | tail -n +2 | tr '\n' ' ')
  done
  pack
elif [ "$mode" = mut ]; then
  for op in "$@"; do
    timeout "${T:-500}" python3 -m tileport.gpu.mutation_test --gpu required --ops "$op" --config "$G/mut-config.yaml" > "/tmp/log/mut-$op.log" 2>&1 &
  done
  wait
  for op in "$@"; do echo "$op: $(tail -2 /tmp/log/mut-$op.log | cut -c1-300)"; done
  pack
else
  B=$1; shift
  for op in "$@"; do
    if [ -n "${DL:-}" ] && [ $(( $(date +%s) - START + B + 30 )) -gt "$DL" ]; then echo "deadline: $op and later not started"; break; fi
    timeout $((B + 90)) python3 -m tileport.gpu.bench --op "$op" --gpu required --pending-only --budget-s "$B" > "/tmp/log/bench-$op.log" 2>&1
    echo "$op rc=$? $(tail -1 /tmp/log/bench-$op.log | cut -c1-220)"
    pack
  done
fi
