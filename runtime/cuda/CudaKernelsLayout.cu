//===- CudaKernelsLayout.cu - Data movement and reductions ----------------===//
//
// Ports of KernelsLayout.cpp, KernelsShape.cpp (gather, concat, slice) and
// KernelsReduce.cpp. Data movement copies 2-, 4- or 8-byte words whatever
// they hold; one strided-copy kernel (Strided<2>: the output contiguous,
// the input strided) serves transpose, broadcast_to and slice, and a tiled
// kernel the transposes whose inner dim changes (reads and writes both
// coalesced through shared memory).
//
// gather_grad adds with atomicAdd: where indices repeat, the order of the
// additions, and so the last bits of the sums, can differ between runs.
// Every other kernel here is deterministic.
//
//===----------------------------------------------------------------------===//
#include "runtime/cuda/CudaKernelsCommon.cuh"

#include <algorithm>

namespace tcc::rt::cuda {

static constexpr int kBlock = 256;

template <class T>
__global__ void stridedCopyKernel(const T *x, long long xBase, T *y,
                                  long long n, Strided<2> s) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
       i += (long long)gridDim.x * blockDim.x) {
    long long off[2];
    s.offsets(i, off);
    y[off[0]] = x[xBase + off[1]];
  }
}

/// y (contiguous, `n` elements) = x[xBase + strided offsets].
static void stridedCopy(const CudaArgs &a, const TensorView &X,
                        const TensorView &Y, long long xBase,
                        const Strided<2> &s, const char *what) {
  if (Y.numel == 0)
    return;
  byElementSize(Y.dtype, [&](auto w) {
    using T = typename decltype(w)::T;
    TCC_LAUNCH(stridedCopyKernel<T>, gridFor(Y.numel, kBlock, a.smCount),
               kBlock, a.stream)
    (static_cast<const T *>(X.data), xBase, static_cast<T *>(Y.data), Y.numel,
     s);
  });
  checkLaunch(what);
}

void launch_copy(const CudaArgs &a) {
  const TensorView &X = a.in[0], &Y = a.out[0];
  size_t bytes = static_cast<size_t>(Y.numel) * dtypeSize(Y.dtype);
  if (X.data != Y.data && bytes)
    TCC_CUDA_CHECK(cudaMemcpyAsync(Y.data, X.data, bytes,
                                   cudaMemcpyDeviceToDevice, a.stream));
}

void launch_broadcast_to(const CudaArgs &a) {
  const TensorView &X = a.in[0], &Y = a.out[0];
  Strided<2> s =
      makeStrided<2>(*Y.shape, {abi::contiguousStrides(*Y.shape),
                                abi::broadcastStrides(*X.shape, Y.rank())});
  stridedCopy(a, X, Y, 0, s, a.instr.kernel.c_str());
}

//===----------------------------------------------------------------------===//
// transpose
//===----------------------------------------------------------------------===//

/// The last two merged dims [rows, cols] of the output, with the input
/// contiguous along rows (xsR == 1) and strided by xsC along cols, in 32x32
/// tiles; `outer` indexes the dims before them. Block 32x8.
template <class T>
__global__ void transposeTileKernel(const T *x, T *y, Strided<2> outer,
                                    long long outerCount, long long rows,
                                    long long cols, long long ysR,
                                    long long xsC) {
  __shared__ T tile[32][33];
  long long tilesR = (rows + 31) / 32, tilesC = (cols + 31) / 32;
  long long tiles = outerCount * tilesR * tilesC;
  int tx = threadIdx.x, ty = threadIdx.y;
  for (long long t = blockIdx.x; t < tiles; t += gridDim.x) {
    long long ob = t / (tilesR * tilesC), rest = t % (tilesR * tilesC);
    long long r0 = (rest / tilesC) * 32, c0 = (rest % tilesC) * 32;
    long long off[2];
    outer.offsets(ob, off);
    for (int j = ty; j < 32; j += 8) {
      long long r = r0 + tx, c = c0 + j;
      if (r < rows && c < cols)
        tile[j][tx] = x[off[1] + r + c * xsC];
    }
    __syncthreads();
    for (int j = ty; j < 32; j += 8) {
      long long r = r0 + j, c = c0 + tx;
      if (r < rows && c < cols)
        y[off[0] + r * ysR + c] = tile[tx][j];
    }
    __syncthreads();
  }
}

