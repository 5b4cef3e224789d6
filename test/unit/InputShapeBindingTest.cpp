//===- InputShapeBindingTest.cpp - --input-shape parsing ------------------===//

#include "pcc/Import/ONNXImporter.h"

#include <gtest/gtest.h>

using pcc::ImportOptions;
using pcc::parseInputShapeBinding;

TEST(InputShapeBinding, WholeShape) {
  ImportOptions options;
  EXPECT_EQ(parseInputShapeBinding("tokens=2x32", options), "");
  ASSERT_EQ(options.inputShapes.count("tokens"), 1u);
  EXPECT_EQ(options.inputShapes["tokens"], (std::vector<int64_t>{2, 32}));
}

TEST(InputShapeBinding, SymbolicDim) {
  ImportOptions options;
  EXPECT_EQ(parseInputShapeBinding("batch=8", options), "");
  EXPECT_EQ(options.inputShapes["batch"], (std::vector<int64_t>{8}));
}

TEST(InputShapeBinding, ZeroSizedDimIsAllowed) {
  ImportOptions options;
  EXPECT_EQ(parseInputShapeBinding("x=0x4", options), "");
  EXPECT_EQ(options.inputShapes["x"], (std::vector<int64_t>{0, 4}));
}

TEST(InputShapeBinding, RejectsMalformed) {
  ImportOptions options;
  EXPECT_NE(parseInputShapeBinding("tokens", options), "");
  EXPECT_NE(parseInputShapeBinding("=2x3", options), "");
  EXPECT_NE(parseInputShapeBinding("x=", options), "");
  EXPECT_NE(parseInputShapeBinding("x=2xq", options), "");
  EXPECT_NE(parseInputShapeBinding("x=-1", options), "");
  EXPECT_NE(parseInputShapeBinding("x=2x", options), "");
  EXPECT_TRUE(options.inputShapes.empty());
}
