//===- CppEmitter.cpp - pcc dialect to C++ over the runtime ---------------===//
//
// Invariants:
// - Every value has one storage: a model input, an entry of the weights file
//   (pcc.weight and pcc.constant), an arena buffer, an alias of another
//   value's storage (pcc.reshape), or none (an op fused into a loop).
// - An elementwise op is fused into its single user when that user is also
//   elementwise and has the same result shape; each fusion group runs as one
//   loop at the position of its root (last) op, so all of its leaf operands
//   are live until then.
// - A value's arena buffer lives from the position that writes it to the last
//   position that reads it or any alias of it; returned values live to the end
//   (they are copied to the output buffers last).
//
//===----------------------------------------------------------------------===//

#include "pcc/Codegen/CppEmitter.h"
#include "pcc/Dialect/PCC/IR/Fusion.h"
#include "pcc/Dialect/PCC/IR/TensorUtils.h"

#include "pcc/Codegen/MemoryPlan.h"
#include "pcc/Dialect/PCC/IR/PCCOps.h"
#include "pcc/Sharding/Sharding.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>
#include <numeric>

using namespace mlir;

namespace pcc {
namespace {

SmallVector<int64_t> stridesOf(ArrayRef<int64_t> shape) {
  SmallVector<int64_t> s(shape.size(), 1);
  for (int64_t d = int64_t(shape.size()) - 2; d >= 0; --d)
    s[d] = s[d + 1] * shape[d + 1];
  return s;
}

/// C++ element type for `t`, or "" if the runtime does not support it.
std::string cppType(Type t) {
  if (t.isF32())
    return "float";
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
  std::string f = t.isF32() ? "f" : "";
  if (std::isnan(v))
    return "__builtin_nan" + f + "(\"\")";
  if (std::isinf(v))
    return std::string(v < 0 ? "-" : "") + "__builtin_inf" + f + "()";
  std::string s = llvm::formatv("{0:e17}", v).str();
  return t.isF32() ? "static_cast<float>(" + s + ")" : s;
}

/// A C++ string literal holding `s`: names come from the model file and
/// may hold any byte. Octal escapes, which never run into the next character.
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

/// `s` with every byte that could end a line comment replaced.
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


class Emitter {
public:
  Emitter(func::FuncOp fn, Mesh mesh, const EmitOptions &options)
      : fn(fn), mesh(std::move(mesh)), options(options), os(body) {}
  FailureOr<EmittedModel> run();

private:
  LogicalResult checkTensorSizes();
  LogicalResult checkDeviceMemory();
  LogicalResult analyze();
  LogicalResult emitOp(Operation *op);
  LogicalResult emitFusedLoop(Operation *root);
  FailureOr<std::string> scalarExpr(Operation *op,
                                    ArrayRef<std::string> operands);
  LogicalResult emitKernel(Operation *op);
  LogicalResult emitContraction(Operation *op);
  LogicalResult emitPooling(Operation *op);
  LogicalResult emitNormalization(Operation *op);
  LogicalResult emitReduction(Operation *op);
  LogicalResult emitDataMovement(Operation *op);
  LogicalResult emitCollective(Operation *op);
  LogicalResult unsupported(Operation *op);
  /// Kernels that run on f32 only check their operand `v` here.
  LogicalResult requireF32(Operation *op, Value v);
  /// The storage of `op`'s result `i`, and of its scratch buffer.
  std::string out(Operation *op, unsigned i = 0) {
    return ptr(op->getResult(i));
  }
  std::string scratch(Operation *op);
  /// The C++ name of `v`'s storage; the current part declares it.
  std::string ptr(Value v) {
    std::string name = names.lookup(v);
    used.insert(name);
    return name;
  }
  /// Records the declaration of `name` (text written by `write`).
  void declare(const std::string &name, function_ref<void()> write);
  /// Ends the current part function: its code, after the declarations of
  /// every name it uses.
  void closePart();
  /// The translation units: model.cpp, then model_K.cpp for large models.
  std::vector<EmittedSource> assembleSources(const std::string &tables);
  std::string modelTables();
  std::string elemType(Value v) {
    return cppType(typeOf(v).getElementType());
  }
  std::string weightPointer(Operation *op);
  /// Index of the communication group over `axes` (registered on first use).
  int groupOf(ArrayRef<int64_t> axes);
  /// C++ initializer of a DimSplit array for `s`.
  std::string splitArray(const TensorSharding &s);
  void emitStridedCopy(Operation *op, Value in, int64_t base,
                       ArrayRef<int64_t> strides);
  LogicalResult declareValues();

  func::FuncOp fn;
  Mesh mesh;
  EmitOptions options;
  std::vector<SmallVector<int64_t>> groups;
  std::string body;
  llvm::raw_string_ostream os;
  /// Declarations by name, in declaration order, and the names the current
  /// part uses.
  llvm::StringMap<std::string> declOf;
  llvm::StringMap<int64_t> declIndex;
  llvm::StringSet<> used;
  std::vector<std::string> parts;
  EmittedModel result;

