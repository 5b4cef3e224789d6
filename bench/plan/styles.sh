#!/bin/bash
# Predicted step times of one GPT written three ways (torch_gpt.py's hf,
# nanogpt and megatron styles): the planner should price them alike
# (issue 16 item 2). Exports the models into DIR if missing, then prints,
# per target and style: inference on 1 device, searched on 8, forced
# dp2 x tp4 (Megatron layouts); training on 1 and 8 devices.
#   bench/plan/styles.sh build/bin/pcc /tmp/st
set -euo pipefail
PCC=${1:?usage: styles.sh PCC DIR}
DIR=${2:?usage: styles.sh PCC DIR}
HERE=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$DIR"
for s in hf nanogpt megatron; do
  [ -f "$DIR/$s.onnx" ] || /usr/bin/python3 "$HERE/torch_gpt.py" --style $s \
    --tied --layers 4 --hidden 512 --heads 8 --vocab 8192 --seq 512 \
    --batch 8 -o "$DIR/$s.onnx" > /dev/null
done
predict() {
  "$PCC" plan "$@" --cluster dgx-a100 --precision bf16 --format json |
    /usr/bin/python3 -c 'import json, sys
d = json.load(sys.stdin)
print(d["label"].split(" (")[0], "%.1f us" % (d["predicted"]["step_time_s"] * 1e6))'
}
for t in cuda cpu; do
  for s in hf nanogpt megatron; do
    m="$DIR/$s.onnx"
    echo "$t $s | $(predict "$m" --target $t --devices 1)" \
      "| $(predict "$m" --target $t --devices 8)" \
      "| $(predict "$m" --target $t --devices 8 --dp 2 --tp 4 --tp-mode 1d --pp 1 --sp 1 --tp-layout megatron)" \
      "| train $(predict "$m" --target $t --train --devices 1)" \
      "| train $(predict "$m" --target $t --train --devices 8)"
  done
done
