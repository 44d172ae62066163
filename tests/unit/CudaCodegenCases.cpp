//===- CudaCodegenCases.cpp - The fused regions CudaCodegenTest compiles --===//
#include "tests/unit/CudaCodegenCases.h"

#include "tests/unit/UnaryFnFusedCase.h"

using tcc::test::CudaCodegenCase;
using Case = CudaCodegenCase;

namespace {

/// `tcc.slice` of `from` to `to` (zero starts, unit steps) and the zero pad
/// back (`tcc.slice_grad`), both on the last axis of a rank-`rank` type.
std::string sliceAttrs(int rank, const std::string &sizes,
                       const std::string &steps = "") {
  std::string zeros, ones;
  for (int i = 0; i < rank; ++i) {
    zeros += std::string(i ? ", " : "") + "0";
    ones += std::string(i ? ", " : "") + "1";
  }
  return "{starts = array<i64: " + zeros + ">, sizes = array<i64: " + sizes +
         ">, steps = array<i64: " + (steps.empty() ? ones : steps) + ">}";
}
std::string padAttrs(int rank, const std::string &shape) {
  std::string zeros, ones;
  for (int i = 0; i < rank; ++i) {
    zeros += std::string(i ? ", " : "") + "0";
    ones += std::string(i ? ", " : "") + "1";
  }
  return "{shape = array<i64: " + shape + ">, starts = array<i64: " + zeros +
         ">, steps = array<i64: " + ones + ">}";
}

/// The unary family (UnaryFnFusedCase.h): UnaryFn.h in NVRTC's dialect.
Case unaryFnCase() {
  std::string ty = "tensor<6x33xf32>", types, values;
  for (int i = 0; i < ::tcc::test::kUnaryFnFamilyResults; ++i) {
    types += (i ? ", " : "") + ty;
    values += (i ? ", %r" : "%r") + std::to_string(i);
  }
  return {"unary_fn",
          "(%x: " + ty + ", %w: " + ty + ", %dy: " + ty + ") -> (" + types +
              ")",
          ::tcc::test::unaryFnFamilyBody() + "return " + values + " : " + types,
          "elements"};
}

} // namespace

