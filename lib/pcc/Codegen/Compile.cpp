//===- Compile.cpp - build a model executable -----------------------------===//
//
// Everything is written into a staging directory (pcc/Support/OutputFiles.h)
// and moved into place only after the C++ compiler succeeds, so a failed
// compile never leaves a half-written output directory behind, and never
// touches a directory that is not pcc's own.
//
//===----------------------------------------------------------------------===//

#include "pcc/Codegen/Compile.h"

#include "pcc/Codegen/CppEmitter.h"
#include "pcc/Config.h"
#include "pcc/Import/WeightReader.h"
#include "pcc/Support/OutputFiles.h"
#include "pccrt/ShardLayout.h"
#include "pccrt/WeightsFile.h"

#include "mlir/IR/Diagnostics.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/xxhash.h"
#include "llvm/Support/raw_ostream.h"

#include <chrono>

using namespace mlir;

namespace pcc {
namespace {

LogicalResult writeFile(Location loc, StringRef path, StringRef contents) {
  std::error_code ec;
  llvm::raw_fd_ostream os(path, ec);
  if (ec)
    return emitError(loc) << "cannot write '" << path << "': " << ec.message();
  os << contents;
  return success();
}

/// Dense bytes of an IR constant (bools one byte each, splats expanded).
std::string constantBytes(ElementsAttr value) {
  auto dense = cast<DenseElementsAttr>(value);
  std::string bytes;
  if (dense.getElementType().isInteger(1)) {
    for (bool b : dense.getValues<bool>())
      bytes.push_back(b ? 1 : 0);
    return bytes;
  }
  ArrayRef<char> raw = dense.getRawData();
  if (dense.isSplat()) {
    for (int64_t i = 0, n = dense.getNumElements(); i < n; ++i)
      bytes.append(raw.data(), raw.size());
    return bytes;
  }
  return std::string(raw.data(), raw.size());
}

/// Every block of a split weight, in pccrt::blockIndex order, each padded
/// to `stride` bytes.
std::string splitBlocks(const WeightsEntry &e, std::string &global) {
  int rank = e.globalShape.size();
  std::vector<pccrt::DimSplit> splits(rank);
  for (int d = 0; d < rank; ++d)
    splits[d] = {e.blocks[d] > 1 ? 1 : 0, {d, 0, 0, 0}, e.groups[d]};
  std::string out(e.stride * (e.numBlocks - 1) + e.bytes, '\0');
  std::vector<int64_t> coords(rank);
  for (int64_t b = 0; b < e.numBlocks; ++b) {
    pccrt::meshCoords(b, rank, e.blocks.data(), coords.data());
    pccrt::copyBlock(/*toLocal=*/true, global.data(), out.data() + b * e.stride,
                     rank, e.globalShape.data(), splits.data(),
                     e.blocks.data(), coords.data(), e.elementBytes);
  }
  return out;
}

/// Folds `bytes` at `offset` into a running fingerprint.
uint64_t mixFingerprint(uint64_t h, int64_t offset, StringRef bytes) {
  uint64_t parts[3] = {h, static_cast<uint64_t>(offset),
                       llvm::xxh3_64bits(bytes)};
  return llvm::xxh3_64bits(ArrayRef<uint8_t>(
      reinterpret_cast<const uint8_t *>(parts), sizeof(parts)));
}

/// Writes the weights file (pccrt/WeightsFile.h). The fingerprint covers the
/// generated source and every weight byte; returns it.
FailureOr<uint64_t> writeWeights(Location loc, StringRef path,
                                 const EmittedModel &model,
                                 StringRef modelPath) {
  std::error_code ec;
  llvm::raw_fd_ostream os(path, ec);
  if (ec)
    return emitError(loc) << "cannot write '" << path << "': " << ec.message();
  os.write_zeros(sizeof(pccrt::WeightsHeader));
  uint64_t fingerprint = llvm::xxh3_64bits(model.source);
  std::unique_ptr<WeightReader> reader;
  int64_t at = 0;
  for (const WeightsEntry &e : model.weights) {
    std::string bytes, error;
    if (!e.weightName.empty()) {
      if (!reader) {
        reader = WeightReader::open(modelPath, error);
        if (!reader)
          return emitError(loc) << error;
      }
      if (!reader->read(e.weightName, bytes, error))
        return emitError(loc) << error;
    } else {
      bytes = constantBytes(e.constant);
    }
    int64_t expected = e.bytes * e.numBlocks;
    if (static_cast<int64_t>(bytes.size()) != expected)
      return emitError(loc) << "weight '" << e.weightName << "' has "
                            << bytes.size() << " bytes, expected " << expected;
    if (e.numBlocks > 1)
      bytes = splitBlocks(e, bytes);
    fingerprint = mixFingerprint(fingerprint, e.offset, bytes);
    os.write_zeros(e.offset - at);
    os << bytes;
    at = e.offset + bytes.size();
  }
  os.write_zeros(model.weightsBytes - at);
  pccrt::WeightsHeader header = {};
  std::memcpy(header.magic, pccrt::kWeightsMagic, sizeof(header.magic));
  header.fingerprint = fingerprint;
  header.dataBytes = model.weightsBytes;
  os.seek(0);
  os.write(reinterpret_cast<const char *>(&header), sizeof(header));
  os.close();
  if (os.has_error()) {
    std::string why = os.error().message();
    os.clear_error();
    return emitError(loc) << "cannot write '" << path << "': " << why;
  }
  return fingerprint;
}

std::string planJson(const CompileOptions &options, const EmittedModel &m) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << "{\n  \"schema\": \"pcc-plan/1\",\n  \"model\": \""
     << llvm::sys::path::filename(options.modelPath) << "\",\n"
     << "  \"devices\": " << options.devices << ",\n"
     << "  \"mesh\": {\"dp\": " << options.dp << ", \"pp\": 1, \"tp\": "
     << options.tp << ", \"tp_mode\": \"" << (options.tp > 1 ? "1d" : "none")
     << "\", \"sp\": 1},\n"
     << "  \"collectives\": {\"all_reduce\": " << m.allReduces
     << ", \"all_gather\": " << m.allGathers << ", \"reduce_scatter\": "
     << m.reduceScatters << ", \"all_slice\": " << m.allSlices
     << ", \"bytes_per_device\": " << m.collectiveBytes << "},\n"
     << "  \"memory\": {\"weights_bytes\": " << m.weightsBytes
     << ", \"arena_bytes\": " << m.arenaBytes
     << ", \"arena_bytes_without_reuse\": " << m.unsharedBytes << "},\n"
     << "  \"codegen\": {\"fused_loops\": " << m.fusedLoops
     << ", \"fused_ops\": " << m.fusedOps
     << ", \"kernel_calls\": " << m.kernelCalls << "}\n}\n";
  return s;
}

} // namespace

