//===- Driver.cpp - main() of every compiled model ------------------------===//
//
//   [mpirun -np N] model [--inputs DIR] [--outputs DIR] [--check DIR]
//         [--bench N] [--weights FILE] [--threads N] [--rtol R] [--atol A]
//         [--timeout S] [--trace FILE] [--comm auto|nccl|mpi]
//
// Input and output files follow ONNX's backend-test layout (input_K.pb,
// output_K.pb). Every failure is one "error:" line on stderr and exit 1.
//
// With several devices, every process reads the input files and keeps its
// block; rank 0 assembles the outputs and does --outputs/--check/--bench
// reporting. Setup and reporting fail together: each phase ends with an
// agreement over all ranks, and only the lowest failing rank prints, so a
// bad argument or file gives one line and no hang. A failure inside a run
// (a bad token id on one rank, memory exhausted) cannot wait for the others,
// who may be in a collective: that rank prints its error and aborts the job.
// A rank that stops answering ends the job after --timeout seconds
// (HangWatch.h).
//
//===----------------------------------------------------------------------===//

#include "pccrt/Device.h"
#include "pccrt/Kernels.h"
#include "pccrt/Trace.h"
#include "pccrt/Mesh.h"
#include "pccrt/Model.h"
#include "pccrt/TensorFile.h"
#include "Checkpoint.h"
#include "TrainLoop.h"
#include "pccrt/WeightsFile.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <new>
#include <optional>
#include <string>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

using namespace pccrt;

