//===- Sharding.cpp - tensor shardings over a device grid -----------------===//

#include "pcc/Sharding/Sharding.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/STLExtras.h"

using namespace mlir;

namespace pcc {

bool TensorSharding::isReplicated() const {
  return partial.empty() &&
         llvm::none_of(dims, [](const DimSharding &d) { return d.isSplit(); });
}

bool gathersStoredWeight(const TensorSharding &stored,
                         const TensorSharding &use) {
  if (stored.isReplicated() || stored == use ||
      stored.dims.size() != use.dims.size())
    return false;
  for (auto [s, u] : llvm::zip(stored.dims, use.dims))
    if (llvm::ArrayRef<int64_t>(s.axes).take_front(u.axes.size()) !=
            llvm::ArrayRef<int64_t>(u.axes) ||
        (u.isSplit() && s.groups != u.groups))
      return false;
  return true;
}

bool TensorSharding::gatherAxes(llvm::function_ref<bool(int64_t)> drop) {
  bool dropped = false;
  for (DimSharding &d : dims) {
    size_t before = d.axes.size();
    llvm::erase_if(d.axes, drop);
    dropped |= d.axes.size() != before;
    if (d.axes.empty())
      d.groups = 1;
  }
  return dropped;
}

bool TensorSharding::usesAxis(int64_t axis) const {
  if (llvm::is_contained(partial, axis))
    return true;
  return llvm::any_of(dims, [&](const DimSharding &d) {
    return llvm::is_contained(d.axes, axis);
  });
}

int64_t Mesh::numDevices() const {
  int64_t n = 1;
  for (int64_t s : shape)
    n *= s;
  return n;
}

int64_t Mesh::size(ArrayRef<int64_t> axes) const {
  int64_t n = 1;
  for (int64_t a : axes)
    n *= shape[a];
  return n;
}

int64_t Mesh::axisNamed(StringRef role) const {
  for (auto [i, name] : llvm::enumerate(axisNames))
    if (name == role)
      return i;
  return -1;
}

Mesh meshForDegrees(ArrayRef<std::pair<StringRef, int64_t>> degrees) {
  Mesh mesh;
  for (StringRef role : kAxisRoles)
    for (auto [name, degree] : degrees)
      if (name == role && degree > 1) {
        mesh.shape.push_back(degree);
        mesh.axisNames.push_back(role.str());
      }
  if (mesh.shape.empty()) {
    mesh.shape.push_back(1);
    mesh.axisNames.push_back("dp");
  }
  return mesh;
}

ShardingAttr toAttr(MLIRContext *ctx, const Mesh &mesh,
                    const TensorSharding &s) {
  Builder b(ctx);
  SmallVector<Attribute> dims;
  for (const DimSharding &d : s.dims) {
    SmallVector<int64_t> entry = {d.isSplit() ? d.groups : 1};
    llvm::append_range(entry, d.axes);
    dims.push_back(b.getDenseI64ArrayAttr(entry));
  }
  return ShardingAttr::get(ctx, FlatSymbolRefAttr::get(ctx, mesh.name),
                           b.getArrayAttr(dims), s.partial);
}

TensorSharding fromAttr(ShardingAttr attr) {
  TensorSharding s;
  for (Attribute a : attr.getDims()) {
    ArrayRef<int64_t> entry = cast<DenseI64ArrayAttr>(a).asArrayRef();
    DimSharding d;
    d.axes.assign(entry.begin() + 1, entry.end());
    d.groups = d.axes.empty() ? 1 : entry[0];
    s.dims.push_back(d);
  }
  s.partial.assign(attr.getPartial().begin(), attr.getPartial().end());
  return s;
}

int zeroSplitDim(ArrayRef<int64_t> shape, const TensorSharding &s,
                 const Mesh &mesh, int64_t n, bool further) {
  if (s.dims.size() != shape.size())
    return -1;
  for (bool whole : {!further, further})
    for (auto [d, ds] : llvm::enumerate(s.dims)) {
      int64_t blocks = ds.isSplit() ? mesh.size(ds.axes) : 1;
      if (ds.isSplit() == whole || (ds.isSplit() && ds.groups != 1) ||
          shape[d] % (blocks * n))
        continue;
      return int(d);
    }
  return -1;
}

bool divides(ArrayRef<int64_t> shape, const TensorSharding &s,
             const Mesh &mesh) {
  if (s.dims.size() != shape.size())
    return false;
  for (auto [size, d] : llvm::zip(shape, s.dims)) {
    if (!d.isSplit())
      continue;
    for (int64_t a : d.axes)
      if (a >= static_cast<int64_t>(mesh.shape.size()))
        return false;
    int64_t n = mesh.size(d.axes);
    if (d.groups < 1 || size % d.groups || (size / d.groups) % n)
      return false;
  }
  for (int64_t a : s.partial)
    if (a >= static_cast<int64_t>(mesh.shape.size()))
      return false;
  return true;
}

SmallVector<int64_t> localShape(ArrayRef<int64_t> shape,
                                const TensorSharding &s, const Mesh &mesh) {
  SmallVector<int64_t> local(shape);
  for (auto [i, d] : llvm::enumerate(s.dims))
    if (d.isSplit())
      local[i] /= mesh.size(d.axes);
  return local;
}

RankedTensorType localType(RankedTensorType global, const TensorSharding &s,
                           const Mesh &mesh) {
  return global.clone(localShape(global.getShape(), s, mesh));
}

std::optional<Mesh> readMesh(ModuleOp module) {
  for (auto grid : module.getOps<shard::GridOp>()) {
    Mesh mesh;
    mesh.name = grid.getSymName().str();
    mesh.shape.assign(grid.getShape().begin(), grid.getShape().end());
    if (auto names = grid->getAttrOfType<ArrayAttr>(kAxisNamesAttr))
      for (Attribute n : names)
        mesh.axisNames.push_back(cast<StringAttr>(n).getValue().str());
    mesh.axisNames.resize(mesh.shape.size());
    return mesh;
  }
  return std::nullopt;
}

void writeMesh(ModuleOp module, const Mesh &mesh) {
  for (auto grid : llvm::make_early_inc_range(module.getOps<shard::GridOp>()))
    grid.erase();
  OpBuilder b(module.getBodyRegion());
  b.setInsertionPointToStart(module.getBody());
  auto grid = shard::GridOp::create(b, module.getLoc(), mesh.name,
                                    b.getDenseI64ArrayAttr(mesh.shape));
  SmallVector<Attribute> names;
  for (const std::string &n : mesh.axisNames)
    names.push_back(b.getStringAttr(n));
  grid->setAttr(kAxisNamesAttr, b.getArrayAttr(names));
}

TensorSharding shardingOf(Value v) {
  int64_t rank = cast<RankedTensorType>(v.getType()).getRank();
  ShardingAttr attr;
  if (auto arg = dyn_cast<BlockArgument>(v)) {
    if (auto fn = dyn_cast<func::FuncOp>(arg.getOwner()->getParentOp()))
      attr = fn.getArgAttrOfType<ShardingAttr>(arg.getArgNumber(),
                                               kShardingAttr);
  } else if (auto all = v.getDefiningOp()->getAttrOfType<ArrayAttr>(
                 kShardingAttr)) {
    unsigned i = cast<OpResult>(v).getResultNumber();
    if (i < all.size())
      attr = dyn_cast<ShardingAttr>(all[i]);
  }
  if (!attr || static_cast<int64_t>(attr.getDims().size()) != rank)
    return TensorSharding::replicated(rank);
  return fromAttr(attr);
}

void setSharding(Value v, const Mesh &mesh, const TensorSharding &s) {
  MLIRContext *ctx = v.getContext();
  ShardingAttr attr = toAttr(ctx, mesh, s);
  if (auto arg = dyn_cast<BlockArgument>(v)) {
    auto fn = cast<func::FuncOp>(arg.getOwner()->getParentOp());
    fn.setArgAttr(arg.getArgNumber(), kShardingAttr, attr);
    return;
  }
  Operation *op = v.getDefiningOp();
  SmallVector<Attribute> all;
  if (auto old = op->getAttrOfType<ArrayAttr>(kShardingAttr))
    all.assign(old.begin(), old.end());
  while (all.size() < op->getNumResults())
    all.push_back(toAttr(
        ctx, mesh,
        TensorSharding::replicated(
            cast<RankedTensorType>(op->getResult(all.size()).getType())
                .getRank())));
  all[cast<OpResult>(v).getResultNumber()] = attr;
  op->setAttr(kShardingAttr, ArrayAttr::get(ctx, all));
}

std::optional<SmallVector<TensorSharding>>
operandShardings(Operation *op, StringRef name) {
  auto attr = op->getAttrOfType<ArrayAttr>(name);
  if (!attr || attr.size() != op->getNumOperands())
    return std::nullopt;
  SmallVector<TensorSharding> layouts;
  for (auto [a, v] : llvm::zip(attr, op->getOperands())) {
    auto s = dyn_cast<ShardingAttr>(a);
    auto type = dyn_cast<RankedTensorType>(v.getType());
    if (!s || !type || s.getDims().size() != size_t(type.getRank()))
      return std::nullopt;
    layouts.push_back(fromAttr(s));
  }
  return layouts;
}

void setOperandShardings(Operation *op, StringRef name, const Mesh &mesh,
                         ArrayRef<TensorSharding> layouts) {
  SmallVector<Attribute> attrs;
  for (const TensorSharding &s : layouts)
    attrs.push_back(toAttr(op->getContext(), mesh, s));
  op->setAttr(name, ArrayAttr::get(op->getContext(), attrs));
}

std::string describe(const TensorSharding &s, const Mesh &mesh) {
  auto axisName = [&](int64_t a) {
    if (a < static_cast<int64_t>(mesh.axisNames.size()) &&
        !mesh.axisNames[a].empty())
      return mesh.axisNames[a];
    return std::to_string(a);
  };
  std::string out = "[";
  for (auto [i, d] : llvm::enumerate(s.dims)) {
    out += i ? ", " : "";
    if (!d.isSplit()) {
      out += "-";
      continue;
    }
    for (auto [j, a] : llvm::enumerate(d.axes))
      out += (j ? "*" : "") + axisName(a);
    if (d.groups != 1)
      out += "/" + std::to_string(d.groups);
  }
  out += "]";
  if (!s.partial.empty()) {
    out += " partial(";
    for (auto [j, a] : llvm::enumerate(s.partial))
      out += (j ? "," : "") + axisName(a);
    out += ")";
  }
  return out;
}

} // namespace pcc
