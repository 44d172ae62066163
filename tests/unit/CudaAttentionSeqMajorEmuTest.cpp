//===- CudaAttentionSeqMajorEmuTest.cpp - sequence-major, emulated --------===//
//
// Sequence-major operands ([B..., T, H, D]) through the emulated CUDA
// chunk loops (CudaAttentionEmuGemm.cpp), in chunks that split an outer
// index's heads: bit for bit the packed kernels on the permuted data; and
// the fused-QKV layout, bit for bit the sequence-major one.
//
//===----------------------------------------------------------------------===//
#include "CudaAttentionEmu.h"
#include "CudaTestUtil.h"
#include "KernelTestUtil.h"

#include "runtime/cuda/CudaAttention.h"

#include <cstdio>
#include <cstdlib>
#include <limits>
#include <memory>

using namespace tcc::rt;
using namespace tcc::rt::test;
using cuda::AttentionPlan;
using cuda::AttentionRows;

namespace {

//===----------------------------------------------------------------------===//
// Sequence-major operands
//===----------------------------------------------------------------------===//

struct SeqCase {
  std::string name;
  DType t;
  std::vector<int64_t> outer; // B... (may be empty)
  int64_t heads, tq, tk, d, dv;
  std::vector<int64_t> mask; // empty: none
  bool causal;
};

/// The case's attention -> attention_grad, sequence-major ([B..., T, H, C]
/// operands, random) or packed ([B..., H, T, C], those values permuted),
/// with the same lse, mask and attributes.
struct SeqProgram {
  OneProgram p;
  int32_t out, lse, dq, dk, dv;
  // [rows, cols] per entry of out, dq, dk, dv.
  std::vector<std::pair<int64_t, int64_t>> sizes;
};

std::unique_ptr<SeqProgram> buildSeq(const SeqCase &c,
                                     const SeqProgram *permuteFrom) {
  auto sp = std::make_unique<SeqProgram>();
  OneProgram &p = sp->p;
  int64_t o = 1;
  for (int64_t x : c.outer)
    o *= x;
  auto shape = [&](int64_t rows, int64_t cols) {
    return permuteFrom ? cat(c.outer, {c.heads, rows, cols})
                       : cat(c.outer, {rows, c.heads, cols});
  };
  // Operands: random when sequence-major; else the sequence-major ones
  // (q, k, v, dout: tensors 0-3 of `permuteFrom`) permuted.
  auto operand = [&](int index, int64_t rows, int64_t cols, float lo,
                     float hi) {
    if (!permuteFrom)
      return p.random(c.t, shape(rows, cols), lo, hi);
    std::vector<uint8_t> bytes =
        test::swapMiddleAxes(permuteFrom->p.initial()[index], o, rows, c.heads,
                             cols * (int64_t)dtypeSize(c.t));
    return p.tensor(c.t, shape(rows, cols), bytes);
  };
  int32_t q = operand(0, c.tq, c.d, -1.5f, 1.5f);
  int32_t k = operand(1, c.tk, c.d, -1.5f, 1.5f);
  int32_t v = operand(2, c.tk, c.dv, -2, 2);
  int32_t dout = operand(3, c.tq, c.dv, -2, 2);
  int32_t mask = -1;
  if (!c.mask.empty()) {
    int64_t n = 1;
    for (int64_t x : c.mask)
      n *= x;
    std::mt19937 rng(11);
    std::uniform_real_distribution<float> u(-2, 2);
    std::vector<float> m(n);
    for (int64_t i = 0; i < n; ++i)
      m[i] = c.mask.back() > 1 && i % 5 == 2 ? -INFINITY : u(rng);
    mask = p.floats(DType::F32, c.mask, m);
  }
  sp->out = p.out(c.t, shape(c.tq, c.dv));
  sp->lse = p.out(DType::F32, cat(c.outer, {c.heads, c.tq}));
  sp->dq = p.out(c.t, shape(c.tq, c.d));
  sp->dk = p.out(c.t, shape(c.tk, c.d));
  sp->dv = p.out(c.t, shape(c.tk, c.dv));
  sp->sizes = {{c.tq, c.dv}, {c.tq, c.d}, {c.tk, c.d}, {c.tk, c.dv}};
  std::vector<int32_t> fin = {q, k, v};
  std::vector<int32_t> gin = {q, k, v, sp->out, sp->lse, dout};
  if (mask >= 0) {
    fin.push_back(mask);
    gin.push_back(mask);
  }
  std::vector<int64_t> attrs = {c.causal, permuteFrom ? 0 : 1};
  double scale = 1.0 / std::sqrt((double)std::max<int64_t>(c.d, 1));
  p.instr("attention", fin, {sp->out, sp->lse}, attrs, {scale});
  p.instr("attention_grad", gin, {sp->dq, sp->dk, sp->dv}, attrs, {scale});
  return sp;
}

std::vector<SeqCase> seqCases() {
  std::vector<SeqCase> cs;
  for (DType t : {DType::F32, DType::BF16}) {
    std::string n = dtypeName(t);
    // nn.MultiheadAttention's [T, N * H, D]: one outer index.
    cs.push_back({"rank3_mask_" + n, t, {}, 6, 5, 7, 8, 6, {6, 5, 7}, false});
    cs.push_back({"rank3_causal_" + n, t, {}, 5, 7, 7, 4, 4, {}, true});
    // [B, T, H, D]: 8 entries, runs of 4.
    cs.push_back(
        {"rank4_mask_" + n, t, {2}, 4, 6, 9, 8, 5, {2, 4, 6, 9}, false});
    cs.push_back(
        {"rank4_mask_causal_" + n, t, {2}, 4, 6, 9, 8, 5, {2, 4, 6, 9}, true});
    cs.push_back({"rank4_causal_" + n, t, {3}, 3, 7, 5, 4, 6, {}, true});
    cs.push_back({"rank4_square_causal_" + n, t, {3}, 3, 7, 7, 8, 8, {}, true});
    cs.push_back({"rank3_square_" + n, t, {}, 4, 6, 6, 4, 4, {}, false});
    cs.push_back(
        {"rank4_square_mask_" + n, t, {2}, 4, 6, 6, 8, 8, {2, 4, 6, 6}, false});
  }
  DType f = DType::F32;
  cs.push_back({"rank4_mask_keys",
                DType::BF16,
                {2},
                4,
                6,
                9,
                4,
                4,
                {2, 4, 1, 9},
                false});
  cs.push_back({"rank4_mask_2d", f, {2}, 4, 6, 9, 4, 4, {6, 9}, true});
  cs.push_back(
      {"rank5_shared_mask", f, {2, 2}, 3, 5, 6, 4, 3, {1, 1, 1, 5, 6}, false});
  cs.push_back({"block_rows", DType::BF16, {2}, 3, 4, 300, 8, 8, {}, true});
  // Empty sums: O and dQ (no keys), dK and dV (no queries) are zeros,
  // written head by head.
  cs.push_back({"no_keys", f, {2}, 3, 4, 0, 4, 4, {}, false});
  cs.push_back({"no_queries", f, {2}, 3, 0, 5, 4, 4, {}, false});
  cs.push_back({"no_head_dim", f, {2}, 3, 4, 5, 0, 3, {}, false});
  return cs;
}

void PrintTo(const SeqCase &c, std::ostream *os) { *os << c.name; }

class CudaAttentionSeqMajor : public ::testing::TestWithParam<SeqCase> {};

} // namespace

