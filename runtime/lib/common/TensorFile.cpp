//===- TensorFile.cpp - ONNX TensorProto files ----------------------------===//

#include "pccrt/TensorFile.h"

#include "pccrt/ShardLayout.h"

#include "onnx/onnx_pb.h"

#include <cstdio>
#include <fstream>
#include <sstream>

namespace pccrt {

size_t dtypeSize(DType t) {
  switch (t) {
  case DType::F32: case DType::I32: case DType::U32: return 4;
  case DType::F64: case DType::I64: case DType::U64: return 8;
  case DType::F16: case DType::BF16: case DType::I16: case DType::U16: return 2;
  case DType::I8: case DType::U8: case DType::Bool: return 1;
  }
  return 0;
}

const char *dtypeName(DType t) {
  switch (t) {
  case DType::F32: return "float32";
  case DType::F64: return "float64";
  case DType::F16: return "float16";
  case DType::BF16: return "bfloat16";
  case DType::I8: return "int8";
  case DType::I16: return "int16";
  case DType::I32: return "int32";
  case DType::I64: return "int64";
  case DType::U8: return "uint8";
  case DType::U16: return "uint16";
  case DType::U32: return "uint32";
  case DType::U64: return "uint64";
  case DType::Bool: return "bool";
  }
  return "unknown";
}

int64_t HostTensor::numElements() const {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

void HostTensor::resizeCorner(const std::vector<int64_t> &to) {
  if (shape == to)
    return;
  size_t elem = dtypeSize(dtype);
  int64_t n = 1;
  for (int64_t d : to)
    n *= d;
  std::vector<char> out(n * elem, 0);
  copyCorner(bytes.data(), shape.data(), out.data(), to.data(), int(to.size()),
             elem);
  bytes = std::move(out);
  shape = to;
}

template <typename Field, typename To>
static void copyField(const Field &field, std::vector<char> &bytes) {
  bytes.resize(field.size() * sizeof(To));
  To *out = reinterpret_cast<To *>(bytes.data());
  for (int i = 0; i < field.size(); ++i)
    out[i] = static_cast<To>(field.Get(i));
}

Status readTensorFile(const std::string &path, HostTensor &out) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return Status::error("cannot open '" + path + "'");
  std::stringstream buffer;
  buffer << in.rdbuf();
  std::string data = buffer.str();
  onnx::TensorProto proto;
  if (data.empty() || !proto.ParseFromString(data))
    return Status::error("'" + path + "' is not an ONNX TensorProto file");
  out.dtype = static_cast<DType>(proto.data_type());
  size_t elem = dtypeSize(out.dtype);
  if (!elem)
    return Status::error("'" + path + "' has unsupported data type " +
                         std::to_string(proto.data_type()));
  out.shape.assign(proto.dims().begin(), proto.dims().end());
  int64_t count = 1;
  for (int64_t d : out.shape) {
    if (d < 0 || (d && count > INT64_MAX / d / 8))
      return Status::error("'" + path + "' has invalid dimensions");
    count *= d;
  }
  if (proto.has_raw_data()) {
    out.bytes.assign(proto.raw_data().begin(), proto.raw_data().end());
  } else {
    switch (out.dtype) {
    case DType::F32: copyField<decltype(proto.float_data()), float>(proto.float_data(), out.bytes); break;
    case DType::F64: copyField<decltype(proto.double_data()), double>(proto.double_data(), out.bytes); break;
    case DType::I64: copyField<decltype(proto.int64_data()), int64_t>(proto.int64_data(), out.bytes); break;
    case DType::U64: copyField<decltype(proto.uint64_data()), uint64_t>(proto.uint64_data(), out.bytes); break;
    case DType::I32: copyField<decltype(proto.int32_data()), int32_t>(proto.int32_data(), out.bytes); break;
    case DType::U32: copyField<decltype(proto.uint64_data()), uint32_t>(proto.uint64_data(), out.bytes); break;
    case DType::I16: copyField<decltype(proto.int32_data()), int16_t>(proto.int32_data(), out.bytes); break;
    case DType::U16: case DType::F16: case DType::BF16:
      copyField<decltype(proto.int32_data()), uint16_t>(proto.int32_data(), out.bytes); break;
    case DType::I8: copyField<decltype(proto.int32_data()), int8_t>(proto.int32_data(), out.bytes); break;
    case DType::U8: case DType::Bool:
      copyField<decltype(proto.int32_data()), uint8_t>(proto.int32_data(), out.bytes); break;
    }
  }
  if (out.bytes.size() != static_cast<size_t>(count) * elem)
    return Status::error("'" + path + "' holds " +
                         std::to_string(out.bytes.size()) +
                         " bytes of data but its shape needs " +
                         std::to_string(count * elem));
  return Status::ok();
}

Status writeTensorFile(const std::string &path, const std::string &name,
                       const HostTensor &t) {
  onnx::TensorProto proto;
  proto.set_name(name);
  proto.set_data_type(static_cast<int32_t>(t.dtype));
  for (int64_t d : t.shape)
    proto.add_dims(d);
  proto.set_raw_data(t.bytes.data(), t.bytes.size());
  std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out || !proto.SerializeToOstream(&out))
      return Status::error("cannot write '" + tmp + "'");
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    return Status::error("cannot rename '" + tmp + "' to '" + path + "'");
  }
  return Status::ok();
}

} // namespace pccrt
