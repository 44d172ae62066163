//===- Initializer.cpp - Seeded initial values of parameters --------------===//
//
// The generator is SplitMix64 used as a counter-based one: the c-th 64-bit
// word of a tensor's stream is the SplitMix64 output for state
// key + (c + 1) * golden, key = mix(seed + golden). Every word is a pure
// function of (seed, c), so any element can be computed alone, in any
// order, on any thread or device.
//
//  * uniform: word i -> u in [0, 1) (53 bits) -> a + (b - a) * u.
//  * normal: elements 2p and 2p+1 are the Box-Muller pair of words 2p and
//    2p+1 (u1 in (0, 1], u2 in [0, 1)): a + b * r * cos(t), a + b * r *
//    sin(t) with r = sqrt(-2 ln u1), t = 2 pi u2, in double. ln, cos and
//    sin are polynomials here, not libm's, so the bits do not depend on the
//    C library (sqrt is IEEE, exact everywhere).
//  * constant: a.
//
// The double result is rounded once to f32 (and from there to bf16/f16,
// as the header promises). Uniform values that round up to b are moved one
// step of the dtype down, so [a, b) holds after rounding too.
//
//===----------------------------------------------------------------------===//
#include "runtime/core/Initializer.h"

#include "runtime/core/ThreadPool.h"
#include "runtime/core/abi/Kernels.h"
#include "runtime/core/prelude/Half.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace tcc::rt {

static constexpr uint64_t kGolden = 0x9e3779b97f4a7c15ull;

static inline uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

static inline uint64_t streamKey(uint64_t seed) {
  return mix64(seed + kGolden);
}

/// Word c of the stream with key `key`.
static inline uint64_t word(uint64_t key, uint64_t c) {
  return mix64(key + (c + 1) * kGolden);
}

/// [0, 1) with 53 random bits.
static inline double unitOpen1(uint64_t w) {
  return static_cast<double>(w >> 11) * 0x1.0p-53;
}

/// (0, 1]: never 0, so its logarithm is finite.
static inline double unitOpen0(uint64_t w) {
  return static_cast<double>((w >> 11) + 1) * 0x1.0p-53;
}

/// 1 / n!, correctly rounded (n! is exact in a double up to 18!).
static constexpr double invFactorial(int n) {
  double f = 1;
  for (int k = 2; k <= n; ++k)
    f *= k;
  return 1.0 / f;
}

static inline uint64_t bitsOf(double d) {
  uint64_t u;
  std::memcpy(&u, &d, sizeof u);
  return u;
}

static inline double fromBits(uint64_t u) {
  double d;
  std::memcpy(&d, &u, sizeof d);
  return d;
}

/// ln(u) for u in (0, 1] (a normal double). Plain arithmetic rather than
/// libm, so every machine and libm version gives the same bits, and
/// branch-free so the compiler vectorizes it: u = m 2^e with m in
/// (sqrt(1/2), sqrt(2)], ln m = 2 atanh(s), s = (m - 1) / (m + 1),
/// |s| < 0.1716, by its series to s^23 (error below 1e-17 relative).
static inline double logUnit(double u) {
  uint64_t bits = bitsOf(u);
  // The exponent field as a double, exactly, without an int conversion.
  double e = fromBits(0x4330000000000000ull | (bits >> 52)) - 0x1.0p52 - 1023;
  double m = fromBits((bits & 0x000fffffffffffffull) | 0x3ff0000000000000ull);
  bool big = m > 1.4142135623730951;
  m = big ? m * 0.5 : m;
  e = big ? e + 1 : e;
  double s = (m - 1) / (m + 1), s2 = s * s;
  double p = 1.0 / 23;
#pragma GCC unroll 16
  for (int k = 10; k >= 0; --k)
    p = p * s2 + 1.0 / (2 * k + 1);
  // ln 2 split in a part with trailing zeros (e * hi is exact) and the rest.
  const double ln2Hi = 6.93147180369123816490e-01;
  const double ln2Lo = 1.90821492927058770002e-10;
  return e * ln2Hi + (e * ln2Lo + 2 * s * p);
}