void launch_transpose(const CudaArgs &a) {
  const TensorView &X = a.in[0], &Y = a.out[0];
  if (Y.numel == 0)
    return;
  const abi::AttrList perm = abi::attrs<abi::KernelId::Transpose>(a.instr).perm;
  std::vector<int64_t> xst = abi::contiguousStrides(*X.shape),
                       permuted(perm.size());
  for (size_t i = 0; i < perm.size(); ++i)
    permuted[i] = xst[perm[i]];
  std::vector<int64_t> yst = abi::contiguousStrides(*Y.shape);
  abi::LoopNest<2> nest(*Y.shape, {yst, permuted});
  size_t r = nest.dims.size();
  if (r >= 2 && nest.strides[r - 1][1] != 1 && nest.strides[r - 2][1] == 1) {
    std::vector<int64_t> outerShape(nest.dims.begin(), nest.dims.end() - 2);
    std::vector<int64_t> oy, ox;
    for (size_t d = 0; d + 2 < r; ++d) {
      oy.push_back(nest.strides[d][0]);
      ox.push_back(nest.strides[d][1]);
    }
    Strided<2> outer = makeStrided<2>(outerShape, {oy, ox});
    long long outerCount = 1;
    for (int64_t d : outerShape)
      outerCount *= d;
    long long rows = nest.dims[r - 2], cols = nest.dims[r - 1];
    long long tiles = outerCount * ((rows + 31) / 32) * ((cols + 31) / 32);
    unsigned grid = static_cast<unsigned>(
        std::min<long long>(tiles, static_cast<long long>(a.smCount) * 16));
    byElementSize(Y.dtype, [&](auto w) {
      using T = typename decltype(w)::T;
      TCC_LAUNCH(transposeTileKernel<T>, grid, dim3(32, 8), a.stream)
      (static_cast<const T *>(X.data), static_cast<T *>(Y.data), outer,
       outerCount, rows, cols, nest.strides[r - 2][0], nest.strides[r - 1][1]);
    });
    checkLaunch(a.instr.kernel.c_str());
    return;
  }
  stridedCopy(a, X, Y, 0, makeStrided<2>(*Y.shape, {yst, permuted}),
              a.instr.kernel.c_str());
}

//===----------------------------------------------------------------------===//
// slice, slice_grad, concat
//===----------------------------------------------------------------------===//

/// The window of `full` that a slice's or slice_grad's WindowAttrs (a start
/// and a step per dim) select: its base offset and the strides of the
/// window's dims in `full`.
static long long windowStrides(const Instr &in,
                               const std::vector<int64_t> &full,
                               std::vector<int64_t> &strided) {
  size_t rank = full.size();
  const abi::WindowAttrs w = abi::attrsOf<abi::WindowAttrs>(in);
  std::vector<int64_t> fst = abi::contiguousStrides(full);
  strided.assign(rank, 0);
  long long base = 0;
  for (size_t d = 0; d < rank; ++d) {
    base += w.starts[d] * fst[d];
    strided[d] = fst[d] * w.steps[d];
  }
  return base;
}

void launch_slice(const CudaArgs &a) {
  const TensorView &X = a.in[0], &Y = a.out[0];
  if (Y.numel == 0)
    return;
  // The input's first bytes: one copy, none where the plan made it a view.
  if (isPrefixSlice(a.instr, *X.shape, *Y.shape)) {
    launch_copy(a);
    return;
  }
  std::vector<int64_t> strided;
  long long base = windowStrides(a.instr, *X.shape, strided);
  stridedCopy(
      a, X, Y, base,
      makeStrided<2>(*Y.shape, {abi::contiguousStrides(*Y.shape), strided}),
      a.instr.kernel.c_str());
}

__global__ void sliceGradKernel(const void *dy, int tdy, void *dx, int tdx,
                                long long base, long long n, Strided<2> s) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
       i += (long long)gridDim.x * blockDim.x) {
    long long off[2];
    s.offsets(i, off);
    stf(dx, tdx, base + off[1], ldf(dy, tdy, off[0]));
  }
}