  SmallVector<Operation *> ops;
  DenseMap<Operation *, int64_t> position;
  DenseMap<Operation *, Operation *> rootOf;
  DenseMap<Operation *, SmallVector<Operation *>> members;
  DenseMap<Value, std::string> names;
  DenseMap<Value, Value> aliasOf;
  DenseMap<Value, int64_t> bufferIndex;
  DenseMap<Operation *, int64_t> scratchIndex;
  std::vector<BufferRequest> buffers;
  llvm::StringMap<int64_t> weightByName;
  int64_t nextTemp = 0;
};

std::string Emitter::splitArray(const TensorSharding &s) {
  std::string out = "{";
  for (const DimSharding &d : s.dims) {
    out += "{" + std::to_string(d.axes.size()) + ", {";
    for (size_t i = 0; i < 4; ++i)
      out += (i ? ", " : "") + std::to_string(i < d.axes.size() ? d.axes[i] : 0);
    out += "}, " + std::to_string(d.isSplit() ? d.groups : 1) + "}, ";
  }
  return out + "}";
}

int Emitter::groupOf(ArrayRef<int64_t> axes) {
  for (auto [i, g] : llvm::enumerate(groups))
    if (ArrayRef<int64_t>(g) == axes)
      return i;
  groups.emplace_back(axes.begin(), axes.end());
  return groups.size() - 1;
}

std::string Emitter::weightPointer(Operation *op) {
  Value v = op->getResult(0);
  TensorSharding split = shardingOf(v);
  std::string key;
  WeightsEntry entry;
  entry.bytes = tensorBytes(v);
  entry.stride = entry.bytes;
  if (auto w = dyn_cast<WeightOp>(op)) {
    key = w.getName().str() + " " + describe(split, mesh);
    entry.weightName = w.getName().str();
  } else {
    entry.constant = cast<ConstantOp>(op).getValue();
  }
  if (!split.isReplicated()) {
    auto t = typeOf(v);
    entry.elementBytes = elementBytes(t.getElementType());
    for (auto [size, d] : llvm::zip(t.getShape(), split.dims)) {
      int64_t n = d.isSplit() ? mesh.size(d.axes) : 1;
      entry.globalShape.push_back(size * n);
      entry.blocks.push_back(n);
      entry.groups.push_back(d.isSplit() ? d.groups : 1);
      entry.numBlocks *= n;
    }
    entry.stride = (entry.bytes + 63) / 64 * 64;
  }
  int64_t index;
  auto it = key.empty() ? weightByName.end() : weightByName.find(key);
  if (it != weightByName.end()) {
    index = it->second;
  } else {
    entry.offset = result.weightsBytes;
    result.weightsBytes +=
        (entry.stride * (entry.numBlocks - 1) + entry.bytes + 63) / 64 * 64;
    index = result.weights.size();
    if (!key.empty())
      weightByName[key] = index;
    result.weights.push_back(entry);
  }
  const WeightsEntry &e = result.weights[index];
  std::string at = std::to_string(e.offset);
  if (e.numBlocks > 1) {
    std::string id = std::to_string(nextTemp++);
    os << "  static const DimSplit split" << id << "[] = " << splitArray(split)
       << ";\n";
    at += " + " + std::to_string(e.stride) + " * blockIndex(mesh, " +
          std::to_string(split.dims.size()) + ", split" + id + ")";
  }
  return at;
}

/// One device must hold each of its tensors; refuse before anything is sized
/// by them (batch offset tables, the arena).
LogicalResult Emitter::checkTensorSizes() {
  int64_t limit = options.deviceMemoryBytes;
  auto check = [&](Value v, Location loc, StringRef what) -> LogicalResult {
    if (!limit || tensorBytes(v) <= limit)
      return success();
    return emitError(loc) << what << " " << typeOf(v) << " needs "
                          << tensorBytes(v)
                          << " bytes on one device, more than the "
                          << limit << " bytes a device holds (--device-memory)";
  };
  for (BlockArgument a : fn.getArguments())
    if (failed(check(a, a.getLoc(), "input")))
      return failure();
  for (Operation &op : fn.getBody().front().without_terminator())
    for (Value r : op.getResults())
      if (failed(check(r, op.getLoc(), "result")))
        return failure();
  return success();
}

/// Everything a device holds at once: scratch arena, its weights, and the
/// inputs (read whole) and outputs.
LogicalResult Emitter::checkDeviceMemory() {
  int64_t limit = options.deviceMemoryBytes;
  int64_t weights = 0, io = 0;
  for (const WeightsEntry &e : result.weights)
    weights += e.bytes;
  for (Type t : fn.getFunctionType().getInputs())
    io += cast<RankedTensorType>(t).getNumElements() *
          elementBytes(cast<RankedTensorType>(t).getElementType());
  for (Value v : fn.getBody().front().getTerminator()->getOperands())
    io += tensorBytes(v);
  int64_t total = result.arenaBytes + weights + io;
  if (!limit || total <= limit)
    return success();
  return fn.emitError() << "the model needs " << total
                        << " bytes on each device (scratch "
                        << result.arenaBytes << ", weights " << weights
                        << ", inputs and outputs " << io << "), more than the "
                        << limit << " bytes a device holds (--device-memory)";
}

LogicalResult Emitter::analyze() {
  Block &block = fn.getBody().front();
  for (Operation &op : block.without_terminator()) {
    position[&op] = ops.size();
    ops.push_back(&op);
  }
  int64_t end = ops.size();

  // Fusion, from the last op backwards so a user's root is known.
  for (Operation *op : llvm::reverse(ops)) {
    Operation *root = op;
    if (Operation *user = fusedUser(op))
      root = rootOf.lookup(user);
    rootOf[op] = root;
  }
  for (Operation *op : ops)
    if (isPointwise(op))
      members[rootOf[op]].push_back(op);

  auto at = [&](Operation *op) { return position[rootOf.lookup(op)]; };

  // Storage and live ranges.
  for (Operation *op : ops) {
    if (isa<WeightOp, ConstantOp>(op) || rootOf[op] != op)
      continue;
    if (auto reshape = dyn_cast<ReshapeOp>(op)) {
      Value base = reshape.getInput();
      aliasOf[reshape.getResult()] = aliasOf.lookup(base) ? aliasOf.lookup(base) : base;
      continue;
    }
    for (Value r : op->getResults()) {
      bufferIndex[r] = buffers.size();
      buffers.push_back({at(op), at(op), tensorBytes(r)});
    }
  }
  auto extend = [&](Value v, int64_t pos) {
    Value base = aliasOf.lookup(v) ? aliasOf.lookup(v) : v;
    auto it = bufferIndex.find(base);
    if (it != bufferIndex.end())
      buffers[it->second].end = std::max(buffers[it->second].end, pos);
  };
  for (Operation *op : ops)
    for (Value operand : op->getOperands())
      extend(operand, at(op));
  for (Value v : block.getTerminator()->getOperands())
    extend(v, end);

  // Scratch: im2col columns, and intermediate results of reductions over
  // several separate axis blocks.
  for (Operation *op : ops) {
    int64_t bytes = 0;
    if (auto conv = dyn_cast<ConvOp>(op)) {
      auto w = typeOf(conv.getFilter()), y = typeOf(conv.getResult());
      bytes = numElements(w.getShape().drop_front(1)) *
              numElements(y.getShape().drop_front(2)) * 4;
    } else if (auto axes = op->getAttrOfType<DenseI64ArrayAttr>("axes");
               axes && op->getNumOperands() == 1) {
      // Only axis sets with gaps reduce in several passes through scratch.
      ArrayRef<int64_t> a = axes.asArrayRef();
      for (size_t i = 1; i < a.size(); ++i)
        if (a[i] != a[i - 1] + 1)
          bytes = 2 * tensorBytes(op->getOperand(0));
    }
    if (bytes) {
      scratchIndex[op] = buffers.size();
      buffers.push_back({position[op], position[op], bytes});
    }
  }
  for (const BufferRequest &b : buffers)
    result.unsharedBytes += (b.bytes + 63) / 64 * 64;
  result.arenaBytes = planBuffers(buffers);
  return success();
}

FailureOr<std::string> Emitter::scalarExpr(Operation *op,
                                           ArrayRef<std::string> a) {
  Type elem = typeOf(op->getResult(0)).getElementType();
  Type inElem = typeOf(op->getOperand(0)).getElementType();
  std::string T = cppType(elem);
  bool isFloat = isa<FloatType>(inElem);
  // Math through compiler builtins (generated code includes no <cmath>):
  // the float form for f32, else the double form.
  auto builtin = [&](StringRef fnName, ArrayRef<std::string> args) {
    std::string out = "__builtin_" + fnName.str() + (elem.isF32() ? "f" : "");
    for (auto [i, arg] : llvm::enumerate(args))
      out += (i ? ", " : "(") + (isFloat ? arg : "double(" + arg + ")");
    return out + ")";
  };
  auto call = [&](StringRef fnName) { return builtin(fnName, a[0]); };
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
      .Case([&](TanhOp) { return call("tanh"); })
      .Case([&](ErfOp) { return call("erf"); })
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
                 builtin("tanh", T + "(0.7978845608028654) * (" + a[0] +
                                     " + " + T + "(0.044715) * " + a[0] +
                                     " * " + a[0] + " * " + a[0] + ")") +
                 ")";
        return T + "(0.5) * " + a[0] + " * (" + T + "(1) + " +
               builtin("erf", a[0] + " * " + T + "(0.7071067811865476)") + ")";
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
        // Integer division by zero must not trap: it yields 0.
        if (!isFloat)
          return "(" + a[1] + " == 0 ? " + T + "(0) : " + T + "(" + a[0] + " / " + a[1] + "))";
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

LogicalResult Emitter::emitFusedLoop(Operation *root) {
  ArrayRef<Operation *> group = members[root];
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
  bool flat = llvm::all_of(leaves, [&](Value v) {
    auto t = typeOf(v);
    return t.getShape() == shape || t.getNumElements() == 1;
  });

  os << "  { // fused:";
  for (Operation *op : group)
    os << " " << op->getName().stripDialect();
  os << "\n";
  std::string indent = "    ";
  SmallVector<std::string> leafIdx;
  if (flat || rank == 0) {
    os << indent << "for (int64_t i = 0; i < " << numElements(shape)
       << "; ++i) {\n";
    for (Value v : leaves)
      leafIdx.push_back(typeOf(v).getShape() == shape ? "i" : "0");
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
    for (Value v : leaves) {
      ArrayRef<int64_t> ls = typeOf(v).getShape();
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
  }
  DenseMap<Value, std::string> scalar;
  for (auto [k, v] : llvm::enumerate(leaves)) {
    std::string name = "a" + std::to_string(k);
    os << indent << "  const " << elemType(v) << " " << name << " = "
       << ptr(v) << "[" << leafIdx[k] << "];\n";
    scalar[v] = name;
  }
  for (Operation *op : group) {
    SmallVector<std::string> args;
    for (Value v : op->getOperands())
      args.push_back(scalar.lookup(v));
    auto expr = scalarExpr(op, args);
    if (failed(expr))
      return failure();
    std::string name = "t" + std::to_string(nextTemp++);
    os << indent << "  const " << elemType(op->getResult(0)) << " " << name
       << " = " << *expr << ";\n";
    scalar[op->getResult(0)] = name;
  }
  os << indent << "  " << ptr(root->getResult(0)) << "[i] = "
     << scalar[root->getResult(0)] << ";\n";
  os << indent << "}\n  }\n";
  ++result.fusedLoops;
  result.fusedOps += group.size();
  return success();
}

LogicalResult Emitter::requireF32(Operation *op, Value v) {
  if (!typeOf(v).getElementType().isF32())
    return op->emitError() << "code generation does not support '"
                           << op->getName() << "' on "
                           << typeOf(v).getElementType() << " (f32 only)";
  return success();
}

std::string Emitter::scratch(Operation *op) {
  return "reinterpret_cast<float *>(arena + " +
         std::to_string(buffers[scratchIndex[op]].offset) + ")";
}

LogicalResult Emitter::unsupported(Operation *op) {
  return op->emitError() << "code generation does not support '"
                         << op->getName() << "' yet";
}

/// One library call for `op`, by op family.
LogicalResult Emitter::emitKernel(Operation *op) {
  ++result.kernelCalls;
  os << "  // " << op->getName() << "\n";
  if (isa<MatMulOp, GemmOp, ConvOp>(op))
    return emitContraction(op);
  if (isa<MaxPoolOp, AveragePoolOp, GlobalAveragePoolOp>(op))
    return emitPooling(op);
  if (isa<SoftmaxOp, LogSoftmaxOp, LayerNormOp, BatchNormOp>(op))
    return emitNormalization(op);
  if (isa<ReduceSumOp, ReduceMeanOp, ReduceMaxOp, ReduceMinOp, ReduceProdOp,
          ArgMaxOp, ArgMinOp>(op))
    return emitReduction(op);
  if (isa<GatherOp, ShardGatherOp, TransposeOp, SliceOp, ConcatOp, SplitOp,
          TriluOp>(op))
    return emitDataMovement(op);
  if (isa<shard::AllReduceOp, shard::AllGatherOp, shard::ReduceScatterOp,
          shard::AllSliceOp>(op))
    return emitCollective(op);
  return unsupported(op);
}

/// Matrix products and convolutions, on BLAS GEMMs.
LogicalResult Emitter::emitContraction(Operation *op) {

  if (auto mm = dyn_cast<MatMulOp>(op)) {
    if (failed(requireF32(op, mm.getLhs())))
      return failure();
    GemmShape gs = mm.gemmShape();
    int64_t m = gs.m, k = gs.k, n = gs.n, outBatch = gs.batch;
    if (m * n == 0 || outBatch == 0)
      return success();
    if (outBatch == 1) {
      os << "  gemmF32(false, false, " << m << ", " << n << ", " << k
         << ", 1.0f, " << ptr(mm.getLhs()) << ", " << k << ", "
         << ptr(mm.getRhs()) << ", " << n << ", 0.0f, " << out(op) << ", " << n
         << ");\n";
      return success();
    }
    // Broadcast batches: per-batch element offsets, computed now.
    SmallVector<int64_t> ls(typeOf(mm.getLhs()).getShape());
    SmallVector<int64_t> rs(typeOf(mm.getRhs()).getShape());
    if (ls.size() == 1)
      ls.insert(ls.begin(), 1);
    if (rs.size() == 1)
      rs.push_back(1);
    ArrayRef<int64_t> lb = ArrayRef(ls).drop_back(2), rb = ArrayRef(rs).drop_back(2);
    size_t rank = std::max(lb.size(), rb.size());
    SmallVector<int64_t> bshape(rank, 1), lpad(rank, 1), rpad(rank, 1);
    for (size_t d = 0; d < lb.size(); ++d)
      lpad[rank - lb.size() + d] = lb[d];
    for (size_t d = 0; d < rb.size(); ++d)
      rpad[rank - rb.size() + d] = rb[d];
    for (size_t d = 0; d < rank; ++d)
      bshape[d] = std::max(lpad[d], rpad[d]);
    auto lstr = stridesOf(lpad), rstr = stridesOf(rpad);
    SmallVector<int64_t> offA, offB;
    for (int64_t b = 0; b < outBatch; ++b) {
      int64_t rem = b, oa = 0, ob = 0;
      for (int64_t d = rank - 1; d >= 0; --d) {
        int64_t c = rem % bshape[d];
        rem /= bshape[d];
        oa += (lpad[d] == 1 ? 0 : c) * lstr[d];
        ob += (rpad[d] == 1 ? 0 : c) * rstr[d];
      }
      offA.push_back(oa * m * k);
      offB.push_back(ob * k * n);
    }
    std::string id = std::to_string(nextTemp++);
    os << "  static const int64_t offA" << id << "[] = {" << joinInts(offA)
       << "};\n  static const int64_t offB" << id << "[] = {" << joinInts(offB)
       << "};\n  batchedMatmulF32(" << outBatch << ", offA" << id << ", offB"
       << id << ", " << m << ", " << n << ", " << k << ", " << ptr(mm.getLhs())
       << ", " << ptr(mm.getRhs()) << ", " << out(op) << ");\n";
    return success();
  }
  if (auto g = dyn_cast<GemmOp>(op)) {
    if (failed(requireF32(op, g.getA())))
      return failure();
    auto a = typeOf(g.getA()), b = typeOf(g.getB());
    auto y = typeOf(g.getResult());
    GemmShape gs = g.gemmShape();
    int64_t m = gs.m, n = gs.n, k = gs.k;
    float beta = 0.0f;
    if (Value c = g.getC()) {
      // Broadcast C into Y, then accumulate the product with beta.
      ArrayRef<int64_t> cs = typeOf(c).getShape();
      std::string ci = cs.size() == 2 ? (cs[0] == 1 ? "" : "i * " + std::to_string(cs[1])) : "";
      std::string cj = cs.empty() || cs.back() == 1 ? "" : "j";
      std::string idx = ci.empty() && cj.empty() ? "0" : ci.empty() ? cj : cj.empty() ? ci : ci + " + " + cj;
      os << "  for (int64_t i = 0; i < " << m << "; ++i)\n    for (int64_t j = 0; j < "
         << n << "; ++j)\n      " << out(op) << "[i * " << n << " + j] = " << ptr(c)
         << "[" << idx << "];\n";
      beta = g.getBeta().convertToFloat();
    }
    os << "  gemmF32(" << (g.getTransA() ? "true" : "false") << ", "
       << (g.getTransB() ? "true" : "false") << ", " << m << ", " << n << ", "
       << k << ", " << floatLiteral(g.getAlpha().convertToDouble(), y.getElementType())
       << ", " << ptr(g.getA()) << ", " << a.getDimSize(1) << ", "
       << ptr(g.getB()) << ", " << b.getDimSize(1) << ", "
       << floatLiteral(beta, y.getElementType()) << ", " << out(op) << ", " << n << ");\n";
    return success();
  }
  if (auto conv = dyn_cast<ConvOp>(op)) {
    if (failed(requireF32(op, conv.getInput())))
      return failure();
    auto x = typeOf(conv.getInput()), w = typeOf(conv.getFilter());
    auto y = typeOf(conv.getResult());
    if (x.getRank() != 4 && x.getRank() != 3)
      return op->emitError() << "code generation does not support " << x.getRank() - 2 << "-D conv yet";
    bool is1d = x.getRank() == 3;
    auto st = conv.getStrides(), pd = conv.getPads(), dl = conv.getDilations();
    int64_t h = is1d ? 1 : x.getDimSize(2), wd = x.getShape().back();
    int64_t kh = is1d ? 1 : w.getDimSize(2), kw = w.getShape().back();
    int64_t oh = is1d ? 1 : y.getDimSize(2), ow = y.getShape().back();
    int64_t sh = is1d ? 1 : st[0], sw = st.back();
    int64_t ph = is1d ? 0 : pd[0], pw = is1d ? pd[0] : pd[1];
    int64_t dh = is1d ? 1 : dl[0], dw = dl.back();
    os << "  conv2dF32(" << ptr(conv.getInput()) << ", " << ptr(conv.getFilter())
       << ", " << (conv.getBias() ? ptr(conv.getBias()) : "nullptr") << ", "
       << out(op) << ", " << x.getDimSize(0) << ", " << x.getDimSize(1) << ", "
       << h << ", " << wd << ", " << w.getDimSize(0) << ", " << kh << ", "
       << kw << ", " << oh << ", " << ow << ", " << sh << ", " << sw << ", "
       << ph << ", " << pw << ", " << dh << ", " << dw << ", "
       << conv.getGroup() << ", " << scratch(op) << ");\n";
    return success();
  }
  return unsupported(op);
}

/// Max, average and global average pooling.
LogicalResult Emitter::emitPooling(Operation *op) {
  if (isa<MaxPoolOp, AveragePoolOp>(op)) {
    Value in = op->getOperand(0);
    if (failed(requireF32(op, in)))
      return failure();
    auto x = typeOf(in), y = typeOf(op->getResult(0));
    if (x.getRank() != 4 && x.getRank() != 3)
      return op->emitError() << "code generation does not support " << x.getRank() - 2 << "-D pooling yet";
    bool is1d = x.getRank() == 3;
    auto k = op->getAttrOfType<DenseI64ArrayAttr>("kernel_shape").asArrayRef();
    auto st = op->getAttrOfType<DenseI64ArrayAttr>("strides").asArrayRef();
    auto pd = op->getAttrOfType<DenseI64ArrayAttr>("pads").asArrayRef();
    auto dl = op->getAttrOfType<DenseI64ArrayAttr>("dilations").asArrayRef();
    bool countPad = false;
    if (auto avg = dyn_cast<AveragePoolOp>(op))
      countPad = avg.getCountIncludePad();
    int64_t sp = is1d ? 1 : 2;
    os << "  pool2dF32(" << (isa<MaxPoolOp>(op) ? "true" : "false") << ", "
       << ptr(in) << ", " << out(op) << ", " << x.getDimSize(0) * x.getDimSize(1)
       << ", " << (is1d ? 1 : x.getDimSize(2)) << ", " << x.getShape().back()
       << ", " << (is1d ? 1 : y.getDimSize(2)) << ", " << y.getShape().back()
       << ", " << (is1d ? 1 : k[0]) << ", " << k.back() << ", "
       << (is1d ? 1 : st[0]) << ", " << st.back() << ", " << (is1d ? 0 : pd[0])
       << ", " << pd[is1d ? 0 : 1] << ", " << (is1d ? 1 : dl[0]) << ", "
       << dl.back() << ", " << (countPad ? "true" : "false") << ", "
       << (is1d ? 0 : pd[sp]) << ", " << pd[is1d ? 1 : 3] << ");\n";
    return success();
  }
  if (auto gap = dyn_cast<GlobalAveragePoolOp>(op)) {
    if (failed(requireF32(op, gap.getInput())))
      return failure();
    auto x = typeOf(gap.getInput());
    os << "  globalAvgPoolF32(" << ptr(gap.getInput()) << ", " << out(op) << ", "
       << x.getDimSize(0) * x.getDimSize(1) << ", "
       << numElements(x.getShape().drop_front(2)) << ");\n";
    return success();
  }
  return unsupported(op);
}

/// Softmax, layer and batch normalisation.
LogicalResult Emitter::emitNormalization(Operation *op) {
  if (isa<SoftmaxOp, LogSoftmaxOp>(op)) {
    Value in = op->getOperand(0);
    ArrayRef<int64_t> s = typeOf(in).getShape();
    int64_t a = op->getAttrOfType<IntegerAttr>("axis").getInt();
    os << "  softmax<" << elemType(in) << ">(" << ptr(in) << ", " << out(op)
       << ", " << numElements(s.take_front(a)) << ", " << s[a] << ", "
       << numElements(s.drop_front(a + 1)) << ", "
       << (isa<LogSoftmaxOp>(op) ? "true" : "false") << ");\n";
    return success();
  }
  if (auto ln = dyn_cast<LayerNormOp>(op)) {
    ArrayRef<int64_t> s = typeOf(ln.getInput()).getShape();
    int64_t n = numElements(s.drop_front(ln.getAxis()));
    int64_t sn = typeOf(ln.getScale()).getNumElements();
    int64_t bn = ln.getBias() ? typeOf(ln.getBias()).getNumElements() : 1;
    if ((sn != n && sn != 1) || (bn != n && bn != 1))
      return op->emitError() << "code generation needs layer_norm scale and "
                                "bias of the normalized size or size 1";
    os << "  layerNorm<" << elemType(ln.getInput()) << ">(" << ptr(ln.getInput())
       << ", " << ptr(ln.getScale()) << ", " << sn << ", "
       << (ln.getBias() ? ptr(ln.getBias()) : "nullptr") << ", " << bn << ", "
       << out(op) << ", " << numElements(s.take_front(ln.getAxis())) << ", " << n
       << ", " << floatLiteral(ln.getEpsilon().convertToDouble(), Float32Type::get(op->getContext())) << ");\n";
    return success();
  }
  if (auto bn = dyn_cast<BatchNormOp>(op)) {
    ArrayRef<int64_t> s = typeOf(bn.getInput()).getShape();
    os << "  batchNorm<" << elemType(bn.getInput()) << ">(" << ptr(bn.getInput())
       << ", " << ptr(bn.getScale()) << ", " << ptr(bn.getBias()) << ", "
       << ptr(bn.getMean()) << ", " << ptr(bn.getVariance()) << ", " << out(op)
       << ", " << s[0] << ", " << s[1] << ", " << numElements(s.drop_front(2))
       << ", " << floatLiteral(bn.getEpsilon().convertToDouble(), Float32Type::get(op->getContext())) << ");\n";
    return success();
  }
  return unsupported(op);
}

/// Reductions over axes and arg-reductions.
LogicalResult Emitter::emitReduction(Operation *op) {
  if (isa<ReduceSumOp, ReduceMeanOp, ReduceMaxOp, ReduceMinOp, ReduceProdOp>(op)) {
    Value in = op->getOperand(0);
    std::string kind = llvm::TypeSwitch<Operation *, std::string>(op)
                           .Case([](ReduceSumOp) { return "Sum"; })
                           .Case([](ReduceMeanOp) { return "Mean"; })
                           .Case([](ReduceMaxOp) { return "Max"; })
                           .Case([](ReduceMinOp) { return "Min"; })
                           .Default([](Operation *) { return "Prod"; });
    SmallVector<int64_t> shape(typeOf(in).getShape());
    auto axes = op->getAttrOfType<DenseI64ArrayAttr>("axes").asArrayRef();
    std::string T = elemType(in);
    if (axes.empty()) {
      os << "  __builtin_memcpy(" << out(op) << ", " << ptr(in) << ", "
         << tensorBytes(in) << ");\n";
      return success();
    }
    // Contiguous blocks of axes, reduced last block first.
    SmallVector<std::pair<int64_t, int64_t>> blocks;
    for (int64_t a : axes) {
      if (!blocks.empty() && blocks.back().second == a)
        blocks.back().second = a + 1;
      else
        blocks.push_back({a, a + 1});
    }
    std::string src = ptr(in);
    int64_t half = tensorBytes(in);
    for (size_t bi = blocks.size(); bi-- > 0;) {
      auto [lo, hi] = blocks[bi];
      int64_t outer = numElements(ArrayRef(shape).take_front(lo));
      int64_t n = numElements(ArrayRef(shape).slice(lo, hi - lo));
      int64_t inner = numElements(ArrayRef(shape).drop_front(hi));
      std::string dst;
      if (bi == 0) {
        dst = out(op);
      } else {
        dst = "reinterpret_cast<" + T + " *>(arena + " +
              std::to_string(buffers[scratchIndex[op]].offset +
                             (bi % 2 ? 0 : half)) + ")";
      }
      os << "  reduce<" << T << ">(ReduceKind::" << kind << ", " << src << ", "
         << dst << ", " << outer << ", " << n << ", " << inner << ");\n";
      for (int64_t d = lo; d < hi; ++d)
        shape[d] = 1;
      src = dst;
    }
    return success();
  }
  if (isa<ArgMaxOp, ArgMinOp>(op)) {
    Value in = op->getOperand(0);
    ArrayRef<int64_t> s = typeOf(in).getShape();
    int64_t a = op->getAttrOfType<IntegerAttr>("axis").getInt();
    os << "  argReduce<" << elemType(in) << ">(" << (isa<ArgMaxOp>(op) ? "true" : "false")
       << ", " << ptr(in) << ", " << out(op) << ", " << numElements(s.take_front(a))
       << ", " << s[a] << ", " << numElements(s.drop_front(a + 1)) << ");\n";
    return success();
  }
  return unsupported(op);
}

/// Gathers, transposes, slices, concatenation, splits and triangles.
LogicalResult Emitter::emitDataMovement(Operation *op) {
  if (isa<GatherOp, ShardGatherOp>(op)) {
    Value table = op->getOperand(0), indices = op->getOperand(1);
    ArrayRef<int64_t> s = typeOf(table).getShape();
    int64_t a = op->getAttrOfType<IntegerAttr>("axis").getInt();
    a = a < 0 ? a + s.size() : a;
    os << "  if (!gather(" << elementBytes(typeOf(table).getElementType())
       << ", reinterpret_cast<const char *>(" << ptr(table) << "), "
       << ptr(indices) << ", reinterpret_cast<char *>(" << out(op) << "), "
       << numElements(s.take_front(a)) << ", " << s[a] << ", "
       << typeOf(indices).getNumElements() << ", "
       << numElements(s.drop_front(a + 1));
    // This device's block of a table split along the axis.
    if (auto sg = dyn_cast<ShardGatherOp>(op)) {
      int group = groupOf(sg.getGridAxes());
      os << ", groupIndex(mesh, " << group << ") * " << s[a]
         << ", groupSize(mesh, " << group << ") * " << s[a];
    }
    os << "))\n    return false;\n";
    return success();
  }
  if (auto t = dyn_cast<TransposeOp>(op)) {
    auto inStrides = stridesOf(typeOf(t.getInput()).getShape());
    SmallVector<int64_t> strides;
    for (int64_t p : t.getPerm())
      strides.push_back(inStrides[p]);
    emitStridedCopy(op, t.getInput(), 0, strides);
    return success();
  }
  if (auto sl = dyn_cast<SliceOp>(op)) {
    auto inStrides = stridesOf(typeOf(sl.getInput()).getShape());
    SmallVector<int64_t> strides;
    int64_t base = 0;
    for (size_t d = 0; d < inStrides.size(); ++d) {
      base += sl.getStarts()[d] * inStrides[d];
      strides.push_back(inStrides[d] * sl.getSteps()[d]);
    }
    emitStridedCopy(op, sl.getInput(), base, strides);
    return success();
  }
  if (auto c = dyn_cast<ConcatOp>(op)) {
    ArrayRef<int64_t> s = typeOf(c.getResult()).getShape();
    int64_t a = c.getAxis() < 0 ? c.getAxis() + s.size() : c.getAxis();
    std::string id = std::to_string(nextTemp++);
    SmallVector<int64_t> sizes;
    os << "  const char *parts" << id << "[] = {";
    for (Value v : c.getInputs()) {
      os << "reinterpret_cast<const char *>(" << ptr(v) << "), ";
      sizes.push_back(typeOf(v).getDimSize(a));
    }
    os << "};\n  static const int64_t sizes" << id << "[] = {" << joinInts(sizes)
       << "};\n  concat(" << elementBytes(typeOf(c.getResult()).getElementType())
       << ", " << sizes.size() << ", parts" << id << ", sizes" << id
       << ", reinterpret_cast<char *>(" << out(op) << "), "
       << numElements(s.take_front(a)) << ", " << numElements(s.drop_front(a + 1))
       << ");\n";
    return success();
  }
  if (auto sp = dyn_cast<SplitOp>(op)) {
    ArrayRef<int64_t> s = typeOf(sp.getInput()).getShape();
    int64_t a = sp.getAxis() < 0 ? sp.getAxis() + s.size() : sp.getAxis();
    std::string id = std::to_string(nextTemp++);
    os << "  char *parts" << id << "[] = {";
    for (unsigned i = 0; i < sp.getNumResults(); ++i)
      os << "reinterpret_cast<char *>(" << out(op, i) << "), ";
    os << "};\n  static const int64_t sizes" << id << "[] = {"
       << joinInts(sp.getSizes()) << "};\n  split("
       << elementBytes(typeOf(sp.getInput()).getElementType())
       << ", reinterpret_cast<const char *>(" << ptr(sp.getInput()) << "), "
       << sp.getNumResults() << ", parts" << id << ", sizes" << id << ", "
       << numElements(s.take_front(a)) << ", " << numElements(s.drop_front(a + 1))
       << ");\n";
    return success();
  }
  if (auto tr = dyn_cast<TriluOp>(op)) {
    ArrayRef<int64_t> s = typeOf(tr.getInput()).getShape();
    os << "  trilu<" << elemType(tr.getInput()) << ">(" << ptr(tr.getInput())
       << ", " << out(op) << ", " << numElements(s.drop_back(2)) << ", "
       << s[s.size() - 2] << ", " << s.back() << ", "
       << (tr.getUpper() ? "true" : "false") << ", " << tr.getK() << ");\n";
    return success();
  }
  return unsupported(op);
}

/// Collectives over mesh axes (the runtime's MPI calls).
LogicalResult Emitter::emitCollective(Operation *op) {
  if (isa<shard::AllReduceOp, shard::AllGatherOp, shard::ReduceScatterOp,
          shard::AllSliceOp>(op)) {
    Value in = op->getOperand(0);
    auto axesAttr = op->getAttrOfType<DenseI16ArrayAttr>("grid_axes");
    SmallVector<int64_t> axes(axesAttr.asArrayRef().begin(),
                              axesAttr.asArrayRef().end());
    std::string g = std::to_string(groupOf(axes));
    std::string dtype =
        "static_cast<DType>(" +
        std::to_string(onnxCode(typeOf(in).getElementType())) + ")";
    int64_t elem = elementBytes(typeOf(in).getElementType());
    auto split = [&](Value v, StringRef axisName) {
      ArrayRef<int64_t> s = typeOf(v).getShape();
      int64_t a = op->getAttrOfType<IntegerAttr>(axisName).getInt();
      return std::make_pair(numElements(s.take_front(a)), numElements(s.drop_front(a)));
    };
    int64_t bytes = tensorBytes(in);
    if (!isa<shard::AllSliceOp>(op))
      result.collectiveBytes += bytes;
    if (auto r = dyn_cast<shard::AllReduceOp>(op)) {
      ++result.allReduces;
      if (r.getReduction() != shard::ReductionKind::Sum)
        return op->emitError("code generation supports sum all-reduces only");
      os << "  allReduceSum(mesh, " << g << ", " << dtype << ", " << ptr(in)
         << ", " << out(op) << ", " << typeOf(in).getNumElements() << ");\n";
    } else if (isa<shard::AllGatherOp>(op)) {
      ++result.allGathers;
      auto [outer, block] = split(in, "gather_axis");
      os << "  allGather(mesh, " << g << ", " << ptr(in) << ", " << out(op)
         << ", " << outer << ", " << block * elem << ");\n";
    } else if (auto rs = dyn_cast<shard::ReduceScatterOp>(op)) {
      ++result.reduceScatters;
      if (rs.getReduction() != shard::ReductionKind::Sum)
        return op->emitError("code generation supports sum reduce-scatters only");
      auto [outer, block] = split(op->getResult(0), "scatter_axis");
      os << "  reduceScatterSum(mesh, " << g << ", " << dtype << ", "
         << ptr(in) << ", " << out(op) << ", " << outer << ", " << block
         << ");\n";
    } else {
      ++result.allSlices;
      auto [outer, block] = split(op->getResult(0), "slice_axis");
      os << "  allSlice(mesh, " << g << ", " << ptr(in) << ", " << out(op)
         << ", " << outer << ", " << block * elem << ");\n";
    }
    return success();
  }
  return unsupported(op);
}

void Emitter::emitStridedCopy(Operation *op, Value in, int64_t base,
                              ArrayRef<int64_t> strides) {
  ArrayRef<int64_t> shape = typeOf(op->getResult(0)).getShape();
  std::string id = std::to_string(nextTemp++);
  os << "  static const int64_t shape" << id << "[] = {" << joinInts(shape)
     << "};\n  static const int64_t strides" << id << "[] = {"
     << joinInts(strides) << "};\n  stridedCopy("
     << elementBytes(typeOf(in).getElementType())
     << ", reinterpret_cast<const char *>(" << ptr(in)
     << "), reinterpret_cast<char *>(" << ptr(op->getResult(0)) << "), "
     << shape.size() << ", " << (shape.empty() ? "nullptr" : "shape" + id)
     << ", " << base << ", " << (shape.empty() ? "nullptr" : "strides" + id)
     << ");\n";
}

void Emitter::declare(const std::string &name, function_ref<void()> write) {
  size_t mark = body.size();
  write();
  os.flush();
  declIndex[name] = declIndex.size();
  declOf[name] = body.substr(mark);
  body.resize(mark);
}

LogicalResult Emitter::declareValues() {
  int64_t counter = 0;
  auto fresh = [&] { return "v" + std::to_string(counter++); };
  auto checkType = [&](Value v, Location loc) -> LogicalResult {
    if (cppType(typeOf(v).getElementType()).empty())
      return emitError(loc) << "code generation does not support element type "
                            << typeOf(v).getElementType();
    return success();
  };
  for (BlockArgument arg : fn.getArguments()) {
    if (failed(checkType(arg, arg.getLoc())))
      return failure();
    std::string name = "in" + std::to_string(arg.getArgNumber());
    declare(name, [&] {
      os << "  const " << elemType(arg) << " *" << name
         << " = static_cast<const " << elemType(arg) << " *>(inputs["
         << arg.getArgNumber() << "]);\n";
    });
    names[arg] = name;
  }
  for (Operation *op : ops) {
    for (Value r : op->getResults())
      if (failed(checkType(r, op->getLoc())))
        return failure();
    if (isa<WeightOp, ConstantOp>(op)) {
      Value r = op->getResult(0);
      std::string name = fresh();
      declare(name, [&] {
        std::string at = weightPointer(op);
        os << "  const " << elemType(r) << " *" << name
           << " = reinterpret_cast<const " << elemType(r) << " *>(weights + "
           << at << ");\n";
      });
      names[r] = name;
      continue;
    }
    if (auto reshape = dyn_cast<ReshapeOp>(op)) {
      names[reshape.getResult()] = names.lookup(reshape.getInput());
      continue;
    }
    for (Value r : op->getResults()) {
      auto it = bufferIndex.find(r);
      if (it == bufferIndex.end())
        continue;
      std::string name = fresh();
      declare(name, [&] {
        os << "  " << elemType(r) << " *" << name << " = reinterpret_cast<"
           << elemType(r) << " *>(arena + " << buffers[it->second].offset
           << ");\n";
      });
      names[r] = name;
    }
  }
  return success();
}

void Emitter::closePart() {
  os.flush();
  std::vector<llvm::StringRef> names(used.keys().begin(), used.keys().end());
  llvm::sort(names, [&](llvm::StringRef a, llvm::StringRef b) {
    return declIndex.lookup(a) < declIndex.lookup(b);
  });
  std::string text;
  llvm::raw_string_ostream f(text);
  f << "bool part" << parts.size()
    << "(const void *const *inputs, void *const *outputs, char *arena,\n"
    << "           const char *weights, Mesh &mesh) {\n";
  for (llvm::StringRef n : names)
    f << declOf.lookup(n);
  f << body << "  return true;\n}\n\n";
  parts.push_back(std::move(text));
  body.clear();
  used.clear();
}

LogicalResult Emitter::emitOp(Operation *op) {
  if (isa<WeightOp, ConstantOp, ReshapeOp>(op))
    return success();
  if (isPointwise(op))
    return rootOf[op] == op ? emitFusedLoop(op) : success();
  return emitKernel(op);
}

/// Source bytes per part function: compilers optimise small functions in
/// about linear time but large ones far worse. (Parts are grouped into units
/// of EmitOptions::unitBytes, which compile in parallel.)
constexpr size_t kPartBytes = 16 << 10;

FailureOr<EmittedModel> Emitter::run() {
  if (fn.getBody().getBlocks().size() != 1)
    return fn.emitError("code generation needs a single-block function");
  if (failed(checkTensorSizes()) || failed(analyze()) ||
      failed(declareValues()) || failed(checkDeviceMemory()))
    return failure();
  for (Operation *op : ops) {
    if (failed(emitOp(op)))
      return failure();
    if (body.size() >= std::min(kPartBytes, options.unitBytes))
      closePart();
  }
  Operation *ret = fn.getBody().front().getTerminator();
  for (auto [k, v] : llvm::enumerate(ret->getOperands()))
    os << "  __builtin_memcpy(outputs[" << k << "], " << ptr(v) << ", "
       << tensorBytes(v) << ");\n";
  closePart();

  result.sources = assembleSources(modelTables());
  return std::move(result);
}

/// The model's tables: shapes and layouts of inputs and outputs, the mesh
/// and its communication groups.
std::string Emitter::modelTables() {
  std::string text;
  llvm::raw_string_ostream out(text);
  auto describe = [&](StringRef prefix, ArrayRef<Type> types,
                      function_ref<StringRef(unsigned)> nameOf,
                      function_ref<TensorSharding(unsigned)> layoutOf) {
    for (auto [i, t] : llvm::enumerate(types)) {
      auto rt = cast<RankedTensorType>(t);
      TensorSharding layout = layoutOf(i);
      out << "const int64_t " << prefix << "Shape" << i << "[] = {"
          << joinInts(SmallVector<int64_t>(
                 llvm::map_range(llvm::enumerate(rt.getShape()), [&](auto e) {
                   const DimSharding &d = layout.dims[e.index()];
                   return e.value() * (d.isSplit() ? mesh.size(d.axes) : 1);
                 })))
          << (rt.getRank() ? "" : "0") << "};\n";
      if (!layout.isReplicated())
        out << "const DimSplit " << prefix << "Split" << i << "[] = "
            << splitArray(layout) << ";\n";
    }
    out << "const TensorDesc " << prefix << "Descs[] = {\n";
    for (auto [i, t] : llvm::enumerate(types)) {
      auto rt = cast<RankedTensorType>(t);
      out << "  {" << cppString(nameOf(i)) << ", static_cast<DType>("
          << onnxCode(rt.getElementType()) << "), " << rt.getRank() << ", "
          << prefix << "Shape" << i << ", "
          << (layoutOf(i).isReplicated() ? std::string("nullptr")
                                         : (prefix + "Split" + Twine(i)).str())
          << "},\n";
    }
    out << "};\n\n";
  };
  auto fnType = fn.getFunctionType();
  auto argName = [&](unsigned i) -> StringRef {
    if (auto n = fn.getArgAttrOfType<StringAttr>(i, "pcc.name"))
      return n.getValue();
    return "input";
  };
  auto resName = [&](unsigned i) -> StringRef {
    if (auto n = fn.getResultAttrOfType<StringAttr>(i, "pcc.name"))
      return n.getValue();
    return "output";
  };
  auto layoutOf = [&](DictionaryAttr attrs, Type t) {
    if (attrs)
      if (auto s = attrs.getAs<ShardingAttr>(kShardingAttr))
        return fromAttr(s);
    return TensorSharding::replicated(cast<RankedTensorType>(t).getRank());
  };
  describe("input", fnType.getInputs(), argName, [&](unsigned i) {
    return layoutOf(fn.getArgAttrDict(i), fnType.getInput(i));
  });
  describe("output", fnType.getResults(), resName, [&](unsigned i) {
    return layoutOf(fn.getResultAttrDict(i), fnType.getResult(i));
  });
  out << "const int64_t meshShape[] = {" << joinInts(mesh.shape) << "};\n"
      << "const char *const meshAxes[] = {";
  for (const std::string &n : mesh.axisNames)
    out << cppString(n) << ", ";
  out << "};\n";
  if (!groups.empty()) {
    out << "const GroupDesc groups[] = {\n";
    for (const auto &g : groups) {
      SmallVector<int64_t> axes(g);
      axes.resize(4, 0);
      out << "  {" << g.size() << ", {" << joinInts(axes) << "}},\n";
    }
    out << "};\n";
  }
  return text;
}

std::vector<EmittedSource>
Emitter::assembleSources(const std::string &tables) {
  std::string source =
      fn->getParentOfType<ModuleOp>()->getAttrOfType<StringAttr>("pcc.source")
          .getValue()
          .str();
  std::string prologue =
      "// Generated by pcc from " + commentText(source) + ". Do not edit.\n" +
      "#include \"pccrt/Kernels.h\"\n\nusing namespace pccrt;\n\n"
      "namespace pcc_model {\n\n";
  const char *params = "(const void *const *inputs, void *const *outputs, "
                       "char *arena, const char *weights, Mesh &mesh)";

  // Parts go into units of about kUnitBytes; a small model is one unit.
  size_t total = 0;
  for (const std::string &p : parts)
    total += p.size();
  std::vector<EmittedSource> units(1);
  std::string main = prologue;
  if (total <= options.unitBytes) {
    for (const std::string &p : parts)
      main += p;
  } else {
    for (size_t i = 0; i < parts.size(); ++i) {
      if (units.size() == 1 || units.back().text.size() >= options.unitBytes) {
        units.push_back({"model_" + std::to_string(units.size()) + ".cpp",
                         prologue});
      }
      units.back().text += parts[i];
    }
    for (size_t i = 1; i < units.size(); ++i)
      units[i].text += "} // namespace pcc_model\n";
    for (size_t i = 0; i < parts.size(); ++i)
      main += "bool part" + std::to_string(i) + params + ";\n";
    main += "\n";
  }
  main += tables;
  main += std::string("\nvoid run") + params + " {\n";
  for (size_t i = 0; i < parts.size(); ++i)
    main += "  if (!part" + std::to_string(i) +
            "(inputs, outputs, arena, weights, mesh))\n    return;\n";
  auto fnType = fn.getFunctionType();
  llvm::raw_string_ostream m(main);
  m << "}\n\n} // namespace pcc_model\n\n"
    << "extern \"C\" const ModelInfo *pcc_model_info() {\n"
    << "  using namespace pcc_model;\n"
    << "  static const ModelInfo info = {\"main\", " << fnType.getNumInputs()
    << ", " << (fnType.getNumInputs() ? "inputDescs" : "nullptr") << ", "
    << fnType.getNumResults() << ", "
    << (fnType.getNumResults() ? "outputDescs" : "nullptr") << ", "
    << result.arenaBytes << "u, " << result.weightsBytes << "u, "
    << mesh.shape.size() << ", meshShape, meshAxes, " << groups.size()
    << ", " << (groups.empty() ? "nullptr" : "groups")
    << ", run, PCC_BUILD_FINGERPRINT};\n"
    << "  return &info;\n}\n";
  units[0] = {"model.cpp", std::move(main)};
  return units;
}

} // namespace

FailureOr<EmittedModel> emitCpp(ModuleOp module, const EmitOptions &options) {
  auto fn = module.lookupSymbol<func::FuncOp>("main");
  if (!fn)
    return module.emitError("module has no func.func @main");
  Mesh mesh;
  if (std::optional<Mesh> m = readMesh(module))
    mesh = *m;
  else
    mesh.shape = {1}, mesh.axisNames = {"dp"};
  if (mesh.shape.size() > 4 || mesh.numDevices() > (1 << 20))
    return module.emitError("code generation supports meshes of up to 4 axes");
  Emitter emitter(fn, mesh, options);
  return emitter.run();
}

} // namespace pcc
