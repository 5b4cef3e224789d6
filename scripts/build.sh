#!/usr/bin/env bash
# Configures and builds pcc into build/ (Release, Ninja, 2 jobs by default).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
JOBS=${JOBS:-2}
cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$BUILD_DIR" -j "$JOBS"
# The importer's libFuzzer target (clang-22; ctest's importer-libfuzzer).
if command -v clang++-22 >/dev/null; then
  FUZZ_DIR="$BUILD_DIR-fuzz" JOBS="$JOBS" bash scripts/fuzz.sh --build-only
fi