void launch_slice_grad(const CudaArgs &a) {
  const TensorView &G = a.in[0], &D = a.out[0];
  // A prefix window: the gradient's bytes, then zeros after them, each
  // written once (GPT-2's two [50257, 768] -> [50304, 768] f32 gradients
  // were zeroed whole, then copied over element by element).
  if (G.dtype == D.dtype && isPrefixWindow(a.instr, *D.shape, *G.shape)) {
    size_t size = dtypeSize(D.dtype), head = G.numel * size,
           all = D.numel * size;
    if (head && G.data != D.data)
      TCC_CUDA_CHECK(cudaMemcpyAsync(D.data, G.data, head,
                                     cudaMemcpyDeviceToDevice, a.stream));
    if (all > head)
      TCC_CUDA_CHECK(cudaMemsetAsync(static_cast<char *>(D.data) + head, 0,
                                     all - head, a.stream));
    return;
  }
  if (D.numel)
    TCC_CUDA_CHECK(cudaMemsetAsync(D.data, 0, D.numel * dtypeSize(D.dtype),
                                   a.stream)); // +0.0 in every float type
  if (G.numel == 0)
    return;
  std::vector<int64_t> strided;
  long long base = windowStrides(a.instr, *D.shape, strided);
  Strided<2> s =
      makeStrided<2>(*G.shape, {abi::contiguousStrides(*G.shape), strided});
  TCC_LAUNCH(sliceGradKernel, gridFor(G.numel, kBlock, a.smCount), kBlock,
             a.stream)
  (G.data, dt(G), D.data, dt(D), base, G.numel, s);
  checkLaunch(a.instr.kernel.c_str());
}

static int64_t product(const std::vector<int64_t> &shape, size_t from,
                       size_t to) {
  int64_t n = 1;
  for (size_t i = from; i < to; ++i)
    n *= shape[i];
  return n;
}

// Each input is a block of `outer` rows of `chunk` bytes, placed at byte
// `offset` of the output's rows: one 2-D copy per input.
void launch_concat(const CudaArgs &a) {
  const TensorView &Y = a.out[0];
  int64_t axis = abi::attrs<abi::KernelId::Concat>(a.instr).axis;
  int64_t outer = product(*Y.shape, 0, axis);
  size_t esize = dtypeSize(Y.dtype);
  int64_t rowBytes = product(*Y.shape, axis, Y.rank()) * esize;
  int64_t offset = 0;
  for (const TensorView &X : a.in) {
    int64_t chunk = product(*X.shape, axis, X.rank()) * esize;
    if (chunk > 0 && outer > 0)
      TCC_CUDA_CHECK(cudaMemcpy2DAsync(static_cast<char *>(Y.data) + offset,
                                       rowBytes, X.data, chunk, chunk, outer,
                                       cudaMemcpyDeviceToDevice, a.stream));
    offset += chunk;
  }
}

//===----------------------------------------------------------------------===//
// gather, gather_grad
//===----------------------------------------------------------------------===//

template <class T>
__global__ void gatherKernel(const T *x, const long long *idx, T *y,
                             long long outer, long long count, long long n,
                             long long inner, long long *err) {
  long long total = outer * count * inner;
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
       i < total; i += (long long)gridDim.x * blockDim.x) {
    long long in = i % inner, j = (i / inner) % count, o = i / (inner * count);
    long long k = idx[j];
    if (k < -n || k >= n) {
      raiseError(err, j, k, n);
      y[i] = T(0);
      continue;
    }
    if (k < 0)
      k += n;
    y[i] = x[(o * n + k) * inner + in];
  }
}

void launch_gather(const CudaArgs &a) {
  const TensorView &X = a.in[0], &I = a.in[1], &Y = a.out[0];
  int64_t axis = abi::attrs<abi::KernelId::Gather>(a.instr).axis;
  int64_t outer = product(*X.shape, 0, axis), n = X.dim(axis);
  int64_t inner = product(*X.shape, axis + 1, X.rank());
  if (Y.numel == 0)
    return;
  byElementSize(Y.dtype, [&](auto w) {
    using T = typename decltype(w)::T;
    TCC_LAUNCH(gatherKernel<T>, gridFor(Y.numel, kBlock, a.smCount), kBlock,
               a.stream)
    (static_cast<const T *>(X.data), static_cast<const long long *>(I.data),
     static_cast<T *>(Y.data), outer, I.numel, n, inner, a.err);
  });
  checkLaunch(a.instr.kernel.c_str());
}

