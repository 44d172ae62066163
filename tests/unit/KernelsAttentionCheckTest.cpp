//===- KernelsAttentionCheckTest.cpp - attention's checks on bad instrs ---===//
//
// checkInstr on malformed `attention` and `attention_grad` instrs (artifacts
// are untrusted): each broken operand named in the message.
//
//===----------------------------------------------------------------------===//
#include "KernelTestUtil.h"

#include <gtest/gtest.h>

#include <functional>
#include <string>

using namespace tcc::rt;

namespace {
/// A well-formed call of `kernel` that `edit` then breaks; expects checkInstr
/// to throw a message containing `expected`.
void expectCheckError(
    const std::string &kernel,
    const std::function<void(std::vector<TensorInfo> &, Instr &)> &edit,
    const std::string &expected) {
  auto info = [](DType t, std::vector<int64_t> shape) {
    TensorInfo i;
    i.name = "x";
    i.dtype = t;
    i.shape = std::move(shape);
    i.kind = TensorKind::Input;
    return i;
  };
  DType h = DType::BF16;
  // q k v mask out lse dout | dq dk dv   (B 2, Tq 3, Tk 5, D 4, Dv 6)
  std::vector<TensorInfo> ts = {info(h, {2, 3, 4}), info(h, {2, 5, 4}),
                                info(h, {2, 5, 6}), info(DType::F32, {1, 3, 5}),
                                info(h, {2, 3, 6}), info(DType::F32, {2, 3}),
                                info(h, {2, 3, 6}), info(h, {2, 3, 4}),
                                info(h, {2, 5, 4}), info(h, {2, 5, 6})};
  const char *names[] = {"q",   "k",    "v",  "mask", "out",
                         "lse", "dout", "dq", "dk",   "dv"};
  for (size_t i = 0; i < ts.size(); ++i)
    ts[i].name = names[i];
  Instr in =
      kernel == "attention"
          ? Instr{kernel, {0, 1, 2, 3}, {4, 5}, {0, 0}, {0.5}}
          : Instr{kernel, {0, 1, 2, 4, 5, 6, 3}, {7, 8, 9}, {0, 0}, {0.5}};
  EXPECT_NO_THROW(checkInstr(in, ts)) << "the unedited call";
  edit(ts, in);
  try {
    checkInstr(in, ts);
    ADD_FAILURE() << "no error; expected '" << expected << "'";
  } catch (const Error &e) {
    EXPECT_NE(std::string(e.what()).find(expected), std::string::npos)
        << "got: " << e.what() << "\nexpected: " << expected;
  }
}

using Edit = std::function<void(std::vector<TensorInfo> &, Instr &)>;
} // namespace

