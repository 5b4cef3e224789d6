//===- Checkpoint.cpp - saving and resuming a training run ----------------===//

#include "Checkpoint.h"

#include "pccrt/Kernels.h"
#include "pccrt/ShardLayout.h"
#include "pccrt/TensorFile.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sys/stat.h>
#include <vector>

namespace pccrt {
namespace {

/// DIR/<name>.pb, with '%' and '/' escaped so any initializer name is one
/// file name.
std::string fileOf(const std::string &dir, const std::string &name) {
  std::string escaped;
  for (char c : name)
    escaped += c == '%' ? "%25" : c == '/' ? "%2F" : std::string(1, c);
  return dir + "/" + escaped + ".pb";
}

std::vector<int64_t> shapeOf(const TensorDesc &d) {
  return std::vector<int64_t>(d.shape, d.shape + d.rank);
}

/// The shape trained tensor `k` is saved at: its initializer's when the
/// program holds it padded.
std::vector<int64_t> savedShape(const ModelInfo &model, int k) {
  const TensorDesc &d = model.trained[k];
  if (model.trainedUnpadded && model.trainedUnpadded[k])
    return std::vector<int64_t>(model.trainedUnpadded[k],
                                model.trainedUnpadded[k] + d.rank);
  return shapeOf(d);
}

/// Bytes of one device's block of trained tensor `d`.
size_t blockBytes(const TensorDesc &d, const int64_t *meshShape) {
  size_t n = dtypeSize(d.dtype);
  for (int i = 0; i < d.rank; ++i)
    n *= d.shape[i] / (d.split ? splitCount(d.split[i], meshShape) : 1);
  return n;
}

/// This device's block of trained tensor `k` in the weights.
char *blockOf(const ModelInfo &model, const Mesh &mesh, char *weights,
              int k) {
  const TensorDesc &d = model.trained[k];
  int64_t at = model.trainedOffsets[k];
  if (d.split)
    at += model.trainedStrides[k] * blockIndex(mesh, d.rank, d.split);
  return weights + at;
}

/// Copies part `i` of `whole` (cut along the parts' axis) to `part`, or
/// back with `toWhole`; `part` has the part's shape and bytes.
void copyPart(HostTensor &whole, const TrainedParts &parts, int i,
              HostTensor &part, bool toWhole) {
  // Rows before the axis; bytes of one step along it.
  int64_t outer = 1,
          step = whole.bytes.size() / std::max<int64_t>(1, whole.numElements());
  for (int d = 0; d < int(whole.shape.size()); ++d)
    if (d < parts.axis)
      outer *= whole.shape[d];
    else if (d > parts.axis)
      step *= whole.shape[d];
  int64_t start = 0;
  for (int j = 0; j < i; ++j)
    start += parts.sizes[j];
  size_t chunk = parts.sizes[i] * step, row = whole.shape[parts.axis] * step;
  for (int64_t o = 0; o < outer; ++o) {
    char *w = &whole.bytes[o * row + start * step], *p = &part.bytes[o * chunk];
    std::memcpy(toWhole ? w : p, toWhole ? p : w, chunk);
  }
}

const TrainedParts *partsOf(const ModelInfo &model, int k) {
  return model.trainedParts ? model.trainedParts[k] : nullptr;
}

const char *kStepsFile = "/steps.txt";

} // namespace

std::string saveTrained(const ModelInfo &model, const Mesh &mesh,
                        const char *weights, const std::string &dir,
                        long steps) {
  bool root = Mesh::worldRank() == 0;
  int ranks = Mesh::worldSize();
  std::string error;
  if (root && mkdir(dir.c_str(), 0777) != 0 && errno != EEXIST)
    error = "cannot create the --save directory '" + dir +
            "': " + std::strerror(errno);
  std::vector<int64_t> coords(model.meshRank);
  for (int k = 0; k < model.numTrained; ++k) {
    const TensorDesc &d = model.trained[k];
    size_t bytes = blockBytes(d, model.meshShape);
    const char *local =
        blockOf(model, mesh, const_cast<char *>(weights), k);
    std::vector<char> all(root ? bytes * ranks : 0);
    Mesh::gatherToRoot(local, bytes, all.data());
    if (!root || !error.empty())
      continue;
    HostTensor t;
    t.dtype = d.dtype;
    t.shape = shapeOf(d);
    t.bytes.resize(t.numElements() * dtypeSize(d.dtype));
    // In a pipeline, the devices of the stage that trains it hold it.
    int owner = model.trainedStages ? model.trainedStages[k] : -1;
    for (int r = 0; r < ranks; ++r) {
      Mesh::coordsOfRank(model, r, coords.data());
      if (owner >= 0 && coords[model.stageAxis] != owner)
        continue;
      copyBlock(/*toLocal=*/false, t.bytes.data(), all.data() + r * bytes,
                d.rank, d.shape, d.split, model.meshShape, coords.data(),
                dtypeSize(d.dtype));
      if (!d.split)
        break;
    }
    t.resizeCorner(savedShape(model, k));
    if (const TrainedParts *parts = partsOf(model, k)) {
      for (int i = 0; i < parts->count && error.empty(); ++i) {
        HostTensor part;
        part.dtype = t.dtype;
        part.shape = t.shape;
        part.shape[parts->axis] = parts->sizes[i];
        part.bytes.resize(part.numElements() * dtypeSize(t.dtype));
        copyPart(t, *parts, i, part, /*toWhole=*/false);
        Status s = writeTensorFile(fileOf(dir, parts->names[i]),
                                   parts->names[i], part);
        if (!s.isOk())
          error = s.message();
      }
      continue;
    }
    Status s = writeTensorFile(fileOf(dir, d.name), d.name, t);
    if (!s.isOk())
      error = s.message();
  }
  if (root && error.empty()) {
    std::string path = dir + kStepsFile, tmp = path + ".tmp";
    std::ofstream(tmp) << steps << "\n";
    if (std::rename(tmp.c_str(), path.c_str()) != 0)
      error = "cannot write '" + path + "': " + std::strerror(errno);
  }
  return error;
}

std::string resumeTrained(const ModelInfo &model, const Mesh &mesh,
                          char *weights, const std::string &dir, long &steps) {
  std::ifstream in(dir + kStepsFile);
  if (!(in >> steps) || steps < 0)
    return "'" + dir + "' is not a saved training run (no " +
           std::string(kStepsFile + 1) + ")";
  for (int k = 0; k < model.numTrained; ++k) {
    const TensorDesc &d = model.trained[k];
    HostTensor t;
    const TrainedParts *parts = partsOf(model, k);
    std::vector<int64_t> saved = savedShape(model, k);
    if (parts) {
      t.dtype = d.dtype;
      t.shape = saved;
      t.bytes.resize(t.numElements() * dtypeSize(d.dtype));
    }
    for (int i = 0; i < (parts ? parts->count : 1); ++i) {
      const char *name = parts ? parts->names[i] : d.name;
      std::vector<int64_t> want = saved;
      if (parts)
        want[parts->axis] = parts->sizes[i];
      HostTensor read;
      std::string path = fileOf(dir, name);
      Status s = readTensorFile(path, read);
      if (!s.isOk())
        return s.message();
      if (read.dtype != d.dtype || read.shape != want)
        return "'" + path + "' holds another tensor than '" + name +
               "' of this program (" + dtypeName(read.dtype) + " vs " +
               dtypeName(d.dtype) + ", or another shape)";
      if (parts)
        copyPart(t, *parts, i, read, /*toWhole=*/true);
      else
        t = std::move(read);
    }
    t.resizeCorner(shapeOf(d));
    copyBlock(/*toLocal=*/true, t.bytes.data(),
              blockOf(model, mesh, weights, k), d.rank, d.shape, d.split,
              model.meshShape, mesh.coords(), dtypeSize(d.dtype));
  }
  return "";
}

} // namespace pccrt
