//===- TensorFile.h - ONNX TensorProto files ---------------------*- C++ -*-===//

#ifndef PCCRT_TENSORFILE_H
#define PCCRT_TENSORFILE_H

#include "pccrt/Model.h"
#include "pccrt/Status.h"

#include <string>
#include <vector>

namespace pccrt {

/// A dense host tensor.
struct HostTensor {
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  std::vector<char> bytes;

  int64_t numElements() const;
  /// Takes `shape`, keeping the leading corner both shapes hold: padding
  /// cut off, or added as zeros (a vocabulary padded for tensor
  /// parallelism).
  void resizeCorner(const std::vector<int64_t> &shape);
};

/// Reads an ONNX TensorProto (.pb) file, accepting raw_data or typed fields.
Status readTensorFile(const std::string &path, HostTensor &out);
/// Writes `t` as a TensorProto with raw_data, named `name`; the file appears
/// complete or not at all (written to a temporary name, then renamed).
Status writeTensorFile(const std::string &path, const std::string &name,
                       const HostTensor &t);

} // namespace pccrt

#endif // PCCRT_TENSORFILE_H
