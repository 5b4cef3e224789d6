//===- Kernels.h - what generated code calls ---------------------*- C++ -*-===//
//
// Declarations only, and no standard library beyond <cstddef> and <cstdint>:
// every generated translation unit includes this header, and a model of
// 20,000 ops compiles as several units, so parsing it must cost nothing.
// GEMM-shaped work goes to BLAS (Kernels.cpp); data movement, reductions and
// normalizations live in the runtime library, instantiated for the element
// types generated code uses. Elementwise chains are not here: the code
// generator fuses them into loops of its own, using compiler builtins for
// math. Shapes are passed in the canonical (outer, n, inner) form the emitter
// computes at compile time.
//
//===----------------------------------------------------------------------===//

#ifndef PCCRT_KERNELS_H
#define PCCRT_KERNELS_H

#include "pccrt/FastMath.h"
#include "pccrt/Float16.h"
#include "pccrt/Model.h"

#include <cstddef>
#include <cstdint>

// A generated part (its fused loops) runs the widest vectors the CPU has:
// GCC builds it for AVX-512 (x86-64-v4), AVX2 + FMA (x86-64-v3) and the
// x86-64 baseline, and the loader picks one (an ifunc), so one executable
// runs on any x86-64 and fast on a new one. The clones compute the same
// bits: ISO C++ keeps a * b + c unfused, and loops with a float sum do
// not vectorise without reassociation. `--cxx-flags=-DPCC_PART=` builds
// one version (with -march=native: the host's alone).
#ifdef PCC_PART
#elif defined(__GNUC__) && !defined(__clang__) && !defined(__CUDACC__) &&      \
    defined(__x86_64__) && defined(__linux__)
#define PCC_PART                                                               \
  __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define PCC_PART
#endif

