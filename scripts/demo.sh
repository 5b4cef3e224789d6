#!/usr/bin/env bash
# The main job, end to end, on what pcc does today: export a GPT-2-style
# decoder from PyTorch, import it with symbolic batch and sequence bound, and
# print the pcc-dialect module it compiles from.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash scripts/build.sh
work=${WORK_DIR:-out/demo}
mkdir -p "$work"
/usr/bin/python3 test/models/export_models.py "$work" --only gpt_dynamic
echo "== pcc $work/gpt_dynamic/model.onnx --emit=mlir --input-shape batch=8,seq=16"
build/bin/pcc "$work/gpt_dynamic/model.onnx" --emit=mlir \
  --input-shape batch=8,seq=16 -o "$work/gpt.mlir"
grep -oE '= pcc\.[a-z_]+' "$work/gpt.mlir" | sort | uniq -c | sort -rn
echo "== module written to $work/gpt.mlir"