// Sequence-major forward and backward, in chunks that begin and end inside
// an outer index's heads, are bit for bit the packed kernels' on the same
// data permuted to [B..., H, T, D] (outputs permuted back): the GEMMs read
// and write the heads in place, with the packed ones' sums.
TEST_P(CudaAttentionSeqMajor, MatchesPackedBitForBit) {
  const SeqCase &c = GetParam();
  std::unique_ptr<SeqProgram> seq = buildSeq(c, nullptr);
  std::unique_ptr<SeqProgram> packed = buildSeq(c, seq.get());
  int64_t o = 1;
  for (int64_t x : c.outer)
    o *= x;
  auto want = runLoops(packed->p, 0);
  bool straddled = false;
  for (int64_t cap : {0, 1, 2, 3, 5}) {
    SCOPED_TRACE("chunks of at most " + std::to_string(cap));
    int64_t chunks = 0;
    auto got = runLoops(seq->p, cap, &chunks);
    AttentionPlan pl =
        cuda::planAttention(seq->p.info(0).shape, seq->p.info(1).shape,
                            seq->p.info(2).shape, c.t, true, cap);
    for (int64_t b0 = 0; pl.chunk > 0 && b0 < pl.batch; b0 += pl.chunk)
      straddled |=
          b0 / c.heads != (std::min(b0 + pl.chunk, pl.batch) - 1) / c.heads;
    EXPECT_EQ(got[seq->lse], want[packed->lse]) << "lse";
    int32_t ids[] = {seq->out, seq->dq, seq->dk, seq->dv};
    int32_t pids[] = {packed->out, packed->dq, packed->dk, packed->dv};
    const char *names[] = {"out", "dq", "dk", "dv"};
    for (int i = 0; i < 4; ++i) {
      auto [rows, cols] = seq->sizes[i];
      EXPECT_EQ(test::swapMiddleAxes(got[ids[i]], o, rows, c.heads,
                                     cols * (int64_t)dtypeSize(c.t)),
                want[pids[i]])
          << names[i];
    }
  }
  EXPECT_TRUE(straddled || o == 1 || c.tq * c.tk == 0)
      << "no chunk crossed an outer index";
}