__global__ void gatherGradKernel(const void *g, int tg, const long long *idx,
                                 float *d, long long outer, long long count,
                                 long long n, long long inner, long long *err) {
  long long total = outer * count * inner;
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
       i < total; i += (long long)gridDim.x * blockDim.x) {
    long long in = i % inner, j = (i / inner) % count, o = i / (inner * count);
    long long k = idx[j];
    if (k < -n || k >= n) {
      raiseError(err, j, k, n);
      continue;
    }
    if (k < 0)
      k += n;
    atomicAdd(d + (o * n + k) * inner + in, ldf(g, tg, i));
  }
}

__global__ void narrowKernel(const float *x, void *y, int ty, long long n) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
       i += (long long)gridDim.x * blockDim.x)
    stf(y, ty, i, x[i]);
}

int64_t prepare_gather_grad(const Instr &in,
                            const std::vector<TensorInfo> &tensors) {
  const TensorInfo &d = tensors[in.outputs[0]];
  // 16-bit dx: the sums are kept in f32 scratch and rounded once, as the
  // CPU's adapter does.
  return isHalfDType(d.dtype) ? d.numElements() * 4 : 0;
}

void launch_gather_grad(const CudaArgs &a) {
  const TensorView &G = a.in[0], &I = a.in[1], &D = a.out[0];
  int64_t axis = abi::attrs<abi::KernelId::GatherGrad>(a.instr).axis;
  int64_t outer = product(*D.shape, 0, axis), n = D.dim(axis);
  int64_t inner = product(*D.shape, axis + 1, D.rank());
  if (D.numel == 0)
    return;
  float *acc = D.dtype == DType::F32 ? static_cast<float *>(D.data)
                                     : static_cast<float *>(a.scratch);
  TCC_CUDA_CHECK(cudaMemsetAsync(acc, 0, D.numel * sizeof(float), a.stream));
  if (G.numel > 0) {
    TCC_LAUNCH(gatherGradKernel, gridFor(G.numel, kBlock, a.smCount), kBlock,
               a.stream)
    (G.data, dt(G), static_cast<const long long *>(I.data), acc, outer, I.numel,
     n, inner, a.err);
    checkLaunch(a.instr.kernel.c_str());
  }
  if (D.dtype != DType::F32) {
    TCC_LAUNCH(narrowKernel, gridFor(D.numel, kBlock, a.smCount), kBlock,
               a.stream)
    (acc, D.data, dt(D), D.numel);
    checkLaunch(a.instr.kernel.c_str());
  }
}

//===----------------------------------------------------------------------===//
// reduce_sum, reduce_mean
//===----------------------------------------------------------------------===//

/// Reduced elements contiguous (stride 1) per output: one warp per output
/// (many outputs) or one block per output (few, long rows).
__global__ void __launch_bounds__(1024)
    reduceRowsKernel(const void *x, int tx, void *y, int ty, long long outputs,
                     long long len, Strided<1> kept, float count, bool mean,
                     bool warpPerRow) {
  __shared__ float shared[32];
  if (warpPerRow) {
    long long warps = (long long)gridDim.x * (blockDim.x / 32);
    long long w = blockIdx.x * (long long)(blockDim.x / 32) + threadIdx.x / 32;
    int lane = threadIdx.x & 31;
    for (long long k = w; k < outputs; k += warps) {
      long long base;
      kept.offsets(k, &base);
      float s = 0.0f;
      for (long long j = lane; j < len; j += 32)
        s += ldf(x, tx, base + j);
      s = warpSum(s);
      if (lane == 0)
        stf(y, ty, k, mean ? s / count : s);
    }
    return;
  }
  for (long long k = blockIdx.x; k < outputs; k += gridDim.x) {
    long long base;
    kept.offsets(k, &base);
    float s = 0.0f;
    for (long long j = threadIdx.x; j < len; j += blockDim.x)
      s += ldf(x, tx, base + j);
    s = blockSum(s, shared);
    if (threadIdx.x == 0)
      stf(y, ty, k, mean ? s / count : s);
  }
}

