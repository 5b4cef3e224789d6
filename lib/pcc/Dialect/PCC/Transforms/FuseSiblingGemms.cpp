//===- FuseSiblingGemms.cpp - one product for products of one input -------===//
//
// Separate Q, K, V projections are three GEMMs reading one input; a fused
// QKV projection is one GEMM three times as wide. Both compute the same
// columns, but the planner (GEMM-shape efficiency, kernel counts) and the
// GPU run the wide one faster, and Megatron's layouts and the attention
// kernels are built around the fused form. Separate products become it
// here, before planning, so a model is planned and run the same however
// its projections were written.
//
//===----------------------------------------------------------------------===//

#include "pcc/Dialect/PCC/IR/PCCOps.h"
#include "pcc/Dialect/PCC/IR/TensorUtils.h"
#include "pcc/Dialect/PCC/Transforms/Passes.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"

namespace pcc {
#define GEN_PASS_DEF_FUSESIBLINGGEMMS
#include "pcc/Dialect/PCC/Transforms/Passes.h.inc"
} // namespace pcc

using namespace mlir;
using namespace pcc;

namespace {

/// A weight the pass may join: the initializer's whole value, read only
/// by the product (or bias add) being fused.
WeightOp joinableWeight(Value v) {
  auto w = v.getDefiningOp<WeightOp>();
  if (!w || !w->hasOneUse() || w.getZeros() || w.getUnpaddedAttr() ||
      w.getPartsAttr() || !isa<FloatType>(elementTypeOf(w)))
    return {};
  return w;
}

/// One product `input x weight` (or `input x transpose(weight)`), with the
/// bias add that is its only reader, if any.
struct Product {
  MatMulOp matmul;
  WeightOp weight;
  TransposeOp transpose; // of `weight`, when the product reads it so
  AddOp biasAdd;
  WeightOp bias;

  /// The value the product's readers read.
  Value result() { return biasAdd ? biasAdd.getResult() : matmul.getResult(); }
  int64_t columns() { return shapeOf(matmul.getResult()).back(); }
};

std::optional<Product> productOf(MatMulOp mm, Value input) {
  if (mm.getLhs() != input || mm.getRhs() == input || mm.getSummaAxesAttr() ||
      typeOf(input).getRank() < 2 || typeOf(mm.getRhs()).getRank() != 2)
    return std::nullopt;
  Product p{mm, {}, {}, {}, {}};
  Value rhs = mm.getRhs();
  if (auto t = rhs.getDefiningOp<TransposeOp>()) {
    if (!t->hasOneUse())
      return std::nullopt;
    p.transpose = t;
    rhs = t.getInput();
  }
  p.weight = joinableWeight(rhs);
  if (!p.weight)
    return std::nullopt;
  if (mm->hasOneUse())
    if (auto add = dyn_cast<AddOp>(*mm->getUsers().begin())) {
      Value other =
          add.getLhs() == mm.getResult() ? add.getRhs() : add.getLhs();
      WeightOp bias = joinableWeight(other);
      if (bias && typeOf(bias).getRank() == 1 &&
          shapeOf(bias)[0] == p.columns() &&
          add.getType() == mm.getResult().getType()) {
        p.biasAdd = add;
        p.bias = bias;
      }
    }
  return p;
}

/// What products must share to be one: weight element and source types,
/// the contraction's size and whether the weight is read transposed.
struct GroupKey {
  Type element, source;
  int64_t contraction;
  bool transposed;
  bool operator==(const GroupKey &o) const {
    return element == o.element && source == o.source &&
           contraction == o.contraction && transposed == o.transposed;
  }
};

} // namespace

template <> struct llvm::DenseMapInfo<GroupKey> {
  static GroupKey getEmptyKey() { return {Type(), Type(), -1, false}; }
  static GroupKey getTombstoneKey() { return {Type(), Type(), -2, false}; }
  static unsigned getHashValue(const GroupKey &k) {
    return llvm::hash_combine(k.element.getAsOpaquePointer(),
                              k.source.getAsOpaquePointer(), k.contraction,
                              k.transposed);
  }
  static bool isEqual(const GroupKey &a, const GroupKey &b) { return a == b; }
};

