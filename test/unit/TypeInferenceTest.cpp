//===- TypeInferenceTest.cpp - pcc op result-type inference ---------------===//

#include "pcc/Dialect/PCC/IR/PCCOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/MLIRContext.h"

#include <gtest/gtest.h>

using namespace mlir;

namespace {

class TypeInference : public ::testing::Test {
protected:
  TypeInference() : builder(&ctx) {
    ctx.loadDialect<pcc::PCCDialect, func::FuncDialect>();
    module = ModuleOp::create(builder.getUnknownLoc());
    builder.setInsertionPointToEnd(module->getBody());
  }

  /// A weight of the given shape to use as an operand.
  Value tensor(ArrayRef<int64_t> shape) {
    return pcc::WeightOp::create(
        builder, builder.getUnknownLoc(),
        RankedTensorType::get(shape, builder.getF32Type()),
        builder.getStringAttr("t"), pcc::ExternalDataAttr(), TypeAttr(),
        UnitAttr(), DenseI64ArrayAttr(), ArrayAttr(), IntegerAttr(),
        DenseI64ArrayAttr());
  }

  /// Infers the result shape of OpTy, or returns std::nullopt on failure.
  template <typename OpTy>
  std::optional<SmallVector<int64_t>>
  infer(ValueRange operands, ArrayRef<NamedAttribute> attrs = {}) {
    OperationState state(builder.getUnknownLoc(), OpTy::getOperationName());
    state.addOperands(operands);
    auto dict = builder.getDictionaryAttr(attrs);
    auto &props = state.getOrAddProperties<typename OpTy::Properties>();
    if (failed(OpTy::setPropertiesFromAttr(props, dict, nullptr)))
      return std::nullopt;
    SmallVector<Type> types;
    if (failed(OpTy::inferReturnTypes(&ctx, std::nullopt, state.operands,
                                      dict, state.getRawProperties(), {},
                                      types)))
      return std::nullopt;
    return SmallVector<int64_t>(
        cast<RankedTensorType>(types[0]).getShape());
  }

  MLIRContext ctx;
  OpBuilder builder;
  OwningOpRef<ModuleOp> module;
};

using Shape = SmallVector<int64_t>;

TEST_F(TypeInference, BroadcastingAdd) {
  EXPECT_EQ(infer<pcc::AddOp>({tensor({2, 1, 4}), tensor({3, 1})}),
            (Shape{2, 3, 4}));
  EXPECT_FALSE(infer<pcc::AddOp>({tensor({2, 3}), tensor({4, 3})}));
}

TEST_F(TypeInference, MatMulRanks) {
  EXPECT_EQ(infer<pcc::MatMulOp>({tensor({5, 2, 3}), tensor({3, 4})}),
            (Shape{5, 2, 4}));
  EXPECT_EQ(infer<pcc::MatMulOp>({tensor({3}), tensor({3, 4})}), (Shape{4}));
  EXPECT_EQ(infer<pcc::MatMulOp>({tensor({2, 3}), tensor({3})}), (Shape{2}));
  EXPECT_EQ(infer<pcc::MatMulOp>({tensor({1, 2, 3}), tensor({6, 3, 4})}),
            (Shape{6, 2, 4}));
  EXPECT_FALSE(infer<pcc::MatMulOp>({tensor({2, 3}), tensor({4, 5})}));
}

TEST_F(TypeInference, PoolCeilModeDropsWindowInPadding) {
  // 4 + 1 pad, kernel 2, stride 2, ceil: windows start at 0, 2, 4; the
  // third starts in the input (index 4 < 4 + 0 begin pad? no: 4 >= 4), so
  // it is dropped and the output has 2 elements.
  auto b = builder;
  EXPECT_EQ(infer<pcc::MaxPoolOp>(
                {tensor({1, 1, 4, 4})},
                {b.getNamedAttr("kernel_shape", b.getDenseI64ArrayAttr({2, 2})),
                 b.getNamedAttr("strides", b.getDenseI64ArrayAttr({2, 2})),
                 b.getNamedAttr("pads", b.getDenseI64ArrayAttr({0, 0, 1, 1})),
                 b.getNamedAttr("dilations", b.getDenseI64ArrayAttr({1, 1})),
                 b.getNamedAttr("ceil_mode", b.getBoolAttr(true))}),
            (Shape{1, 1, 2, 2}));
}

TEST_F(TypeInference, GatherEmbedding) {
  auto ids = pcc::WeightOp::create(
      builder, builder.getUnknownLoc(),
      RankedTensorType::get({2, 16}, builder.getI64Type()),
      builder.getStringAttr("ids"), pcc::ExternalDataAttr(), TypeAttr(),
      UnitAttr(), DenseI64ArrayAttr(), ArrayAttr(), IntegerAttr(),
      DenseI64ArrayAttr());
  EXPECT_EQ(infer<pcc::GatherOp>(
                {tensor({128, 64}), ids},
                {builder.getNamedAttr("axis", builder.getI64IntegerAttr(0))}),
            (Shape{2, 16, 64}));
}

TEST_F(TypeInference, ReshapeOverflowIsRejected) {
  int64_t big = int64_t(1) << 40;
  EXPECT_FALSE(infer<pcc::ReshapeOp>(
      {tensor({4})},
      {builder.getNamedAttr("shape",
                            builder.getDenseI64ArrayAttr({big, big, 4}))}));
}

} // namespace
