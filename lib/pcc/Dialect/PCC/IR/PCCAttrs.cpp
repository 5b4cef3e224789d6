//===- PCCAttrs.cpp - #pcc.sharding syntax, #pcc.plan and verifiers -------===//
//
// #pcc.sharding<@grid, [[0], [], [1]/3], partial = [1]> is stored as the grid
// symbol, one DenseI64ArrayAttr per dimension holding [groups, axes...], and
// the partial axes.
//
//===----------------------------------------------------------------------===//

#include "pcc/Dialect/PCC/IR/PCCAttrs.h"
#include "pcc/Dialect/PCC/IR/PCCDialect.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/SmallSet.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace pcc;

#define GET_ATTRDEF_CLASSES
#include "pcc/Dialect/PCC/IR/PCCAttrs.cpp.inc"

void PCCDialect::registerAttributes() {
  addAttributes<
#define GET_ATTRDEF_LIST
#include "pcc/Dialect/PCC/IR/PCCAttrs.cpp.inc"
      >();
}

Attribute ShardingAttr::parse(AsmParser &parser, Type) {
  FlatSymbolRefAttr grid;
  SmallVector<Attribute> dims;
  SmallVector<int64_t> partial;
  Builder b(parser.getContext());
  if (parser.parseLess() || parser.parseAttribute(grid) || parser.parseComma())
    return {};
  auto parseDim = [&]() -> ParseResult {
    SmallVector<int64_t> entry = {1};
    if (parser.parseCommaSeparatedList(AsmParser::Delimiter::Square, [&] {
          int64_t axis;
          if (parser.parseInteger(axis))
            return failure();
          entry.push_back(axis);
          return success();
        }))
      return failure();
    if (succeeded(parser.parseOptionalSlash()) &&
        parser.parseInteger(entry[0]))
      return failure();
    dims.push_back(b.getDenseI64ArrayAttr(entry));
    return success();
  };
  if (parser.parseCommaSeparatedList(AsmParser::Delimiter::Square, parseDim))
    return {};
  if (succeeded(parser.parseOptionalComma())) {
    if (parser.parseKeyword("partial") || parser.parseEqual() ||
        parser.parseCommaSeparatedList(AsmParser::Delimiter::Square, [&] {
          int64_t axis;
          if (parser.parseInteger(axis))
            return failure();
          partial.push_back(axis);
          return success();
        }))
      return {};
  }
  if (parser.parseGreater())
    return {};
  return parser.getChecked<ShardingAttr>(parser.getContext(), grid,
                                         b.getArrayAttr(dims), partial);
}

void ShardingAttr::print(AsmPrinter &printer) const {
  printer << "<" << getGrid() << ", [";
  llvm::interleaveComma(getDims(), printer, [&](Attribute a) {
    ArrayRef<int64_t> entry = cast<DenseI64ArrayAttr>(a).asArrayRef();
    printer << "[";
    llvm::interleaveComma(entry.drop_front(), printer);
    printer << "]";
    if (entry[0] != 1)
      printer << "/" << entry[0];
  });
  printer << "]";
  if (!getPartial().empty()) {
    printer << ", partial = [";
    llvm::interleaveComma(getPartial(), printer);
    printer << "]";
  }
  printer << ">";
}

LogicalResult
ShardingAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                     FlatSymbolRefAttr grid, ArrayAttr dims,
                     ArrayRef<int64_t> partial) {
  if (!grid)
    return emitError() << "sharding needs a grid symbol";
  llvm::SmallSet<int64_t, 8> seen;
  auto use = [&](int64_t axis) -> LogicalResult {
    if (axis < 0)
      return emitError() << "grid axis " << axis << " is negative";
    if (!seen.insert(axis).second)
      return emitError() << "grid axis " << axis << " is used twice";
    return success();
  };
  for (Attribute a : dims) {
    auto entry = dyn_cast<DenseI64ArrayAttr>(a);
    if (!entry || entry.empty())
      return emitError() << "sharding dims must be i64 arrays [groups, axes...]";
    if (entry[0] < 1)
      return emitError() << "group count must be positive, got " << entry[0];
    for (int64_t axis : entry.asArrayRef().drop_front())
      if (failed(use(axis)))
        return failure();
  }
  for (int64_t axis : partial)
    if (failed(use(axis)))
      return failure();
  return success();
}

LogicalResult PlanAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                               ArrayAttr axes, DenseI64ArrayAttr sizes,
                               StringRef tensorMode, StringRef tensorLayout,
                               StringRef sequenceMode, int64_t tensorDepth,
                               int64_t microbatches, bool train,
                               StringRef recompute, int64_t zero,
                               int64_t virtualStages, bool zeroBubble) {
  if (zero < 0 || zero > 3)
    return emitError() << "zero must be a ZeRO stage 0 to 3, got " << zero;
  if (!sizes || int64_t(axes.size()) != sizes.size())
    return emitError() << "needs one size per axis";
  size_t next = 0;
  for (auto [axis, size] : llvm::zip(axes, sizes.asArrayRef())) {
    auto name = dyn_cast<StringAttr>(axis);
    if (!name)
      return emitError() << "axes must be strings";
    const StringLiteral *at = std::find(std::begin(kAxisRoles) + next,
                                        std::end(kAxisRoles), name.getValue());
    if (at == std::end(kAxisRoles))
      return emitError() << "axis '" << name.getValue()
                         << "' is not a role in rank order (pp, dp, sp, tp), "
                            "or repeats";
    next = at - std::begin(kAxisRoles) + 1;
    if (size < 1)
      return emitError() << "axis '" << name.getValue() << "' has size "
                         << size;
  }
  if (!llvm::is_contained({"1d", "2d", "2.5d", "3d"}, tensorMode))
    return emitError() << "unknown tensor_mode '" << tensorMode
                       << "' (1d, 2d, 2.5d or 3d)";
  if (tensorLayout != "megatron" && tensorLayout != "planned" &&
      tensorLayout != "megatron-sp")
    return emitError() << "unknown tensor_layout '" << tensorLayout
                       << "' (megatron, megatron-sp or planned)";
  if (sequenceMode != "ulysses" && sequenceMode != "ring")
    return emitError() << "unknown sequence_mode '" << sequenceMode
                       << "' (ulysses or ring)";
  if (tensorDepth < 1)
    return emitError() << "tensor_depth must be at least 1, got "
                       << tensorDepth;
  if (microbatches < 1)
    return emitError() << "microbatches must be at least 1, got "
                       << microbatches;
  if (recompute != "none" && recompute != "full" && recompute != "selective")
    return emitError() << "unknown recompute '" << recompute
                       << "' (none, full or selective)";
  if (virtualStages < 1)
    return emitError() << "virtual_stages must be at least 1, got "
                       << virtualStages;
  if (zeroBubble && (!train || virtualStages != 1))
    return emitError() << "zero_bubble schedules a training step's pipeline "
                          "of one chunk per device";
  return success();
}
