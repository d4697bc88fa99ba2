#!/usr/bin/env bash
# device call: the mutation study's GPU column for the kernels in .gpu/mut-kernels ("op kernel" lines), one process each
set -uo pipefail
G=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
bash "$G/run.sh" setup || exit 3
export PYTHONPATH=/tmp/site PATH="/tmp/T/cu13/bin:$PATH" PYTHONUNBUFFERED=1
export CUTILE_TILEIRAS_PATH=/tmp/T/cu13/bin/tileiras TILEPORT_TILEIRAS=/tmp/T/cu13/bin/tileiras
unset CUDA_HOME
python3 -c "import torch; print(torch.__version__, torch.cuda.get_device_name(0))"
nvidia-smi --query-gpu=name,uuid,driver_version --format=csv,noheader
date -u
while read op k; do
  timeout "${T:-480}" python3 -m tileport.gpu.mutation_test --gpu required --ops "$op" --kernels "$k" --config "$G/mut-config.yaml" > "/tmp/log/mut-$op-$k.log" 2>&1 &
done < "$G/mut-kernels"
wait
date -u
while read op k; do echo "$op $k: $(tail -2 /tmp/log/mut-$op-$k.log | cut -c1-400)"; done < "$G/mut-kernels"
mkdir -p "$OUT/res"
tar -czf "$OUT/mut.tgz" /tmp/log $(ls results/mutation/*/*.gpu.json results/mutation/*/*.gpu.log 2>/dev/null)
