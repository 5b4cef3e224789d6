//===- CppText.cpp - C++ spellings of types, literals and names -----------===//

#include "CppText.h"

#include "mlir/IR/BuiltinTypes.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>

using namespace mlir;

namespace pcc::cpu {

SmallVector<int64_t> stridesOf(ArrayRef<int64_t> shape) {
  SmallVector<int64_t> s(shape.size(), 1);
  for (int64_t d = int64_t(shape.size()) - 2; d >= 0; --d)
    s[d] = s[d + 1] * shape[d + 1];
  return s;
}

std::string cppType(Type t) {
  if (t.isF32())
    return "float";
  if (t.isF16())
    return "Half";
  if (t.isBF16())
    return "BFloat16";
  if (t.isF64())
    return "double";
  if (t.isInteger(1))
    return "bool";
  if (auto it = dyn_cast<IntegerType>(t)) {
    unsigned w = it.getWidth();
    if (w == 8 || w == 16 || w == 32 || w == 64)
      return (it.isUnsigned() ? "uint" : "int") + std::to_string(w) + "_t";
  }
  return "";
}

bool computesInFloat(Type t) { return t.isF32() || t.isF16() || t.isBF16(); }

std::string computeType(Type t) {
  return computesInFloat(t) ? "float" : cppType(t);
}

int onnxCode(Type t) {
  if (t.isF32()) return 1;
  if (t.isF64()) return 11;
  if (t.isF16()) return 10;
  if (t.isBF16()) return 16;
  if (t.isInteger(1)) return 9;
  auto it = cast<IntegerType>(t);
  bool u = it.isUnsigned();
  switch (it.getWidth()) {
  case 8: return u ? 2 : 3;
  case 16: return u ? 4 : 5;
  case 32: return u ? 12 : 6;
  default: return u ? 13 : 7;
  }
}

std::string floatLiteral(double v, Type t) {
  // Compiler builtins: generated code includes no <limits>.
  bool single = computesInFloat(t);
  std::string f = single ? "f" : "";
  if (std::isnan(v))
    return "__builtin_nan" + f + "(\"\")";
  if (std::isinf(v))
    return std::string(v < 0 ? "-" : "") + "__builtin_inf" + f + "()";
  std::string s = llvm::formatv("{0:e17}", v).str();
  return single ? "static_cast<float>(" + s + ")" : s;
}

std::string cppString(StringRef s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\' || c == '?' || c < 0x20 || c >= 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\%03o", c);
      out += buf;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

std::string commentText(StringRef s) {
  std::string out;
  for (unsigned char c : s)
    out += c < 0x20 || c >= 0x7f || c == '\\' ? '?' : char(c);
  return out;
}

std::string joinInts(ArrayRef<int64_t> v) {
  std::string s;
  llvm::raw_string_ostream os(s);
  llvm::interleaveComma(v, os);
  return s;
}

} // namespace pcc::cpu
