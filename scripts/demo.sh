#!/usr/bin/env bash
# The main job, end to end: export a GPT-2-style decoder from PyTorch, compile
# it for 8 devices (data x Megatron tensor parallel), run it on 8 MPI ranks
# against PyTorch's output with --check, time it, and show the per-device
# program's collectives, the plan file and the planner's view (pcc plan).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash scripts/build.sh
work=${WORK_DIR:-out/demo}
mkdir -p "$work"
mpirun=(mpirun --oversubscribe -q)
# Containers often forbid OpenMPI's cross-process memory copies.
export OMPI_MCA_btl_vader_single_copy_mechanism=${OMPI_MCA_btl_vader_single_copy_mechanism:-none}
[ "$(id -u)" = 0 ] && mpirun+=(--allow-run-as-root)
/usr/bin/python3 test/models/export_models.py "$work" --only gpt gpt_dynamic
echo "== pcc $work/gpt_dynamic/model.onnx --input-shape batch=8,seq=16 --dp 2 --tp 4 --tp-layout megatron -o $work/compiled"
build/bin/pcc "$work/gpt_dynamic/model.onnx" --input-shape batch=8,seq=16 \
  --dp 2 --tp 4 --tp-layout megatron -o "$work/compiled"
echo "== collectives in the per-device program (--emit=mlir-spmd)"
build/bin/pcc "$work/gpt_dynamic/model.onnx" --input-shape batch=8,seq=16 \
  --dp 2 --tp 4 --tp-layout megatron --emit=mlir-spmd \
  | sed -n 's/.*shard\.\(all_[a-z_]*\) .* grid_axes = \(\[[0-9, ]*\]\).*/\1 over mesh axes \2/p' \
  | sort | uniq -c
echo "== ${mpirun[*]} -np 8 $work/compiled/model --check (reference: PyTorch)"
"${mpirun[@]}" -np 8 "$work/compiled/model" --check "$work/gpt/test_data_set_0" --threads 1
echo "== ${mpirun[*]} -np 8 $work/compiled/model --bench 50"
"${mpirun[@]}" -np 8 "$work/compiled/model" --inputs "$work/gpt/test_data_set_0" \
  --threads 1 --bench 50 | tail -1
echo "== plan ($work/compiled/plan.json)"
cat "$work/compiled/plan.json"
echo "== pcc plan --devices 8 --cluster dgx-a100 --compare --explain"
build/bin/pcc plan "$work/gpt_dynamic/model.onnx" --input-shape batch=8,seq=16 \
  --devices 8 --cluster dgx-a100 --compare --explain
