//===- Mesh.cpp - the device grid and its communication groups ------------===//

#include "MeshImpl.h"

#include <algorithm>

namespace pccrt {

Communicator::~Communicator() = default;

Mesh::Mesh() : impl_(std::make_unique<Impl>()) {}

Mesh::~Mesh() = default;

void Mesh::create(const ModelInfo &model) {
  // Making communicators may not time out: make sure every rank is here.
  barrier();
  rank_ = worldRank();
  shape_.assign(model.meshShape, model.meshShape + model.meshRank);
  coords_.assign(model.meshRank, 0);
  coordsOfRank(model, rank_, coords_.data());
  microbatchAxis_ = model.microbatchAxis;
  stageAxis_ = model.stageAxis;
  chunks_ = model.virtualStages > 1 ? model.virtualStages : 1;
  groups_.assign(model.groups, model.groups + model.numGroups);
  for (const GroupDesc &g : groups_) {
    int64_t index = 0, size = 1;
    bool in[8] = {};
    for (int i = 0; i < g.numAxes; ++i) {
      index = index * shape_[g.axes[i]] + coords_[g.axes[i]];
      size *= shape_[g.axes[i]];
      in[g.axes[i]] = true;
    }
    // Devices agreeing on every other axis form one communicator.
    int64_t color = 0;
    for (int a = 0; a < model.meshRank; ++a)
      if (!in[a])
        color = color * shape_[a] + coords_[a];
    impl_->groups.push_back(makeGroupCommunicator(color, index, size));
  }
}

void Mesh::setMicrobatch(int64_t k) {
  if (microbatchAxis_ >= 0)
    coords_[microbatchAxis_] = k;
}

std::vector<PipelineCall> Mesh::pipelineOrder(PipelineKind kind,
                                              bool weightPasses) {
  bool staged = stageAxis_ >= 0;
  std::vector<PipelineCall> calls = pccrt::pipelineOrder(
      staged ? shape_[stageAxis_] : 1, chunks_,
      staged ? coords_[stageAxis_] : 0, microbatches(), kind, weightPasses);
  slots_ = chunkInFlight(calls, chunks_);
  weightSlots_ = chunkWeightsInFlight(calls, chunks_);
  weightsApart_.assign(chunks_ * microbatches(), 0);
  for (size_t i = 1; i < calls.size(); ++i) {
    const PipelineCall &c = calls[i], &before = calls[i - 1];
    bool adjacent = before.backward && !before.weight &&
                    before.microbatch == c.microbatch &&
                    before.chunk == c.chunk;
    if (c.weight && !adjacent)
      weightsApart_[c.chunk * microbatches() + c.microbatch] = 1;
  }
  return calls;
}

int64_t Mesh::stashSlots() const {
  return chunk_ < int64_t(slots_.size()) ? std::max<int64_t>(slots_[chunk_], 1)
                                         : 1;
}

int64_t Mesh::weightStashSlots() const {
  return chunk_ < int64_t(weightSlots_.size())
             ? std::max<int64_t>(weightSlots_[chunk_], 1)
             : 1;
}

bool Mesh::weightsApart() const {
  size_t at = chunk_ * microbatches() + microbatch();
  return (phase_ == Phase::Backward || phase_ == Phase::BackwardWeight) &&
         at < weightsApart_.size() && weightsApart_[at];
}

void Mesh::finishSends() {
  for (auto &g : impl_->groups)
    g->finishSends();
}

int64_t Mesh::devicesOf(const ModelInfo &model) {
  int64_t devices = 1;
  for (int a = 0; a < model.meshRank; ++a)
    if (a != model.microbatchAxis)
      devices *= model.meshShape[a];
  return devices;
}

void Mesh::coordsOfRank(const ModelInfo &model, int rank, int64_t *coords) {
  std::vector<int64_t> shape(model.meshShape, model.meshShape + model.meshRank);
  if (model.microbatchAxis >= 0)
    shape[model.microbatchAxis] = 1;
  meshCoords(rank, model.meshRank, shape.data(), coords);
}

// From the coordinates, not the communicator: a group may span the
// microbatch axis (an all_slice takes this microbatch's block), whose
// coordinate changes from run to run.
int64_t Mesh::groupIndex(int g) const {
  int64_t index = 0;
  for (int i = 0; i < groups_[g].numAxes; ++i)
    index = index * shape_[groups_[g].axes[i]] + coords_[groups_[g].axes[i]];
  return index;
}

int64_t Mesh::groupSize(int g) const {
  int64_t size = 1;
  for (int i = 0; i < groups_[g].numAxes; ++i)
    size *= shape_[groups_[g].axes[i]];
  return size;
}

int64_t groupIndex(const Mesh &mesh, int g) { return mesh.groupIndex(g); }
int64_t meshCoord(const Mesh &mesh, int axis) { return mesh.coord(axis); }
int64_t pipelineStage(const Mesh &mesh) { return mesh.stage(); }
int64_t groupSize(const Mesh &mesh, int g) { return mesh.groupSize(g); }

int64_t blockIndex(const Mesh &mesh, int rank, const DimSplit *splits) {
  int64_t index = 0;
  for (int d = 0; d < rank; ++d)
    index = index * splitCount(splits[d], mesh.shape()) +
            splitIndex(splits[d], mesh.shape(), mesh.coords());
  return index;
}

} // namespace pccrt
