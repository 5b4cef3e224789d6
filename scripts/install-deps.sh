#!/usr/bin/env bash
# Installs everything pcc needs to build, test and run on Debian bookworm.
# Idempotent: packages already present are left alone; safe to run repeatedly.
set -euo pipefail

PACKAGES=(
  # Build toolchain.
  build-essential cmake ninja-build git
  # LLVM/MLIR 22: libraries, tablegen, FileCheck and lit.
  llvm-22-dev llvm-22-tools libmlir-22-dev mlir-22-tools
  # ONNX 1.12 C++ (parser, checker, shape inference) and protobuf.
  libonnx-dev libprotobuf-dev protobuf-compiler
  # Runtime: MPI and BLAS.
  libopenmpi-dev openmpi-bin libopenblas-dev
  # ILP solver for the planner (found through pkg-config).
  coinor-libcbc-dev pkg-config
  # Unit tests; clang-22 and its libFuzzer runtime for the importer's fuzzer.
  libgtest-dev clang-22 libclang-rt-22-dev
  # Test-time helpers: ONNX model generation, torch exports, ONNX backend test data.
  python3 python3-onnx python3-numpy python3-torch python3-torchvision libonnx-testdata
)

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#PACKAGES[@]} packages present"
  exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
echo "install-deps: installing ${missing[*]}"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
