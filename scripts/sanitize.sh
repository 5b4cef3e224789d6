#!/usr/bin/env bash
# Builds pcc with AddressSanitizer and UndefinedBehaviorSanitizer into
# build-asan/ and runs the importer's bad-input corpus and mutation fuzzer on
# it: any sanitizer report, crash, hang or malformed error fails the run.
#   usage: scripts/sanitize.sh [FUZZ_COUNT]   (default 2000 mutants)
# Results of a run are recorded in docs/robustness.md.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build-asan}
JOBS=${JOBS:-2}
COUNT=${1:-2000}
PYTHON=/usr/bin/python3

cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DPCC_SANITIZE=ON >/dev/null
cmake --build "$BUILD_DIR" -j "$JOBS" --target pcc
PCC="$BUILD_DIR/bin/pcc"

# Leaks are not memory-safety bugs, and MLIR's and ONNX's process-lifetime
# singletons would drown the report; everything else aborts the process.
export ASAN_OPTIONS=detect_leaks=0:abort_on_error=1:allocator_may_return_null=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
export PCC_TIME_SCALE=10

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
echo "== bad-input corpus under ASan+UBSan"
$PYTHON test/Import/bad/make_bad_inputs.py "$work/bad" >/dev/null
$PYTHON test/Import/bad/check_bad_inputs.py "$PCC" "$work/bad" | tail -1
echo "== $COUNT fuzzed mutants under ASan+UBSan"
$PYTHON test/Import/fuzz/fuzz_models.py "$PCC" "$work/fuzz" --count "$COUNT" \
  --seed 1 --jobs "$JOBS" --timeout 60 --mem-limit 0 | grep -v "^ok "
