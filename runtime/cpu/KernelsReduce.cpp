//===- KernelsReduce.cpp - reduce_sum/mean/prod, cumsum -------------------===//
#include "runtime/core/ThreadPool.h"
#include "runtime/core/prelude/RowReduce.h"
#include "runtime/cpu/KernelsInternal.h"

#include <algorithm>
#include <cmath>

namespace tcc::rt::kernels {

ColumnSums::ColumnSums(int64_t rows, int64_t cols, int count)
    : rows_(rows), cols_(cols), sliceRows_(columnSumSliceRows(rows)),
      slices_(columnSumSlices(rows, sliceRows_)), count_(count),
      parts_(static_cast<size_t>(slices_ * count * cols), 0.0) {}

void ColumnSums::forEachSlice(
    int64_t work, const std::function<void(int64_t, int64_t)> &rows) {
  auto slice = [&](int64_t s) {
    rows(s * sliceRows_, std::min(rows_, (s + 1) * sliceRows_));
  };
  ThreadPool &pool = ThreadPool::global();
  constexpr int64_t kMinParallelWork = 1 << 16;
  if (slices_ > 1 && pool.size() > 1 && work >= kMinParallelWork)
    pool.parallelFor(slices_, slice);
  else
    for (int64_t s = 0; s < slices_; ++s)
      slice(s);
}

void ColumnSums::finish(int k, float *out) const {
  for (int64_t j = 0; j < cols_; ++j) {
    double t = 0;
    for (int64_t s = 0; s < slices_; ++s)
      t += parts_[(s * count_ + k) * cols_ + j];
    out[j] = static_cast<float>(t);
  }
}

void sumColumns(const float *x, int64_t rows, int64_t cols, int64_t ld,
                float *out) {
  ColumnSums sums(rows, cols);
  sums.forEachSlice(rows * cols, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r)
      sums.addRow(r, x + r * ld, 0, cols);
  });
  sums.finish(0, out);
}

/// Whether `axes` are the leading axes of `xs`, all but the last: a
/// column sum of the contiguous [rows, cols] matrix.
static bool sumsLeadingAxes(const abi::AttrList &axes,
                            const std::vector<int64_t> &xs) {
  if (xs.size() < 2 || axes.size() + 1 != xs.size())
    return false;
  for (size_t i = 0; i < axes.size(); ++i)
    if (axes[i] != static_cast<int64_t>(i))
      return false;
  return true;
}

static void reduce(const KernelArgs &a, bool mean) {
  const TensorView &X = a.in[0], &Y = a.out[0];
  const float *x = X.f32();
  float *y = Y.f32();
  // reduce_sum and reduce_mean share AxesAttrs.
  const abi::AttrList axes = abi::attrsOf<abi::AxesAttrs>(a.instr).axes;
  const auto &xs = *X.shape;
  // A bias gradient's sum over every leading axis: in the order a fused
  // region's column sum adds (ColumnSums), so both give the same bits.
  if (!mean && sumsLeadingAxes(axes, xs) && xs.back() > 0) {
    sumColumns(x, X.numel / xs.back(), xs.back(), xs.back(), y);
    return;
  }
  std::fill(y, y + Y.numel, 0.0f);

  // y's stride along each axis of x: 0 on reduced axes.
  std::vector<int64_t> yst(xs.size(), 0);
  int64_t stride = 1, count = 1;
  for (size_t d = xs.size(); d-- > 0;) {
    if (std::binary_search(axes.begin(), axes.end(), int64_t(d))) {
      count *= xs[d];
    } else {
      yst[d] = stride;
      stride *= xs[d];
    }
  }
  if (X.numel > 0) {
    LoopNest<2> nest(xs, {contiguousStrides(xs), yst});
    int64_t n = nest.innerDim();
    bool innerReduced = nest.innerStrides()[1] == 0;
    nest.forEachOuter(1, [&](const std::array<int64_t, 2> &off) {
      const float *src = x + off[0];
      float *dst = y + off[1];
      if (innerReduced) {
        dst[0] += tcc_rowsum(src, n);
      } else {
        for (int64_t i = 0; i < n; ++i)
          dst[i] += src[i];
      }
    });
  }
  if (mean) {
    // Like PyTorch, the mean of nothing is NaN (0/0).
    float c = static_cast<float>(count);
    for (int64_t i = 0; i < Y.numel; ++i)
      y[i] /= c;
  }
}

void run_reduce_sum(const KernelArgs &a) { reduce(a, false); }
void run_reduce_mean(const KernelArgs &a) { reduce(a, true); }

//===----------------------------------------------------------------------===//
// global_norm
//===----------------------------------------------------------------------===//