namespace {

struct Options {
  std::string inputs, outputs, check, weights, trace, train, save, resume;
  int bench = 0;
  /// Training steps to run (0: one per batch in the --train directory).
  long steps = 0;
  int threads = 0;
  double rtol = 1e-3, atol = 1e-4;
  double timeout = 600;
  CommKind comm = CommKind::Auto;
  bool graphs = true;
  /// A pipelined training step's schedule: 1F1B, GPipe (every forward,
  /// then every backward; a stash slot per microbatch) or ZB-H1 (programs
  /// compiled for it); unset: ZB-H1 for those, else 1F1B.
  std::optional<PipelineKind> schedule;
};

/// What the process is doing, for out-of-memory reports.
const char *phase = "starting";

/// A failure in a phase that all ranks finish together.
struct Fatal {
  std::string message;
};

[[noreturn]] void die(const std::string &message) { throw Fatal{message}; }

/// Ends a phase: if any rank failed, the lowest failing rank prints its
/// message and every rank exits with status 1.
void agree(const std::string &error) {
  int failed = error.empty() ? 0 : 1;
  if (Mesh::sumOverWorld(failed) == 0)
    return;
  int rank = Mesh::worldRank();
  int first = Mesh::minOverWorld(failed ? rank : 1 << 30);
  if (rank == first) {
    std::string prefix = Mesh::worldSize() > 1 && rank != 0
                             ? "rank " + std::to_string(rank) + ": "
                             : "";
    std::fprintf(stderr, "error: %s%s\n", prefix.c_str(), error.c_str());
  }
  Mesh::finalizeProcess();
  std::exit(1);
}

/// Runs `phase` on every rank and agrees on its outcome.
template <typename F> void together(F work) {
  std::string error;
  try {
    work();
  } catch (const Fatal &f) {
    error = f.message;
  } catch (const std::bad_alloc &) {
    error = std::string("out of memory while ") + phase;
  }
  agree(error);
}

const char *kUsage =
    "usage: [mpirun -np N] %s [--inputs DIR] [--outputs DIR] [--check DIR] "
    "[--bench N]\n"
    "          [--weights FILE] [--threads N] [--rtol R] [--atol A] [--trace "
    "FILE]\n"
    "          [--comm auto|nccl|mpi] [--cuda-graph on|off]\n"
    "          [--train DIR [--steps N] [--save DIR2] [--resume DIR2]\n"
    "           [--pp-schedule 1f1b|gpipe|zb-h1]]\n"
    "  --inputs DIR   read input_K.pb from DIR (default: the --check DIR)\n"
    "  --outputs DIR  write output_K.pb to DIR (created if missing)\n"
    "  --check DIR    compare outputs with DIR/output_K.pb; exit 0 iff all\n"
    "                 satisfy |got - want| <= atol + rtol * |want| (NaN\n"
    "                 matches NaN); max_rel_err is against the largest |want|\n"
    "  --bench N      time N runs after warm-up; last line is JSON (with\n"
    "                 --check, the last timed run is checked too)\n"
    "  --weights FILE weights file (default: weights.bin beside the binary)\n"
    "  --threads N    BLAS threads (default: the library's)\n"
    "  --timeout S    end the job when a rank waits S seconds for others\n"
    "                 that do not answer (default 600; 0: wait forever)\n"
    "  --trace FILE   write the first run's timeline (compute, collectives,\n"
    "                 sends per rank and microbatch) as Chrome-trace JSON\n"
    "  --comm KIND    GPU ranks: nccl, or mpi (staged through host memory,\n"
    "                 for ranks sharing a GPU); auto picks (default)\n"
    "  --cuda-graph on|off  GPU ranks: record a run as a CUDA graph and\n"
    "                 replay it (default on where collectives stay on the "
    "GPU)\n"
    "  --train DIR    (programs compiled with pcc --train) run training steps\n"
    "                 on DIR/batch_0, batch_1, ... (input_K.pb each; step k\n"
    "                 uses batch k mod count); one JSON line per step:\n"
    "                 {\"step\": k, \"loss\": x, \"ms\": t}\n"
    "  --steps N      training steps (default: one per batch)\n"
    "  --save DIR2    after training, write every trained parameter and\n"
    "                 optimizer state, whole, as DIR2/<initializer name>.pb\n"
    "                 (and DIR2/steps.txt)\n"
    "  --resume DIR2  start from a --save directory: its parameters, states\n"
    "                 and step count\n"
    "  --pp-schedule S  pipelined training: 1f1b (a stage holds at most\n"
    "                 stages - stage microbatches between their forward and\n"
    "                 backward; interleaved when compiled with --pp-virtual),\n"
    "                 gpipe (every forward, then every backward) or zb-h1\n"
    "                 (zero-bubble: weight gradients deferred into the\n"
    "                 bubble; programs compiled with pcc --pp-schedule zb-h1\n"
    "                 or planned so, whose default it is)\n";

long parseNumber(const char *flag, const char *text, long lo, long hi) {
  char *end = nullptr;
  long v = std::strtol(text, &end, 10);
  if (!*text || *end || v < lo || v > hi)
    die(std::string(flag) + " expects an integer in [" + std::to_string(lo) +
        ", " + std::to_string(hi) + "], got '" + text + "'");
  return v;
}

double parseReal(const char *flag, const char *text) {
  char *end = nullptr;
  double v = std::strtod(text, &end);
  if (!*text || *end || !(v >= 0))
    die(std::string(flag) + " expects a non-negative number, got '" + text +
        "'");
  return v;
}

/// Training batch `k` of the --train directory.
std::string batchDir(const std::string &train, long k) {
  return train + "/batch_" + std::to_string(k);
}

Options parseOptions(int argc, char **argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--help" || a == "-h") {
      if (Mesh::worldRank() == 0)
        std::printf(kUsage, argv[0]);
      Mesh::finalizeProcess();
      std::exit(0);
    }
    std::string value;
    auto eq = a.find('=');
    std::string flag = a.substr(0, eq);
    static const char *const known[] = {"--inputs", "--outputs", "--check",
                                        "--weights", "--bench", "--threads",
                                        "--rtol", "--atol", "--timeout",
                                        "--trace", "--comm", "--cuda-graph",
                                        "--train", "--steps", "--save",
                                        "--resume", "--pp-schedule"};
    if (std::find(std::begin(known), std::end(known), flag) == std::end(known))
      die("unknown argument '" + a + "' (see --help)");
    if (eq != std::string::npos) {
      value = a.substr(eq + 1);
    } else if (flag.rfind("--", 0) == 0) {
      if (i + 1 >= argc)
        die("flag " + flag + " needs a value");
      value = argv[++i];
    }
    if (flag == "--inputs") o.inputs = value;
    else if (flag == "--outputs") o.outputs = value;
    else if (flag == "--check") o.check = value;
    else if (flag == "--weights") o.weights = value;
    else if (flag == "--bench") o.bench = parseNumber("--bench", value.c_str(), 1, 1000000);
    else if (flag == "--threads") o.threads = parseNumber("--threads", value.c_str(), 1, 4096);
    else if (flag == "--rtol") o.rtol = parseReal("--rtol", value.c_str());
    else if (flag == "--atol") o.atol = parseReal("--atol", value.c_str());
    else if (flag == "--timeout") o.timeout = parseReal("--timeout", value.c_str());
    else if (flag == "--trace") o.trace = value;
    else if (flag == "--train") o.train = value;
    else if (flag == "--save") o.save = value;
    else if (flag == "--resume") o.resume = value;
    else if (flag == "--steps") o.steps = parseNumber("--steps", value.c_str(), 1, 1L << 40);
    else if (flag == "--comm") {
      if (value != "auto" && value != "nccl" && value != "mpi")
        die("--comm expects auto, nccl or mpi, got '" + value + "'");
      o.comm = value == "nccl" ? CommKind::Nccl
               : value == "mpi" ? CommKind::Mpi
                                : CommKind::Auto;
    }
    else if (flag == "--pp-schedule") {
      if (value != "1f1b" && value != "gpipe" && value != "zb-h1")
        die("--pp-schedule expects 1f1b, gpipe or zb-h1, got '" + value +
            "'");
      o.schedule = value == "gpipe"   ? PipelineKind::GPipe
                   : value == "zb-h1" ? PipelineKind::ZeroBubbleH1
                                      : PipelineKind::OneFOneB;
    }
    else if (flag == "--cuda-graph") {
      if (value != "on" && value != "off")
        die("--cuda-graph expects on or off, got '" + value + "'");
      o.graphs = value == "on";
    }
    else die("unknown argument '" + a + "' (see --help)");
  }
  if (!o.train.empty() && (!o.inputs.empty() || !o.check.empty() || o.bench))
    die("--train reads its own batches; it takes no --inputs, --check or "
        "--bench");
  if ((o.steps || !o.save.empty() || !o.resume.empty()) && o.train.empty())
    die(std::string(o.steps ? "--steps" : !o.save.empty() ? "--save"
                                                          : "--resume") +
        " needs --train DIR");
  if (!o.train.empty() && countBatches(o.train) == 0)
    die("'" + o.train + "' holds no batch_0 directory of inputs "
        "(DIR/batch_K/input_N.pb)");
  if (!o.train.empty())
    o.inputs = batchDir(o.train, 0);
  if (o.inputs.empty())
    o.inputs = o.check;
  if (o.inputs.empty())
    die("no inputs: give --inputs DIR or --check DIR (see --help)");
  return o;
}

