//===- TrainedModel.h - a model with its trained initializers ----*- C++ -*-===//
//
// `pcc export MODEL --weights DIR -o trained.onnx`: the model with every
// initializer that a training run saved in DIR (the executable's --save:
// DIR/<name>.pb) replaced by the trained values, written as a new ONNX
// file. Everything else in the model is kept as it was.
//
//===----------------------------------------------------------------------===//

#ifndef PCC_IMPORT_TRAINEDMODEL_H
#define PCC_IMPORT_TRAINEDMODEL_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

namespace pcc {

/// Writes `outPath` (a new file) from the model at `modelPath` and the saved
/// run in `savedDir`; returns the number of initializers replaced.
llvm::Expected<int> writeTrainedModel(llvm::StringRef modelPath,
                                      llvm::StringRef savedDir,
                                      llvm::StringRef outPath);

} // namespace pcc

#endif // PCC_IMPORT_TRAINEDMODEL_H