/// cos and sin of 2 pi u for u in [0, 1), in plain branch-free arithmetic
/// like logUnit: 4u = n + r exactly with n the nearest integer (|r| <= 1/2),
/// x = r pi/2, Taylor series of sin and cos on |x| <= pi/4 to x^17 / x^18
/// (error below 1e-17), then the quadrant n mod 4 by swaps and signs.
static inline void cosSinTurn(double u, double &c, double &s) {
  double r4 = 4 * u;
  // Adding 1.5 * 2^52 rounds to an integer, which lands in the low bits.
  double t = r4 + 0x1.8p52;
  uint64_t q = bitsOf(t) & 3;
  double x = (r4 - (t - 0x1.8p52)) * 1.5707963267948966;
  double x2 = x * x;
  double ps = invFactorial(17), pc = invFactorial(18);
#pragma GCC unroll 16
  for (int k = 7; k >= 0; --k)
    ps = -ps * x2 + invFactorial(2 * k + 1);
#pragma GCC unroll 16
  for (int k = 8; k >= 0; --k)
    pc = -pc * x2 + invFactorial(2 * k);
  double sx = x * ps, cx = pc;
  // (cos, sin) of x + q pi/2: q = 0 (c, s), 1 (-s, c), 2 (-c, -s), 3 (s, -c).
  // Selects by bit masks: SSE2 has no 64-bit compare to vectorize `?:`.
  uint64_t swap = 0 - (q & 1);
  double c0 = fromBits((bitsOf(sx) & swap) | (bitsOf(cx) & ~swap));
  double s0 = fromBits((bitsOf(cx) & swap) | (bitsOf(sx) & ~swap));
  c = fromBits(bitsOf(c0) ^ (((q ^ (q >> 1)) & 1) << 63));
  s = fromBits(bitsOf(s0) ^ ((q >> 1) << 63));
}

/// The Box-Muller pair of the uniforms u1 in (0, 1] and u2 in [0, 1).
static inline void boxMuller(double u1, double u2, double &z0, double &z1) {
  double r = std::sqrt(-2.0 * logUnit(u1));
  double c, s;
  cosSinTurn(u2, c, s);
  z0 = r * c;
  z1 = r * s;
}

/// The Box-Muller pair p of a standard normal stream.
static inline void normalPair(uint64_t key, uint64_t p, double &z0,
                              double &z1) {
  boxMuller(unitOpen0(word(key, 2 * p)), unitOpen1(word(key, 2 * p + 1)), z0,
            z1);
}

double initialValue(const InitSpec &s, int64_t i) {
  uint64_t key = streamKey(s.seed);
  switch (s.kind) {
  case InitSpec::Kind::Constant:
    return s.a;
  case InitSpec::Kind::Uniform:
    return s.a + (s.b - s.a) * unitOpen1(word(key, static_cast<uint64_t>(i)));
  case InitSpec::Kind::Normal: {
    double z0, z1;
    normalPair(key, static_cast<uint64_t>(i) / 2, z0, z1);
    return s.a + s.b * (i % 2 ? z1 : z0);
  }
  case InitSpec::Kind::Blob:
  case InitSpec::Kind::Cast:
    break;
  }
  throw Error(std::string("initialValue: a ") + initKindName(s.kind) +
              " initializer has no generated values");
}

/// One step towards -inf of a finite 16-bit float word (sign-magnitude).
static inline uint16_t halfStepDown(uint16_t h) {
  if ((h & 0x7fffu) == 0)
    return 0x8001u; // +-0 -> the negative smallest subnormal
  return (h & 0x8000u) ? static_cast<uint16_t>(h + 1)
                       : static_cast<uint16_t>(h - 1);
}

namespace {
/// Rounds doubles to one dtype (once to f32, then to 16 bits), reads a
/// stored word back, and steps a word one value down.
template <DType T> struct Store;

template <> struct Store<DType::F32> {
  using Word = float;
  static Word round(double v) { return static_cast<float>(v); }
  static double value(Word w) { return w; }
  static Word stepDown(Word w) { return std::nextafter(w, -INFINITY); }
};

template <> struct Store<DType::BF16> {
  using Word = uint16_t;
  static Word round(double v) { return f32ToBf16(static_cast<float>(v)); }
  static double value(Word w) { return bf16ToF32(w); }
  static Word stepDown(Word w) { return halfStepDown(w); }
};

template <> struct Store<DType::F16> {
  using Word = uint16_t;
  static Word round(double v) { return f32ToF16(static_cast<float>(v)); }
  static double value(Word w) { return f16ToF32(w); }
  static Word stepDown(Word w) { return halfStepDown(w); }
};
} // namespace

/// Elements [begin, end) of a generated (normal or uniform) tensor.
template <DType T>
static void fillRange(const InitSpec &s, typename Store<T>::Word *out,
                      int64_t begin, int64_t end) {
  uint64_t key = streamKey(s.seed);
  if (s.kind == InitSpec::Kind::Uniform) {
    double width = s.b - s.a;
    for (int64_t i = begin; i < end; ++i) {
      auto w = Store<T>::round(
          s.a + width * unitOpen1(word(key, static_cast<uint64_t>(i))));
      // Rounding may reach b; an empty interval [a, a) gives a.
      if (s.a < s.b && Store<T>::value(w) >= s.b)
        w = Store<T>::stepDown(w);
      out[i] = w;
    }
    return;
  }
  // Normal: whole pairs, the first and last one possibly half used, in
  // blocks: the words first (scalar 64-bit multiplies), then Box-Muller
  // over the block, which the compiler vectorizes. Same code as
  // normalPair, so the same bits.
  constexpr int64_t kBlock = 64;
  double u1[kBlock], u2[kBlock], z0[kBlock], z1[kBlock];
  for (int64_t p0 = begin / 2; p0 * 2 < end; p0 += kBlock) {
    int64_t nb = std::min(kBlock, (end + 1) / 2 - p0);
    for (int64_t j = 0; j < nb; ++j) {
      uint64_t p = static_cast<uint64_t>(p0 + j);
      u1[j] = unitOpen0(word(key, 2 * p));
      u2[j] = unitOpen1(word(key, 2 * p + 1));
    }
    for (int64_t j = 0; j < nb; ++j)
      boxMuller(u1[j], u2[j], z0[j], z1[j]);
    for (int64_t j = 0; j < nb; ++j) {
      int64_t i = 2 * (p0 + j);
      if (i >= begin)
        out[i] = Store<T>::round(s.a + s.b * z0[j]);
      if (i + 1 < end)
        out[i + 1] = Store<T>::round(s.a + s.b * z1[j]);
    }
  }
}