// Each function's arguments are inputs, its results the region's outputs.
std::vector<Case> tcc::test::cudaCodegenCases() {
  return {
      {"elementwise",
       "(%x: tensor<4x8x20xf32>, %b: tensor<20xf32>, %m: tensor<4x1x20xf32>) "
       "-> (tensor<4x8x20xf32>, tensor<4x8x20xf32>)",
       R"(%0 = tcc.add %x, %b : (tensor<4x8x20xf32>, tensor<20xf32>) -> tensor<4x8x20xf32>
  %1 = tcc.gelu %0 {approximate = "none"} : tensor<4x8x20xf32>
  %c = tcc.constant dense<0.5> : tensor<f32>
  %2 = tcc.mul %1, %c : (tensor<4x8x20xf32>, tensor<f32>) -> tensor<4x8x20xf32>
  %3 = tcc.tanh %2 : tensor<4x8x20xf32>
  %4 = tcc.sub %3, %m : (tensor<4x8x20xf32>, tensor<4x1x20xf32>) -> tensor<4x8x20xf32>
  %5 = tcc.sigmoid %4 : tensor<4x8x20xf32>
  %6 = tcc.erf %5 : tensor<4x8x20xf32>
  %r0 = tcc.exp %6 : tensor<4x8x20xf32>
  %r1 = tcc.neg %0 : tensor<4x8x20xf32>
  return %r0, %r1 : tensor<4x8x20xf32>, tensor<4x8x20xf32>)",
       "elements"},
      unaryFnCase(),
      {"where",
       "(%c: tensor<3x1x16xi1>, %a: tensor<3x5x16xf32>, %s: tensor<f32>, %k: "
       "tensor<5x1xf32>) -> tensor<3x5x16xf32>",
       R"(%0 = tcc.where %c, %a, %s : (tensor<3x1x16xi1>, tensor<3x5x16xf32>, tensor<f32>) -> tensor<3x5x16xf32>
  %r = tcc.mul %0, %k : (tensor<3x5x16xf32>, tensor<5x1xf32>) -> tensor<3x5x16xf32>
  return %r : tensor<3x5x16xf32>)",
       "elements"},
      {"softmax",
       "(%x: tensor<2x6x37xf32>, %mask: tensor<6x37xf32>) -> "
       "tensor<2x6x37xf32>",
       R"(%0 = tcc.add %x, %mask : (tensor<2x6x37xf32>, tensor<6x37xf32>) -> tensor<2x6x37xf32>
  %r = tcc.softmax %0 {axis = 2 : i64} : tensor<2x6x37xf32>
  return %r : tensor<2x6x37xf32>)",
       "rows"},
      {"log_softmax",
       "(%x: tensor<5x70xf32>, %dy: tensor<5x70xf32>) -> (tensor<5x70xf32>, "
       "tensor<5x70xf32>)",
       R"(%0 = tcc.log_softmax %x {axis = 1 : i64} : tensor<5x70xf32>
  %1 = tcc.log_softmax_grad %dy, %0 {axis = 1 : i64} : tensor<5x70xf32>
  %2 = tcc.softmax %x {axis = 1 : i64} : tensor<5x70xf32>
  %3 = tcc.softmax_grad %dy, %2 {axis = 1 : i64} : tensor<5x70xf32>
  %r1 = tcc.add %1, %3 : (tensor<5x70xf32>, tensor<5x70xf32>) -> tensor<5x70xf32>
  return %0, %r1 : tensor<5x70xf32>, tensor<5x70xf32>)",
       "rows"},
      {"layer_norm",
       "(%x: tensor<3x4x24xf32>, %g: tensor<24xf32>, %b: tensor<24xf32>) -> "
       "(tensor<3x4x24xf32>, tensor<3x4x1xf32>, tensor<3x4x1xf32>)",
       R"(%y, %mean, %rstd = tcc.layer_norm %x, %g, %b {axis = 2 : i64, epsilon = 1.0e-05 : f64} : (tensor<3x4x24xf32>, tensor<24xf32>, tensor<24xf32>) -> (tensor<3x4x24xf32>, tensor<3x4x1xf32>, tensor<3x4x1xf32>)
  %r0 = tcc.gelu %y {approximate = "tanh"} : tensor<3x4x24xf32>
  return %r0, %mean, %rstd : tensor<3x4x24xf32>, tensor<3x4x1xf32>, tensor<3x4x1xf32>)",
       "rows"},
      // The logits are a region value in lanes' arrays: the pick shuffles.
      {"cross_entropy",
       "(%l: tensor<3x5x40xf32>, %bias: tensor<40xf32>, %labels: "
       "tensor<3x5xi64>) -> (tensor<f32>, tensor<3x5x40xf32>)",
       R"(%one = tcc.constant dense<1.0> : tensor<f32>
  %0 = tcc.add %l, %bias : (tensor<3x5x40xf32>, tensor<40xf32>) -> tensor<3x5x40xf32>
  %r0 = tcc.softmax_cross_entropy %0, %labels : (tensor<3x5x40xf32>, tensor<3x5xi64>) -> tensor<f32>
  %r1 = tcc.softmax_cross_entropy_grad %one, %0, %labels : (tensor<f32>, tensor<3x5x40xf32>, tensor<3x5xi64>) -> tensor<3x5x40xf32>
  return %r0, %r1 : tensor<f32>, tensor<3x5x40xf32>)",
       "rows"},
      // Ignored rows (label 0: Buffers makes the second one 0) and label
      // smoothing, a warp per row.
      {"cross_entropy_ignore_smoothing",
       "(%l: tensor<3x5x40xf32>, %bias: tensor<40xf32>, %labels: "
       "tensor<3x5xi64>) -> (tensor<f32>, tensor<3x5x40xf32>)",
       R"(%one = tcc.constant dense<0.25> : tensor<f32>
  %0 = tcc.add %l, %bias : (tensor<3x5x40xf32>, tensor<40xf32>) -> tensor<3x5x40xf32>
  %r0 = tcc.softmax_cross_entropy %0, %labels {ignore_index = 0 : i64, label_smoothing = 0.1 : f64} : (tensor<3x5x40xf32>, tensor<3x5xi64>) -> tensor<f32>
  %r1 = tcc.softmax_cross_entropy_grad %one, %0, %labels {ignore_index = 0 : i64, label_smoothing = 0.1 : f64} : (tensor<f32>, tensor<3x5x40xf32>, tensor<3x5xi64>) -> tensor<3x5x40xf32>
  return %r0, %r1 : tensor<f32>, tensor<3x5x40xf32>)",
       "rows"},
      // Wide rows (several columns per lane, a partial last one), logits
      // also an output: the pick reads them back from global memory.
      {"cross_entropy_wide",
       "(%l: tensor<9x300xf32>, %bias: tensor<300xf32>, %labels: "
       "tensor<9xi64>) -> (tensor<9x300xf32>, tensor<f32>)",
       R"(%0 = tcc.add %l, %bias : (tensor<9x300xf32>, tensor<300xf32>) -> tensor<9x300xf32>
  %r1 = tcc.softmax_cross_entropy %0, %labels : (tensor<9x300xf32>, tensor<9xi64>) -> tensor<f32>
  return %0, %r1 : tensor<9x300xf32>, tensor<f32>)",
       "rows"},
      // More than 16 slots a lane (1000 columns: 32, the last partial): the
      // biased logits live in lanes' arrays, from which the pick shuffles
      // every slot and keeps the label's, and the gradient's loop loads the
      // bias into a lane array before the loop that stores.
      {"cross_entropy_slots",
       "(%l: tensor<4x1000xf32>, %bias: tensor<1000xf32>, %labels: "
       "tensor<4xi64>) -> (tensor<f32>, tensor<4x1000xf32>)",
       R"(%one = tcc.constant dense<1.0> : tensor<f32>
  %0 = tcc.add %l, %bias : (tensor<4x1000xf32>, tensor<1000xf32>) -> tensor<4x1000xf32>
  %r0 = tcc.softmax_cross_entropy %0, %labels : (tensor<4x1000xf32>, tensor<4xi64>) -> tensor<f32>
  %r1 = tcc.softmax_cross_entropy_grad %one, %0, %labels : (tensor<f32>, tensor<4x1000xf32>, tensor<4xi64>) -> tensor<4x1000xf32>
  return %r0, %r1 : tensor<f32>, tensor<4x1000xf32>)",
       "rows"},
      // Rows wider than the per-lane arrays allow (2100 columns, 66 slots):
      // a block per row (160 threads: 5 warps); later slots recompute the
      // biased logits from the staged inputs, and the pick recomputes its
      // one column; the gradient reads nothing back.
      {"cross_entropy_vocab",
       "(%l: tensor<3x2100xf32>, %bias: tensor<2100xf32>, %labels: "
       "tensor<3xi64>) -> (tensor<f32>, tensor<3x2100xf32>)",
       R"(%one = tcc.constant dense<1.0> : tensor<f32>
  %half = tcc.constant dense<0.5> : tensor<f32>
  %0 = tcc.add %l, %bias : (tensor<3x2100xf32>, tensor<2100xf32>) -> tensor<3x2100xf32>
  %1 = tcc.mul %0, %half : (tensor<3x2100xf32>, tensor<f32>) -> tensor<3x2100xf32>
  %r0 = tcc.softmax_cross_entropy %1, %labels : (tensor<3x2100xf32>, tensor<3xi64>) -> tensor<f32>
  %r1 = tcc.softmax_cross_entropy_grad %one, %1, %labels : (tensor<f32>, tensor<3x2100xf32>, tensor<3xi64>) -> tensor<3x2100xf32>
  return %r0, %r1 : tensor<f32>, tensor<3x2100xf32>)",
       "block_rows"},
      // The same a block per row, with ignored rows and smoothing.
      {"cross_entropy_vocab_ignore_smoothing",
       "(%l: tensor<3x2100xf32>, %bias: tensor<2100xf32>, %labels: "
       "tensor<3xi64>) -> (tensor<f32>, tensor<3x2100xf32>)",
       R"(%one = tcc.constant dense<1.0> : tensor<f32>
  %0 = tcc.add %l, %bias : (tensor<3x2100xf32>, tensor<2100xf32>) -> tensor<3x2100xf32>
  %r0 = tcc.softmax_cross_entropy %0, %labels {ignore_index = 0 : i64, label_smoothing = 0.3 : f64} : (tensor<3x2100xf32>, tensor<3xi64>) -> tensor<f32>
  %r1 = tcc.softmax_cross_entropy_grad %one, %0, %labels {ignore_index = 0 : i64, label_smoothing = 0.3 : f64} : (tensor<f32>, tensor<3x2100xf32>, tensor<3xi64>) -> tensor<3x2100xf32>
  return %r0, %r1 : tensor<f32>, tensor<3x2100xf32>)",
       "block_rows"},
      // A block per row whose inputs do not all fit the staging budget
      // (99 KiB): the logits (78 KiB) are staged, the per-row offsets
      // (78 KiB more) are read from global memory at every pass.
      {"cross_entropy_unstaged",
       "(%l: tensor<3x20000xf32>, %m: tensor<3x20000xf32>, %labels: "
       "tensor<3xi64>) -> (tensor<f32>, tensor<3x20000xf32>)",
       R"(%one = tcc.constant dense<1.0> : tensor<f32>
  %0 = tcc.add %l, %m : (tensor<3x20000xf32>, tensor<3x20000xf32>) -> tensor<3x20000xf32>
  %r0 = tcc.softmax_cross_entropy %0, %labels : (tensor<3x20000xf32>, tensor<3xi64>) -> tensor<f32>
  %r1 = tcc.softmax_cross_entropy_grad %one, %0, %labels : (tensor<f32>, tensor<3x20000xf32>, tensor<3xi64>) -> tensor<3x20000xf32>
  return %r0, %r1 : tensor<f32>, tensor<3x20000xf32>)",
       "block_rows"},
      // Wide rows whose vector is also an output: read back from it.
      {"cross_entropy_vocab_out",
       "(%l: tensor<3x2100xf32>, %bias: tensor<2100xf32>, %labels: "
       "tensor<3xi64>) -> (tensor<3x2100xf32>, tensor<f32>)",
       R"(%0 = tcc.add %l, %bias : (tensor<3x2100xf32>, tensor<2100xf32>) -> tensor<3x2100xf32>
  %r1 = tcc.softmax_cross_entropy %0, %labels : (tensor<3x2100xf32>, tensor<3xi64>) -> tensor<f32>
  return %0, %r1 : tensor<3x2100xf32>, tensor<f32>)",
       "block_rows"},
      // Slices read as views of the inputs (a last-axis pad dropped, every
      // other row of the leading axes) into an element-wise region.
      {"slice_elements",
       "(%x: tensor<4x8x40xf32>, %s: tensor<8x16x40xf32>, %b: "
       "tensor<36xf32>) -> tensor<4x8x36xf32>",
       "%0 = tcc.slice %x " + sliceAttrs(3, "4, 8, 36") +
           R"( : tensor<4x8x40xf32> -> tensor<4x8x36xf32>
  %1 = tcc.slice %s )" +
           sliceAttrs(3, "4, 8, 36", "2, 2, 1") +
           R"( : tensor<8x16x40xf32> -> tensor<4x8x36xf32>
  %2 = tcc.add %0, %b : (tensor<4x8x36xf32>, tensor<36xf32>) -> tensor<4x8x36xf32>
  %3 = tcc.mul %2, %1 : (tensor<4x8x36xf32>, tensor<4x8x36xf32>) -> tensor<4x8x36xf32>
  %r = tcc.tanh %3 : tensor<4x8x36xf32>
  return %r : tensor<4x8x36xf32>)",
       "elements", 4 * 8 * 36},
      // A padded output of the grid-stride kernel (pad 12 of 20 columns:
      // the threads of columns 0..11 zero the pad), besides the unpadded.
      {"padded_elements",
       "(%x: tensor<4x8x20xf32>) -> (tensor<4x8x32xf32>, tensor<4x8x20xf32>)",
       R"(%0 = tcc.tanh %x : tensor<4x8x20xf32>
  %1 = tcc.mul %0, %x : (tensor<4x8x20xf32>, tensor<4x8x20xf32>) -> tensor<4x8x20xf32>
  %2 = tcc.slice_grad %1 )" +
           padAttrs(3, "4, 8, 32") +
           R"( : tensor<4x8x20xf32> -> tensor<4x8x32xf32>
  return %2, %1 : tensor<4x8x32xf32>, tensor<4x8x20xf32>)",
       "elements", 4 * 8 * 20},
      // The loss region of a padded vocabulary (warp per row): logits
      // read through the slice, the gradient written padded.
      {"cross_entropy_slice_padded",
       "(%l: tensor<3x5x48xf32>, %bias: tensor<44xf32>, %labels: "
       "tensor<3x5xi64>) -> (tensor<f32>, tensor<3x5x48xf32>)",
       R"(%one = tcc.constant dense<1.0> : tensor<f32>
  %0 = tcc.slice %l )" +
           sliceAttrs(3, "3, 5, 44") +
           R"( : tensor<3x5x48xf32> -> tensor<3x5x44xf32>
  %1 = tcc.add %0, %bias : (tensor<3x5x44xf32>, tensor<44xf32>) -> tensor<3x5x44xf32>
  %r0 = tcc.softmax_cross_entropy %1, %labels : (tensor<3x5x44xf32>, tensor<3x5xi64>) -> tensor<f32>
  %2 = tcc.softmax_cross_entropy_grad %one, %1, %labels : (tensor<f32>, tensor<3x5x44xf32>, tensor<3x5xi64>) -> tensor<3x5x44xf32>
  %r1 = tcc.slice_grad %2 )" +
           padAttrs(3, "3, 5, 48") +
           R"( : tensor<3x5x44xf32> -> tensor<3x5x48xf32>
  return %r0, %r1 : tensor<f32>, tensor<3x5x48xf32>)",
       "rows", 15 * 44},
      // Padded outputs that the row reductions read back (from the output,
      // at the padded row stride); pad 40 > 32 lanes.
      {"padded_rows_readback",
       "(%x: tensor<5x70xf32>, %b: tensor<70xf32>) -> (tensor<5x110xf32>, "
       "tensor<5x110xf32>, tensor<5x1xf32>)",
       R"(%0 = tcc.add %x, %b : (tensor<5x70xf32>, tensor<70xf32>) -> tensor<5x70xf32>
  %1 = tcc.softmax %0 {axis = 1 : i64} : tensor<5x70xf32>
  %p0 = tcc.slice_grad %0 )" +
           padAttrs(2, "5, 110") +
           R"( : tensor<5x70xf32> -> tensor<5x110xf32>
  %p1 = tcc.slice_grad %1 )" +
           padAttrs(2, "5, 110") +
           R"( : tensor<5x70xf32> -> tensor<5x110xf32>
  %m = tcc.reduce_mean %0 {axes = array<i64: 1>, keepdims = true} : tensor<5x70xf32> -> tensor<5x1xf32>
  return %p0, %p1, %m : tensor<5x110xf32>, tensor<5x110xf32>, tensor<5x1xf32>)",
       "rows", 5 * 70},
      // A vocabulary-wide row (2100 of 2112 columns, no per-lane arrays):
      // the biased logits are a padded output that later slots read back
      // at the padded stride; the gradient is padded too.
      {"cross_entropy_vocab_padded",
       "(%l: tensor<3x2112xf32>, %bias: tensor<2100xf32>, %labels: "
       "tensor<3xi64>) -> (tensor<3x2112xf32>, tensor<f32>, "
       "tensor<3x2112xf32>)",
       R"(%one = tcc.constant dense<1.0> : tensor<f32>
  %0 = tcc.slice %l )" +
           sliceAttrs(2, "3, 2100") +
           R"( : tensor<3x2112xf32> -> tensor<3x2100xf32>
  %1 = tcc.add %0, %bias : (tensor<3x2100xf32>, tensor<2100xf32>) -> tensor<3x2100xf32>
  %r0 = tcc.softmax_cross_entropy %1, %labels : (tensor<3x2100xf32>, tensor<3xi64>) -> tensor<f32>
  %2 = tcc.softmax_cross_entropy_grad %one, %1, %labels : (tensor<f32>, tensor<3x2100xf32>, tensor<3xi64>) -> tensor<3x2100xf32>
  %p1 = tcc.slice_grad %1 )" +
           padAttrs(2, "3, 2112") +
           R"( : tensor<3x2100xf32> -> tensor<3x2112xf32>
  %p2 = tcc.slice_grad %2 )" +
           padAttrs(2, "3, 2112") +
           R"( : tensor<3x2100xf32> -> tensor<3x2112xf32>
  return %p1, %r0, %p2 : tensor<3x2112xf32>, tensor<f32>, tensor<3x2112xf32>)",
       "block_rows", 3 * 2100},
      // Reductions and the pick read a strided slice of the input directly
      // (every other row, a pad dropped).
      {"cross_entropy_slice_rows",
       "(%x: tensor<6x4x40xf32>, %labels: tensor<3x4xi64>) -> "
       "(tensor<3x4x33xf32>, tensor<f32>)",
       "%0 = tcc.slice %x " + sliceAttrs(3, "3, 4, 33", "2, 1, 1") +
           R"( : tensor<6x4x40xf32> -> tensor<3x4x33xf32>
  %r0 = tcc.softmax %0 {axis = 2 : i64} : tensor<3x4x33xf32>
  %r1 = tcc.softmax_cross_entropy %0, %labels : (tensor<3x4x33xf32>, tensor<3x4xi64>) -> tensor<f32>
  return %r0, %r1 : tensor<3x4x33xf32>, tensor<f32>)",
       "rows", 12 * 33},
      // A layer norm's backward: dx and the scale and bias gradients (column
      // sums over 260 rows: 33 slices of 8, the last 4) in one region.
      {"layer_norm_grad",
       "(%dy: tensor<2x130x40xf32>, %x: tensor<2x130x40xf32>, %g: "
       "tensor<40xf32>, %m: tensor<2x130x1xf32>, %r: tensor<2x130x1xf32>) -> "
       "(tensor<2x130x40xf32>, tensor<40xf32>, tensor<40xf32>)",
       R"(%dx, %dg, %db = tcc.layer_norm_grad %dy, %x, %g, %m, %r {axis = 2 : i64} : (tensor<2x130x40xf32>, tensor<2x130x40xf32>, tensor<40xf32>, tensor<2x130x1xf32>, tensor<2x130x1xf32>) -> (tensor<2x130x40xf32>, tensor<40xf32>, tensor<40xf32>)
  return %dx, %dg, %db : tensor<2x130x40xf32>, tensor<40xf32>, tensor<40xf32>)",
       "rows"},
      // A bias gradient summed where its dy is computed: an element-wise
      // region with one column sum (33 columns: a lane's last slot partial).
      {"bias_grad",
       "(%dy: tensor<2x70x33xf32>, %y: tensor<2x70x33xf32>) -> "
       "(tensor<2x70x33xf32>, tensor<33xf32>)",
       R"(%d = tcc.relu_grad %dy, %y : tensor<2x70x33xf32>
  %db = tcc.reduce_sum %d {axes = array<i64: 0, 1>} : tensor<2x70x33xf32> -> tensor<33xf32>
  return %d, %db : tensor<2x70x33xf32>, tensor<33xf32>)",
       "rows"},
      {"reductions",
       "(%x: tensor<5x7x19xf32>) -> (tensor<5x7xf32>, tensor<5x7x19xf32>, "
       "tensor<5x7x1xf32>)",
       R"(%0 = tcc.reduce_mean %x {axes = array<i64: 2>, keepdims = true} : tensor<5x7x19xf32> -> tensor<5x7x1xf32>
  %1 = tcc.sub %x, %0 : (tensor<5x7x19xf32>, tensor<5x7x1xf32>) -> tensor<5x7x19xf32>
  %2 = tcc.mul %1, %1 : (tensor<5x7x19xf32>, tensor<5x7x19xf32>) -> tensor<5x7x19xf32>
  %r0 = tcc.reduce_sum %2 {axes = array<i64: 2>} : tensor<5x7x19xf32> -> tensor<5x7xf32>
  %r1 = tcc.exp %1 : tensor<5x7x19xf32>
  return %r0, %r1, %0 : tensor<5x7xf32>, tensor<5x7x19xf32>, tensor<5x7x1xf32>)",
       "rows"},
  };
}