namespace {
/// The sequence-major cases a fused projection has: Tq = Tk, D = Dv.
std::vector<SeqCase> fusedQkvCases() {
  std::vector<SeqCase> cs;
  for (const SeqCase &c : seqCases())
    if (c.tq == c.tk && c.d == c.dv && c.tq > 0 && c.d > 0)
      cs.push_back(c);
  return cs;
}

class CudaAttentionFusedQkv : public ::testing::TestWithParam<SeqCase> {};

/// The case's program again with q, k and v in one [B..., T, 3H, D] tensor
/// (each row: q's heads, k's, v's: a fused QKV projection) made of the
/// sequence-major program's q, k, v (its tensors 0-2), dout (3) and mask
/// (4, if any).
std::unique_ptr<SeqProgram> buildFusedQkv(const SeqCase &c,
                                          const SeqProgram &seq) {
  auto sp = std::make_unique<SeqProgram>();
  OneProgram &p = sp->p;
  std::vector<std::vector<uint8_t>> from = seq.p.initial();
  int64_t rowBytes = c.heads * c.d * (int64_t)dtypeSize(c.t), rows = c.tq;
  for (int64_t x : c.outer)
    rows *= x;
  std::vector<uint8_t> qkv(rows * 3 * rowBytes);
  for (int64_t r = 0; r < rows; ++r)
    for (int part = 0; part < 3; ++part)
      std::memcpy(qkv.data() + (r * 3 + part) * rowBytes,
                  from[part].data() + r * rowBytes, rowBytes);
  int32_t x = p.tensor(c.t, cat(c.outer, {c.tq, 3 * c.heads, c.d}), qkv);
  std::vector<int64_t> shape = cat(c.outer, {c.tq, c.heads, c.d});
  int32_t dout = p.tensor(c.t, shape, from[3]);
  std::vector<int32_t> fin = {x, x, x};
  if (!c.mask.empty())
    fin.push_back(p.tensor(DType::F32, c.mask, from[4]));
  sp->out = p.out(c.t, shape);
  sp->lse = p.out(DType::F32, cat(c.outer, {c.heads, c.tq}));
  // One gradient, the projection's (dk, dv unused).
  sp->dq = p.out(c.t, cat(c.outer, {c.tq, 3 * c.heads, c.d}));
  sp->dk = sp->dv = -1;
  sp->sizes = seq.sizes;
  std::vector<int64_t> attrs = {c.causal, 1, 1};
  double scale = 1.0 / std::sqrt((double)std::max<int64_t>(c.d, 1));
  std::vector<int32_t> gin = {x, x, x, sp->out, sp->lse, dout};
  gin.insert(gin.end(), fin.begin() + 3, fin.end());
  p.instr("attention", fin, {sp->out, sp->lse}, attrs, {scale});
  p.instr("attention_grad", gin, {sp->dq}, attrs, {scale});
  return sp;
}

/// Third `part` of each row of a fused program's gradient `bytes`.
std::vector<uint8_t> thirdOf(const SeqCase &c,
                             const std::vector<uint8_t> &bytes, int part) {
  int64_t rowBytes = c.heads * c.d * (int64_t)dtypeSize(c.t), rows = c.tq;
  for (int64_t x : c.outer)
    rows *= x;
  std::vector<uint8_t> r(rows * rowBytes);
  for (int64_t i = 0; i < rows; ++i)
    std::memcpy(r.data() + i * rowBytes,
                bytes.data() + (i * 3 + part) * rowBytes, rowBytes);
  return r;
}
} // namespace

// q, k and v read inside one fused QKV projection ([B..., T, 3H, D], the
// kernels' fused_qkv flag), and their gradients written into one of that
// layout, give the sequence-major results bit for bit in every chunking:
// the GEMMs take a wider leading dimension and k's and v's columns further
// in.
TEST_P(CudaAttentionFusedQkv, MatchesSequenceMajorBitForBit) {
  const SeqCase &c = GetParam();
  std::unique_ptr<SeqProgram> seq = buildSeq(c, nullptr);
  std::unique_ptr<SeqProgram> fused = buildFusedQkv(c, *seq);
  for (int64_t cap : {0, 1, 3}) {
    SCOPED_TRACE("chunks of at most " + std::to_string(cap));
    auto want = runLoops(seq->p, cap), got = runLoops(fused->p, cap);
    EXPECT_EQ(got[fused->out], want[seq->out]) << "out";
    EXPECT_EQ(got[fused->lse], want[seq->lse]) << "lse";
    int32_t grads[] = {seq->dq, seq->dk, seq->dv};
    for (int part = 0; part < 3; ++part) {
      std::vector<uint8_t> third = thirdOf(c, got[fused->dq], part);
      std::vector<uint8_t> w = want[grads[part]];
      w.resize(third.size()); // stores are at least 8 bytes
      EXPECT_EQ(third, w) << "gradient third " << part;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Cases, CudaAttentionSeqMajor,
                         ::testing::ValuesIn(seqCases()),
                         [](const ::testing::TestParamInfo<SeqCase> &i) {
                           return i.param.name;
                         });
INSTANTIATE_TEST_SUITE_P(Cases, CudaAttentionFusedQkv,
                         ::testing::ValuesIn(fusedQkvCases()),
                         [](const ::testing::TestParamInfo<SeqCase> &i) {
                           return i.param.name;
                         });
