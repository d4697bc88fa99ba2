#!/usr/bin/env bash
# Issue 31 items 3, 4, 6 on a GPU node: functional test, benchmark (both readings, harness 2) and
# the outlier diagnosis of the operators given, from a results/ tree built by the CPU stages
# (including runtime_ir). Prints each stage's verdict line; packs the verdicts and logs into
# $OUT/gpu-out.tgz when OUT is set.
#   benchmarks/gpu_matched.sh relu tg_transpose ...
set -uo pipefail
for op in "$@"; do
  python3 -m tileport.gpu.test --op "$op" --gpu required > "/tmp/test-$op.log" 2>&1
  tail -1 "/tmp/test-$op.log"
  python3 -m tileport.gpu.bench --op "$op" --gpu required 2>&1 | tee "/tmp/bench-$op.log" | grep -v "^$" | tail -40
  python3 - "$op" <<'PY'
import sys
from pathlib import Path
from tileport.gpu.perf_diagnose import diagnose
op = sys.argv[1]
r = Path("results") / op
d = diagnose(op, r / "bench.json", [], r / "perf_diagnosis.json", runtime=sorted((r / "runtime").glob("*.json")))
print("perf_diagnose", d["verdict"], d["summary"])
for o in d["details"].get("outliers", []):
    print(" ", o["kernel"], o["variant"], o["shape"], f"ratio {o['ratio']:.3f}",
          "matched", o["ratio_matched"] and f"{o['ratio_matched']:.3f}", "|", o["cause"], "|", o["evidence"])
PY
  if [ -n "${OUT:-}" ]; then
    mkdir -p "/tmp/gpu-out/$op"
    cp "results/$op/test.json" "results/$op/bench.json" "results/$op/bench.csv" "results/$op/perf_diagnosis.json" \
       "/tmp/test-$op.log" "/tmp/bench-$op.log" "/tmp/gpu-out/$op/" 2>/dev/null
    # one archive, rewritten after each operator: the device tool returns only a few files per
    # call, and a call cut off by its time limit still returns the operators that finished
    tar -C /tmp/gpu-out -czf "$OUT/gpu-out.tgz" .
  fi
done
