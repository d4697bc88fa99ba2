#!/usr/bin/env bash
# issue 35, call 1: setup; GPU tests of the 9 operators whose ports changed (P=6, cut 200 s) beside
# bench --compile-only of the pending configs (P=10, cut TW s); then --pending-only benchmarks in
# the order of .gpu/bench-order until DL s
export START=$(date +%s)
G=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
nvidia-smi --query-gpu=name,uuid,driver_version --format=csv,noheader; date -u
bash "$G/run.sh" setup || exit 3
# an H100: the bundle's H100 verdicts replace its H200 ones (another device's rows are never kept)
ORDER="$G/bench-order"
if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H100; then
  ORDER="$G/bench-order-h100"
  [ -f /tmp/h100-applied ] || { tar -xJf "$G/h100-verdicts.tar.xz" && touch /tmp/h100-applied; }
fi
echo "setup $(( $(date +%s) - START )) s"
T=200 P=6 bash "$G/run.sh" test fi_fmha_decode_bsr fi_gemm_alpha_beta lg_fused_neighborhood_attention lg_group_norm lg_layer_norm lg_modulated_rms_norm lg_rms_norm lg_tvd us_grouped_gemm > /tmp/test-phase.log 2>&1 &
T=${TW:-170} P=10 bash "$G/run.sh" warm | tail -3
wait; cat /tmp/test-phase.log
echo "pre-bench $(( $(date +%s) - START )) s"; date -u
DL=${DL:-560} bash "$G/run.sh" multi $(cat "$ORDER")
echo "call wall $(( $(date +%s) - START )) s"; date -u