namespace pccrt {

//===----------------------------------------------------------------------===//
// BLAS-backed (Kernels.cpp)
//===----------------------------------------------------------------------===//

/// C = alpha op(A) op(B) + beta C, row-major, leading dimensions given.
void gemmF32(bool transA, bool transB, int64_t m, int64_t n, int64_t k,
             float alpha, const float *a, int64_t lda, const float *b,
             int64_t ldb, float beta, float *c, int64_t ldc);

/// `batch` independent products C[i] = A[offA[i]] B[offB[i]] (m x k times
/// k x n), C contiguous per batch. Offsets are in elements.
void batchedMatmulF32(int64_t batch, const int64_t *offA, const int64_t *offB,
                      int64_t m, int64_t n, int64_t k, const float *a,
                      const float *b, float *c);

/// 16-bit GEMMs (T = Half or BFloat16) on tensor cores, accumulated in f32
/// as cuBLAS's CUBLAS_COMPUTE_32F does; the same forms as gemmF32 and
/// batchedMatmulF32. Only the CUDA runtime has them: on CPU ranks 16-bit
/// products are widened to f32 at compile time (WidenKernels.cpp). The
/// result is T, or float (Out = float: the f32 accumulator unrounded, for a
/// product whose only use widened it).
template <typename T, typename Out = T>
void gemm16(bool transA, bool transB, int64_t m, int64_t n, int64_t k,
            float alpha, const T *a, int64_t lda, const T *b, int64_t ldb,
            float beta, Out *c, int64_t ldc);
/// gemm16 with its epilogue in the GEMM (cuBLASLt; CUDA runtime only):
/// c = alpha op(a) op(b) + bias[j] + addend[i, j], in f32 before c's one
/// rounding. `bias` (n values) and `addend` (m x n, row stride ldc) may be
/// null.
template <typename T>
void gemmEpilogue16(bool transA, bool transB, int64_t m, int64_t n, int64_t k,
                    float alpha, const T *a, int64_t lda, const T *b,
                    int64_t ldb, const T *bias, const T *addend, T *c,
                    int64_t ldc);
template <typename T, typename Out = T>
void batchedMatmul16(int64_t batch, const int64_t *offA, const int64_t *offB,
                     int64_t m, int64_t n, int64_t k, const T *a, const T *b,
                     Out *c);

/// 2-D grouped convolution (NCHW, filter OIHW) by im2col + GEMM. `scratch`
/// holds (C/group)*kh*kw*oh*ow floats.
void conv2dF32(const float *x, const float *w, const float *bias, float *y,
               int64_t n, int64_t c, int64_t h, int64_t wd, int64_t oc,
               int64_t kh, int64_t kw, int64_t oh, int64_t ow, int64_t sh,
               int64_t sw, int64_t ph, int64_t pw, int64_t dh, int64_t dw,
               int64_t group, float *scratch);

/// Masks of an attention (pcc.attention), read at element offsets: for
/// batch b, query row i and key column j (the key's index among all keys),
/// `add[addBatch[b] + i * addRow + j * addCol]` is added to the score and
/// where `hide[...]` (same form) is true the score becomes `fill` first.
/// Strides are 0 where a mask broadcasts. With `band` (pcc.attention's
/// hide_from) there is no hide tensor: column j is hidden from row i where
/// j - i >= hideFrom (a causal mask: 1).
struct AttentionMasks {
  const float *add = nullptr;
  const int64_t *addBatch = nullptr;
  int64_t addRow = 0, addCol = 0;
  const bool *hide = nullptr;
  const int64_t *hideBatch = nullptr;
  int64_t hideRow = 0, hideCol = 0;
  bool band = false;
  int64_t hideFrom = 0;
  float fill = 0;
};

/// out = softmax(masks(scale(q kt))) v for `batch` independent problems,
/// contiguous: q [sq, d], k [sk, d], v [sk, dv], out [sq, dv]; scores are
/// multiplied by `scale` (divided with `divide`). A tile of scores at a
/// time with running row maxima and sums (Attention.cpp). With `ringGroup`
/// >= 0, k and v are this device's block of the keys, of a sequence split
/// over that group in group order: the blocks pass around the group (ring
/// attention). `scratch`: 64 * 64 + 2 * batch * sq floats, plus
/// 2 * batch * sk * (d + dv) with a ring.
void attentionF32(const float *q, const float *k, const float *v, float *out,
                  int64_t batch, int64_t sq, int64_t sk, int64_t d, int64_t dv,
                  float scale, bool divide, const AttentionMasks &masks,
                  Mesh &mesh, int ringGroup, float *scratch);

/// attentionF32 for fp16/bf16 (T = Half or BFloat16) q, k, v and output on
/// tensor cores, scores and softmax statistics in f32: d = dv = 64 or 128,
/// no ring; an additive mask stays f32 (16-bit ones are widened). Only the CUDA
/// runtime has it (AttentionTensorCores.cu); elsewhere 16-bit attention is
/// widened. With `heads` > 0, q, k, v and out are [batch / heads, s, heads, d]
/// (the sequence before the heads, as projections leave them): problem b
/// is head b % heads of sequence b / heads, read and written in place.
/// `qPitch`, `kPitch`, `vPitch` (0: heads * d) are the elements between one
/// position's heads and the next's in q, k and v, which may hold more heads
/// than they give (the columns of a fused QKV projection).
template <typename T>
void attention16(const T *q, const T *k, const T *v, T *out, int64_t batch,
                 int64_t sq, int64_t sk, int64_t d, float scale, bool divide,
                 const AttentionMasks &masks, int64_t heads = 0,
                 int64_t qPitch = 0, int64_t kPitch = 0, int64_t vPitch = 0);

/// One device's part of a SUMMA product on a q x q grid (GridKernels.cpp):
/// x [m, k] is its block of the rows and of the contraction, w [k, n] (or
/// [n, k] with transB) its block of the weight; in q steps the blocks of
/// grid column s are broadcast along group `alongRow` (the devices of this
/// grid row) and those of grid row s along `alongCol`, and y = alpha x w +
/// beta y accumulates. `scratch`: m * k + k * n floats.
void summaF32(const float *x, const float *w, float *y, int64_t m, int64_t k,
              int64_t n, bool transB, float alpha, float beta, Mesh &mesh,
              int alongRow, int alongCol, float *scratch);

/// Layer norm of `outer` rows whose `total` features are split over group
/// `g` (this device holds `n` of them, and the matching scale and bias):
/// row sums and squared deviations are all-reduced. `scratch`: 2 * outer
/// doubles.
void layerNormSplitF32(const float *x, const float *scale, const float *bias,
                       float *y, int64_t outer, int64_t n, int64_t total,
                       float eps, Mesh &mesh, int g, double *scratch);

/// Softmax (log: log-softmax) along the middle axis of (outer, n, inner),
/// that axis split over group `g` (this device holds n of each line's
/// elements): one all-gather of every line's (max, sum of exp(x - max)).
/// `scratch`: 2 * outer * inner * (1 + group size) doubles. float and
/// double (16-bit softmaxes are widened).
template <typename T>
void softmaxSplit(const T *x, T *y, int64_t outer, int64_t n, int64_t inner,
                  bool log, Mesh &mesh, int g, double *scratch);

/// Sets the BLAS thread count (0 = library default).
void setBlasThreads(int threads);
/// Lets f32 GEMMs round their inputs to TF32 (--precision tf32): tensor
/// cores on GPU ranks; CPU ranks' BLAS has no such mode and ignores it.
void setTensorFloat32(bool allowed);

//===----------------------------------------------------------------------===//
// Pooling (Pooling.cpp): NCHW, 2-D; 1-D pools use h = 1
//===----------------------------------------------------------------------===//

void pool2dF32(bool isMax, const float *x, float *y, int64_t nc, int64_t h,
               int64_t w, int64_t oh, int64_t ow, int64_t kh, int64_t kw,
               int64_t sh, int64_t sw, int64_t ph, int64_t pw, int64_t dh,
               int64_t dw, bool countIncludePad, int64_t padEndH,
               int64_t padEndW);

void globalAvgPoolF32(const float *x, float *y, int64_t nc, int64_t spatial);

//===----------------------------------------------------------------------===//
// Normalizations (Normalizations.cpp): float and double
//===----------------------------------------------------------------------===//

/// Softmax (or, with `log`, log-softmax as x - max - log(sum)) along the
/// middle axis of (outer, n, inner).
template <typename T>
void softmax(const T *x, T *y, int64_t outer, int64_t n, int64_t inner,
             bool log = false);

/// Normalizes each row of n elements; scale/bias have n elements, or 1
/// (broadcast), or are null (bias only).
template <typename T>
void layerNorm(const T *x, const T *scale, int64_t scaleN, const T *bias,
               int64_t biasN, T *y, int64_t outer, int64_t n, float eps);

/// layerNorm for fp16/bf16 (T = Half or BFloat16) rows with f32 statistics
/// and arithmetic, one rounding a result. Only the CUDA runtime has it
/// (Normalizations.cu); elsewhere 16-bit layer norm is widened.
template <typename T>
void layerNorm16(const T *x, const T *scale, int64_t scaleN, const T *bias,
                 int64_t biasN, T *y, int64_t outer, int64_t n, float eps);

template <typename T>
void batchNorm(const T *x, const T *scale, const T *bias, const T *mean,
               const T *var, T *y, int64_t n, int64_t c, int64_t spatial,
               float eps);

//===----------------------------------------------------------------------===//
// Reductions (Reductions.cpp) over one contiguous block of axes:
// (outer, n, inner) -> (outer, inner). Non-contiguous axis sets are reduced
// one block at a time.
//===----------------------------------------------------------------------===//

enum class ReduceKind { Sum, Mean, Max, Min, Prod };

template <typename T>
void reduce(ReduceKind kind, const T *x, T *y, int64_t outer, int64_t n,
            int64_t inner);

template <typename T>
void argReduce(bool isMax, const T *x, int64_t *y, int64_t outer, int64_t n,
               int64_t inner);

/// The k first elements of each line (outer, n, inner) -> (outer, k, inner)
/// in topKBefore's order, and their positions on the line.
template <typename T>
void topK(const T *x, T *values, int64_t *indices, int64_t outer, int64_t n,
          int64_t inner, int64_t k, bool largest);

//===----------------------------------------------------------------------===//
// Data movement (DataMovement.cpp), by element size
//===----------------------------------------------------------------------===//

/// out[o, j, i] = in[o, idx[j] - offset, i] with negative indices wrapped by
/// globalDim. The table holds entries [offset, offset + axisDim) of an axis
/// of globalDim entries (all of it unless it is one device's block of a
/// vocabulary-parallel embedding); indices outside the block give zeros, so
/// summing over the devices yields the whole gather. Returns false (and
/// records an error) on an index outside the global axis.
template <typename Index>
bool gather(size_t elem, const char *in, const Index *idx, char *out,
            int64_t outer, int64_t axisDim, int64_t numIdx, int64_t inner,
            int64_t offset = 0, int64_t globalDim = -1);

enum class ScatterReduction { None, Add, Mul };

/// ScatterND over `batches` independent blocks (batch_dims): out = data,
/// then in block b, for each of its n index tuples idx[b, j, 0..k) (entries
/// wrapped by dims[0..k) when negative), the slice of `slice` elements it
/// addresses in the block's `blockElems` is replaced by, added to or
/// multiplied by updates[b, j, :], tuples in order. Returns false (and
/// records an error) on an entry outside its axis.
template <typename T>
bool scatterND(const T *data, const int64_t *idx, const T *updates, T *out,
               int64_t batches, int64_t blockElems, int64_t n, int k,
               const int64_t *dims, int64_t slice, ScatterReduction reduction);

/// General strided copy over the output index space `shape`:
/// out[c] = in[base + sum(c_d * inStride_d)] (strides in elements, may be
/// negative). Serves slice (strides scaled by steps) and transpose (permuted
/// strides).
void stridedCopy(size_t elem, const char *in, char *out, int rank,
                 const int64_t *shape, int64_t base, const int64_t *inStride);

/// Copies between a whole tensor (outer, sum(sizes), inner) and its parts
/// (outer, sizes[p], inner) along one axis.
void concat(size_t elem, int numParts, const char *const *parts,
            const int64_t *sizes, char *out, int64_t outer, int64_t inner);
void split(size_t elem, const char *in, int numParts, char *const *parts,
           const int64_t *sizes, int64_t outer, int64_t inner);

template <typename T>
void trilu(const T *x, T *y, int64_t batch, int64_t rows, int64_t cols,
           bool upper, int64_t k);

//===----------------------------------------------------------------------===//
// The mesh (Mesh.cpp): this device's place and the collectives
//===----------------------------------------------------------------------===//

/// This device's coordinate on mesh axis `axis` (its pipeline stage on
/// the pp axis).
int64_t meshCoord(const Mesh &mesh, int axis);
/// The pipeline stage the run computes (Mesh::stage: the pp coordinate, or
/// with interleaved 1F1B the stage of the run's chunk).
int64_t pipelineStage(const Mesh &mesh);

/// In-group index and size of this device in communication group `g`.
int64_t groupIndex(const Mesh &mesh, int g);
int64_t groupSize(const Mesh &mesh, int g);

/// Index of this device's block among all blocks of a tensor split as
/// `splits` (row-major over the dims' block counts): where its shard of a
/// weight lies in the weights file.
int64_t blockIndex(const Mesh &mesh, int rank, const DimSplit *splits);

/// pcc.dropout of this device's block (`localShape`, split as `splits`,
/// null when whole) of a tensor: y = x / (1 - ratio) where the element's
/// index in the whole tensor keeps it (pccrt/Dropout.h), else 0. `step` is
/// the training step's counter (null: step 0).
void dropout(const Mesh &mesh, const float *x, float *y, int rank,
             const int64_t *localShape, const DimSplit *splits, uint64_t seed,
             uint64_t stream, const float *step, double ratio);

/// out = sum over group `g` of in (in may equal out), count elements.
void allReduceSum(Mesh &mesh, int g, DType t, const void *in, void *out,
                  int64_t count);
/// in is [outer, block]; out is [outer, n * block] with device r's block at
/// position r (block in bytes).
void allGather(Mesh &mesh, int g, const void *in, void *out, int64_t outer,
               int64_t blockBytes);
/// in is [outer, n * block]; out is this device's block [outer, block] of
/// the sum over group `g` (block in elements).
void reduceScatterSum(Mesh &mesh, int g, DType t, const void *in, void *out,
                      int64_t outer, int64_t blockCount);
/// in is [outer, n * block]; out is this device's block (no communication).
void allSlice(Mesh &mesh, int g, const void *in, void *out, int64_t outer,
              int64_t blockBytes);
/// `in` (this device's block, `rank` dims of `shape`) is cut into n pieces
/// along `splitDim`; piece r goes to the group's device r, and the pieces
/// received are joined along `concatDim` in device order (a split moving
/// from `concatDim` to `splitDim`).
void allToAll(Mesh &mesh, int g, const void *in, void *out, int64_t elemBytes,
              int rank, const int64_t *shape, int splitDim, int concatDim);
/// `bytes` of `buf` from the group's device `root` to every device of
/// group `g`.
void broadcast(Mesh &mesh, int g, int64_t root, void *buf, int64_t bytes);
/// Ring attention's shift on group `g`: sends `bytes` of `out` to the next
/// device of the group and receives as many from the previous into `in`;
/// finishRingShift waits for both.
void startRingShift(Mesh &mesh, int g, const void *out, void *in,
                    int64_t bytes);
void finishRingShift(Mesh &mesh, int g, int64_t bytes);
/// Pipeline stages are the in-group indices of group `g` (the pp axis):
/// send `bytes` to stage `stage`'s device of this group, or receive them
/// from it; `tag` pairs the two.
void sendToStage(Mesh &mesh, int g, int64_t stage, const void *buf,
                 int64_t bytes, int64_t tag);
void recvFromStage(Mesh &mesh, int g, int64_t stage, void *buf, int64_t bytes,
                   int64_t tag);

/// A training step streaming microbatches (one run each) accumulates across
/// its runs: `id` names the accumulator. microbatchSum adds the run's
/// `count` elements of `in`; microbatchGather puts its block (`outer` rows
/// of `blockBytes`) in the microbatch's place along the gathered dimension.
/// After the last microbatch `out` holds the whole step's result.
void microbatchSum(Mesh &mesh, int id, DType type, const void *in, void *out,
                   int64_t count);
void microbatchGather(Mesh &mesh, int id, const void *in, void *out,
                      int64_t outer, int64_t blockBytes);
/// Whether this run is the step's last microbatch (the update runs then).
bool lastMicrobatch(const Mesh &mesh);
/// Whether this run is one of the step's prologue runs.
bool prologueRun(const Mesh &mesh);
/// Whether this call runs the microbatch's forward, its backward, the
/// update (see Mesh::Phase), and whether forward and backward run apart.
bool runsForward(const Mesh &mesh);
bool runsBackward(const Mesh &mesh);
bool runsUpdate(const Mesh &mesh);
bool splitPhases(const Mesh &mesh);
/// A zero-bubble program: whether this call runs the backward's W part,
/// and whether that runs apart from its B part (Mesh::weightsApart).
bool runsWeightGradients(const Mesh &mesh);
bool weightsApart(const Mesh &mesh);
/// This microbatch's slot of `slotBytes` in the stage's stash (what its
/// backward reads of its forward, kept while other microbatches run), and
/// in its W stash (what W reads of the forward and B).
char *stashSlot(Mesh &mesh, int64_t slotBytes);
char *weightStashSlot(Mesh &mesh, int64_t slotBytes);

//===----------------------------------------------------------------------===//
// Scalar helpers for fused loops (std::min/max without <algorithm>)
//===----------------------------------------------------------------------===//

template <typename T> PCCRT_HD inline T pccMin(T a, T b) { return b < a ? b : a; }
template <typename T> PCCRT_HD inline T pccMax(T a, T b) { return a < b ? b : a; }

/// TopK's order, one definition for both runtimes: whether element a at
/// position i comes before b at j. Larger first (smaller with !largest),
/// NaN larger than every number (as torch.topk), ties in index order: a
/// strict total order, so the k first are one answer.
template <typename T>
PCCRT_HD inline bool topKBefore(T a, int64_t i, T b, int64_t j, bool largest) {
  bool nanA = a != a, nanB = b != b;
  if (nanA != nanB)
    return largest ? nanA : nanB;
  if (nanA || a == b)
    return i < j;
  return largest ? b < a : a < b;
}

} // namespace pccrt

#endif // PCCRT_KERNELS_H