std::string exeDir(const char *argv0) {
  char buf[4096];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  std::string path = n > 0 ? std::string(buf, n) : std::string(argv0);
  auto slash = path.rfind('/');
  return slash == std::string::npos ? "." : path.substr(0, slash);
}

/// The weights file after its header, mapped read-only for the life of the
/// process. Refuses a file of another build (WeightsFile.h).
const char *mapWeights(const std::string &path, const ModelInfo &model) {
  int fd = open(path.c_str(), O_RDONLY);
  if (fd < 0)
    die("cannot open weights file '" + path + "': " + std::strerror(errno));
  struct stat st;
  WeightsHeader header;
  size_t needed = sizeof(WeightsHeader) + model.weightsBytes;
  bool readable = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
                  pread(fd, &header, sizeof(header), 0) == sizeof(header);
  if (!readable ||
      std::memcmp(header.magic, kWeightsMagic, sizeof(kWeightsMagic)) != 0) {
    close(fd);
    die("'" + path + "' is not a pcc weights file");
  }
  if (header.fingerprint == model.fingerprint &&
      static_cast<size_t>(st.st_size) != needed) {
    close(fd);
    die("weights file '" + path + "' holds " +
        std::to_string(static_cast<long long>(st.st_size)) +
        " bytes, this program needs " + std::to_string(needed) +
        " (truncated or extended)");
  }
  if (header.fingerprint != model.fingerprint ||
      header.dataBytes != model.weightsBytes) {
    close(fd);
    char want[32], got[32];
    std::snprintf(want, sizeof(want), "%016llx",
                  static_cast<unsigned long long>(model.fingerprint));
    std::snprintf(got, sizeof(got), "%016llx",
                  static_cast<unsigned long long>(header.fingerprint));
    die("weights file '" + path + "' belongs to another build (fingerprint " +
        got + ", this program's is " + want +
        "); use the weights.bin written with this program");
  }
  if (model.weightsBytes == 0) {
    close(fd);
    return nullptr;
  }
  // A training step updates its weights in place: in this process's own
  // copy of the pages it writes, never in the file.
  int protection = model.trains ? PROT_READ | PROT_WRITE : PROT_READ;
  void *p = mmap(nullptr, needed, protection, MAP_PRIVATE, fd, 0);
  close(fd);
  if (p == MAP_FAILED)
    die("cannot map weights file '" + path + "': " + std::strerror(errno));
  return static_cast<const char *>(p) + sizeof(WeightsHeader);
}

std::string shapeString(const std::vector<int64_t> &shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? "," : "") + std::to_string(shape[i]);
  return s + "]";
}

std::vector<int64_t> descShape(const TensorDesc &d) {
  return std::vector<int64_t>(d.shape, d.shape + d.rank);
}

/// This device's block shape of a (possibly split) tensor.
/// Runs per batch: one per microbatch.
int64_t microbatches(const ModelInfo &model) {
  return model.microbatchAxis >= 0 ? model.meshShape[model.microbatchAxis] : 1;
}

std::vector<int64_t> localShape(const TensorDesc &d, const Mesh &mesh) {
  std::vector<int64_t> s = descShape(d);
  if (d.split)
    for (int i = 0; i < d.rank; ++i)
      s[i] /= splitCount(d.split[i], mesh.shape());
  return s;
}

/// Output `k` whole, at the shape the model returns it (the program may
/// return it padded).
HostTensor unpadded(const ModelInfo &model, int k, HostTensor t) {
  if (model.outputUnpadded && model.outputUnpadded[k])
    t.resizeCorner(std::vector<int64_t>(
        model.outputUnpadded[k], model.outputUnpadded[k] + t.shape.size()));
  return t;
}

