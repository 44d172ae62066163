//===- KernelCasesGemm.h - GEMM and GEMM epilogue cases -------------------===//
//
// matmul in every type, transpose and batch layout (cuBLASLt on a GPU: no
// emulator runs it), and matmul_epilogue's every epilogue, with the bias
// gradients of weight-gradient GEMMs.
//
//===----------------------------------------------------------------------===//
#ifndef TCC_TESTS_UNIT_KERNELCASESGEMM_H
#define TCC_TESTS_UNIT_KERNELCASESGEMM_H

#include "KernelCases.h"

#include "runtime/core/abi/GemmEpilogue.h"

namespace tcc::rt::test {

/// matmul in each type it takes (16-bit in and 16-bit or f32 out), over
/// every transpose, batches that fold into M, strided and repeated
/// (stride 0) batch operands, a loop of broadcast batches, and k = 0 (the
/// output is zeros). cuBLASLt's on a GPU, so the emulator skips these; its
/// f32 sums are in another order (TF32 is off unless a session asks).
inline void matmulCases(std::vector<KernelCase> &cases) {
  struct Shapes {
    std::vector<int64_t> a, b, c;
    int64_t ta, tb;
  };
  const std::vector<Shapes> shapes = {
      {{5, 7}, {7, 3}, {5, 3}, 0, 0},
      {{7, 5}, {7, 3}, {5, 3}, 1, 0},
      {{5, 7}, {3, 7}, {5, 3}, 0, 1},
      {{7, 5}, {3, 7}, {5, 3}, 1, 1},
      {{4, 5, 7}, {7, 3}, {4, 5, 3}, 0, 0},          // batch folds into M
      {{4, 5, 7}, {4, 7, 3}, {4, 5, 3}, 0, 0},       // strided batch
      {{5, 7}, {4, 7, 3}, {4, 5, 3}, 0, 0},          // A repeated (stride 0)
      {{4, 7, 5}, {7, 3}, {4, 5, 3}, 1, 0},          // transA: no folding
      {{2, 1, 5, 7}, {3, 7, 3}, {2, 3, 5, 3}, 0, 0}, // loop of batches
      {{5, 0}, {0, 3}, {5, 3}, 0, 0},                // k = 0: zeros
  };
  for (auto [ab, ct] :
       {std::pair{DType::F32, DType::F32}, std::pair{DType::BF16, DType::BF16},
        std::pair{DType::F16, DType::F16}, std::pair{DType::BF16, DType::F32},
        std::pair{DType::F16, DType::F32}}) {
    KernelCase c{std::string("matmul_") + dtypeName(ab) +
                 (ab != ct ? "_f32out" : "")};
    c.rtol = ct == DType::F32 ? 1e-4 : rtolFor(ct);
    c.atol = ct == DType::F32 ? 1e-4 : 2 * atolFor(ct);
    OneProgram &p = c.prog;
    for (const Shapes &k : shapes) {
      int32_t a = p.random(ab, k.a), b = p.random(ab, k.b);
      c.outs.push_back(p.out(ct, k.c));
      p.instr("matmul", {a, b}, {c.outs.back()}, {k.ta, k.tb});
    }
    cases.push_back(std::move(c));
  }
}

/// A weight-gradient GEMM with its bias gradient (epilogue `name`,
/// bgrad_lhs or bgrad_rhs) over `rows` rows of `ab` operands, f32 out:
/// [rows, 24]^T x [rows, 16] (bgrad_lhs: D [24, 16], sum [24]) or
/// [rows, 16]^T x [rows, 24] (bgrad_rhs: D [16, 24], sum [24]).
inline void weightGradGemm(OneProgram &p, DType ab, int64_t rows,
                           const char *name, std::vector<int32_t> &outs) {
  const GemmEpilogueInfo &e = *gemmEpilogueByName(name);
  bool lhs = e.bgrad == GemmBiasGrad::Lhs;
  int32_t a = p.random(ab, {rows, lhs ? 24 : 16}, -1, 1);
  int32_t b = p.random(ab, {rows, lhs ? 16 : 24}, -1, 1);
  std::vector<int32_t> out{
      p.out(DType::F32,
            lhs ? std::vector<int64_t>{24, 16} : std::vector<int64_t>{16, 24}),
      p.out(DType::F32, {24})};
  p.instr("matmul_epilogue", {a, b}, out, {1, 0, e.code});
  outs.insert(outs.end(), out.begin(), out.end());
}

/// matmul_epilogue: every epilogue (runtime/core/abi/GemmEpilogue.h) per dtype.
/// On a GPU one cuBLASLt call each (a pre-activation row of 20 elements is
/// not one cuBLASLt takes: that one runs the fallback); in the emulator the
/// GEMM is the CPU's and the fallback kernels run emulated. 16-bit results
/// differ from the CPU's by the fallback's extra rounding of the product.
inline void gemmEpilogueCases(std::vector<KernelCase> &cases) {
  for (DType t : {DType::F32, DType::BF16, DType::F16}) {
    KernelCase c{std::string("matmul_epilogue_") + dtypeName(t)};
    if (t != DType::F32)
      c.rtol = c.atol = 3 * rtolFor(t);
    else
      c.rtol = c.atol = 1e-4;
    OneProgram &p = c.prog;
    for (const GemmEpilogueInfo &e : kGemmEpilogues) {
      bool rows = e.rowsFlatten();
      for (int64_t n : {24, 20}) {
        if (n == 20 && !e.preactOut && e.act != GemmAct::DgeluTanh)
          continue;
        // Forward/dgelu: [2, 9, 13] x [n, 13]^T. Bias gradients: a weight
        // gradient [37, 16]^T x [37, n] (bgrad_rhs) or [37, n]^T x [37, 16]
        // (bgrad_lhs, whose D is [n, 16]).
        std::vector<int64_t> as = rows ? std::vector<int64_t>{2, 9, 13}
                                       : std::vector<int64_t>{37, 16};
        std::vector<int64_t> bs =
            rows ? std::vector<int64_t>{n, 13} : std::vector<int64_t>{37, n};
        if (e.bgrad == GemmBiasGrad::Lhs)
          std::swap(as, bs);
        std::vector<int64_t> ds = rows ? std::vector<int64_t>{2, 9, n}
                                  : e.bgrad == GemmBiasGrad::Lhs
                                      ? std::vector<int64_t>{n, 16}
                                      : std::vector<int64_t>{16, n};
        int32_t a = p.random(t, as, -1, 1), b = p.random(t, bs, -1, 1);
        std::vector<int32_t> in{a, b};
        if (e.bias)
          in.push_back(p.random(t, {n}));
        if (e.act == GemmAct::DgeluTanh)
          in.push_back(p.random(t, ds));
        std::vector<int32_t> out{p.out(t, ds)};
        if (e.preactOut)
          out.push_back(p.out(t, ds));
        else if (e.bgrad != GemmBiasGrad::None) // f32, as the compiler makes
          out.push_back(p.out(
              DType::F32, {e.bgrad == GemmBiasGrad::Lhs ? ds[0] : ds.back()}));
        p.instr("matmul_epilogue", in, out,
                {rows ? 0 : 1, rows ? 1 : 0, e.code});
        c.outs.insert(c.outs.end(), out.begin(), out.end());
      }
    }
    cases.push_back(std::move(c));
  }
  // Weight gradients in f32 from 16-bit operands (tcc-mixed-precision's):
  // D and the bias gradient f32. cuBLASLt's BGRAD epilogues or, where it
  // declines, a plain 16-bit-in f32-out GEMM and the sum of the operand. D
  // is the f32 accumulator on both sides, so the tolerance is f32's (no
  // 16-bit rounding of D).
  for (DType t : {DType::BF16, DType::F16}) {
    KernelCase c{std::string("matmul_epilogue_") + dtypeName(t) + "_f32out"};
    c.rtol = c.atol = 1e-4;
    OneProgram &p = c.prog;
    for (const char *name : {"bgrad_lhs", "bgrad_rhs"})
      weightGradGemm(p, t, 37, name, c.outs);
    cases.push_back(std::move(c));
  }
  // Bias gradients that the GEMM sums by a line of ones (onesLineFor: the
  // summed operand is large beside the other one and D): D [300, n] and its
  // 300 sums by bgrad_lhs, D [n, 300] and 300 by bgrad_rhs, over 200 rows,
  // with the other operand as stored and transposed (the line is a column
  // of op(B) or a row of op(A): a row or a column of what is stored) and n
  // 8 or 5 (16-byte vectors, or words, in the copies), f32 and 16-bit in
  // (f32 out, as tcc-mixed-precision makes).
  for (DType t : {DType::F32, DType::BF16}) {
    KernelCase c{std::string("matmul_epilogue_ones_line_") + dtypeName(t)};
    c.rtol = c.atol = 1e-4;
    OneProgram &p = c.prog;
    for (const char *name : {"bgrad_lhs", "bgrad_rhs"})
      for (auto [otherTransposed, n] :
           {std::pair<bool, int64_t>{false, 8}, {true, 8}, {false, 5}}) {
        const GemmEpilogueInfo &e = *gemmEpilogueByName(name);
        bool lhs = e.bgrad == GemmBiasGrad::Lhs;
        // lhs: op(A) = A^T [300, 200] summed, op(B) [200, n];
        // rhs: op(A) [n, 200], op(B) = B [200, 300] summed.
        bool ta = lhs || otherTransposed, tb = lhs && otherTransposed;
        std::vector<int64_t> narrow = otherTransposed == lhs
                                          ? std::vector<int64_t>{n, 200}
                                          : std::vector<int64_t>{200, n};
        std::vector<int64_t> wide{200, 300};
        int32_t a = p.random(t, lhs ? wide : narrow, -1, 1),
                b = p.random(t, lhs ? narrow : wide, -1, 1);
        std::vector<int32_t> out{
            p.out(DType::F32, lhs ? std::vector<int64_t>{300, n}
                                  : std::vector<int64_t>{n, 300}),
            p.out(DType::F32, {300})};
        p.instr("matmul_epilogue", {a, b}, out,
                {ta ? 1 : 0, tb ? 1 : 0, e.code});
        c.outs.insert(c.outs.end(), out.begin(), out.end());
      }
    cases.push_back(std::move(c));
  }
  // Bias gradients over 600 rows: the column sum (the fallback's, and the
  // GPU's DGELU-then-sum) splits them into row chunks whose partial sums
  // live in the instr's scratch.
  KernelCase c{"matmul_epilogue_long_sums"};
  c.rtol = c.atol = 1e-4;
  OneProgram &p = c.prog;
  for (const char *name : {"dgelu_tanh_bgrad", "bgrad_lhs", "bgrad_rhs"}) {
    const GemmEpilogueInfo &e = *gemmEpilogueByName(name);
    if (e.bgrad == GemmBiasGrad::Out) { // [600, 13] x [24, 13]^T
      int32_t a = p.random(DType::F32, {600, 13}, -1, 1);
      int32_t b = p.random(DType::F32, {24, 13}, -1, 1);
      int32_t pre = p.random(DType::F32, {600, 24});
      std::vector<int32_t> out{p.out(DType::F32, {600, 24}),
                               p.out(DType::F32, {24})};
      p.instr("matmul_epilogue", {a, b, pre}, out, {0, 1, e.code});
      c.outs.insert(c.outs.end(), out.begin(), out.end());
      continue;
    }
    weightGradGemm(p, DType::F32, 600, name, c.outs);
  }
  cases.push_back(std::move(c));
}

} // namespace tcc::rt::test

#endif // TCC_TESTS_UNIT_KERNELCASESGEMM_H
