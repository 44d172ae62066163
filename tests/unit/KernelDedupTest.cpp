//===- KernelDedupTest.cpp - Repeated generated kernels -------------------===//
#include "compiler/codegen/KernelDedup.h"

#include <gtest/gtest.h>

using namespace tcc;

TEST(KernelDedup, NumbersOfTheKernelOnlyAreIgnored) {
  EXPECT_EQ(withoutKernelNumber("// kernel 12 (add): x\nvoid tcc_fused_12("
                                "int) { tcc_fused_12_fin(); tcc_fused_120(); "
                                "xtcc_fused_12(); }",
                                12),
            "// kernel # (add): x\nvoid tcc_fused_#(int) { tcc_fused_#_fin(); "
            "tcc_fused_120(); xtcc_fused_12(); }");
  // The comment counts only at the start.
  EXPECT_EQ(withoutKernelNumber("a // kernel 3 ", 3), "a // kernel 3 ");
}

TEST(KernelDedup, FindsTheFirstKernelWithTheSameCode) {
  KernelDedup d;
  EXPECT_EQ(d.find("// kernel 0 (a)\nk tcc_fused_0() { 1; }", 0), -1);
  EXPECT_EQ(d.find("// kernel 1 (b)\nk tcc_fused_1() { 2; }", 1), -1);
  EXPECT_EQ(d.find("// kernel 2 (a)\nk tcc_fused_2() { 1; }", 2), 0);
  EXPECT_EQ(d.find("// kernel 3 (b)\nk tcc_fused_3() { 2; }", 3), 1);
  // The same text with a constant that happens to be another number.
  EXPECT_EQ(d.find("// kernel 4 (a)\nk tcc_fused_4() { 4; }", 4), -1);
  EXPECT_EQ(d.seen(), 5);
  EXPECT_EQ(d.distinct(), 3);
}