template <DType T>
static void fillGenerated(const InitSpec &s, void *dst, int64_t n) {
  auto *out = static_cast<typename Store<T>::Word *>(dst);
  // Chunks of whole pairs; the values do not depend on the split, so large
  // tensors use the runtime's pool.
  constexpr int64_t kChunk = 1 << 16;
  int64_t chunks = (n + kChunk - 1) / kChunk;
  if (chunks <= 1) {
    fillRange<T>(s, out, 0, n);
    return;
  }
  ThreadPool::global().parallelFor(chunks, [&](int64_t c) {
    fillRange<T>(s, out, c * kChunk, std::min(n, (c + 1) * kChunk));
  });
}

static void fillConstant(const TensorInfo &t, void *dst, int64_t n) {
  double a = t.init.a;
  switch (t.dtype) {
  case DType::F32: {
    float v = static_cast<float>(a);
    auto *out = static_cast<float *>(dst);
    std::fill(out, out + n, v);
    return;
  }
  case DType::BF16:
  case DType::F16: {
    float f = static_cast<float>(a);
    uint16_t v = t.dtype == DType::BF16 ? f32ToBf16(f) : f32ToF16(f);
    auto *out = static_cast<uint16_t *>(dst);
    std::fill(out, out + n, v);
    return;
  }
  case DType::I64: {
    // The validator admits only integers in range; checked again here so
    // the conversion is never undefined.
    if (!(a == std::floor(a) && a >= -0x1.0p63 && a < 0x1.0p63))
      throw Error("tensor '" + t.name + "': constant initializer " +
                  std::to_string(a) + " is not an i64 value");
    int64_t v = static_cast<int64_t>(a);
    auto *out = static_cast<int64_t *>(dst);
    std::fill(out, out + n, v);
    return;
  }
  }
}

void fillInitial(const TensorInfo &t, void *dst) {
  const InitSpec &s = t.init;
  int64_t n = t.numElements();
  switch (s.kind) {
  case InitSpec::Kind::Blob:
    throw Error("tensor '" + t.name +
                "': its initial value is in the blob, not generated");
  case InitSpec::Kind::Constant:
    fillConstant(t, dst, n);
    return;
  case InitSpec::Kind::Normal:
  case InitSpec::Kind::Uniform:
    break;
  case InitSpec::Kind::Cast:
    throw Error("tensor '" + t.name + "': its initial value is the cast of '" +
                s.source + "', which fillInitialValue computes");
  }
  switch (t.dtype) {
  case DType::F32:
    return fillGenerated<DType::F32>(s, dst, n);
  case DType::BF16:
    return fillGenerated<DType::BF16>(s, dst, n);
  case DType::F16:
    return fillGenerated<DType::F16>(s, dst, n);
  case DType::I64:
    break;
  }
  throw Error("tensor '" + t.name + "': a " + initKindName(s.kind) +
              " initializer needs a float tensor, not i64");
}

void fillInitialValue(const Artifact &a, int32_t id, void *dst) {
  const TensorInfo &t = a.tensors.at(id);
  switch (t.init.kind) {
  case InitSpec::Kind::Blob:
    // An empty tensor's blob may be empty too: no pointer to copy from.
    if (t.byteSize())
      std::memcpy(dst, a.blob.data() + t.dataOffset, t.byteSize());
    a.blob.release(t.dataOffset, t.byteSize()); // the tensor has them now
    return;
  case InitSpec::Kind::Cast: {
    int32_t src = a.findTensor(t.init.source);
    if (src < 0 || a.tensors[src].dtype != DType::F32 ||
        a.tensors[src].numElements() != t.numElements() ||
        !isHalfDType(t.dtype))
      throw Error("tensor '" + t.name +
                  "': cannot cast the initial value of '" + t.init.source +
                  "' to it");
    std::vector<float> f(static_cast<size_t>(t.numElements()));
    fillInitialValue(a, src, f.data());
    narrowFromF32(f.data(), t.dtype, dst, t.numElements()); // as `cast` rounds
    return;
  }
  default:
    fillInitial(t, dst);
  }
}

} // namespace tcc::rt
