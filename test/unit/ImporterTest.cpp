//===- ImporterTest.cpp - ONNX importer through its C++ API ---------------===//

#include "pcc/Dialect/PCC/IR/PCCOps.h"
#include "pcc/Import/ONNXImporter.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"

#include <gtest/gtest.h>

using namespace mlir;

namespace {

/// Imports ONNX text syntax, collecting error messages.
struct Imported {
  OwningOpRef<ModuleOp> module;
  std::vector<std::string> errors;
};

Imported importText(MLIRContext &ctx, const std::string &text,
                    const pcc::ImportOptions &options = {}) {
  Imported result;
  ScopedDiagnosticHandler handler(&ctx, [&](Diagnostic &d) {
    result.errors.push_back(d.str());
    return success();
  });
  result.module = pcc::importONNXBuffer(text, /*text=*/true, "test.onnxtxt",
                                        ctx, options);
  return result;
}

func::FuncOp mainOf(ModuleOp module) {
  return module.lookupSymbol<func::FuncOp>("main");
}

const char *kHeader = "<ir_version: 8, opset_import: [\"\" : 14]>\n";

TEST(Importer, GemmWithInitializers) {
  MLIRContext ctx;
  auto r = importText(ctx, std::string(kHeader) + R"(
    g (float[2, 3] x) => (float[2, 4] y)
    <float[4, 3] w = {0,1,2,3,4,5,6,7,8,9,10,11}, float[4] b = {1,2,3,4}>
    { y = Gemm <transB = 1> (x, w, b) }
  )");
  ASSERT_TRUE(r.module) << (r.errors.empty() ? "" : r.errors[0]);
  auto fn = mainOf(*r.module);
  ASSERT_TRUE(fn);
  EXPECT_EQ(fn.getFunctionType().getResult(0),
            RankedTensorType::get({2, 4}, Float32Type::get(&ctx)));
  int gemms = 0, weights = 0;
  fn.walk([&](Operation *op) {
    gemms += isa<pcc::GemmOp>(op);
    weights += isa<pcc::WeightOp>(op);
  });
  EXPECT_EQ(gemms, 1);
  EXPECT_EQ(weights, 2); // Float initializers stay references.
}

TEST(Importer, UnusedInitializersCreateNoOps) {
  MLIRContext ctx;
  auto r = importText(ctx, std::string(kHeader) + R"(
    g (float[2] x) => (float[2] y)
    <float[2] unused = {1, 2}>
    { y = Relu(x) }
  )");
  ASSERT_TRUE(r.module);
  int weights = 0;
  mainOf(*r.module).walk([&](pcc::WeightOp) { ++weights; });
  EXPECT_EQ(weights, 0);
}

TEST(Importer, ReshapeResolvesZeroAndMinusOne) {
  MLIRContext ctx;
  auto r = importText(ctx, std::string(kHeader) + R"(
    g (float[2, 3, 4] x) => (float[2, 12] y)
    <int64[2] s = {0, -1}>
    { y = Reshape(x, s) }
  )");
  ASSERT_TRUE(r.module);
  pcc::ReshapeOp reshape;
  mainOf(*r.module).walk([&](pcc::ReshapeOp op) { reshape = op; });
  ASSERT_TRUE(reshape);
  EXPECT_EQ(reshape.getShape(), (ArrayRef<int64_t>{2, 12}));
}

TEST(Importer, SliceClampsAndNormalizes) {
  MLIRContext ctx;
  // x[:, ::-2] on a [2, 5] tensor: starts INT_MAX clamp to 4, ends -INF.
  auto r = importText(ctx, std::string(kHeader) + R"(
    g (float[2, 5] x) => (float[2, 3] y)
    <int64[1] st = {9223372036854775807}, int64[1] en = {-9223372036854775807},
     int64[1] ax = {1}, int64[1] sp = {-2}>
    { y = Slice(x, st, en, ax, sp) }
  )");
  ASSERT_TRUE(r.module) << (r.errors.empty() ? "" : r.errors[0]);
  pcc::SliceOp slice;
  mainOf(*r.module).walk([&](pcc::SliceOp op) { slice = op; });
  ASSERT_TRUE(slice);
  EXPECT_EQ(slice.getStarts(), (ArrayRef<int64_t>{0, 4}));
  EXPECT_EQ(slice.getSizes(), (ArrayRef<int64_t>{2, 3}));
  EXPECT_EQ(slice.getSteps(), (ArrayRef<int64_t>{1, -2}));
}

TEST(Importer, ConvSameUpperPads) {
  MLIRContext ctx;
  auto r = importText(ctx, std::string(kHeader) + R"(
    g (float[1, 1, 5, 5] x, float[1, 1, 2, 2] w) => (float[1, 1, 3, 3] y)
    { y = Conv <auto_pad = "SAME_UPPER", strides = [2, 2]> (x, w) }
  )");
  ASSERT_TRUE(r.module) << (r.errors.empty() ? "" : r.errors[0]);
  pcc::ConvOp conv;
  mainOf(*r.module).walk([&](pcc::ConvOp op) { conv = op; });
  ASSERT_TRUE(conv);
  // out = ceil(5 / 2) = 3; total pad = (3-1)*2 + 2 - 5 = 1, extra at the end.
  EXPECT_EQ(conv.getPads(), (ArrayRef<int64_t>{0, 0, 1, 1}));
}

TEST(Importer, ErrorsNameTheNode) {
  MLIRContext ctx;
  auto r = importText(ctx, std::string(kHeader) + R"(
    g (float[2, 3] x, float[3, 3] w) => (float[2, 3] y)
    { y = MatMul(w, x) }
  )");
  EXPECT_FALSE(r.module);
  ASSERT_EQ(r.errors.size(), 1u);
  EXPECT_NE(r.errors[0].find("matmul contraction sizes differ"),
            std::string::npos);
}

TEST(Importer, NonConstantReshapeTargetIsAnError) {
  MLIRContext ctx;
  auto r = importText(ctx, std::string(kHeader) + R"(
    g (float[6] x, int64[2] s) => (float[2, 3] y)
    { y = Reshape(x, s) }
  )");
  EXPECT_FALSE(r.module);
  ASSERT_FALSE(r.errors.empty());
  EXPECT_NE(r.errors[0].find("must be a compile-time constant"),
            std::string::npos);
}

TEST(Importer, UnproducedOptionalOutputIsAnError) {
  MLIRContext ctx;
  auto r = importText(ctx, std::string(kHeader) + R"(
    g (float[1, 1, 4, 4] x) => (int64[1, 1, 2, 2] i)
    { y, i = MaxPool <kernel_shape = [2, 2], strides = [2, 2]> (x) }
  )");
  EXPECT_FALSE(r.module);
  ASSERT_FALSE(r.errors.empty());
  EXPECT_NE(r.errors[0].find("that pcc does not support"), std::string::npos);
}

TEST(Importer, Opset11SoftmaxCoercesTo2D) {
  MLIRContext ctx;
  auto r = importText(ctx, R"(<ir_version: 6, opset_import: ["" : 11]>
    g (float[2, 3, 4] x) => (float[2, 3, 4] y)
    { y = Softmax <axis = 1> (x) }
  )");
  ASSERT_TRUE(r.module) << (r.errors.empty() ? "" : r.errors[0]);
  pcc::SoftmaxOp softmax;
  mainOf(*r.module).walk([&](pcc::SoftmaxOp op) { softmax = op; });
  ASSERT_TRUE(softmax);
  EXPECT_EQ(softmax.getInput().getType().getShape(),
            (ArrayRef<int64_t>{2, 12}));
}

} // namespace
