//===- EmitPointwise.cpp - fused pointwise loops ----------------------------===//
//
// Each fusion group of the schedule (Schedule.h) runs as one loop at its root;
// every member is a scalar expression over its operands' elements.
//
//===----------------------------------------------------------------------===//

#include "CpuEmitter.h"

#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;

namespace pcc::cpu {

FailureOr<std::string> Emitter::scalarExpr(Operation *op,
                                           ArrayRef<std::string> a) {
  Type elem = typeOf(op->getResult(0)).getElementType();
  Type inElem = typeOf(op->getOperand(0)).getElementType();
  // 16-bit floats compute in float: T is the type expressions produce.
  std::string T = computeType(elem);
  bool isFloat = isa<FloatType>(inElem);
  // Math through compiler builtins (generated C++ includes no <cmath>), or
  // CUDA's device functions of the same names: the float form for f32 (and
  // 16-bit floats), else the double form.
  auto builtin = [&](StringRef fnName, ArrayRef<std::string> args) {
    std::string out = (kind == SourceKind::Cuda ? "" : "__builtin_") +
                      fnName.str() + (computesInFloat(elem) ? "f" : "");
    for (auto [i, arg] : llvm::enumerate(args))
      out += (i ? ", " : "(") + (isFloat ? arg : "double(" + arg + ")");
    return out + ")";
  };
  auto call = [&](StringRef fnName) { return builtin(fnName, a[0]); };
  // CPU ranks: tanh and erf the loop vectorises (glibc's tanhf and erff
  // are scalar calls; pccrt/FastMath.h).
  bool fastMath = kind == SourceKind::Cpp && computesInFloat(elem) && isFloat;
  auto tanh = [&](const std::string &arg) {
    return fastMath ? "pccTanh(" + arg + ")" : builtin("tanh", arg);
  };
  auto erf = [&](const std::string &arg) {
    return fastMath ? "pccErf(" + arg + ")" : builtin("erf", arg);
  };
  return llvm::TypeSwitch<Operation *, FailureOr<std::string>>(op)
      .Case([&](NegOp) { return "-" + a[0]; })
      .Case([&](AbsOp) {
        return isFloat ? call("fabs")
                       : "(" + a[0] + " < 0 ? -" + a[0] + " : " + a[0] + ")";
      })
      .Case([&](ExpOp) { return call("exp"); })
      .Case([&](LogOp) { return call("log"); })
      .Case([&](SqrtOp) { return call("sqrt"); })
      .Case([&](ReciprocalOp) { return "(" + T + "(1) / " + a[0] + ")"; })
      .Case([&](FloorOp) { return call("floor"); })
      .Case([&](CeilOp) { return call("ceil"); })
      .Case([&](TanhOp) { return tanh(a[0]); })
      .Case([&](ErfOp) { return erf(a[0]); })
      .Case([&](SinOp) { return call("sin"); })
      .Case([&](CosOp) { return call("cos"); })
      .Case([&](SigmoidOp) {
        return "(" + T + "(1) / (" + T + "(1) + " + builtin("exp", "-" + a[0]) +
               "))";
      })
      .Case([&](ReluOp) {
        return "(" + a[0] + " < " + T + "(0) ? " + T + "(0) : " + a[0] + ")";
      })
      .Case([&](NotOp) { return "!" + a[0]; })
      .Case([&](GeluOp g) {
        if (g.getApproximate() == "tanh")
          return T + "(0.5) * " + a[0] + " * (" + T + "(1) + " +
                 tanh(T + "(0.7978845608028654) * (" + a[0] + " + " + T +
                      "(0.044715) * " + a[0] + " * " + a[0] + " * " + a[0] +
                      ")") +
                 ")";
        return T + "(0.5) * " + a[0] + " * (" + T + "(1) + " +
               erf(a[0] + " * " + T + "(0.7071067811865476)") + ")";
      })
      .Case([&](LeakyReluOp l) {
        return "(" + a[0] + " < " + T + "(0) ? " +
               floatLiteral(l.getAlpha().convertToDouble(), elem) + " * " +
               a[0] + " : " + a[0] + ")";
      })
      .Case([&](ClipOp c) {
        return "pccMin<" + T + ">(pccMax<" + T + ">(" + a[0] + ", " +
               floatLiteral(c.getMin().convertToDouble(), elem) + "), " +
               floatLiteral(c.getMax().convertToDouble(), elem) + ")";
      })
      .Case([&](CastOp) {
        if (elem.isInteger(1))
          return "(" + a[0] + " != 0)";
        return "static_cast<" + T + ">(" + a[0] + ")";
      })
      .Case([&](AddOp) { return "(" + a[0] + " + " + a[1] + ")"; })
      .Case([&](SubOp) { return "(" + a[0] + " - " + a[1] + ")"; })
      .Case([&](MulOp) { return "(" + a[0] + " * " + a[1] + ")"; })
      .Case([&](DivOp) {
        // Integer division must not trap on any input: by zero it yields 0,
        // and the minimum by -1 wraps (as ONNX runtimes on x86 do not trap).
        if (!isFloat && elem.isUnsignedInteger())
          return "(" + a[1] + " == 0 ? " + T + "(0) : " + T + "(" + a[0] +
                 " / " + a[1] + "))";
        if (!isFloat)
          return "(" + a[1] + " == 0 ? " + T + "(0) : " + a[1] + " == " + T +
                 "(-1) ? " + T + "(0ull - static_cast<unsigned long long>(" +
                 a[0] + ")) : " + T + "(" + a[0] + " / " + a[1] + "))";
        return "(" + a[0] + " / " + a[1] + ")";
      })
      .Case([&](PowOp) {
        return "static_cast<" + T + ">(" + builtin("pow", {a[0], a[1]}) + ")";
      })
      .Case([&](MaxOp) {
        return "pccMax<" + T + ">(" + a[0] + ", " + a[1] + ")";
      })
      .Case([&](MinOp) {
        return "pccMin<" + T + ">(" + a[0] + ", " + a[1] + ")";
      })
      .Case([&](EqualOp) { return "(" + a[0] + " == " + a[1] + ")"; })
      .Case([&](LessOp) { return "(" + a[0] + " < " + a[1] + ")"; })
      .Case([&](LessEqualOp) { return "(" + a[0] + " <= " + a[1] + ")"; })
      .Case([&](GreaterOp) { return "(" + a[0] + " > " + a[1] + ")"; })
      .Case([&](GreaterEqualOp) { return "(" + a[0] + " >= " + a[1] + ")"; })
      .Case([&](AndOp) { return "(" + a[0] + " && " + a[1] + ")"; })
      .Case([&](OrOp) { return "(" + a[0] + " || " + a[1] + ")"; })
      .Case([&](XorOp) { return "(" + a[0] + " != " + a[1] + ")"; })
      .Case([&](WhereOp) {
        return "(" + a[0] + " ? " + a[1] + " : " + a[2] + ")";
      })
      .Case([&](ExpandOp) { return a[0]; })
      .Default([&](Operation *) -> FailureOr<std::string> {
        return op->emitError("no scalar form for this op");
      });
}

FailureOr<std::string>
Emitter::fusedBody(ArrayRef<Operation *> group, ArrayRef<Value> leaves,
                   ArrayRef<std::string> leafIdx,
                   function_ref<std::string(size_t)> leafPtr, StringRef outPtr,
                   StringRef indent, StringRef outIdx) {
  std::string text;
  llvm::raw_string_ostream b(text);
  DenseMap<Value, std::string> scalar;
  for (auto [k, v] : llvm::enumerate(leaves)) {
    std::string name = "a" + std::to_string(k);
    b << indent << "  const " << computeType(typeOf(v).getElementType())
      << " " << name << " = " << leafPtr(k) << "[" << leafIdx[k] << "];\n";
    scalar[v] = name;
  }
  for (Operation *op : group) {
    SmallVector<std::string> args;
    for (Value v : op->getOperands())
      args.push_back(scalar.lookup(v));
    auto expr = scalarExpr(op, args);
    if (failed(expr))
      return failure();
    // A 16-bit result rounds as if stored, though it stays in a register:
    // every op's result is what the IR's type says (torch's eager 16-bit
    // semantics), fused or not.
    Type elem = typeOf(op->getResult(0)).getElementType();
    if (elem.isF16() || elem.isBF16())
      *expr = std::string(elem.isF16() ? "roundToHalf(" : "roundToBFloat16(") +
              *expr + ")";
    std::string name = "t" + std::to_string(nextTemp++);
    b << indent << "  const " << computeType(elem) << " " << name << " = "
      << *expr << ";\n";
    scalar[op->getResult(0)] = name;
  }
  b << indent << "  " << outPtr << "[" << outIdx
    << "] = " << scalar[group.back()->getResult(0)] << ";\n";
  return text;
}

LogicalResult Emitter::emitFusedLoop(Operation *root) {
  if (Operation *product = schedule.productOf.lookup(root))
    return emitGemmEpilogue(root, product);
  ArrayRef<Operation *> group = schedule.members[root];
  ArrayRef<int64_t> shape = typeOf(root->getResult(0)).getShape();
  int64_t rank = shape.size();
  DenseMap<Operation *, bool> inGroup;
  for (Operation *op : group)
    inGroup[op] = true;

  // Leaves: operands produced outside the group, each with broadcast strides.
  SmallVector<Value> leaves;
  DenseMap<Value, int64_t> leafIndex;
  for (Operation *op : group)
    for (Value v : op->getOperands())
      if (!(v.getDefiningOp() && inGroup.lookup(v.getDefiningOp())) &&
          !leafIndex.count(v)) {
        leafIndex[v] = leaves.size();
        leaves.push_back(v);
      }
  bool flat = rank == 0 || llvm::all_of(leaves, [&](Value v) {
    auto t = typeOf(v);
    return t.getShape() == shape || t.getNumElements() == 1;
  });
  // Each leaf's index: `i` (or 0) when flat, else in terms of the output
  // coordinates i0 .. i{rank-1}.
  SmallVector<std::string> leafIdx;
  for (Value v : leaves) {
    ArrayRef<int64_t> ls = typeOf(v).getShape();
    if (flat) {
      leafIdx.push_back(ls == shape ? "i" : "0");
      continue;
    }
    auto strides = stridesOf(ls);
    int64_t offset = rank - ls.size();
    std::string e;
    for (size_t d = 0; d < ls.size(); ++d) {
      if (ls[d] == 1)
        continue;
      e += (e.empty() ? "" : " + ") + ("i" + std::to_string(d + offset)) +
           " * " + std::to_string(strides[d]);
    }
    leafIdx.push_back(e.empty() ? "0" : e);
  }
  ++result.fusedLoops;
  result.fusedOps += group.size();
  if (kind == SourceKind::Cuda)
    return emitFusedKernel(root, group, leaves, leafIdx, flat);

  os << "  { // fused:";
  for (Operation *op : group)
    os << " " << op->getName().stripDialect();
  os << "\n";
  std::string indent = "    ";
  // What the loop reads each leaf through. A value read at every index
  // (a scalar: a learning rate, a bias correction) is read once, into a
  // local the loop's stores cannot alias; a parameter the loop overwrites
  // (Schedule::storedIn) is read through the pointer it is written
  // through. Otherwise GCC vectorises only behind a run-time overlap
  // check, which a loop writing over its own operand fails.
  Value result = root->getResult(0);
  Value overwritten = schedule.storedIn.lookup(result);
  SmallVector<std::string> leafPtr;
  for (auto [k, v] : llvm::enumerate(leaves)) {
    if (v == overwritten) {
      leafPtr.push_back(ptr(result));
    } else if (leafIdx[k] == "0" && numElements(shape) > 1) {
      std::string local = "h" + std::to_string(nextTemp++);
      os << indent << "const " << elemType(v) << " " << local << "[1] = {"
         << ptr(v) << "[0]};\n";
      leafPtr.push_back(local);
    } else {
      leafPtr.push_back(ptr(v));
    }
  }
  if (flat) {
    os << indent << "for (int64_t i = 0; i < " << numElements(shape)
       << "; ++i) {\n";
  } else {
    for (int64_t d = 0; d < rank; ++d)
      os << indent << std::string(2 * d, ' ') << "for (int64_t i" << d
         << " = 0; i" << d << " < " << shape[d] << "; ++i" << d << ")\n";
    os << indent << std::string(2 * rank, ' ') << "{\n";
    os << indent << "  const int64_t i = ";
    auto outStrides = stridesOf(shape);
    for (int64_t d = 0; d < rank; ++d)
      os << (d ? " + " : "") << "i" << d << " * " << outStrides[d];
    os << ";\n";
  }
  auto text = fusedBody(
      group, leaves, leafIdx, [&](size_t k) { return leafPtr[k]; }, ptr(result),
      indent);
  if (failed(text))
    return failure();
  os << *text << indent << "}\n  }\n";
  return success();
}

LogicalResult Emitter::emitFusedKernel(Operation *root,
                                       ArrayRef<Operation *> group,
                                       ArrayRef<Value> leaves,
                                       ArrayRef<std::string> leafIdx,
                                       bool flat) {
  ArrayRef<int64_t> shape = typeOf(root->getResult(0)).getShape();
  int64_t rank = shape.size(), n = numElements(shape);
  std::string name = "fused" + std::to_string(nextTemp++);
  // 32-bit index arithmetic where it fits: divisions by constants become
  // multiplications, which 64-bit ones do not.
  std::string idx = n < (int64_t(1) << 31) ? "unsigned" : "int64_t";
  // Output coordinates i0 .. i{rank-1} of the flat index `from`.
  auto coordinates = [&](raw_ostream &k, StringRef from, StringRef indent) {
    if (flat)
      return;
    k << indent << idx << " rest = " << from << ";\n";
    for (int64_t d = rank - 1; d >= 0; --d)
      k << indent << "const " << idx << " i" << d << " = rest % " << shape[d]
        << ";\n"
        << indent << "rest /= " << shape[d] << ";\n";
  };
  // kPack consecutive elements a thread when the innermost extent allows:
  // leaves that run along it load as one access, leaves broadcast along it
  // are read once; the output stores as one access (16 bytes: 8 16-bit
  // elements, else 4).
  int64_t inner = rank ? shape.back() : 1;
  unsigned outBits =
      typeOf(root->getResult(0)).getElementType().getIntOrFloatBitWidth();
  const int64_t kPack = outBits <= 16 && (flat ? n : inner) % 8 == 0 ? 8 : 4;
  SmallVector<bool> alongInner;
  for (Value v : leaves) {
    ArrayRef<int64_t> ls = typeOf(v).getShape();
    alongInner.push_back(
        flat ? ls == shape : !ls.empty() && ls.back() == inner && inner != 1);
  }
  bool packed = (flat ? n : inner) % kPack == 0 && n >= kPack;

  std::string text;
  llvm::raw_string_ostream k(text);
  k << "// fused:";
  for (Operation *op : group)
    k << " " << op->getName().stripDialect();
  k << "\n__global__ void " << name << "(";
  for (auto [i, v] : llvm::enumerate(leaves))
    k << "const " << elemType(v) << " *l" << i << ", ";
  k << elemType(root->getResult(0)) << " *out) {\n";
  std::string first = "blockIdx.x * " + idx + "(blockDim.x) + threadIdx.x";
  std::string step = idx + "(gridDim.x) * blockDim.x";
  if (packed) {
    k << "  if (packAligned<" << kPack << ">(";
    for (auto [i, v] : llvm::enumerate(leaves))
      if (alongInner[i])
        k << "l" << i << ", ";
    k << "out)) {\n"
      << "    for (" << idx << " p = " << first << "; p < " << n / kPack
      << "; p += " << step << ") {\n";
    coordinates(k, "p * " + std::to_string(kPack), "      ");
    SmallVector<std::string> packIdx;
    for (auto [i, v] : llvm::enumerate(leaves)) {
      if (!alongInner[i]) {
        packIdx.push_back(leafIdx[i]);
        continue;
      }
      std::string at = flat ? "p * " + std::to_string(kPack) : leafIdx[i];
      k << "      const auto x" << i << " = loadPack<" << kPack << ">(l" << i
        << " + (" << at << "));\n";
      packIdx.push_back("e");
    }
    k << "      Pack<" << elemType(root->getResult(0)) << ", " << kPack
      << "> y;\n"
      << "#pragma unroll\n"
      << "      for (int e = 0; e < " << kPack << "; ++e) {\n";
    auto body = fusedBody(
        group, leaves, packIdx,
        [&](size_t i) {
          return (alongInner[i] ? "x" : "l") + std::to_string(i) +
                 (alongInner[i] ? ".v" : "");
        },
        "y.v", "      ", "e");
    if (failed(body))
      return failure();
    k << *body << "      }\n"
      << "      storePack(out + p * " << kPack << ", y);\n"
      << "    }\n    return;\n  }\n";
  }
  k << "  for (" << idx << " i = " << first << "; i < " << n
    << "; i += " << step << ") {\n";
  coordinates(k, "i", "    ");
  auto body = fusedBody(
      group, leaves, leafIdx, [](size_t i) { return "l" + std::to_string(i); },
      "out", "  ");
  if (failed(body))
    return failure();
  k << *body << "  }\n}\n\n";
  kernels += text;
  os << "  " << name << "<<<gridSize(" << (packed ? n / kPack : n)
     << "), 256, 0, rankStream()>>>(";
  for (Value v : leaves)
    os << ptr(v) << ", ";
  os << ptr(root->getResult(0)) << ");\n  checkLaunch(\"" << name
     << "\");\n";
  return success();
}

} // namespace pcc::cpu
