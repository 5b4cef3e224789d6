//===- WeightReader.h - bytes of ONNX initializers --------------*- C++ -*-===//
//
// Code generation needs the bytes behind each pcc.weight: this reads them
// from the ONNX model (initializers, or large Constant nodes by output name),
// following external data. Import never does, so planning works without them.
//
//===----------------------------------------------------------------------===//

#ifndef PCC_IMPORT_WEIGHTREADER_H
#define PCC_IMPORT_WEIGHTREADER_H

#include "llvm/ADT/StringRef.h"

#include <memory>
#include <string>

namespace pcc {

class WeightReader {
public:
  ~WeightReader();
  /// Parses the model at `modelPath`; returns null and sets `error` on
  /// failure.
  static std::unique_ptr<WeightReader> open(llvm::StringRef modelPath,
                                            std::string &error);
  /// Dense little-endian bytes of tensor `name` (bools one byte each).
  /// Returns false and sets `error` if it is missing or unreadable.
  bool read(llvm::StringRef name, std::string &bytes, std::string &error);

private:
  struct Impl;
  explicit WeightReader(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl;
};

} // namespace pcc

#endif // PCC_IMPORT_WEIGHTREADER_H