/// Rank 0 gets the global tensor of output `k` from every device's blocks,
/// one per microbatch (`blocks`), taken from the devices of the stage that
/// returns it; a tensor whole on every device comes from its first device.
HostTensor assemble(const ModelInfo &model, int k,
                    const std::vector<HostTensor> &blocks) {
  const TensorDesc &d = model.outputs[k];
  HostTensor t;
  t.dtype = d.dtype;
  t.shape = descShape(d);
  t.bytes.resize(t.numElements() * dtypeSize(d.dtype));
  int owner = model.outputStages ? model.outputStages[k] : 0;
  int n = Mesh::worldSize();
  size_t bytes = blocks[0].bytes.size(), m = blocks.size();
  std::vector<char> local(bytes * m);
  for (size_t b = 0; b < m; ++b)
    std::memcpy(local.data() + b * bytes, blocks[b].bytes.data(), bytes);
  std::vector<char> all(Mesh::worldRank() == 0 ? local.size() * n : 0);
  Mesh::gatherToRoot(local.data(), local.size(), all.data());
  if (Mesh::worldRank() != 0)
    return t;
  std::vector<int64_t> coords(model.meshRank);
  for (int r = 0; r < n; ++r) {
    Mesh::coordsOfRank(model, r, coords.data());
    if (model.stageAxis >= 0 && coords[model.stageAxis] != owner)
      continue;
    for (size_t b = 0; b < m; ++b) {
      if (model.microbatchAxis >= 0)
        coords[model.microbatchAxis] = b;
      char *block = all.data() + (r * m + b) * bytes;
      // Whole on every device: the last microbatch's (a training step's
      // loss over the batch is complete there).
      if (!d.split) {
        std::memcpy(t.bytes.data(), all.data() + (r * m + m - 1) * bytes,
                    t.bytes.size());
        return unpadded(model, k, std::move(t));
      }
      copyBlock(/*toLocal=*/false, t.bytes.data(), block, d.rank, d.shape,
                d.split, model.meshShape, coords.data(), dtypeSize(d.dtype));
    }
  }
  return unpadded(model, k, std::move(t));
}

/// ONNX's own test data (1.12 and before) stores bfloat16 tensors as
/// uint16 holding the same bits: read them as bfloat16 where one is meant.
bool storesBFloat16AsUInt16(DType inFile, DType meant) {
  return inFile == DType::U16 && meant == DType::BF16;
}

/// Input `k`'s blocks on this device, one per microbatch (one for all of
/// them when the input is whole on every device).
std::vector<HostTensor> loadInput(const std::string &dir, int k,
                                  const ModelInfo &model, Mesh &mesh) {
  const TensorDesc &desc = model.inputs[k];
  std::string path = dir + "/input_" + std::to_string(k) + ".pb";
  HostTensor t;
  Status s = readTensorFile(path, t);
  if (!s.isOk())
    die(s.message());
  if (storesBFloat16AsUInt16(t.dtype, desc.dtype))
    t.dtype = DType::BF16;
  if (t.dtype != desc.dtype)
    die("input " + std::to_string(k) + " ('" + desc.name + "') in '" + path +
        "' is " + dtypeName(t.dtype) + ", the model expects " +
        dtypeName(desc.dtype));
  if (t.shape != descShape(desc))
    die("input " + std::to_string(k) + " ('" + desc.name + "') in '" + path +
        "' has shape " + shapeString(t.shape) + ", the model expects " +
        shapeString(descShape(desc)));
  if (!desc.split)
    return {std::move(t)};
  std::vector<HostTensor> blocks;
  for (int64_t b = 0, m = microbatches(model); b < m; ++b) {
    mesh.setMicrobatch(b);
    HostTensor block;
    block.dtype = t.dtype;
    block.shape = localShape(desc, mesh);
    block.bytes.resize(block.numElements() * dtypeSize(t.dtype));
    copyBlock(/*toLocal=*/true, t.bytes.data(), block.bytes.data(), desc.rank,
              desc.shape, desc.split, mesh.shape(), mesh.coords(),
              dtypeSize(t.dtype));
    blocks.push_back(std::move(block));
  }
  mesh.setMicrobatch(0);
  return blocks;
}

/// mkdir -p: true when `path` is (now) a directory.
bool makeDirectories(const std::string &path) {
  struct stat st;
  if (stat(path.c_str(), &st) == 0)
    return S_ISDIR(st.st_mode);
  size_t slash = path.find_last_of('/');
  if (slash != std::string::npos && slash > 0 &&
      !makeDirectories(path.substr(0, slash)))
    return false;
  return mkdir(path.c_str(), 0777) == 0 || errno == EEXIST;
}

