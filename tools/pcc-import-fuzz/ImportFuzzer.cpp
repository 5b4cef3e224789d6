//===- ImportFuzzer.cpp - libFuzzer target for the ONNX importer ----------===//
//
// Feeds each input to the importer as a model file would be fed: ONNX's text
// syntax when it starts with '<' (a model header), binary protobuf otherwise.
// The importer must either refuse the input with a diagnostic or return a
// module that verifies; anything else (a crash, a sanitizer report, a hang
// past libFuzzer's -timeout, a module that fails verification, a refusal
// without a diagnostic) is a finding. Built only with clang's
// -fsanitize=fuzzer (scripts/fuzz.sh).
//
//===----------------------------------------------------------------------===//

#include "pcc/Import/ONNXImporter.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdint>
#include <cstdlib>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  llvm::StringRef buffer(reinterpret_cast<const char *>(data), size);
  bool text = buffer.ltrim().starts_with("<");
  // A fresh context per input: attributes and types interned by one input
  // must not make the next one slower or hide its leaks.
  mlir::MLIRContext context(mlir::MLIRContext::Threading::DISABLED);
  unsigned errors = 0;
  mlir::ScopedDiagnosticHandler handler(&context, [&](mlir::Diagnostic &d) {
    if (d.getSeverity() == mlir::DiagnosticSeverity::Error)
      ++errors;
    return mlir::success();
  });
  // External weights resolve against this folder, which holds no files:
  // the importer must refuse them, never read elsewhere.
  mlir::OwningOpRef<mlir::ModuleOp> module = pcc::importONNXBuffer(
      buffer, text, "/nonexistent-pcc-fuzz/model.onnx", context, {});
  if (!module) {
    if (errors == 0) {
      llvm::errs() << "importer refused an input without a diagnostic\n";
      std::abort();
    }
    return 0;
  }
  if (mlir::failed(mlir::verify(*module))) {
    llvm::errs() << "importer returned a module that does not verify\n";
    std::abort();
  }
  return 0;
}
