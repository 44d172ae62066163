//===- CudaKernelsOnesLine.cu - A line of ones for a GEMM's sums ----------===//
//
// The two copies around a weight gradient whose bias gradient the GEMM
// itself computes (CudaGemmEpilogue.cpp, OnesLine): the operand that is not
// summed gains a line of ones (and zeros up to a multiple of 8 elements,
// so rows stay 16-byte aligned), the GEMM writes the sums as one more row
// or column of its product, and the product is split into D and that line.
// Both move whole 16-byte vectors where the rows allow (the widened
// operand of GPT-2's LM head is 100 MB at batch 64), else words.
//
//===----------------------------------------------------------------------===//
#include "runtime/cuda/CudaKernelsCommon.cuh"

namespace tcc::rt::cuda {

static constexpr int kBlock = 256;

/// y [yRows, yCols] = x [rows, cols] in its top-left corner, `one` on the
/// line just past it (column `cols` when yCols > cols, else row `rows`),
/// zeros elsewhere. V words a thread: 16-byte vectors when V > 1 (rows of
/// whole vectors, both bases 16-byte aligned).
template <class T, int V>
__global__ void widenWithOnesKernel(const T *x, T *y, long long rows,
                                    long long cols, long long yRows,
                                    long long yCols, T one) {
  const long long chunks = yCols / V, n = yRows * chunks;
  const bool byColumn = yCols > cols;
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
       i += (long long)gridDim.x * blockDim.x) {
    long long r = i / chunks, c = (i - r * chunks) * V;
    if constexpr (V > 1) {
      if (r < rows && c + V <= cols) {
        *reinterpret_cast<uint4 *>(y + r * yCols + c) =
            *reinterpret_cast<const uint4 *>(x + r * cols + c);
        continue;
      }
    }
    for (int e = 0; e < V; ++e) {
      long long cc = c + e;
      bool line = byColumn ? cc == cols : r == rows;
      y[r * yCols + cc] = r < rows && cc < cols ? x[r * cols + cc]
                          : line                ? one
                                                : T(0);
    }
  }
}

/// y [rows, cols] = the top-left corner of x [xRows, xCols], and line = x's
/// column `cols` (xCols > cols, `rows` words) or row `rows` (`cols` words).
template <class T, int V>
__global__ void splitOffLineKernel(const T *x, T *y, T *line, long long rows,
                                   long long cols, long long xCols,
                                   bool byColumn) {
  const long long chunks = cols / V, n = rows * chunks;
  const long long lineLen = byColumn ? rows : cols;
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
       i < n + lineLen; i += (long long)gridDim.x * blockDim.x) {
    if (i >= n) {
      long long j = i - n;
      line[j] = byColumn ? x[j * xCols + cols] : x[rows * xCols + j];
      continue;
    }
    long long r = i / chunks, c = (i - r * chunks) * V;
    if constexpr (V > 1)
      *reinterpret_cast<uint4 *>(y + r * cols + c) =
          *reinterpret_cast<const uint4 *>(x + r * xCols + c);
    else
      y[r * cols + c] = x[r * xCols + c];
  }
}

/// The bits of 1 in a 16- or 32-bit float type.
static unsigned oneBits(DType t) {
  switch (t) {
  case DType::F32:
    return 0x3F800000u;
  case DType::BF16:
    return 0x3F80u;
  case DType::F16:
    return 0x3C00u;
  default:
    throw Error(std::string("a line of ones takes f32, bf16 or f16, not ") +
                dtypeName(t));
  }
}

/// Calls f(T, V) with the word type of `t` and V = 16 / sizeof(T) when
/// every row of `cols` and `otherCols` words starts 16-byte aligned, else 1.
template <class F>
static void byWordAndVector(DType t, const void *p, const void *q,
                            long long cols, long long otherCols, F &&f) {
  byElementSize(t, [&](auto w) {
    using T = typename decltype(w)::T;
    constexpr int kV = 16 / sizeof(T);
    if (aligned16(p) && aligned16(q) && cols % kV == 0 && otherCols % kV == 0)
      f(T(), std::integral_constant<int, kV>());
    else
      f(T(), std::integral_constant<int, 1>());
  });
}

/// That [wRows, wCols] is [rows, cols] with rows or columns added (not
/// both, not none): the line's place is then unambiguous.
static void checkOneLine(const char *what, long long rows, long long cols,
                         long long wRows, long long wCols) {
  if (wRows < rows || wCols < cols || (wRows > rows) == (wCols > cols))
    throw Error(std::string(what) + ": [" + std::to_string(wRows) + ", " +
                std::to_string(wCols) +
                "] does not add rows or columns (one of them) to [" +
                std::to_string(rows) + ", " + std::to_string(cols) + "]");
}

void widenWithOnes(const void *x, void *y, DType t, long long rows,
                   long long cols, long long yRows, long long yCols,
                   cudaStream_t stream, int smCount) {
  checkOneLine("widenWithOnes", rows, cols, yRows, yCols);
  (void)stream; // unused where the kernels are emulated
  unsigned one = oneBits(t);
  byWordAndVector(t, x, y, cols, yCols, [&](auto word, auto v) {
    using T = decltype(word);
    constexpr int kV = decltype(v)::value;
    auto *kernel = &widenWithOnesKernel<T, kV>;
    TCC_LAUNCH(kernel, gridFor(yRows * (yCols / kV), kBlock, smCount), kBlock,
               stream)
    (static_cast<const T *>(x), static_cast<T *>(y), rows, cols, yRows, yCols,
     static_cast<T>(one));
  });
  checkLaunch("widenWithOnes");
}

void splitOffLine(const void *x, void *y, void *line, DType t, long long rows,
                  long long cols, long long xRows, long long xCols,
                  cudaStream_t stream, int smCount) {
  checkOneLine("splitOffLine", rows, cols, xRows, xCols);
  (void)stream; // unused where the kernels are emulated
  bool byColumn = xCols > cols;
  byWordAndVector(t, x, y, cols, xCols, [&](auto word, auto v) {
    using T = decltype(word);
    constexpr int kV = decltype(v)::value;
    long long n = rows * (cols / kV) + (byColumn ? rows : cols);
    auto *kernel = &splitOffLineKernel<T, kV>;
    TCC_LAUNCH(kernel, gridFor(n, kBlock, smCount), kBlock, stream)
    (static_cast<const T *>(x), static_cast<T *>(y), static_cast<T *>(line),
     rows, cols, xCols, byColumn);
  });
  checkLaunch("splitOffLine");
}

} // namespace tcc::rt::cuda