double elementAsDouble(const HostTensor &t, int64_t i) {
  const char *p = t.bytes.data();
  switch (t.dtype) {
  case DType::F32: return reinterpret_cast<const float *>(p)[i];
  case DType::F64: return reinterpret_cast<const double *>(p)[i];
  case DType::I64: return double(reinterpret_cast<const int64_t *>(p)[i]);
  case DType::I32: return reinterpret_cast<const int32_t *>(p)[i];
  case DType::I16: return reinterpret_cast<const int16_t *>(p)[i];
  case DType::I8: return reinterpret_cast<const int8_t *>(p)[i];
  case DType::U64: return double(reinterpret_cast<const uint64_t *>(p)[i]);
  case DType::U32: return reinterpret_cast<const uint32_t *>(p)[i];
  case DType::U16: return reinterpret_cast<const uint16_t *>(p)[i];
  case DType::U8: case DType::Bool: return reinterpret_cast<const uint8_t *>(p)[i];
  case DType::F16: return float(reinterpret_cast<const Half *>(p)[i]);
  case DType::BF16: return float(reinterpret_cast<const BFloat16 *>(p)[i]);
  default: return std::nan("");
  }
}

/// Compares one output with its reference; prints a line; returns success.
bool checkOutput(int k, const TensorDesc &desc, const HostTensor &got,
                 const std::string &dir, const Options &o) {
  std::string path = dir + "/output_" + std::to_string(k) + ".pb";
  HostTensor want;
  Status s = readTensorFile(path, want);
  if (!s.isOk())
    die(s.message());
  std::printf("output %d '%s': ", k, desc.name);
  if (storesBFloat16AsUInt16(want.dtype, got.dtype))
    want.dtype = DType::BF16;
  // A 16-bit model's outputs may be checked against f32 references.
  auto isFloat = [](DType t) {
    return t == DType::F32 || t == DType::F64 || t == DType::F16 ||
           t == DType::BF16;
  };
  bool comparable =
      want.dtype == got.dtype || (isFloat(want.dtype) && isFloat(got.dtype));
  if (!comparable || want.shape != got.shape) {
    std::printf("MISMATCH expected %s %s, got %s %s\n", dtypeName(want.dtype),
                shapeString(want.shape).c_str(), dtypeName(got.dtype),
                shapeString(got.shape).c_str());
    return false;
  }
  // The relative error is against the output's scale (its largest finite
  // |want|): elements near zero would make a per-element ratio alarming.
  double maxAbs = 0, scale = 0;
  int64_t bad = 0, nanOrInf = 0;
  for (int64_t i = 0, n = got.numElements(); i < n; ++i) {
    double g = elementAsDouble(got, i), w = elementAsDouble(want, i);
    if (std::isfinite(w))
      scale = std::max(scale, std::fabs(w));
    if (!std::isfinite(g) || !std::isfinite(w)) {
      // NaN matches NaN, an infinity the same infinity.
      bool same = (std::isnan(g) && std::isnan(w)) || g == w;
      if (!same)
        ++bad, ++nanOrInf;
      continue;
    }
    double err = std::fabs(g - w);
    maxAbs = std::max(maxAbs, err);
    if (err > o.atol + o.rtol * std::fabs(w))
      ++bad;
  }
  std::printf("max_abs_err=%.3g max_rel_err=%.3g", maxAbs,
              scale > 0 ? maxAbs / scale : maxAbs);
  if (nanOrInf)
    std::printf(" nan_or_inf_mismatches=%lld", static_cast<long long>(nanOrInf));
  if (bad)
    std::printf(" MISMATCH (%lld of %lld elements beyond atol %g + rtol %g)\n",
                static_cast<long long>(bad),
                static_cast<long long>(got.numElements()), o.atol, o.rtol);
  else
    std::printf(" ok\n");
  return bad == 0;
}

/// What the runs read and write: per microbatch, the pointers of its inputs'
/// and outputs' blocks (in device memory); the outputs per output and
/// microbatch (host copies); the arena. Where device memory is host memory
/// the runs read the inputs and write the outputs where they lie.
struct RunBuffers {
  std::vector<std::vector<const void *>> inPtrs;
  std::vector<std::vector<HostTensor>> outputs;
  std::vector<std::vector<void *>> outPtrs;
  char *arena = nullptr;
  /// Device copies of the inputs' and outputs' blocks (GPU ranks).
  std::vector<void *> owned;

  ~RunBuffers() {
    freeDeviceBytes(arena);
    for (void *p : owned)
      freeDeviceBytes(p);
  }

  void *onDevice(const void *host, size_t bytes) {
    void *p = allocateDeviceBytes(bytes);
    if (!p)
      die("out of device memory: cannot allocate " + std::to_string(bytes) +
          " bytes for inputs and outputs");
    owned.push_back(p);
    if (host)
      copyToDevice(p, host, bytes);
    return p;
  }