/// Any layout: 32 consecutive outputs per block (threadIdx.x), the reduced
/// elements [j0, j1) of chunk blockIdx.y split over threadIdx.y and summed
/// in a fixed order. With one chunk the block writes the result; with
/// several (a column sum of few outputs over many rows, like a bias
/// gradient: [8192, 768] -> [768] would otherwise run on 24 blocks) each
/// writes its partial sum to `partial` [chunks, outputs] and
/// reduceChunksKernel adds them in a fixed order (sliceSum).
__global__ void reduceColsKernel(const void *x, int tx, void *y, int ty,
                                 long long outputs, long long len,
                                 long long chunkLen, Strided<1> kept,
                                 Strided<1> reduced, float count, bool mean,
                                 float *partial) {
  __shared__ float part[8][33];
  long long j0 = blockIdx.y * chunkLen;
  long long j1 = j0 + chunkLen < len ? j0 + chunkLen : len;
  for (long long k0 = blockIdx.x * 32LL; k0 < outputs; k0 += gridDim.x * 32LL) {
    long long k = k0 + threadIdx.x;
    float s = 0.0f;
    if (k < outputs) {
      long long base;
      kept.offsets(k, &base);
      // Four elements at a time into their own sums (more loads in flight;
      // a bias gradient reads hundreds of MB), added in a fixed order.
      float s4[4] = {0.0f, 0.0f, 0.0f, 0.0f};
      const long long step = blockDim.y;
      long long j = j0 + threadIdx.y;
      for (; j + 3 * step < j1; j += 4 * step) {
        float v[4];
        TCC_UNROLL
        for (int u = 0; u < 4; ++u) {
          long long r;
          reduced.offsets(j + u * step, &r);
          v[u] = ldf(x, tx, base + r);
        }
        TCC_UNROLL
        for (int u = 0; u < 4; ++u)
          s4[u] += v[u];
      }
      for (; j < j1; j += step) {
        long long r;
        reduced.offsets(j, &r);
        s4[0] += ldf(x, tx, base + r);
      }
      s = (s4[0] + s4[1]) + (s4[2] + s4[3]);
    }
    part[threadIdx.y][threadIdx.x] = s;
    __syncthreads();
    if (threadIdx.y == 0 && k < outputs) {
      float t = 0.0f;
      for (int i = 0; i < 8; ++i)
        t += part[i][threadIdx.x];
      if (partial)
        partial[blockIdx.y * outputs + k] = t;
      else
        stf(y, ty, k, mean ? t / count : t);
    }
    __syncthreads();
  }
}

