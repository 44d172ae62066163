//===- KernelsElementwise.cpp - add/sub/mul/div, neg, relu, copy ----------===//
//
// Every loop reads element i of each input before writing element i of the
// output, so an output may alias a same-sized input (in-place).
//
//===----------------------------------------------------------------------===//
#include "runtime/cpu/KernelsInternal.h"

#include <cstring>

namespace tcc::rt::kernels {

namespace {
struct Add {
  static float apply(float a, float b) { return a + b; }
};
struct Sub {
  static float apply(float a, float b) { return a - b; }
};
struct Mul {
  static float apply(float a, float b) { return a * b; }
};
struct Div {
  static float apply(float a, float b) { return a / b; }
};
} // namespace

/// One innermost row; the unit-stride and scalar cases get their own loops
/// so GCC vectorizes them (same shape, row-vector bias, per-row scalar).
template <class Op>
static void binaryRow(float *c, const float *a, int64_t sa, const float *b,
                      int64_t sb, int64_t n) {
  if (sa == 1 && sb == 1) {
    for (int64_t i = 0; i < n; ++i)
      c[i] = Op::apply(a[i], b[i]);
  } else if (sa == 1 && sb == 0) {
    const float bv = b[0];
    for (int64_t i = 0; i < n; ++i)
      c[i] = Op::apply(a[i], bv);
  } else if (sa == 0 && sb == 1) {
    const float av = a[0];
    for (int64_t i = 0; i < n; ++i)
      c[i] = Op::apply(av, b[i]);
  } else {
    for (int64_t i = 0; i < n; ++i)
      c[i] = Op::apply(a[i * sa], b[i * sb]);
  }
}

template <class Op> static void runBinary(const KernelArgs &args) {
  const TensorView &A = args.in[0], &B = args.in[1], &C = args.out[0];
  const float *a = A.f32(), *b = B.f32();
  float *c = C.f32();
  int64_t n = C.numel;
  if (A.numel == n && B.numel == n) // same layout: one flat loop
    return binaryRow<Op>(c, a, 1, b, 1, n);
  if (B.numel == 1 && (A.numel == n || A.numel == 1))
    return binaryRow<Op>(c, a, A.numel == n ? 1 : 0, b, 0, n);
  if (A.numel == 1 && B.numel == n)
    return binaryRow<Op>(c, a, 0, b, 1, n);
  size_t rank = C.rank();
  LoopNest<3> nest(*C.shape, {contiguousStrides(*C.shape),
                              broadcastStrides(*A.shape, rank),
                              broadcastStrides(*B.shape, rank)});
  int64_t inner = nest.innerDim();
  auto st = nest.innerStrides();
  nest.forEachOuter(1, [&](const std::array<int64_t, 3> &off) {
    binaryRow<Op>(c + off[0], a + off[1], st[1], b + off[2], st[2], inner);
  });
}

void run_add(const KernelArgs &a) { runBinary<Add>(a); }
void run_sub(const KernelArgs &a) { runBinary<Sub>(a); }
void run_mul(const KernelArgs &a) { runBinary<Mul>(a); }
void run_div(const KernelArgs &a) { runBinary<Div>(a); }

void run_neg(const KernelArgs &a) {
  const float *x = a.in[0].f32();
  float *y = a.out[0].f32();
  for (int64_t i = 0, n = a.out[0].numel; i < n; ++i)
    y[i] = -x[i];
}

void run_relu(const KernelArgs &a) {
  const float *x = a.in[0].f32();
  float *y = a.out[0].f32();
  for (int64_t i = 0, n = a.out[0].numel; i < n; ++i)
    y[i] = x[i] > 0.0f ? x[i] : 0.0f;
}

void run_relu_grad(const KernelArgs &a) {
  const float *dy = a.in[0].f32(), *x = a.in[1].f32();
  float *dx = a.out[0].f32();
  for (int64_t i = 0, n = a.out[0].numel; i < n; ++i) {
    float d = dy[i]; // loaded unconditionally so the select vectorizes
    dx[i] = x[i] > 0.0f ? d : 0.0f;
  }
}

void run_copy(const KernelArgs &a) {
  const TensorView &x = a.in[0], &y = a.out[0];
  size_t bytes = static_cast<size_t>(y.numel) * dtypeSize(y.dtype);
  if (x.data != y.data && bytes)
    std::memmove(y.data, x.data, bytes);
}

} // namespace tcc::rt::kernels
