#!/usr/bin/env bash
# Builds the importer's libFuzzer target (tools/pcc-import-fuzz, clang++-22,
# ASan + UBSan + coverage) into build-fuzz/ and runs it for SECONDS on a seed
# corpus: the mutation fuzzer's seed models (test/Import/fuzz) and, with
# --all-seeds, libonnx-testdata's ~1300 node models too. Any crash,
# sanitizer report, abort or input slower than 20 s fails the run; the input
# that failed is written to FUZZ_DIR/findings/. Each run starts from the seeds.
#   usage: scripts/fuzz.sh [--build-only] [--all-seeds] [SECONDS]  (default 60)
# ctest's importer-libfuzzer runs it for 60 s on the fuzz seeds; an hour's
# run with --all-seeds is recorded in docs/robustness.md. FUZZ_SEED fixes
# libFuzzer's random seed (ctest uses 1, so a CI finding reproduces; unset,
# each run differs).
set -euo pipefail
cd "$(dirname "$0")/.."
FUZZ_DIR=${FUZZ_DIR:-build-fuzz}
JOBS=${JOBS:-2}
BUILD_ONLY=0
ALL_SEEDS=0
while [ $# -gt 0 ]; do
  case "$1" in
    --build-only) BUILD_ONLY=1 ;;
    --all-seeds) ALL_SEEDS=1 ;;
    -*) echo "error: unknown option '$1' (scripts/fuzz.sh [--build-only] [--all-seeds] [SECONDS])" >&2; exit 2 ;;
    *) break ;;
  esac
  shift
done
SECONDS_TO_RUN=${1:-60}
CXX=${PCC_FUZZ_CXX:-clang++-22}
CC=${PCC_FUZZ_CC:-clang-22}

if ! command -v "$CXX" >/dev/null; then
  echo "skipped: $CXX not found (scripts/install-deps.sh installs clang-22)" >&2
  exit 77
fi
if [ ! -f "$FUZZ_DIR/build.ninja" ]; then
  cmake -S . -B "$FUZZ_DIR" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_CXX_COMPILER="$CXX" -DCMAKE_C_COMPILER="$CC" \
    -DPCC_ENABLE_CUDA=OFF -DPCC_LIBFUZZER=ON >/dev/null
fi
cmake --build "$FUZZ_DIR" -j "$JOBS" --target pcc-import-fuzz
[ "$BUILD_ONLY" = 1 ] && exit 0

corpus="$FUZZ_DIR/corpus"
findings="$FUZZ_DIR/findings"
rm -rf "$corpus"
mkdir -p "$corpus/seeds" "$corpus/found" "$findings"
/usr/bin/python3 test/Import/fuzz/fuzz_models.py --write-seeds "$corpus/seeds"
node=/usr/share/libonnx-testdata/data/node
if [ "$ALL_SEEDS" = 1 ] && [ -d "$node" ]; then
  for m in "$node"/*/model.onnx; do
    cp -n "$m" "$corpus/seeds/node-$(basename "$(dirname "$m")").onnx"
  done
fi

# Leaks are process-lifetime singletons of MLIR and ONNX, not memory-safety
# bugs; ONNX's checker runs in a forked child whose death the importer reads
# as a rejection, so the child's own reports are not findings.
export ASAN_OPTIONS=detect_leaks=0:allocator_may_return_null=1:detect_container_overflow=0
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
"$FUZZ_DIR/bin/pcc-import-fuzz" "$corpus/found" "$corpus/seeds" \
  -max_total_time="$SECONDS_TO_RUN" -timeout=20 -rss_limit_mb=6144 \
  -max_len=65536 -print_final_stats=1 -artifact_prefix="$findings/" \
  -seed="${FUZZ_SEED:-0}" \
  2>"$FUZZ_DIR/fuzz.log" && rc=0 || rc=$?
grep -E "^#[0-9]+ +(DONE|INITED)|stat::number_of_executed_units|stat::peak_rss_mb|cov:" \
  "$FUZZ_DIR/fuzz.log" | grep -E "DONE|INITED|stat::" | tail -4
if [ "$rc" != 0 ]; then
  echo "error: libFuzzer found a failure (exit $rc); log: $FUZZ_DIR/fuzz.log, input in $findings/" >&2
  grep -E "ERROR|SUMMARY|==[0-9]+==|abort|importer " "$FUZZ_DIR/fuzz.log" | head -20 >&2
  exit 1
fi
echo "fuzz: no failures in ${SECONDS_TO_RUN} s"
