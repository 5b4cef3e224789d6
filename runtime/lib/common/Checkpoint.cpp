//===- Checkpoint.cpp - saving and resuming a training run ----------------===//

#include "Checkpoint.h"

#include "pccrt/Kernels.h"
#include "pccrt/ShardLayout.h"
#include "pccrt/TensorFile.h"

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
    std::string path = fileOf(dir, d.name);
    Status s = readTensorFile(path, t);
    if (!s.isOk())
      return s.message();
    if (t.dtype != d.dtype || t.shape != savedShape(model, k))
      return "'" + path + "' holds another tensor than '" + d.name +
             "' of this program (" + dtypeName(t.dtype) + " vs " +
             dtypeName(d.dtype) + ", or another shape)";
    t.resizeCorner(shapeOf(d));
    copyBlock(/*toLocal=*/true, t.bytes.data(),
              blockOf(model, mesh, weights, k), d.rank, d.shape, d.split,
              model.meshShape, mesh.coords(), dtypeSize(d.dtype));
  }
  return "";
}

} // namespace pccrt