namespace {

/// A `pcc.weight` joining `parts` along `axis`, of `type`.
WeightOp joinedWeight(OpBuilder &b, MutableArrayRef<WeightOp> parts,
                      int64_t axis, RankedTensorType type) {
  SmallVector<StringRef> names;
  SmallVector<int64_t> sizes;
  for (WeightOp w : parts) {
    names.push_back(w.getName());
    sizes.push_back(typeOf(w).getDimSize(axis));
  }
  return WeightOp::create(
      b, parts.front().getLoc(), type, b.getStringAttr(llvm::join(names, "+")),
      /*external=*/nullptr, parts.front().getSourceTypeAttr(),
      /*zeros=*/nullptr,
      /*unpadded=*/nullptr, b.getStrArrayAttr(names), b.getI64IntegerAttr(axis),
      b.getDenseI64ArrayAttr(sizes));
}

/// Whether `a` and `b` are stored alike (element and source types).
bool storedAlike(WeightOp a, WeightOp b) {
  return a.getType() == b.getType().clone(typeOf(a).getShape()) &&
         a.getSourceTypeAttr() == b.getSourceTypeAttr();
}

/// Replaces `group` (two or more products of `input`, in block order) by
/// one, made where the first was.
void fuse(Value input, MutableArrayRef<Product> group) {
  Product &first = group.front();
  int64_t columns = 0;
  SmallVector<int64_t> sizes;
  SmallVector<WeightOp> weights, biases;
  for (Product &p : group) {
    sizes.push_back(p.columns());
    columns += p.columns();
    weights.push_back(p.weight);
    if (p.bias && storedAlike(p.bias, first.bias ? first.bias : p.bias))
      biases.push_back(p.bias);
  }
  OpBuilder b(first.matmul);
  int64_t contraction = shapeOf(first.matmul.getRhs())[0];
  Value rhs;
  if (first.transpose) {
    auto w = joinedWeight(b, weights, 0,
                          typeOf(first.weight).clone({columns, contraction}));
    rhs = TransposeOp::create(
        b, first.transpose.getLoc(),
        typeOf(first.matmul.getRhs()).clone({contraction, columns}), w,
        b.getDenseI64ArrayAttr({1, 0}));
  } else {
    rhs = joinedWeight(b, weights, 1,
                       typeOf(first.weight).clone({contraction, columns}));
  }
  SmallVector<int64_t> shape(shapeOf(first.matmul.getResult()));
  shape.back() = columns;
  auto resultType = typeOf(first.matmul.getResult()).clone(shape);
  Value fused =
      MatMulOp::create(b, first.matmul.getLoc(), resultType, input, rhs,
                       /*summa_axes=*/nullptr);
  // Biases join only when every product has one, stored alike (else each
  // keeps its add).
  bool joinBiases = biases.size() == group.size();
  if (joinBiases) {
    auto bias = joinedWeight(b, biases, 0, typeOf(first.bias).clone({columns}));
    fused =
        first.biasAdd.getLhs() == first.matmul.getResult()
            ? AddOp::create(b, first.biasAdd.getLoc(), resultType, fused, bias)
                  .getResult()
            : AddOp::create(b, first.biasAdd.getLoc(), resultType, bias, fused)
                  .getResult();
  }
  int64_t axis = shape.size() - 1;
  SmallVector<Type> partTypes;
  for (Product &p : group)
    partTypes.push_back(p.matmul.getResult().getType());
  auto split =
      SplitOp::create(b, first.matmul.getLoc(), partTypes, fused,
                      b.getI64IntegerAttr(axis), b.getDenseI64ArrayAttr(sizes));
  for (auto [p, part] : llvm::zip(group, split.getResults())) {
    p.matmul.getResult().replaceAllUsesWith(part);
    if (joinBiases) {
      p.biasAdd.getResult().replaceAllUsesWith(part);
      p.biasAdd->erase();
      p.bias->erase();
    }
    p.matmul->erase();
    if (p.transpose)
      p.transpose->erase();
    p.weight->erase();
  }
}

/// The ops `p`'s product flows into up to where it meets other
/// activations: views, bias adds, scalings and activations of it alone are
/// followed, and the first op reading another activation (an attention
/// reading Q, K and V; the product of a gate and an up projection) ends
/// the path. A layer's K and V meet at its attention; the next layer's
/// are reached only past that, through the residual stream.
llvm::DenseSet<Operation *> meetingOps(Product &p) {
  llvm::DenseSet<Operation *> own{p.matmul}, reached;
  SmallVector<Operation *> frontier{p.matmul};
  while (!frontier.empty()) {
    Operation *op = frontier.pop_back_val();
    for (Operation *user : op->getUsers()) {
      if (!reached.insert(user).second)
        continue;
      bool alone = llvm::all_of(user->getOperands(), [&](Value v) {
        Operation *def = v.getDefiningOp();
        return def && (own.contains(def) || isa<WeightOp, ConstantOp>(def));
      });
      if (alone) {
        own.insert(user);
        frontier.push_back(user);
      }
    }
  }
  return reached;
}

/// `group` cut into the products whose results meet (one layer's Q, K and
/// V at its attention; a gate and an up projection at their product): a
/// value many layers read (an encoder's output, read by every decoder
/// layer's K and V) is not one product for all of them.
SmallVector<SmallVector<Product>>
meetingGroups(MutableArrayRef<Product> group) {
  SmallVector<llvm::DenseSet<Operation *>> near;
  for (Product &p : group)
    near.push_back(meetingOps(p));
  // Union-find over products meeting at an op.
  SmallVector<unsigned> leader(group.size());
  for (unsigned i = 0; i < group.size(); ++i)
    leader[i] = i;
  auto find = [&](unsigned i) {
    while (leader[i] != i)
      i = leader[i] = leader[leader[i]];
    return i;
  };
  for (unsigned i = 0; i < group.size(); ++i)
    for (unsigned j = i + 1; j < group.size(); ++j)
      if (find(i) != find(j) && llvm::any_of(near[i], [&](Operation *op) {
            return near[j].contains(op);
          }))
        leader[find(j)] = find(i);
  llvm::MapVector<unsigned, SmallVector<Product>> byLeader;
  for (unsigned i = 0; i < group.size(); ++i)
    byLeader[find(i)].push_back(group[i]);
  SmallVector<SmallVector<Product>> result;
  for (auto &[l, members] : byLeader)
    result.push_back(std::move(members));
  return result;
}

struct FuseSiblingGemms
    : public pcc::impl::FuseSiblingGemmsBase<FuseSiblingGemms> {
  using FuseSiblingGemmsBase::FuseSiblingGemmsBase;

  void runOnOperation() override {
    llvm::StringSet<> kept;
    for (const std::string &n : keep)
      kept.insert(n);
    // Inputs first, in order, so the rewrite does not depend on hashing.
    SmallVector<Value> inputs;
    getOperation().walk([&](MatMulOp mm) {
      if (!llvm::is_contained(inputs, mm.getLhs()))
        inputs.push_back(mm.getLhs());
    });
    for (Value input : inputs) {
      llvm::MapVector<GroupKey, SmallVector<Product>> groups;
      for (Operation *user : input.getUsers()) {
        auto mm = dyn_cast<MatMulOp>(user);
        if (!mm || mm->getBlock() != input.getParentBlock())
          continue;
        auto p = productOf(mm, input);
        if (!p || kept.contains(p->weight.getName()) ||
            (p->bias && kept.contains(p->bias.getName())))
          continue;
        Type source = p->weight.getSourceTypeAttr()
                          ? p->weight.getSourceTypeAttr().getValue()
                          : Type();
        GroupKey key{elementTypeOf(p->weight), source, shapeOf(mm.getRhs())[0],
                     bool(p->transpose)};
        auto &group = groups[key];
        // A matmul reading the input twice is one user, listed once.
        if (llvm::none_of(group,
                          [&](const Product &q) { return q.matmul == mm; }))
          group.push_back(*p);
      }
      for (auto &[key, group] : groups) {
        llvm::sort(group, [](Product &a, Product &c) {
          return a.matmul->isBeforeInBlock(c.matmul);
        });
        for (SmallVector<Product> &siblings : meetingGroups(group))
          if (siblings.size() >= 2)
            fuse(input, siblings);
      }
    }
  }
};

} // namespace
