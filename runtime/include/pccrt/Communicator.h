//===- Communicator.h - one communication group, any back end ---*- C++ -*-===//
//
// The collectives a compiled model needs, on one group of devices (those
// that differ only along some mesh axes), as a back end provides them: MPI
// between CPU ranks (runtime/lib/cpu/MpiCommunicator.cpp); a GPU back end
// brings its own. The layout work around them (blocks of a split dimension,
// reordering for [outer, device, block] tensors) is common
// (runtime/lib/common/Collectives.cpp).
//
//===----------------------------------------------------------------------===//

#ifndef PCCRT_COMMUNICATOR_H
#define PCCRT_COMMUNICATOR_H

#include "pccrt/Model.h"

#include <cstdint>
#include <memory>

namespace pccrt {

class Communicator {
public:
  Communicator(int64_t index, int64_t size) : index_(index), size_(size) {}
  virtual ~Communicator();

  /// This device's position in the group, and the group's size.
  int64_t index() const { return index_; }
  int64_t size() const { return size_; }

  /// In place: `buf` becomes the sum of every device's `buf`.
  virtual void allReduceSum(DType type, void *buf, int64_t count) = 0;
  /// `out` receives every device's `bytes` bytes of `in`, in group order.
  virtual void allGather(const void *in, void *out, int64_t bytes) = 0;
  /// `in` holds one block of `count` elements per device, in group order;
  /// `out` receives the sum over devices of this device's block.
  virtual void reduceScatterSum(DType type, const void *in, void *out,
                                int64_t count) = 0;

  /// `in` holds one block of `bytes` per device, in group order; block r
  /// goes to device r, and `out` receives every device's block for this one.
  virtual void allToAll(const void *in, void *out, int64_t bytes) = 0;
  /// `bytes` of `buf` from device `root` to every device of the group.
  virtual void broadcast(int64_t root, void *buf, int64_t bytes) = 0;
  /// Point to point, between this device and the group's device `peer`:
  /// `tag` pairs a send with its receive. A send returns once its bytes are
  /// received or buffered (MPI groups copy them and return at once), so a
  /// device waits only in receives; finishSends waits until every send so
  /// far has been received.
  virtual void send(int64_t peer, const void *buf, int64_t bytes,
                    int64_t tag) = 0;
  virtual void recv(int64_t peer, void *buf, int64_t bytes, int64_t tag) = 0;
  virtual void finishSends() {}
  /// Starts sending `bytes` of `out` to device `to` while receiving as many
  /// into `in` from device `from`; finishExchange waits for both. One
  /// exchange at a time per group (ring attention's shift, overlapped with
  /// the work on the block in hand).
  virtual void startExchange(int64_t to, const void *out, int64_t from,
                             void *in, int64_t bytes) = 0;
  virtual void finishExchange() = 0;

private:
  int64_t index_, size_;
};

/// The group of devices whose mesh coordinates agree everywhere but on the
/// group's axes: `color` names it (equal on its members), `index` orders
/// them. Collective over every process. Made by the back end linked in.
std::unique_ptr<Communicator> makeGroupCommunicator(int64_t color,
                                                    int64_t index,
                                                    int64_t size);

} // namespace pccrt

#endif // PCCRT_COMMUNICATOR_H
