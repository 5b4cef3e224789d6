#!/usr/bin/env bash
# The main job, end to end, on what pcc does today: export a GPT-2-style
# decoder from PyTorch, compile it (single device, CPU), run it against
# PyTorch's output with --check, time it, and show the plan file.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash scripts/build.sh
work=${WORK_DIR:-out/demo}
mkdir -p "$work"
/usr/bin/python3 test/models/export_models.py "$work" --only gpt gpt_dynamic
echo "== pcc $work/gpt_dynamic/model.onnx --input-shape batch=2,seq=16 -o $work/compiled"
build/bin/pcc "$work/gpt_dynamic/model.onnx" --input-shape batch=2,seq=16 \
  -o "$work/compiled"
echo "== $work/compiled/model --check (reference: PyTorch)"
"$work/compiled/model" --check "$work/gpt/test_data_set_0"
echo "== $work/compiled/model --bench 50"
"$work/compiled/model" --inputs "$work/gpt/test_data_set_0" --bench 50 | tail -1
echo "== plan ($work/compiled/plan.json)"
cat "$work/compiled/plan.json"
