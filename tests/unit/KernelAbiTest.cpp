//===- KernelAbiTest.cpp - The kernel list, typed attributes, checkInstr --===//
//
// runtime/core/abi: names and ids agree, typed attribute views round-trip
// through an Instr's flat lists, and checkInstr reports attribute counts
// and flags (from KernelAttrs.h) before the kernel's own check.
//
//===----------------------------------------------------------------------===//
#include "runtime/core/abi/KernelAbi.h"
#include "runtime/core/abi/KernelCheck.h"
#include "runtime/core/abi/Kernels.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

// Inside the namespace, `abi` is tcc::rt::abi (not <cxxabi.h>'s alias).
namespace tcc::rt {

using abi::KernelId;

TEST(KernelAbi, KernelByNameFindsEveryKernelAndNothingElse) {
  ASSERT_EQ(kernelNames().size(), abi::kKernelCount);
  for (size_t i = 0; i < abi::kKernelCount; ++i) {
    const abi::KernelInfo &k = abi::kKernels[i];
    EXPECT_EQ(static_cast<size_t>(k.id), i);
    std::optional<KernelId> id = abi::kernelByName(k.name);
    ASSERT_TRUE(id) << k.name;
    EXPECT_EQ(*id, k.id) << k.name;
    EXPECT_STREQ(abi::name(k.id), k.name);
    if (i > 0) {
      EXPECT_LT(std::strcmp(abi::kKernels[i - 1].name, k.name), 0);
    }
  }
  EXPECT_EQ(abi::kernelByName("matmul"), KernelId::Matmul);
  EXPECT_EQ(abi::kernelByName("where"), KernelId::Where);
  EXPECT_EQ(abi::kernelByName("adamw_update"), KernelId::AdamwUpdate);
  for (const char *bad : {"", "no_such_kernel", "Matmul", "matmul ", "a", "zz"})
    EXPECT_FALSE(abi::kernelByName(bad)) << "'" << bad << "'";
}

TEST(KernelAbi, InPlaceFlagsAndIs) {
  EXPECT_TRUE(abi::info(KernelId::Add).inPlace);
  EXPECT_TRUE(abi::info(KernelId::AdamwUpdate).inPlace);
  EXPECT_FALSE(abi::info(KernelId::Matmul).inPlace);
  EXPECT_FALSE(abi::info(KernelId::Fused).inPlace);
  EXPECT_TRUE(kernelAllowsInPlace("copy"));
  EXPECT_FALSE(kernelAllowsInPlace("no_such_kernel"));
  Instr in;
  in.kernel = "softmax";
  EXPECT_TRUE(abi::is(in, KernelId::Softmax));
  EXPECT_FALSE(abi::is(in, KernelId::SoftmaxGrad));
}

TEST(KernelAbi, SetAttrsThenAttrsOfRoundTrips) {
  Instr in;
  abi::setAttrs(in, abi::MatmulEpilogueAttrs{true, false, 7});
  EXPECT_EQ(in.iattrs, (std::vector<int64_t>{1, 0, 7}));
  EXPECT_TRUE(in.fattrs.empty());
  abi::MatmulEpilogueAttrs m = abi::attrs<KernelId::MatmulEpilogue>(in);
  EXPECT_TRUE(m.transA);
  EXPECT_FALSE(m.transB);
  EXPECT_EQ(m.epilogue, 7);

  abi::Conv2dAttrs c{{2, 3, 1, 0, 1, 0, 1, 2}, 4};
  abi::setAttrs(in, c); // replaces the previous attributes
  EXPECT_EQ(in.iattrs, (std::vector<int64_t>{2, 3, 1, 0, 1, 0, 1, 2, 4}));
  abi::Conv2dAttrs c2 = abi::attrs<KernelId::Conv2d>(in);
  EXPECT_EQ(c2.strideW, 3);
  EXPECT_EQ(c2.padBottom, 1);
  EXPECT_EQ(c2.dilationW, 2);
  EXPECT_EQ(c2.groups, 4);

  abi::AvgPool2dAttrs p;
  p.kernelH = 3, p.kernelW = 2, p.strideH = p.strideW = 2;
  p.padTop = 1, p.padBottom = 1;
  p.ceilMode = p.countIncludePad = true;
  abi::setAttrs(in, p);
  // Storage order: kernel, strides, pads, dilations, ceil_mode, then
  // count_include_pad.
  EXPECT_EQ(in.iattrs,
            (std::vector<int64_t>{3, 2, 2, 2, 1, 0, 1, 0, 1, 1, 1, 1}));
  abi::AvgPool2dAttrs p2 = abi::attrs<KernelId::AvgPool2d>(in);
  EXPECT_EQ(p2.kernelH, 3);
  EXPECT_EQ(p2.kernelW, 2);
  EXPECT_TRUE(p2.ceilMode);
  EXPECT_TRUE(p2.countIncludePad);

  // The learning rate is an operand: AdamW's attributes are the rest.
  abi::setAttrs(in, abi::AdamwAttrs{0.9, 0.95, 1e-8, 0.1, true});
  EXPECT_EQ(in.iattrs, (std::vector<int64_t>{1}));
  EXPECT_EQ(in.fattrs, (std::vector<double>{0.9, 0.95, 1e-8, 0.1}));
  abi::AdamwAttrs h = abi::attrs<KernelId::AdamwUpdate>(in);
  EXPECT_EQ(h.beta2, 0.95);
  EXPECT_EQ(h.weightDecay, 0.1);
  EXPECT_TRUE(h.l2Decay);

  // Lists view the instr's integers; halves split them.
  std::vector<int64_t> starts{0, 1, 2}, steps{1, 1, 3};
  abi::setAttrs(in, abi::WindowAttrs{starts, steps});
  EXPECT_EQ(in.iattrs, (std::vector<int64_t>{0, 1, 2, 1, 1, 3}));
  abi::WindowAttrs w = abi::attrs<KernelId::Slice>(in);
  EXPECT_EQ(w.starts.vec(), starts);
  EXPECT_EQ(w.steps.vec(), steps);

  std::vector<int64_t> pairs{0, 2, 1, 3};
  abi::setAttrs(in, abi::FusedAttrs{5, pairs});
  abi::FusedAttrs f = abi::attrs<KernelId::Fused>(in);
  EXPECT_EQ(f.kernel, 5);
  ASSERT_EQ(f.inPlacePairs(), 2u);
  EXPECT_EQ(f.inPlacePair(1), (std::pair<int64_t, int64_t>{1, 3}));
  in.kernel = "fused";
  EXPECT_EQ(fusedInPlacePairs(in),
            (std::vector<std::pair<int64_t, int64_t>>{{0, 2}, {1, 3}}));
  EXPECT_TRUE(instrAllowsInPlace(in, 1, 3));
  EXPECT_FALSE(instrAllowsInPlace(in, 1, 2));
}

TEST(KernelAbi, OptionalFlagReadsAsFalseWhenAbsent) {
  Instr in;
  in.iattrs = {1, 0};
  in.fattrs = {0.125};
  abi::AttentionAttrs a = abi::attrs<KernelId::Attention>(in);
  EXPECT_TRUE(a.causal);
  EXPECT_FALSE(a.seqMajor);
  EXPECT_FALSE(a.fusedQkv);
  EXPECT_EQ(a.scale, 0.125);
  abi::setAttrs(in, a); // the writer always spells the optional flag
  EXPECT_EQ(in.iattrs, (std::vector<int64_t>{1, 0, 0}));
}

TEST(KernelAbi, TryAttrsOfRefusesWrongCounts) {
  Instr in;
  in.iattrs = {0, 1};
  EXPECT_TRUE(abi::tryAttrsOf<abi::MatmulAttrs>(in));
  in.iattrs = {0, 1, 0};
  EXPECT_FALSE(abi::tryAttrsOf<abi::MatmulAttrs>(in));
  in.iattrs = {0, 2}; // a flag that is not 0 or 1
  EXPECT_FALSE(abi::tryAttrsOf<abi::MatmulAttrs>(in));
  in.iattrs = {0, 1};
  in.fattrs = {1.0};
  EXPECT_FALSE(abi::tryAttrsOf<abi::MatmulAttrs>(in));
}

namespace {
/// f32 tensors of the given shapes, for checkInstr.
std::vector<TensorInfo> tensors(std::vector<std::vector<int64_t>> shapes) {
  std::vector<TensorInfo> t;
  for (auto &s : shapes) {
    TensorInfo info;
    info.name = "t" + std::to_string(t.size());
    info.shape = s;
    t.push_back(info);
  }
  return t;
}

/// checkInstr's message for the instr, or "" when it passes.
std::string checkError(const Instr &in, const std::vector<TensorInfo> &t) {
  try {
    checkInstr(in, t);
  } catch (const Error &e) {
    return e.what();
  }
  return "";
}
} // namespace

TEST(KernelAbi, CheckInstrReportsAttributeCountsFirst) {
  auto t = tensors({{2, 3}, {3, 4}, {2, 4}});
  Instr mm{"matmul", {0, 1}, {2}, {0, 0}, {}};
  EXPECT_EQ(checkError(mm, t), "");
  mm.iattrs = {0, 0, 1};
  EXPECT_EQ(checkError(mm, t),
            "expects 2 integer attributes (transA, transB), got 3");
  mm.iattrs = {0, 2};
  EXPECT_EQ(checkError(mm, t), "attribute 'transB' must be 0 or 1, got 2");
  mm.iattrs = {0, 0};
  mm.fattrs = {1.0};
  EXPECT_EQ(checkError(mm, t), "expects 0 float attributes, got 1");
  // The generic check runs before the kernel's: wrong arity and counts
  // report the counts.
  mm.fattrs = {};
  mm.iattrs = {};
  mm.inputs = {0};
  EXPECT_EQ(checkError(mm, t),
            "expects 2 integer attributes (transA, transB), got 0");

  Instr add{"add", {2, 2}, {2}, {1}, {}};
  EXPECT_EQ(checkError(add, t), "expects 0 integer attributes, got 1");

  Instr sm{"softmax", {0}, {0}, {}, {}};
  EXPECT_EQ(checkError(sm, t), "expects 1 integer attribute (axis), got 0");
  sm.iattrs = {-1};
  EXPECT_EQ(checkError(sm, t), "");
  sm.iattrs = {2};
  EXPECT_EQ(checkError(sm, t), "axis 2 is out of range for rank 2");

  Instr ln{"layer_norm", {0, 0, 0}, {0, 0, 0}, {1}, {}};
  EXPECT_EQ(checkError(ln, t), "expects 1 float attribute (eps), got 0");

  auto qkv = tensors({{2, 4, 8}, {2, 4, 8}, {2, 4, 8}, {2, 4}});
  Instr at{"attention", {0, 1, 2}, {0, 3}, {0, 0, 0, 0}, {0.5}};
  EXPECT_EQ(checkError(at, qkv),
            "expects 2 or 3 integer attributes (causal, seq_major, "
            "[fused_qkv]), got 4");
  at.iattrs = {0, 0, 3};
  EXPECT_EQ(checkError(at, qkv), "attribute 'fused_qkv' must be 0 or 1, got 3");

  Instr sl{"slice", {0}, {2}, {0, 0, 1}, {}};
  EXPECT_EQ(checkError(sl, t),
            "expects an even number of integer attributes (starts... ++ "
            "steps...), got 3");

  Instr fu{"fused", {0}, {2}, {}, {}};
  EXPECT_EQ(
      checkError(fu, t),
      "expects at least 1 integer attribute (kernel, in_place...), got 0");
}

TEST(KernelAbi, EveryKernelHasACheck) {
  for (const abi::KernelInfo &k : abi::kKernels)
    EXPECT_NE(abi::checkOf(k.id), nullptr) << k.name;
}

} // namespace tcc::rt
