//===- Mesh.cpp - the device grid and its communication groups ------------===//

#include "MeshImpl.h"

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
  meshCoords(rank_, model.meshRank, model.meshShape, coords_.data());
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

int64_t Mesh::groupIndex(int g) const { return impl_->groups[g]->index(); }
int64_t Mesh::groupSize(int g) const { return impl_->groups[g]->size(); }

int64_t groupIndex(const Mesh &mesh, int g) { return mesh.groupIndex(g); }
int64_t groupSize(const Mesh &mesh, int g) { return mesh.groupSize(g); }

int64_t blockIndex(const Mesh &mesh, int rank, const DimSplit *splits) {
  int64_t index = 0;
  for (int d = 0; d < rank; ++d)
    index = index * splitCount(splits[d], mesh.shape()) +
            splitIndex(splits[d], mesh.shape(), mesh.coords());
  return index;
}

} // namespace pccrt