LogicalResult compileToExecutable(ModuleOp module,
                                  const CompileOptions &options,
                                  CompileReport &report) {
  Location loc = module.getLoc();
  auto t0 = std::chrono::steady_clock::now();
  EmitOptions emitOptions;
  emitOptions.deviceMemoryBytes = options.deviceMemoryBytes;
  auto emitted = emitCpp(module, emitOptions);
  if (failed(emitted))
    return failure();

  auto staged = StagedDirectory::create(options.outputDir, {options.modelPath});
  if (!staged)
    return emitError(loc) << llvm::toString(staged.takeError());
  auto in = [&](StringRef name) { return staged->file(name); };

  auto fingerprint =
      writeWeights(loc, in("weights.bin"), *emitted, options.modelPath);
  if (failed(fingerprint))
    return failure();
  std::string source;
  llvm::raw_string_ostream(source)
      << "#define PCC_BUILD_FINGERPRINT 0x"
      << llvm::format_hex_no_prefix(*fingerprint, 16) << "ull\n"
      << emitted->source;
  if (failed(writeFile(loc, in("model.cpp"), source)) ||
      failed(writeFile(loc, in("plan.json"), planJson(options, *emitted))))
    return failure();
  auto t1 = std::chrono::steady_clock::now();

  // Compile and link.
  std::string includeFlag = std::string("-I") + PCC_RUNTIME_INCLUDE_DIR;
  SmallVector<std::string> args = {PCC_CXX_COMPILER, "-std=c++17", "-O3", "-w",
                                   includeFlag, in("model.cpp"), "-o",
                                   in("model"), PCC_RUNTIME_LIBRARY};
  for (StringRef flag : llvm::split(StringRef(PCC_RUNTIME_LINK_FLAGS), ' '))
    if (!flag.empty())
      args.push_back(flag.str());
  for (StringRef flag : llvm::split(StringRef(options.cxxFlags), ' '))
    if (!flag.empty())
      args.insert(args.begin() + 3, flag.str());
  SmallVector<StringRef> argRefs(args.begin(), args.end());
  std::string log = in("compile.log");
  std::optional<StringRef> redirects[] = {std::nullopt, StringRef(log),
                                          StringRef(log)};
  std::string execError;
  int rc = llvm::sys::ExecuteAndWait(args[0], argRefs, std::nullopt, redirects,
                                     /*SecondsToWait=*/600, 0, &execError);
  if (rc != 0) {
    std::string first = "see the compiler output";
    if (auto buf = llvm::MemoryBuffer::getFile(log)) {
      // The first real diagnostic: the linker's summary line comes last.
      for (StringRef line : llvm::split((*buf)->getBuffer(), '\n'))
        if ((line.contains("error") || line.contains("undefined reference")) &&
            !line.contains("collect2")) {
          first = line.trim().str();
          break;
        }
    }
    return emitError(loc) << "C++ compilation of the generated model failed ("
                          << (execError.empty() ? first : execError) << ")";
  }
  llvm::sys::fs::remove(log);
  auto t2 = std::chrono::steady_clock::now();

  if (auto err = staged->commit())
    return emitError(loc) << llvm::toString(std::move(err));
  report.arenaBytes = emitted->arenaBytes;
  report.unsharedBytes = emitted->unsharedBytes;
  report.weightsBytes = emitted->weightsBytes;
  report.fusedLoops = emitted->fusedLoops;
  report.fusedOps = emitted->fusedOps;
  report.kernelCalls = emitted->kernelCalls;
  report.codegenSeconds = std::chrono::duration<double>(t1 - t0).count();
  report.cxxSeconds = std::chrono::duration<double>(t2 - t1).count();
  return success();
}

} // namespace pcc
