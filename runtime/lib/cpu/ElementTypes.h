//===- ElementTypes.h - the types kernels are instantiated for ---*- C++ -*-===//
//
// Private to the runtime. Generated code sees only the template declarations
// in Kernels.h, so each kernel file instantiates its templates here, once per
// element type the code generator emits (CppEmitter.cpp cppType).
//
//===----------------------------------------------------------------------===//

#ifndef PCCRT_LIB_CPU_ELEMENTTYPES_H
#define PCCRT_LIB_CPU_ELEMENTTYPES_H

#include <cstdint>

#define PCCRT_FOR_EACH_FLOAT_TYPE(X) X(float) X(double)
#define PCCRT_FOR_EACH_ELEMENT_TYPE(X)                                         \
  PCCRT_FOR_EACH_FLOAT_TYPE(X)                                                 \
  X(int8_t) X(int16_t) X(int32_t) X(int64_t) X(uint8_t) X(uint16_t)            \
  X(uint32_t) X(uint64_t) X(bool)
#define PCCRT_FOR_EACH_INDEX_TYPE(X) X(int32_t) X(int64_t)

#endif // PCCRT_LIB_CPU_ELEMENTTYPES_H