  void allocate(const ModelInfo &model, const Mesh &mesh,
                std::vector<std::vector<HostTensor>> &inputs) {
    int64_t runs = microbatches(model);
    bool host = deviceIsHost();
    inPtrs.resize(runs);
    outPtrs.resize(runs);
    for (int64_t b = 0; b < runs; ++b)
      for (size_t k = 0; k < inputs.size(); ++k) {
        // An input without microbatch blocks serves every microbatch.
        bool shared = inputs[k].size() == 1;
        HostTensor &t = inputs[k][shared ? 0 : b];
        inPtrs[b].push_back(host                ? t.bytes.data()
                            : shared && b > 0   ? inPtrs[0][k]
                                : onDevice(t.bytes.data(), t.bytes.size()));
      }
    outputs.assign(model.numOutputs, std::vector<HostTensor>(runs));
    for (int k = 0; k < model.numOutputs; ++k)
      for (int64_t b = 0; b < runs; ++b) {
        const TensorDesc &d = model.outputs[k];
        HostTensor &out = outputs[k][b];
        out.dtype = d.dtype;
        out.shape = localShape(d, mesh);
        out.bytes.resize(out.numElements() * dtypeSize(d.dtype));
        outPtrs[b].push_back(host ? out.bytes.data()
                                  : onDevice(nullptr, out.bytes.size()));
      }
    size_t arenaBytes = (model.arenaBytes + 63) / 64 * 64;
    arena = static_cast<char *>(allocateDeviceBytes(arenaBytes));
    if (!arena)
      die("cannot allocate " + std::to_string(arenaBytes) +
          " bytes of scratch" + (host ? "" : " in device memory"));
  }

  /// Replaces input `k`'s blocks (same shapes) with `fresh`'s.
  void reloadInput(int k, const std::vector<HostTensor> &fresh) {
    for (size_t b = 0; b < inPtrs.size(); ++b) {
      const HostTensor &t = fresh[fresh.size() == 1 ? 0 : b];
      copyToDevice(const_cast<void *>(inPtrs[b][k]), t.bytes.data(),
                   t.bytes.size());
    }
  }

  /// Brings the outputs of the runs just done to the host.
  void fetchOutputs() {
    if (deviceIsHost())
      return;
    for (size_t k = 0; k < outputs.size(); ++k)
      for (size_t b = 0; b < outputs[k].size(); ++b)
        copyToHost(outputs[k][b].bytes.data(), outPtrs[b][k],
                   outputs[k][b].bytes.size());
  }
};

/// Writes the traced run (--trace), rows named by rank and stage.
void saveTrace(const ModelInfo &model, const std::string &path) {
  std::vector<int64_t> stages, coords(model.meshRank);
  for (int r = 0; model.stageAxis >= 0 && r < Mesh::worldSize(); ++r) {
    Mesh::coordsOfRank(model, r, coords.data());
    stages.push_back(coords[model.stageAxis]);
  }
  std::string err = writeTrace(path, stages.empty() ? nullptr : stages.data());
  together([&] {
    if (!err.empty())
      die(err);
  });
}

/// --bench N: 3 warm-up runs, then N timed ones between barriers; the JSON
/// line rank 0 prints last.
template <typename Run>
std::string benchmark(int iterations, int64_t devices, Run runOnce) {
  for (int i = 0; i < std::min(iterations, 3); ++i)
    runOnce();
  std::vector<double> ms;
  for (int i = 0; i < iterations; ++i) {
    Mesh::barrier(); // start together
    auto t0 = std::chrono::steady_clock::now();
    runOnce();
    Mesh::barrier(); // the step ends when the slowest rank is done
    auto t1 = std::chrono::steady_clock::now();
    ms.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
  }
  std::vector<double> sorted = ms;
  std::sort(sorted.begin(), sorted.end());
  size_t n = sorted.size();
  double median =
      n % 2 ? sorted[n / 2] : 0.5 * (sorted[n / 2 - 1] + sorted[n / 2]);
  double mean = 0;
  for (double v : ms)
    mean += v;
  mean /= ms.size();
  char line[256];
  std::snprintf(line, sizeof line,
                "{\"iterations\": %d, \"median_ms\": %.4f, \"mean_ms\": "
                "%.4f, \"devices\": %lld}\n",
                iterations, median, mean, static_cast<long long>(devices));
  return line;
}

} // namespace

