//===- CudaGemmEpilogue.cpp - matmul_epilogue's checks and fallback -------===//
//
// The `matmul_epilogue` kernel on the GPU is one cuBLASLt call with the
// epilogue (launch_matmul_epilogue, CudaGemm.cpp). When cuBLASLt has no
// algorithm for an epilogue (a pre-activation whose row length is not a
// multiple of 8, a bias gradient type it does not take, ...), it runs a
// plain GEMM into D and then this fallback: the table's own kernels for
// what the epilogue adds (add, copy, relu, gelu, gelu_grad, reduce_sum), so
// the result is that of the unfused ops. No cuBLASLt here: the emulator
// tests (tests/unit/CudaKernelEmuTest.cpp) run this file on CPU threads.
//
//===----------------------------------------------------------------------===//
#include "runtime/core/abi/GemmEpilogue.h"
#include "runtime/cuda/CudaKernels.h"

#include <algorithm>
#include <cstdlib>

namespace tcc::rt::cuda {

using K = abi::KernelId;

namespace {
/// What a bias gradient sums: A (operand 0) or B (1) over its leading axis
/// (the [K, M] / [K, N] operand of a weight gradient), or D (2) over every
/// leading axis.
struct BiasGradSum {
  int operand;
  std::vector<int64_t> axes;
};
BiasGradSum biasGradSum(const GemmEpilogueInfo &e, size_t rankD) {
  if (e.bgrad != GemmBiasGrad::Out)
    return {e.bgrad == GemmBiasGrad::Lhs ? 0 : 1, {0}};
  BiasGradSum s{2, {}};
  for (size_t i = 0; i + 1 < rankD; ++i)
    s.axes.push_back(static_cast<int64_t>(i));
  return s;
}
} // namespace

int64_t prepare_matmul_epilogue(const Instr &in,
                                const std::vector<TensorInfo> &t) {
  const abi::MatmulEpilogueAttrs at = abi::attrs<K::MatmulEpilogue>(in);
  const GemmEpilogueInfo &e = *gemmEpilogueByCode(at.epilogue);
  DType ab = t[in.inputs[0]].dtype, d = t[in.outputs[0]].dtype;
  auto name = [&](int32_t id) { return "'" + t[id].name + "'"; };
  // cuBLASLt takes one type for A, B, D, the bias and the pre-activation,
  // except that a plain GEMM (the bias-gradient forms, whose fallback is a
  // plain GEMM and a sum of an operand) may write an f32 D from 16-bit A
  // and B (checkInstr's checkGemmDTypes says the same).
  for (int32_t id : in.inputs)
    if (t[id].dtype != ab)
      throw Error("the CUDA matmul_epilogue needs one element type for its "
                  "inputs; " +
                  name(id) + " is " + dtypeName(t[id].dtype) + ", " +
                  name(in.inputs[0]) + " " + dtypeName(ab));
  bool plain = !e.rowsFlatten();
  if (!gemmWritesDType(ab, d, &e))
    throw Error("the CUDA matmul_epilogue writes D in its inputs' type " +
                std::string(dtypeName(ab)) +
                (plain && isHalfDType(ab) ? " or f32" : "") + ", not " +
                dtypeName(d));
  if (e.hasAux()) {
    DType aux = t[in.outputs[1]].dtype;
    bool ok = e.preactOut ? aux == d : aux == ab || aux == DType::F32;
    if (!ok)
      throw Error("the CUDA matmul_epilogue's second output " +
                  name(in.outputs[1]) + " is " + dtypeName(aux) + "; " +
                  (e.preactOut ? "the pre-activation has D's type"
                               : "a bias gradient is A's type or f32"));
  }
  // The fallback's broadcast add indexes with at most kCudaMaxRank dims.
  if (t[in.outputs[0]].shape.size() > static_cast<size_t>(kCudaMaxRank))
    throw Error("no CUDA kernel for rank " +
                std::to_string(t[in.outputs[0]].shape.size()) +
                " GEMM results; the CUDA kernels take rank <= " +
                std::to_string(kCudaMaxRank));
  // The bias gradient as a column sum (the fallback, or cuBLASLt's DGELU
  // without BGRAD) keeps its row chunks' partial sums in the scratch; by a
  // line of ones, the widened operand and the product are there.
  if (e.bgrad == GemmBiasGrad::None)
    return 0;
  BiasGradSum s = biasGradSum(e, t[in.outputs[0]].shape.size());
  int32_t summed = s.operand == 2 ? in.outputs[0] : in.inputs[s.operand];
  Instr sum{abi::name(K::ReduceSum), {summed}, {in.outputs[1]}, {}, {}};
  abi::setAttrs(sum, abi::AxesAttrs{s.axes});
  int64_t bytes = prepare_reduce(sum, t);
  if (e.bgrad == GemmBiasGrad::Out)
    return bytes;
  const TensorInfo &A = t[in.inputs[0]], &B = t[in.inputs[1]],
                   &D = t[in.outputs[0]];
  if (auto line = onesLineFor(e.code, at.transA, at.transB, A.shape, B.shape,
                              D.shape, A.dtype, D.dtype, t[in.outputs[1]].dtype,
                              biasGradWayOfEnvironment()))
    bytes = std::max(bytes, line->widenedBytes + line->productBytes);
  return bytes;
}

BiasGradWay biasGradWay(const char *value) {
  if (!value || !*value || std::string(value) == "line")
    return BiasGradWay::Line;
  if (std::string(value) == "split")
    return BiasGradWay::Split;
  if (std::string(value) == "fused")
    return BiasGradWay::Fused;
  throw Error(std::string("TCC_CUDA_BGRAD is '") + value +
              "'; it takes 'line', 'split' or 'fused'");
}

BiasGradWay biasGradWayOfEnvironment() {
  static const BiasGradWay way = biasGradWay(std::getenv("TCC_CUDA_BGRAD"));
  return way;
}

std::optional<OnesLine>
onesLineFor(int64_t epilogue, bool ta, bool tb, const std::vector<int64_t> &a,
            const std::vector<int64_t> &b, const std::vector<int64_t> &d,
            DType ab, DType dType, DType sumType, BiasGradWay way) {
  const GemmEpilogueInfo *e = gemmEpilogueByCode(epilogue);
  if (way != BiasGradWay::Line || !e ||
      (e->bgrad != GemmBiasGrad::Lhs && e->bgrad != GemmBiasGrad::Rhs) ||
      a.size() != 2 || b.size() != 2 || d.size() != 2 || dType != sumType ||
      (dType != DType::F32 && !isHalfDType(dType)))
    return std::nullopt;
  OnesLine l;
  l.lhs = e->bgrad == GemmBiasGrad::Lhs;
  l.m = d[0];
  l.n = d[1];
  l.k = ta ? a[0] : a[1];
  l.ab = ab;
  l.d = dType;
  if (l.m < 1 || l.n < 1 || l.k < 1)
    return std::nullopt;
  // The widened side: op(B) [k, n] for bgrad_lhs, op(A) [m, k] for
  // bgrad_rhs, to n + extra or m + extra (a multiple of 8).
  int64_t side = l.lhs ? l.n : l.m;
  l.extra = (side + 1 + 7) / 8 * 8 - side;
  bool trans = l.lhs ? tb : ta;
  // Stored: op(B) = B [k, n], or B [n, k] transposed; op(A) = A [m, k], or
  // A [k, m] transposed. The dimension that is `side` grows.
  bool sideIsRows = l.lhs ? trans : !trans;
  l.wRows = sideIsRows ? side + l.extra : l.k;
  l.wCols = sideIsRows ? l.k : side + l.extra;
  int64_t abBytes = static_cast<int64_t>(dtypeSize(ab)),
          dBytes = static_cast<int64_t>(dtypeSize(dType));
  l.widenedBytes = (l.wRows * l.wCols * abBytes + 255) / 256 * 256;
  l.productBytes =
      (l.lhs ? l.m * (l.n + l.extra) : (l.m + l.extra) * l.n) * dBytes;
  // The column sum reads the summed operand once. The line reads the other
  // operand and writes it widened, then reads the product and writes D:
  // take it when that is under half the bytes.
  int64_t summed = (l.lhs ? l.m : l.n) * l.k * abBytes;
  int64_t other = side * l.k * abBytes;
  int64_t moved = 2 * other + l.widenedBytes + 2 * l.productBytes;
  if (summed <= 2 * moved)
    return std::nullopt;
  return l;
}

void biasGradByOnesLine(const CudaArgs &a, const OnesLine &l,
                        const PlainGemm &gemm) {
  const TensorView &A = a.in[0], &B = a.in[1], &D = a.out[0], &sums = a.out[1];
  const abi::MatmulEpilogueAttrs at = abi::attrs<K::MatmulEpilogue>(a.instr);
  bool ta = at.transA, tb = at.transB;
  const TensorView &other = l.lhs ? B : A;
  char *scratch = static_cast<char *>(a.scratch);
  std::vector<int64_t> wShape{l.wRows, l.wCols};
  std::vector<int64_t> pShape{l.lhs ? l.m : l.m + l.extra,
                              l.lhs ? l.n + l.extra : l.n};
  TensorView W{scratch, l.ab, &wShape, l.wRows * l.wCols};
  TensorView P{scratch + l.widenedBytes, l.d, &pShape, pShape[0] * pShape[1]};
  widenWithOnes(other.data, W.data, l.ab, other.dim(0), other.dim(1), l.wRows,
                l.wCols, a.stream, a.smCount);
  if (l.lhs)
    gemm(A, W, P, ta, tb);
  else
    gemm(W, B, P, ta, tb);
  splitOffLine(P.data, D.data, sums.data, l.d, l.m, l.n, pShape[0], pShape[1],
               a.stream, a.smCount);
}

bool runByOnesLine(const CudaArgs &a, const PlainGemm &gemm) {
  if (a.in.size() < 2 || a.out.size() != 2)
    return false;
  const abi::MatmulEpilogueAttrs at = abi::attrs<K::MatmulEpilogue>(a.instr);
  auto line =
      onesLineFor(at.epilogue, at.transA, at.transB, *a.in[0].shape,
                  *a.in[1].shape, *a.out[0].shape, a.in[0].dtype,
                  a.out[0].dtype, a.out[1].dtype, biasGradWayOfEnvironment());
  if (line)
    biasGradByOnesLine(a, *line, gemm);
  return line.has_value();
}

/// Runs the table's kernel `id` with attributes `attrs` on views of `a`'s
/// operands.
template <class Attrs = abi::NoAttrs>
static void run(void (*launch)(const CudaArgs &), const CudaArgs &a, K id,
                std::vector<TensorView> in, std::vector<TensorView> out,
                const Attrs &attrs = {}) {
  Instr instr;
  instr.kernel = abi::name(id);
  abi::setAttrs(instr, attrs);
  CudaArgs args{instr, std::move(in), std::move(out)};
  args.stream = a.stream;
  args.err = a.err;
  args.scratch = a.scratch;
  args.smCount = a.smCount;
  launch(args);
}

void epilogueFallback(const CudaArgs &a) {
  const GemmEpilogueInfo &e =
      *gemmEpilogueByCode(abi::attrs<K::MatmulEpilogue>(a.instr).epilogue);
  const TensorView &D = a.out[0];
  if (e.bias) // D += bias, broadcast over the rows
    run(launch_binary, a, K::Add, {D, a.in[2]}, {D});
  if (e.preactOut)
    run(launch_copy, a, K::Copy, {D}, {a.out[1]});
  if (e.act == GemmAct::Relu)
    run(launch_unary, a, K::Relu, {D}, {D});
  else if (e.act == GemmAct::GeluTanh)
    run(launch_unary, a, K::Gelu, {D}, {D}, abi::GeluAttrs{true});
  else if (e.act == GemmAct::DgeluTanh)
    run(launch_unary_grad, a, K::GeluGrad, {D, a.in[2]}, {D},
        abi::GeluAttrs{true});
  epilogueBiasGrad(a);
}

void epilogueBiasGrad(const CudaArgs &a) {
  const GemmEpilogueInfo &e =
      *gemmEpilogueByCode(abi::attrs<K::MatmulEpilogue>(a.instr).epilogue);
  if (e.bgrad == GemmBiasGrad::None)
    return;
  BiasGradSum s = biasGradSum(e, a.out[0].rank());
  const TensorView &summed = s.operand == 2 ? a.out[0] : a.in[s.operand];
  run(launch_reduce, a, K::ReduceSum, {summed}, {a.out[1]},
      abi::AxesAttrs{s.axes});
}

} // namespace tcc::rt::cuda
