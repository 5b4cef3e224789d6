//===- VolumeConverters.h - 3-D convolutions and pools -----------*- C++
//-*-===//
//
// Private to lib/pcc/Import: the window attributes NNConverters.cpp reads,
// and the 3-D Conv and pools it hands to VolumeConverters.cpp.
//
//===----------------------------------------------------------------------===//

#ifndef PCC_LIB_IMPORT_VOLUMECONVERTERS_H
#define PCC_LIB_IMPORT_VOLUMECONVERTERS_H

#include "ImportContext.h"

namespace pcc::import {

/// Spatial window attributes shared by Conv and the pools, with ONNX's
/// auto_pad resolved into explicit pads.
struct Window {
  llvm::SmallVector<int64_t> kernel, strides, pads, dilations;
};

/// A Conv over (D, H, W) (inputs: x, filter, optional bias) as 2-D ones.
Results convertConv3d(NodeContext &c, const Window &w, int64_t group);

/// A MaxPool or AveragePool over (D, H, W) (floor mode) as 2-D ones.
Results convertPool3d(NodeContext &c, const Window &w, bool isMax,
                      bool countIncludePad);

} // namespace pcc::import

#endif // PCC_LIB_IMPORT_VOLUMECONVERTERS_H