/// Column sums of a contiguous [len, outputs] matrix (the leading axes
/// reduced: every bias gradient), V columns a thread in one 16-byte load
/// (8 16-bit or 4 f32 elements: outputs % V == 0, x 16-byte aligned). A
/// warp reads 512 contiguous bytes of a row where reduceColsKernel's reads
/// 64 or 128, each with its own index arithmetic. Block (32, 8): 32 V
/// columns, rows j0 + threadIdx.y, step 8, four loads in flight; the 8
/// row lanes then add in order. Row chunks as reduceColsKernel's.
template <class T>
__global__ void __launch_bounds__(256)
    columnSumKernel(const T *x, int tx, void *y, int ty, long long outputs,
                    long long len, long long chunkLen, float count, bool mean,
                    float *partial) {
  constexpr int V = 16 / sizeof(T);
  __shared__ float part[8][32 * V + 1];
  long long j0 = blockIdx.y * chunkLen;
  long long j1 = j0 + chunkLen < len ? j0 + chunkLen : len;
  long long c0 = (blockIdx.x * 32LL + threadIdx.x) * V;
  float acc[V];
  TCC_UNROLL
  for (int e = 0; e < V; ++e)
    acc[e] = 0.0f;
  if (c0 < outputs) {
    auto add = [&](const uint4 &w) {
      TCC_UNROLL
      for (int e = 0; e < V; ++e)
        acc[e] += sizeof(T) == 4 ? f32Of(w, e) : halfOf(w, e, tx);
    };
    long long j = j0 + threadIdx.y;
    for (; j + 24 < j1; j += 32) {
      uint4 w[4];
      TCC_UNROLL
      for (int u = 0; u < 4; ++u)
        w[u] = *reinterpret_cast<const uint4 *>(x + (j + 8 * u) * outputs + c0);
      TCC_UNROLL
      for (int u = 0; u < 4; ++u)
        add(w[u]);
    }
    for (; j < j1; j += 8)
      add(*reinterpret_cast<const uint4 *>(x + j * outputs + c0));
  }
  TCC_UNROLL
  for (int e = 0; e < V; ++e)
    part[threadIdx.y][threadIdx.x * V + e] = acc[e];
  __syncthreads();
  // Thread (x, y) finishes columns y, y + 8, .. of the block's 32 V.
  for (int c = threadIdx.y * 32 + threadIdx.x; c < 32 * V; c += 256) {
    long long k = blockIdx.x * 32LL * V + c;
    if (k >= outputs)
      continue;
    float t = 0.0f;
    for (int i = 0; i < 8; ++i)
      t += part[i][c];
    if (partial)
      partial[blockIdx.y * outputs + k] = t;
    else
      stf(y, ty, k, mean ? t / count : t);
  }
}

/// Block (32, 8), ceil(outputs / 32) blocks (sliceSum).
__global__ void __launch_bounds__(256)
    reduceChunksKernel(const float *partial, long long chunks, void *y, int ty,
                       long long outputs, float count, bool mean) {
  __shared__ float lanes[8][33];
  float t = sliceSum(partial, chunks, outputs, outputs, lanes);
  long long k = blockIdx.x * 32LL + threadIdx.x;
  if (threadIdx.y == 0 && k < outputs)
    stf(y, ty, k, mean ? t / count : t);
}

/// reduceChunksKernel's grid: a block for 32 outputs.
static unsigned chunkGrid(long long outputs) {
  return static_cast<unsigned>((outputs + 31) / 32);
}

namespace {
/// How launch_reduce runs one reduction (prepare_reduce sizes its scratch
/// from the same plan, so it never depends on the GPU model).
struct ReducePlan {
  std::vector<int64_t> keptShape, keptSt, redShape, redSt;
  int64_t count = 1, outputs = 1;
  bool rows = false;  // reduced elements contiguous per output
  int64_t chunks = 1; // column path: row chunks summed separately
  int64_t chunkLen = 0;
};

ReducePlan planReduce(const std::vector<int64_t> &xs,
                      const abi::AttrList &axes) {
  ReducePlan p;
  std::vector<int64_t> xst = abi::contiguousStrides(xs);
  for (size_t d = 0; d < xs.size(); ++d) {
    if (std::binary_search(axes.begin(), axes.end(), int64_t(d))) {
      p.redShape.push_back(xs[d]);
      p.redSt.push_back(xst[d]);
      p.count *= xs[d];
    } else {
      p.keptShape.push_back(xs[d]);
      p.keptSt.push_back(xst[d]);
      p.outputs *= xs[d];
    }
  }
  abi::LoopNest<1> red(p.redShape, {p.redSt});
  p.rows = p.count <= 1 || (red.dims.size() == 1 && red.strides[0][0] == 1);
  // Columns: chunks of >= 256 reduced elements, at most 128 (64 for more
  // than 32768 outputs), while the partial sums stay small (<= 16 MiB of
  // scratch). A bias gradient of 768 columns is 3 blocks of columnSumKernel
  // a chunk: 128 chunks give an H100's 132 multiprocessors about 3 blocks
  // each (the layer norms' parameter gradients went from 64 to 128 row
  // slices likewise).
  if (!p.rows && p.outputs <= (1 << 16))
    p.chunks = std::max<int64_t>(
        1, std::min<int64_t>(p.outputs <= (1 << 15) ? 128 : 64, p.count / 256));
  p.chunkLen = (p.count + p.chunks - 1) / p.chunks;
  return p;
}
} // namespace

