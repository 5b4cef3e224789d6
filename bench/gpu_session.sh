#!/usr/bin/env bash
# A whole GPU check in two halves, for a machine lent for a few minutes.
#
#   bench/gpu_session.sh pack DIR   here: build every gpu_check case (training
#                                   steps included, with PyTorch's losses),
#                                   every bench_cuda case and every
#                                   bench_cuda_train case with build/bin/pcc,
#                                   pack them (DIR/pack.tar.xz) with the ONNX
#                                   and protobuf libraries the programs need
#   bench/gpu_session.sh run DIR    on the GPU machine, from the repository
#                                   root: pcc-gpu-probe (the GPU's cluster
#                                   spec), --check every case, compute-sanitizer
#                                   on the tensor-core attention, bench_cuda
#                                   and bench_cuda_train (a training step)
#                                   against PyTorch, per-kernel times of
#                                   GPT-2 bf16 and every ncu section of one
#                                   attention launch; results under $OUT
#                                   (or DIR/out)
#
# Each step has its own time limit, so a slow one still leaves the others'
# results. DIR must be a path git ignores (e.g. .gpu/, in .git/info/exclude).
set -u
root="$(cd "$(dirname "$0")/.." && pwd)"
cmd="${1:?usage: gpu_session.sh pack|run DIR}"
dir="$(mkdir -p "${2:?usage: gpu_session.sh pack|run DIR}" && cd "$2" && pwd)"

if [ "$cmd" = pack ]; then
  set -e
  export PATH="$root/build/bin:$PATH"
  rm -rf "$dir/check" "$dir/bench" "$dir/train-bench" "$dir/pack.tar.xz"
  /usr/bin/python3 "$root/test/e2e/gpu_check.py" "$dir/check" --build-only
  /usr/bin/python3 "$root/bench/bench_cuda.py" build "$root/build/bin/pcc" \
    "$dir/bench"
  /usr/bin/python3 "$root/bench/bench_cuda_train.py" build \
    "$root/build/bin/pcc" "$dir/train-bench"
  mkdir -p "$dir/lib" "$dir/probe"
  cp /lib/x86_64-linux-gnu/libonnx_proto.so.1 \
     /lib/x86_64-linux-gnu/libprotobuf.so.32 "$dir/lib/"
  cp "$root/build/bin/pcc-gpu-probe" "$dir/probe/"
  # One large window: the executables share their runtime's device code,
  # which then travels once (the device tool carries 64 MiB).
  (cd "$dir" && tar c check bench train-bench probe |
     xz -T1 --lzma2=preset=3,dict=192MiB > pack.tar.xz)
  ls -la "$dir/pack.tar.xz"
  exit 0
fi
[ "$cmd" = run ] || { echo "error: unknown command '$cmd'" >&2; exit 2; }

out="${OUT:-$dir/out}"
mkdir -p "$out"
export LD_LIBRARY_PATH="$dir/lib:/usr/local/cuda/lib64:/usr/local/cuda/lib:${LD_LIBRARY_PATH:-}"
cd "$dir"
nvidia-smi -L | tee "$out/smi.txt"
start=$(date +%s)
since() { echo "$1 at $(( $(date +%s) - start )) s"; }
tar xJf pack.tar.xz
# The GPU as a cluster spec's measurements (`pcc calibrate --target cuda
# --probe-output probe.json` turns the line into the spec, back here).
timeout 60 probe/pcc-gpu-probe > "$out/probe.json" 2> "$out/probe.err"
since "probe done"
timeout 300 python3 "$root/test/e2e/gpu_check.py" check --run-only \
  --mpirun "bash $root/test/e2e/mpirun.sh" 2>&1 | tee "$out/check.txt" | tail -3
since "check done"
bf16=(--rtol 1e-2 --atol 5e-2)
# PCC_GPU_QUICK=1: one memcheck, no racecheck and no attention sections, so
# the run fits one 600 s device call with a cold start.
quick="${PCC_GPU_QUICK:-0}"
sanitized=(bert_heads128 gpt_heads64)
[ "$quick" = 1 ] && sanitized=(gpt_heads64)
for c in "${sanitized[@]}"; do
  timeout 45 compute-sanitizer --tool memcheck "check/$c-bf16/model" \
    --check "check/models/$c/test_data_set_0" "${bf16[@]}" 2>&1 | tail -3 \
    | tee -a "$out/sanitize.txt"
done
[ "$quick" = 1 ] || timeout 60 compute-sanitizer --tool racecheck check/gpt_heads64-bf16/model \
  --check check/models/gpt_heads64/test_data_set_0 "${bf16[@]}" 2>&1 \
  | tail -3 | tee -a "$out/sanitize.txt"
since "sanitize done"
timeout 260 python3 "$root/bench/bench_cuda.py" run bench --iters 20 \
  --repeats 3 --json "$out/bench.json" 2>&1 | tee "$out/bench.txt"
since "bench done"
timeout 200 python3 "$root/bench/bench_cuda_train.py" run train-bench \
  --steps 10 --repeats 3 --json "$out/train-bench.json" 2>&1 \
  | tee "$out/train-bench.txt"
since "training bench done"
timeout 40 ncu --metrics gpu__time_duration.sum --csv bench/gpt2-bf16/model \
  --inputs bench/gpt2-bf16/inputs > "$out/ncu-gpt2-bf16.csv" 2>&1
since "ncu done"
# Every ncu section of one (the third) attention launch: occupancy, stall
# reasons, memory traffic.
[ "$quick" = 1 ] && exit 0
timeout 60 ncu -k regex:attendTiles -s 2 -c 1 --set full --import-source no \
  bench/gpt2-bf16/model --inputs bench/gpt2-bf16/inputs \
  > "$out/ncu-attention.txt" 2>&1
since "ncu attention done"