/// --train DIR: `o.steps` steps (one per batch by default), batch k mod
/// count each; rank 0 prints each step's loss (output 0) as it ends.
template <typename Run>
int trainSteps(const ModelInfo &model, const Options &o, Mesh &mesh,
               const char *weights, RunBuffers &buffers, Run runOnce) {
  long batches = 0;
  phase = "reading training batches";
  together([&] {
    if (!model.trains)
      die("this program runs inference; compile it with pcc --train to "
          "train");
    batches = countBatches(o.train);
  });
  long steps = o.steps ? o.steps : batches, first = 0;
  char *writable = const_cast<char *>(weights);
  if (!o.resume.empty()) {
    phase = "resuming a saved run";
    together([&] {
      std::string error = resumeTrained(model, mesh, writable, o.resume, first);
      if (!error.empty())
        die(error);
    });
  }
  StepPrinter printer(Mesh::worldRank() == 0);
  long loaded = 0; // batch_0 is read with the weights
  for (long k = first; k < first + steps; ++k) {
    if (k % batches != loaded) {
      loaded = k % batches;
      phase = "reading training batches";
      together([&] {
        for (int i = 0; i < model.numInputs; ++i)
          buffers.reloadInput(
              i, loadInput(batchDir(o.train, loaded), i, model, mesh));
      });
    }
    phase = "training";
    Mesh::barrier();
    auto t0 = std::chrono::steady_clock::now();
    runOnce();
    Mesh::barrier();
    auto t1 = std::chrono::steady_clock::now();
    buffers.fetchOutputs();
    HostTensor loss = assemble(model, 0, buffers.outputs[0]);
    if (Mesh::worldRank() == 0)
      printer.step(k, elementAsDouble(loss, 0),
                   std::chrono::duration<double, std::milli>(t1 - t0).count());
  }
  if (!o.save.empty()) {
    phase = "saving the trained run";
    // GPU ranks trained their device copies of the weights.
    fetchWeights(writable);
    std::string error = saveTrained(model, mesh, weights, o.save, first + steps);
    together([&] {
      if (!error.empty())
        die(error);
    });
  }
  return 0;
}

