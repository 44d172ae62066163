//===- HostDTypeTest.cpp - Declared boundary types and their conversions --===//
#include "runtime/core/HostDType.h"
#include "runtime/core/Artifact.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <unistd.h>
#include <vector>

using namespace tcc::rt;

TEST(HostDType, NamesRoundTrip) {
  for (HostDType h :
       {HostDType::Native, HostDType::F64, HostDType::F16, HostDType::BF16,
        HostDType::I8, HostDType::I16, HostDType::I32, HostDType::U8,
        HostDType::U16, HostDType::U32, HostDType::U64})
    EXPECT_EQ(parseHostDType(hostDTypeName(h)), h);
  EXPECT_THROW(parseHostDType("f8"), Error);
  EXPECT_TRUE(hostDTypeFits(HostDType::F64, DType::F32));
  EXPECT_FALSE(hostDTypeFits(HostDType::F64, DType::I64));
  EXPECT_FALSE(hostDTypeFits(HostDType::U8, DType::F32));
  EXPECT_FALSE(hostDTypeFits(HostDType::F16, DType::F16));
}

TEST(HostDType, ArtifactKeepsDeclaredTypes) {
  Artifact a;
  TensorInfo x;
  x.name = "x";
  x.dtype = DType::F32;
  x.shape = {3};
  x.kind = TensorKind::Input;
  x.hostDType = HostDType::F64;
  TensorInfo y = x;
  y.name = "y";
  y.dtype = DType::I64;
  y.kind = TensorKind::Temp;
  y.program = "forward";
  y.arenaOffset = 0;
  y.hostDType = HostDType::U8;
  a.tensors = {x, y};
  Program p;
  p.name = "forward";
  p.inputs = {0};
  p.outputs = {1};
  p.arenaBytes = 64;
  p.instrs.push_back({"cast", {0}, {1}, {}, {}});
  a.programs.push_back(p);
  std::string path = ::testing::TempDir() + "tcc_hostdtype_" +
                     std::to_string(::getpid()) + ".tcc";
  writeArtifact(a, path);
  Artifact b = readArtifact(path);
  std::remove(path.c_str());
  ASSERT_EQ(b.tensors.size(), 2u);
  EXPECT_EQ(b.tensors[0].hostDType, HostDType::F64);
  EXPECT_EQ(b.tensors[1].hostDType, HostDType::U8);

  // An i64 tensor cannot be declared a float type.
  a.tensors[1].hostDType = HostDType::F16;
  EXPECT_THROW(validateArtifact(a), Error);
}

TEST(HostDType, InputsWidenExactly) {
  double d[2] = {0.1, -3.0};
  float f[2];
  hostToRuntime(HostDType::F64, d, DType::F32, f, 2);
  EXPECT_EQ(f[0], 0.1f);
  EXPECT_EQ(f[1], -3.0f);
  uint16_t h[2] = {0x3C00, 0xC000}; // f16 1.0, -2.0
  hostToRuntime(HostDType::F16, h, DType::F32, f, 2);
  EXPECT_EQ(f[0], 1.0f);
  EXPECT_EQ(f[1], -2.0f);
  uint16_t bf[1] = {0x3EF5}; // bf16 0.478515625
  hostToRuntime(HostDType::BF16, bf, DType::F32, f, 1);
  EXPECT_EQ(f[0], 0.478515625f);
  int8_t i8[2] = {-128, 127};
  int64_t out[2];
  hostToRuntime(HostDType::I8, i8, DType::I64, out, 2);
  EXPECT_EQ(out[0], -128);
  EXPECT_EQ(out[1], 127);
  uint8_t u8[1] = {255};
  hostToRuntime(HostDType::U8, u8, DType::I64, out, 1);
  EXPECT_EQ(out[0], 255);
  uint64_t u64[1] = {~uint64_t(0)};
  hostToRuntime(HostDType::U64, u64, DType::I64, out, 1);
  EXPECT_EQ(out[0], -1); // the same 64 bits
}

TEST(HostDType, OutputsRoundOrWrap) {
  // 1 + 2^-11 is halfway between two f16 values: to even, 1.0; 1 + 3 *
  // 2^-11 rounds up to 1 + 2^-9.
  float f[2] = {1.0f + 0x1p-11f, 1.0f + 3 * 0x1p-11f};
  uint16_t h[2];
  runtimeToHost(DType::F32, f, HostDType::F16, h, 2);
  EXPECT_EQ(h[0], 0x3C00);
  EXPECT_EQ(h[1], 0x3C02);
  // bf16 keeps 8 bits: 1 + 2^-8 ties to 1.0, 1 + 3 * 2^-8 to 1 + 2^-6.
  float g[2] = {1.0f + 0x1p-8f, 1.0f + 3 * 0x1p-8f};
  runtimeToHost(DType::F32, g, HostDType::BF16, h, 2);
  EXPECT_EQ(h[0], 0x3F80);
  EXPECT_EQ(h[1], 0x3F82);
  double d[1];
  runtimeToHost(DType::F32, f, HostDType::F64, d, 1);
  EXPECT_EQ(d[0], (double)f[0]);
  int64_t i[2] = {300, -1};
  uint8_t u8[2];
  runtimeToHost(DType::I64, i, HostDType::U8, u8, 2);
  EXPECT_EQ(u8[0], 44); // the low 8 bits
  EXPECT_EQ(u8[1], 255);
  int32_t i32[1];
  runtimeToHost(DType::I64, i, HostDType::I32, i32, 1);
  EXPECT_EQ(i32[0], 300);
  EXPECT_THROW(runtimeToHost(DType::I64, i, HostDType::F16, h, 1), Error);
}