TEST(KernelsAttention, CheckErrors) {
  enum { Q, K, V, M, O, L, DO, DQ, DK, DV };
  for (const char *kernel : {"attention", "attention_grad"}) {
    SCOPED_TRACE(kernel);
    auto bad = [&](Edit e, const std::string &msg) {
      expectCheckError(kernel, e, msg);
    };
    bad([](auto &ts, auto &) { ts[L].dtype = DType::BF16; },
        "'lse' is bf16, expected f32 (lse is always f32)");
    bad([](auto &ts, auto &) { ts[M].dtype = DType::BF16; },
        "'mask' is bf16, expected f32 (the mask is always f32)");
    bad([](auto &ts, auto &) { ts[K].dtype = DType::F16; },
        "'k' is f16, expected bf16 (q, k and v share one type)");
    bad([](auto &ts, auto &) { ts[Q].dtype = DType::I64; },
        "'q' is i64; attention takes f32, bf16 or f16");
    bad(
        [](auto &ts, auto &) {
          ts[K].shape = {2, 5, 3};
        },
        "differ in their last (head) dim");
    bad(
        [](auto &ts, auto &) {
          ts[V].shape = {2, 4, 6};
        },
        "differ in their key count");
    bad(
        [](auto &ts, auto &) {
          ts[K].shape = {3, 5, 4};
        },
        "'k' has shape [3,5,4]; expected q's rank and batch dims [2]");
    bad(
        [](auto &ts, auto &) {
          ts[Q].shape = {3, 4};
        },
        "attention needs rank >= 3");
    bad(
        [](auto &ts, auto &) {
          ts[M].shape = {3, 3, 5};
        },
        "which does not broadcast to [2,3,5]");
    bad(
        [](auto &ts, auto &) {
          ts[M].shape = {1, 1, 3, 5};
        },
        "which does not broadcast");
    bad(
        [](auto &ts, auto &) {
          ts[M].shape = {3, 4};
        },
        "which does not broadcast");
    bad(
        [](auto &ts, auto &) {
          ts[L].shape = {2, 5};
        },
        "'lse' has shape [2,5], expected [2,3]");
    bad(
        [](auto &, auto &in) {
          in.iattrs = {2, 0};
        },
        "attribute 'causal' must be 0 or 1, got 2");
    bad(
        [](auto &, auto &in) {
          in.iattrs = {0, 3};
        },
        "attribute 'seq_major' must be 0 or 1, got 3");
    bad([](auto &, auto &in) { in.iattrs = {0}; },
        "expects 2 or 3 integer attributes (causal, seq_major, [fused_qkv]), "
        "got 1");
    // fused_qkv (AttentionAttrs' third integer): q, k and v one
    // [B..., T, 3H, D] tensor.
    bad(
        [](auto &, auto &in) {
          in.iattrs = {0, 1, 2};
        },
        "attribute 'fused_qkv' must be 0 or 1, got 2");
    bad(
        [](auto &, auto &in) {
          in.iattrs = {0, 0, 1};
        },
        "fused_qkv: q, k and v need the sequence-major layout");
    bad(
        [](auto &, auto &in) {
          in.iattrs = {0, 1, 1};
        },
        "fused_qkv: input 0 'q', input 1 'k' and input 2 'v' must be one "
        "tensor (the QKV projection)");
    bad(
        [](auto &ts, auto &in) {
          in.iattrs = {0, 1, 1};
          in.inputs[1] = in.inputs[2] = in.inputs[0];
          ts[Q].shape = {2, 4, 4};
        },
        "fused_qkv: input 0 'q' has shape [2,4,4]; expected [batch..., rows, "
        "3 * heads, features]");
    // Sequence-major: q [2, 3, 4] is then T 2, H 3, D 4; k [2, 5, 4] has
    // 5 heads, not 3.
    bad(
        [](auto &, auto &in) {
          in.iattrs = {0, 1};
        },
        "expected q's rank and sequence-major batch dims [3]");
    bad([](auto &, auto &in) { in.fattrs = {}; },
        "expects 1 float attribute (scale), got 0");
    bad([](auto &, auto &in) { in.fattrs = {NAN}; },
        "the scale attribute must be finite");
    bad([](auto &, auto &in) { in.inputs.resize(2); }, "inputs (q, k, v");
    bad([](auto &, auto &in) { in.outputs.pop_back(); }, "outputs, got");
  }
  // Only the forward has out as its output, only the backward dout and the
  // gradients.
  expectCheckError(
      "attention",
      [](auto &ts, auto &) {
        ts[O].shape = {2, 3, 4};
      },
      "'out' has shape [2,3,4], expected [2,3,6]");
  expectCheckError(
      "attention", [](auto &ts, auto &) { ts[O].dtype = DType::F32; },
      "'out' is f32, expected bf16");
  expectCheckError(
      "attention_grad",
      [](auto &ts, auto &) {
        ts[DO].shape = {2, 3, 4};
      },
      "'dout' has shape [2,3,4], expected [2,3,6]");
  expectCheckError(
      "attention_grad",
      [](auto &ts, auto &) {
        ts[DK].shape = {2, 5, 6};
      },
      "'dk' has shape [2,5,6], expected [2,5,4]");
  expectCheckError(
      "attention_grad", [](auto &ts, auto &) { ts[DV].dtype = DType::F32; },
      "'dv' is f32, expected bf16 (gradients have q's type)");
  expectCheckError(
      "attention_grad", [](auto &ts, auto &) { ts[O].dtype = DType::F16; },
      "'out' is f16, expected bf16");
  expectCheckError(
      "attention_grad", [](auto &ts, auto &) { ts[DO].dtype = DType::F32; },
      "'dout' is f32, expected bf16 (dout has q's type)");
  expectCheckError(
      "attention_grad",
      [](auto &ts, auto &) {
        ts[O].shape = {2, 3, 5};
      },
      "'out' has shape [2,3,5], expected [2,3,6]");
}