int runModel(int argc, char **argv) {
  const ModelInfo &model = *pcc_model_info();
  Mesh::initProcess(&argc, &argv);
  int64_t devices = Mesh::devicesOf(model);
  int64_t runs = microbatches(model);
  bool root = Mesh::worldRank() == 0;

  Options o;
  Mesh mesh;
  const char *weights = nullptr;
  // Per input, its blocks per microbatch.
  std::vector<std::vector<HostTensor>> inputs;
  together([&] {
    if (Mesh::worldSize() != devices) {
      std::string mesh;
      for (int a = 0; a < model.meshRank; ++a)
        if (a != model.microbatchAxis)
          mesh += (mesh.empty() ? "" : "x") +
                  std::to_string(model.meshShape[a]);
      die("this model was compiled for " + std::to_string(devices) +
          (devices == 1 ? " device" : " devices") + " (mesh " + mesh +
          "); run it with mpirun -np " +
          std::to_string(devices) + ", not " +
          std::to_string(Mesh::worldSize()) + " process" +
          (Mesh::worldSize() == 1 ? "" : "es"));
    }
    o = parseOptions(argc, argv);
    if (o.schedule == PipelineKind::ZeroBubbleH1 && !model.splitsBackward)
      die("--pp-schedule zb-h1 needs a pipelined training step whose "
          "backward runs as the input's and the weights' gradients apart; "
          "compile it with pcc --pp-schedule zb-h1");
    Mesh::setTimeout(o.timeout);
    std::string why = startDevice(o.comm);
    if (!why.empty())
      die(why);
  });
  mesh.create(model);
  phase = "reading weights and inputs";
  together([&] {
    setBlasThreads(o.threads);
    setTensorFloat32(model.tf32);
    if (o.weights.empty())
      o.weights = exeDir(argv[0]) + "/weights.bin";
    weights = mapWeights(o.weights, model);
    for (int k = 0; k < model.numInputs; ++k)
      inputs.push_back(loadInput(o.inputs, k, model, mesh));
    std::string extra =
        o.inputs + "/input_" + std::to_string(model.numInputs) + ".pb";
    if (access(extra.c_str(), F_OK) == 0)
      die("'" + o.inputs + "' holds more inputs than the model's " +
          std::to_string(model.numInputs));
  });
  phase = "allocating outputs and scratch";
  RunBuffers buffers;
  together([&] { buffers.allocate(model, mesh, inputs); });
  phase = "running the model";

  auto runOnce = [&] {
    // Microbatches one after another; a pipeline's stages overlap them. A
    // step with a prologue runs it over every microbatch first; a phased
    // pipeline step runs each device's forwards and backwards in the
    // schedule's order (PipelineSchedule.h), then the update, chunk by
    // chunk.
    using Phase = Mesh::Phase;
    struct Call {
      Phase phase;
      int64_t microbatch, chunk;
    };
    std::vector<Call> calls;
    int64_t chunks = mesh.chunks();
    if (model.prologue)
      for (int64_t b = 0; b < runs; ++b)
        for (int64_t k = 0; k < chunks; ++k)
          calls.push_back({Phase::Prologue, b, k});
    if (model.phased) {
      PipelineKind kind = o.schedule.value_or(
          model.splitsBackward ? PipelineKind::ZeroBubbleH1
                               : PipelineKind::OneFOneB);
      for (const PipelineCall &p :
           mesh.pipelineOrder(kind, model.splitsBackward))
        calls.push_back({p.weight     ? Phase::BackwardWeight
                         : p.backward ? Phase::Backward
                                      : Phase::Forward,
                         p.microbatch, p.chunk});
      for (int64_t k = 0; k < chunks; ++k)
        calls.push_back({Phase::Update, runs - 1, k});
    } else {
      for (int64_t b = 0; b < runs; ++b)
        calls.push_back({Phase::Whole, b, 0});
    }
    std::string err;
    for (size_t c = 0; c < calls.size() && err.empty(); ++c) {
      auto [phase, b, chunk] = calls[c];
      mesh.setPhase(phase);
      mesh.setMicrobatch(b);
      mesh.setChunk(chunk);
      traceRunBegin(b);
      auto step = [&] {
        model.run(buffers.inPtrs[b].data(), buffers.outPtrs[b].data(),
                  buffers.arena, weights, mesh);
      };
      // One microbatch outside a pipeline: the same pointers every run.
      runStep([](void *s) { (*static_cast<decltype(step) *>(s))(); }, &step,
              o.graphs && runs == 1 && model.stageAxis < 0);
      // A phased step's sends may wait for receives of later calls.
      if (!model.phased || c + 1 == calls.size())
        mesh.finishSends();
      // A GPU run ends when its stream is done (and reports bad data then).
      synchronizeDevice();
      traceRunEnd();
      err = takeKernelError();
    }
    if (err.empty())
      return;
    if (Mesh::worldSize() == 1) {
      std::fprintf(stderr, "error: %s\n", err.c_str());
      std::exit(1);
    }
    // The other ranks may wait in a collective this rank skipped.
    std::fprintf(stderr, "error: rank %d: %s\n", Mesh::worldRank(),
                 err.c_str());
    std::fflush(stderr);
    Mesh::abortWorld(1);
  };
  if (!o.train.empty()) {
    int status = trainSteps(model, o, mesh, weights, buffers, runOnce);
    Mesh::finalizeProcess();
    return status;
  }
  // The first run is the one traced.
  if (!o.trace.empty())
    traceEnable(true);
  runOnce();
  traceEnable(false);
  buffers.fetchOutputs();
  if (!o.trace.empty()) {
    phase = "writing the trace";
    saveTrace(model, o.trace);
  }

  phase = "assembling outputs";
  auto assembleAll = [&] {
    std::vector<HostTensor> all;
    for (int k = 0; k < model.numOutputs; ++k)
      all.push_back(assemble(model, k, buffers.outputs[k]));
    return all;
  };
  std::vector<HostTensor> global = assembleAll();
  auto checkAll = [&](const std::vector<HostTensor> &got) {
    bool all = true;
    for (int k = 0; k < model.numOutputs; ++k)
      all &= checkOutput(k, model.outputs[k], got[k], o.check, o);
    return all;
  };

  int status = 0;
  phase = "writing and checking outputs";
  together([&] {
    if (!root)
      return;
    if (!o.outputs.empty() && !makeDirectories(o.outputs))
      die("cannot create the --outputs directory '" + o.outputs + "'");
    if (!o.outputs.empty())
      for (int k = 0; k < model.numOutputs; ++k) {
        Status s = writeTensorFile(
            o.outputs + "/output_" + std::to_string(k) + ".pb",
            model.outputs[k].name, global[k]);
        if (!s.isOk())
          die(s.message());
      }
    if (!o.check.empty()) {
      bool all = checkAll(global);
      std::printf("check: %s\n", all ? "PASS" : "FAIL");
      status = all ? 0 : 1;
    }
  });
  std::fflush(stdout);
  status = Mesh::sumOverWorld(status) ? 1 : 0;

  phase = "running the model";
  if (o.bench > 0) {
    std::string timing = benchmark(o.bench, devices, runOnce);
    // The timed runs (replays of a recorded CUDA graph, on GPU ranks) are
    // checked too, so a fast path never hides a wrong one.
    if (!o.check.empty()) {
      buffers.fetchOutputs();
      phase = "checking the last timed run";
      std::vector<HostTensor> last = assembleAll();
      together([&] {
        if (!root)
          return;
        bool all = checkAll(last);
        std::printf("check after the timed runs: %s\n", all ? "PASS" : "FAIL");
        status |= all ? 0 : 1;
      });
      std::fflush(stdout);
      status = Mesh::sumOverWorld(status) ? 1 : 0;
    }
    if (root)
      std::fputs(timing.c_str(), stdout);
  }
  Mesh::finalizeProcess();
  return status;
}

int main(int argc, char **argv) {
  prepareProcess(argv);
  try {
    return runModel(argc, argv);
  } catch (const std::bad_alloc &) {
    // Other ranks may wait in a collective this rank will never join.
    if (Mesh::worldSize() > 1)
      std::fprintf(stderr, "error: rank %d: out of memory while %s\n",
                   Mesh::worldRank(), phase);
    else
      std::fprintf(stderr, "error: out of memory while %s\n", phase);
    std::fflush(stderr);
    Mesh::abortWorld(1);
  }
}