/// Whether columnSumKernel takes reduction p of X: the reduced axes lead
/// (X is [count, outputs] contiguous), f32 or 16-bit, rows of whole
/// 16-byte words and X 16-byte aligned.
static bool columnSum(const ReducePlan &p, const TensorView &X) {
  if (p.rows || p.redShape.empty() || !X.data)
    return false;
  if (X.dtype != DType::F32 && X.dtype != DType::BF16 && X.dtype != DType::F16)
    return false;
  for (int64_t st : p.redSt) // each reduced stride spans all kept elements
    if (st < p.outputs)
      return false;
  int64_t bytes = p.outputs * dtypeSize(X.dtype);
  return p.outputs > 0 && bytes % 16 == 0 && aligned16(X.data);
}

int64_t prepare_reduce(const Instr &in, const std::vector<TensorInfo> &t) {
  const TensorInfo &x = t[in.inputs[0]];
  if (x.shape.size() > static_cast<size_t>(kCudaMaxRank))
    throw Error("no CUDA kernel for rank " + std::to_string(x.shape.size()) +
                " operands ('" + x.name + "'); the CUDA kernels take rank <= " +
                std::to_string(kCudaMaxRank));
  // reduce_sum and reduce_mean share AxesAttrs.
  ReducePlan p = planReduce(x.shape, abi::attrsOf<abi::AxesAttrs>(in).axes);
  return p.chunks > 1 ? p.chunks * p.outputs * int64_t(sizeof(float)) : 0;
}

void launch_reduce(const CudaArgs &a) {
  const TensorView &X = a.in[0], &Y = a.out[0];
  ReducePlan p =
      planReduce(*X.shape, abi::attrsOf<abi::AxesAttrs>(a.instr).axes);
  long long outputs = Y.numel;
  if (outputs == 0)
    return;
  bool mean = abi::is(a.instr, abi::KernelId::ReduceMean);
  // Like PyTorch (and the CPU), the mean of nothing is NaN (0/0).
  float fcount = static_cast<float>(p.count);
  Strided<1> kept = makeStrided<1>(p.keptShape, {p.keptSt});
  if (p.rows) {
    bool warpPerRow = outputs >= 4LL * a.smCount;
    int block = warpPerRow ? 256 : 1024;
    unsigned grid =
        warpPerRow ? gridFor(outputs * 32, block, a.smCount) : rowGrid(outputs);
    TCC_LAUNCH(reduceRowsKernel, grid, block, a.stream)
    (X.data, dt(X), Y.data, dt(Y), outputs, p.count, kept, fcount, mean,
     warpPerRow);
  } else if (columnSum(p, X)) {
    float *partial = p.chunks > 1 ? static_cast<float *>(a.scratch) : nullptr;
    int v = 16 / static_cast<int>(dtypeSize(X.dtype));
    dim3 grid(static_cast<unsigned>((outputs / v + 31) / 32),
              static_cast<unsigned>(p.chunks));
    auto go = [&](auto zero) {
      using T = decltype(zero);
      TCC_LAUNCH(columnSumKernel<T>, grid, dim3(32, 8), a.stream)
      (static_cast<const T *>(X.data), dt(X), Y.data, dt(Y), outputs, p.count,
       p.chunkLen, fcount, mean, partial);
    };
    if (X.dtype == DType::F32)
      go(0.0f);
    else
      go(static_cast<unsigned short>(0));
    if (partial) {
      checkLaunch(a.instr.kernel.c_str());
      TCC_LAUNCH(reduceChunksKernel, chunkGrid(outputs), dim3(32, 8), a.stream)
      (partial, p.chunks, Y.data, dt(Y), outputs, fcount, mean);
    }
  } else {
    Strided<1> reduced = makeStrided<1>(p.redShape, {p.redSt});
    float *partial = p.chunks > 1 ? static_cast<float *>(a.scratch) : nullptr;
    dim3 grid(static_cast<unsigned>(
                  std::min<long long>((outputs + 31) / 32, 1LL << 20)),
              static_cast<unsigned>(p.chunks));
    TCC_LAUNCH(reduceColsKernel, grid, dim3(32, 8), a.stream)
    (X.data, dt(X), Y.data, dt(Y), outputs, p.count, p.chunkLen, kept, reduced,
     fcount, mean, partial);
    if (partial) {
      checkLaunch(a.instr.kernel.c_str());
      TCC_LAUNCH(reduceChunksKernel, chunkGrid(outputs), dim3(32, 8), a.stream)
      (partial, p.chunks, Y.data, dt(Y), outputs, fcount, mean);
    }
  }
  checkLaunch(a.instr.kernel.c_str());
}