// Every input is cut into fixed pieces whose sums of squares are taken in
// f64 (on the pool when there are several), then added in input and piece
// order: the same bits whatever the thread count, and f64 keeps the sum of
// millions of squares exact to far below f32's last bit.
double sumOfSquares(const std::vector<TensorView> &in) {
  constexpr int64_t kPiece = 1 << 15;
  struct Piece {
    const float *x;
    int64_t n;
  };
  std::vector<Piece> pieces;
  for (const TensorView &X : in)
    for (int64_t o = 0; o < X.numel; o += kPiece)
      pieces.push_back({X.f32() + o, std::min(kPiece, X.numel - o)});
  std::vector<double> sums(pieces.size(), 0.0);
  auto piece = [&](int64_t i) {
    double s = 0;
    const float *x = pieces[i].x;
    for (int64_t j = 0; j < pieces[i].n; ++j)
      s += static_cast<double>(x[j]) * static_cast<double>(x[j]);
    sums[i] = s;
  };
  ThreadPool &pool = ThreadPool::global();
  if (pieces.size() > 1 && pool.size() > 1)
    pool.parallelFor(static_cast<int64_t>(pieces.size()), piece);
  else
    for (size_t i = 0; i < pieces.size(); ++i)
      piece(static_cast<int64_t>(i));
  double total = 0;
  for (double s : sums)
    total += s;
  return total;
}

void run_global_norm(const KernelArgs &a) {
  a.out[0].f32()[0] = static_cast<float>(std::sqrt(sumOfSquares(a.in)));
}

//===----------------------------------------------------------------------===//
// reduce_prod, reduce_prod_grad
//===----------------------------------------------------------------------===//

namespace {
/// The groups of a reduction of a contiguous tensor of shape `xs` over
/// `axes`: the offset of each group's first element (in the order of the
/// result's elements) and of each element within a group (row-major over
/// the reduced axes, the order the products are taken in on every backend).
struct ReduceGroups {
  std::vector<int64_t> base, member;
  ReduceGroups(const std::vector<int64_t> &xs, const abi::AttrList &axes) {
    base = {0};
    member = {0};
    std::vector<int64_t> st = contiguousStrides(xs);
    for (size_t d = 0; d < xs.size(); ++d) {
      bool reduced = std::binary_search(axes.begin(), axes.end(), int64_t(d));
      std::vector<int64_t> &v = reduced ? member : base;
      std::vector<int64_t> next;
      next.reserve(v.size() * xs[d]);
      for (int64_t o : v)
        for (int64_t i = 0; i < xs[d]; ++i)
          next.push_back(o + i * st[d]);
      v = std::move(next);
    }
  }
};
} // namespace

void run_reduce_prod(const KernelArgs &a) {
  const TensorView &X = a.in[0], &Y = a.out[0];
  ReduceGroups g(*X.shape, abi::attrsOf<abi::AxesAttrs>(a.instr).axes);
  const float *x = X.f32();
  float *y = Y.f32();
  for (size_t o = 0; o < g.base.size(); ++o) {
    float p = 1.0f; // the product of nothing
    for (int64_t m : g.member)
      p *= x[g.base[o] + m];
    y[o] = p;
  }
}

// dx[k] = dy * (x[0] ... x[k-1]) * (x[k+1] ... x[n-1]): the prefix
// products go to dx on the way forward, the suffix products multiply in on
// the way back. No division, so a zero in x gives what the product of the
// others is.
void run_reduce_prod_grad(const KernelArgs &a) {
  const TensorView &DY = a.in[0], &X = a.in[1], &DX = a.out[0];
  ReduceGroups g(*X.shape, abi::attrsOf<abi::AxesAttrs>(a.instr).axes);
  const float *dy = DY.f32(), *x = X.f32();
  float *dx = DX.f32();
  size_t n = g.member.size();
  for (size_t o = 0; o < g.base.size(); ++o) {
    const float *xg = x + g.base[o];
    float *dg = dx + g.base[o];
    float p = 1.0f;
    for (size_t k = 0; k < n; ++k) {
      dg[g.member[k]] = p;
      p *= xg[g.member[k]];
    }
    float s = 1.0f;
    for (size_t k = n; k-- > 0;) {
      dg[g.member[k]] = dy[o] * (dg[g.member[k]] * s);
      s *= xg[g.member[k]];
    }
  }
}

//===----------------------------------------------------------------------===//
// cumsum
//===----------------------------------------------------------------------===//

void run_cumsum(const KernelArgs &a) {
  const TensorView &X = a.in[0], &Y = a.out[0];
  abi::CumSumAttrs at = abi::attrsOf<abi::CumSumAttrs>(a.instr);
  const auto &xs = *X.shape;
  int64_t n = xs[at.axis], inner = 1;
  for (size_t d = at.axis + 1; d < xs.size(); ++d)
    inner *= xs[d];
  if (X.numel == 0)
    return;
  int64_t outer = X.numel / (n * inner);
  const float *x = X.f32();
  float *y = Y.f32();
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      int64_t base = o * n * inner + i;
      float acc = 0.0f;
      for (int64_t j = 0; j < n; ++j) {
        int64_t off = base + (at.reverse ? n - 1 - j : j) * inner;
        float v = x[off];
        if (at.exclusive) {
          y[off] = acc;
          acc += v;
        } else {
          acc += v;
          y[off] = acc;
        }
      }
    }
}

} // namespace tcc::rt::kernels
