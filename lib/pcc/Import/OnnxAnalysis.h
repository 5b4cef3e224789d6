//===- OnnxAnalysis.h - ONNX's checker and inference, isolated ---*- C++ -*-===//
//
// Private to lib/pcc/Import. ONNX 1.12's node checker and shape inference
// crash, hang or corrupt memory on some hostile models (zero strides, data
// shorter than its shape, untyped values, ...), and not every case can be
// ruled out by checking attributes first. So they never run in pcc's own
// process: a forked child runs them on its copy of the model and reports over
// a pipe. If the child dies or overruns its time, pcc learns which node it
// was checking (an error at that node) or goes on without ONNX's shapes
// (they only cross-check pcc's own inference).
//
//===----------------------------------------------------------------------===//

#ifndef PCC_LIB_IMPORT_ONNXANALYSIS_H
#define PCC_LIB_IMPORT_ONNXANALYSIS_H

#include "onnx/onnx_pb.h"

#include <chrono>
#include <optional>
#include <string>
#include <vector>

namespace pcc::import {

class OnnxAnalysis {
public:
  /// Starts the child on `model`, whose nodes it checks and infers in
  /// `order` (a dependency order of graph.node).
  OnnxAnalysis(const onnx::ModelProto &model, const std::vector<int> &order);
  ~OnnxAnalysis();
  OnnxAnalysis(const OnnxAnalysis &) = delete;
  OnnxAnalysis &operator=(const OnnxAnalysis &) = delete;

  /// A node ONNX's checker rejects (or crashes on).
  struct Rejection {
    int node;
    std::string message;
  };
  /// Waits for the checker: the first rejected node, if any.
  std::optional<Rejection> checkNodes();

  /// Waits for shape inference: the value_info entries ONNX inferred, or
  /// none if inference failed, crashed or ran out of time.
  std::vector<onnx::ValueInfoProto> inferredShapes();

private:
  /// Reads one line, or `n` bytes, from the child; false at its end or when
  /// `seconds` run out.
  bool readLine(std::string &line, double seconds);
  bool readBytes(std::string &bytes, size_t n, double seconds);
  /// Appends what the child wrote next to `pending`.
  bool fill(std::chrono::steady_clock::time_point deadline);
  void stop();

  int pid = -1;
  int fd = -1;
  std::string pending;
  /// The child closed its end (exited or died).
  bool childEnded = false;
  double checkSeconds, inferSeconds;
};

} // namespace pcc::import

#endif // PCC_LIB_IMPORT_ONNXANALYSIS_H