//===----------------------------------------------------------------------===//
// global_norm
//===----------------------------------------------------------------------===//

// Two kernels, reproducible: each block takes a fixed chunk of one input and
// writes its sum of squares (f64, blockSum's fixed order) to the scratch;
// one block then adds the partial sums in a fixed order and writes the
// square root. Inputs go kNormInputs to a launch, their pointers in the
// kernel's parameters (fixed arena addresses, so CUDA graphs replay them).
static constexpr int kNormInputs = 48;
static constexpr long long kNormChunk = kBlock * 16LL;

struct NormInputs {
  const void *x[kNormInputs];
  long long n[kNormInputs];
  long long
      firstBlock[kNormInputs + 1]; // the blocks of input i: [f[i], f[i+1])
  int t[kNormInputs];
  int count;
};

static long long normBlocks(int64_t numel) {
  return (numel + kNormChunk - 1) / kNormChunk;
}

__global__ void __launch_bounds__(kBlock)
    normPartialsKernel(NormInputs in, double *partial) {
  __shared__ double shared[32];
  long long b = blockIdx.x;
  int i = 0;
  while (i + 1 < in.count && in.firstBlock[i + 1] <= b)
    ++i;
  long long begin = (b - in.firstBlock[i]) * kNormChunk;
  long long end = begin + kNormChunk < in.n[i] ? begin + kNormChunk : in.n[i];
  double s = 0;
  for (long long e = begin + threadIdx.x; e < end; e += blockDim.x) {
    double v = ldf(in.x[i], in.t[i], e);
    s += v * v;
  }
  s = blockSum(s, shared);
  if (threadIdx.x == 0)
    partial[b] = s;
}

__global__ void __launch_bounds__(kBlock)
    normFinishKernel(const double *partial, long long count, void *y, int ty) {
  __shared__ double shared[32];
  double s = 0;
  for (long long k = threadIdx.x; k < count; k += blockDim.x)
    s += partial[k];
  s = blockSum(s, shared);
  if (threadIdx.x == 0)
    stf(y, ty, 0, static_cast<float>(sqrt(s)));
}

int64_t prepare_global_norm(const Instr &in, const std::vector<TensorInfo> &t) {
  long long blocks = 0;
  for (int32_t id : in.inputs)
    blocks += normBlocks(t[id].numElements());
  return std::max<long long>(blocks, 1) * int64_t(sizeof(double));
}

void launch_global_norm(const CudaArgs &a) {
  double *partial = static_cast<double *>(a.scratch);
  long long done = 0;
  for (size_t first = 0; first < a.in.size(); first += kNormInputs) {
    NormInputs in{};
    long long blocks = 0;
    for (size_t k = first; k < a.in.size() && k < first + kNormInputs; ++k) {
      int j = in.count++;
      in.x[j] = a.in[k].data;
      in.n[j] = a.in[k].numel;
      in.t[j] = dt(a.in[k]);
      in.firstBlock[j] = blocks;
      blocks += normBlocks(a.in[k].numel);
    }
    in.firstBlock[in.count] = blocks;
    if (blocks == 0)
      continue;
    TCC_LAUNCH(normPartialsKernel, static_cast<unsigned>(blocks), kBlock,
               a.stream)
    (in, partial + done);
    checkLaunch(a.instr.kernel.c_str());
    done += blocks;
  }
  TCC_LAUNCH(normFinishKernel, 1, kBlock, a.stream)
  (partial, done, a.out[0].data, dt(a.out[0]));
  checkLaunch(a.instr.kernel.c_str());
}

} // namespace tcc::rt::cuda
