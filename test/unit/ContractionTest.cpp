//===- ContractionTest.cpp - the GEMMs of matmul, gemm and conv -----------===//
//
// ContractionOpInterface is what the planner prices and the code generator
// calls BLAS with; checked on parsed ops of each form.
//
//===----------------------------------------------------------------------===//

#include "pcc/Dialect/PCC/IR/PCCOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"

#include <gtest/gtest.h>

using namespace mlir;

namespace {

class Contraction : public ::testing::Test {
protected:
  Contraction() { ctx.loadDialect<pcc::PCCDialect, func::FuncDialect>(); }

  /// The GEMMs of the one contraction in `body` (a func body over %a, %b).
  pcc::GemmShape shapeOf(StringRef signature, StringRef body) {
    std::string text = ("func.func @f(" + signature + ") {\n" + body +
                        "\n  return\n}\n")
                           .str();
    module = parseSourceString<ModuleOp>(text, &ctx);
    EXPECT_TRUE(module) << text;
    pcc::GemmShape found;
    module->walk([&](pcc::ContractionOpInterface op) {
      found = op.gemmShape();
    });
    return found;
  }

  MLIRContext ctx;
  OwningOpRef<ModuleOp> module;
};

void expectShape(const pcc::GemmShape &s, int64_t batch, int64_t m, int64_t n,
                 int64_t k) {
  EXPECT_EQ(s.batch, batch);
  EXPECT_EQ(s.m, m);
  EXPECT_EQ(s.n, n);
  EXPECT_EQ(s.k, k);
}

TEST_F(Contraction, SharedRightOperandIsOneGemmOverAllRows) {
  expectShape(shapeOf("%a: tensor<2x16x64xf32>, %b: tensor<64x256xf32>",
                      "%y = pcc.matmul %a, %b : (tensor<2x16x64xf32>, "
                      "tensor<64x256xf32>) -> tensor<2x16x256xf32>"),
              1, 32, 256, 64);
}

TEST_F(Contraction, BroadcastBatchesStayBatched) {
  expectShape(shapeOf("%a: tensor<3x1x4x8xf32>, %b: tensor<5x8x2xf32>",
                      "%y = pcc.matmul %a, %b : (tensor<3x1x4x8xf32>, "
                      "tensor<5x8x2xf32>) -> tensor<3x5x4x2xf32>"),
              15, 4, 2, 8);
}

TEST_F(Contraction, RankOneOperandsArePromoted) {
  expectShape(shapeOf("%a: tensor<8xf32>, %b: tensor<4x8x3xf32>",
                      "%y = pcc.matmul %a, %b : (tensor<8xf32>, "
                      "tensor<4x8x3xf32>) -> tensor<4x3xf32>"),
              4, 1, 3, 8);
  expectShape(shapeOf("%a: tensor<5x8xf32>, %b: tensor<8xf32>",
                      "%y = pcc.matmul %a, %b : (tensor<5x8xf32>, "
                      "tensor<8xf32>) -> tensor<5xf32>"),
              1, 5, 1, 8);
}

TEST_F(Contraction, GemmFollowsTransposes) {
  expectShape(shapeOf("%a: tensor<64x4xf32>, %b: tensor<128x64xf32>",
                      "%y = pcc.gemm %a, %b {transA = true, transB = true} : "
                      "(tensor<64x4xf32>, tensor<128x64xf32>) -> "
                      "tensor<4x128xf32>"),
              1, 4, 128, 64);
}

TEST_F(Contraction, GroupedConvolutionIsOneGemmPerGroup) {
  pcc::GemmShape s = shapeOf(
      "%a: tensor<2x8x10x10xf32>, %b: tensor<12x4x3x3xf32>",
      "%y = pcc.conv %a, %b {strides = array<i64: 1, 1>, pads = array<i64: "
      "1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 2 : i64} : "
      "(tensor<2x8x10x10xf32>, tensor<12x4x3x3xf32>) -> "
      "tensor<2x12x10x10xf32>");
  expectShape(s, 2, 200, 6, 36);
  // Each output element is one K-long dot product.
  EXPECT_DOUBLE_EQ(s.flops(), 2.0 * 2 * 12 * 10 * 10 * 36);
}

} // namespace
