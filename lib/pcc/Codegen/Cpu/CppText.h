//===- CppText.h - C++ spellings of types, literals and names ---*- C++ -*-===//

#ifndef PCC_CODEGEN_CPU_CPPTEXT_H
#define PCC_CODEGEN_CPU_CPPTEXT_H

#include "mlir/IR/Types.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"

#include <string>

namespace pcc::cpu {

/// Row-major strides of `shape`, in elements.
llvm::SmallVector<int64_t> stridesOf(llvm::ArrayRef<int64_t> shape);
/// C++ storage type for element type `t`, or "" if the runtime does not
/// support it. fp16 and bf16 are pccrt::Half and pccrt::BFloat16 (Float16.h).
std::string cppType(mlir::Type t);
/// The type generated code computes `t`'s values in: float for 16-bit
/// floats (read widened, written rounded), else the storage type.
std::string computeType(mlir::Type t);
/// Whether values of `t` are computed in float (f32, f16, bf16).
bool computesInFloat(mlir::Type t);
/// The ONNX TensorProto data type code of `t` (pccrt::DType).
int onnxCode(mlir::Type t);
/// `v` as a literal of element type `t`.
std::string floatLiteral(double v, mlir::Type t);
/// A C++ string literal holding `s`: names come from the model file and
/// may hold any byte. Octal escapes, which never run into the next character.
std::string cppString(llvm::StringRef s);
/// `s` with every byte that could end a line comment replaced.
std::string commentText(llvm::StringRef s);
/// "a, b, c".
std::string joinInts(llvm::ArrayRef<int64_t> v);

} // namespace pcc::cpu

#endif // PCC_CODEGEN_CPU_CPPTEXT_H
