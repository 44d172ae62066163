// RUN: tcc-opt %s --tcc-fuse-attention --split-input-file | FileCheck %s
// RUN: tcc-opt %s --split-input-file | FileCheck %s --check-prefix=OFF
// RUN: tcc-opt %s --tcc-fuse-attention --split-input-file 2>&1 >/dev/null \
// RUN:   | FileCheck %s --check-prefix=WARN

// nn.MultiheadAttention as torch.onnx.export writes it (the GPT example's
// block, T = 4, B*H = 2, D = 8): Q scaled by 1/sqrt(D) (here 1/2), K as
// Transpose(x, [1, 2, 0]) of [T, B*H, D], baddbmm's `* 1.0`s and the causal
// mask buffer, frozen. The two transposes of K compose into [1, 0, 2] and
// the mask becomes `causal`. Q, K and V are then all [T, B*H, D] values
// with their first two dims swapped: the op reads them sequence-major, with
// no transpose of its operands, and its result goes back to [B*H, T, D]
// through one transpose (which meets the graph's own transpose back to
// tokens in the canonicalizer).
// CHECK-LABEL: func.func @forward
// CHECK-SAME: (%[[X:[^:]+]]: tensor<4x2x8xf32> {{.*}}, %[[Y:[^:]+]]: tensor<4x2x8xf32> {{.*}}, %[[Z:[^:]+]]: tensor<4x2x8xf32>
// CHECK-NOT: tcc.transpose
// CHECK: %[[O:.+]], %{{.+}} = tcc.attention %[[X]], %[[Y]], %[[Z]] {causal = true, scale = 5.000000e-01 : f64, seq_major = true} : (tensor<4x2x8xf32>, tensor<4x2x8xf32>, tensor<4x2x8xf32>) -> (tensor<4x2x8xf32>, tensor<2x4xf32>)
// CHECK-NEXT: %[[T:.+]] = tcc.transpose %[[O]] {perm = array<i64: 1, 0, 2>} : tensor<4x2x8xf32> -> tensor<2x4x8xf32>
// CHECK-NEXT: return %[[T]]
// CHECK-NOT: tcc.softmax
// OFF-LABEL: func.func @forward
// OFF: tcc.softmax
// OFF-NOT: tcc.attention
func.func @forward(%x: tensor<4x2x8xf32> {tcc.kind = "input", tcc.name = "x"},
                   %y: tensor<4x2x8xf32> {tcc.kind = "param", tcc.name = "y"},
                   %z: tensor<4x2x8xf32> {tcc.kind = "param", tcc.name = "z"})
    -> tensor<2x4x8xf32> {
  %c = tcc.constant dense<2.0> : tensor<f32>
  %one = tcc.constant dense<1.0> : tensor<f32>
  %mask = tcc.constant dense<[[[0.0, 0xFF800000, 0xFF800000, 0xFF800000], [0.0, 0.0, 0xFF800000, 0xFF800000], [0.0, 0.0, 0.0, 0xFF800000], [0.0, 0.0, 0.0, 0.0]]]> : tensor<1x4x4xf32>
  %q = tcc.transpose %x {perm = array<i64: 1, 0, 2>} : tensor<4x2x8xf32> -> tensor<2x4x8xf32>
  %qs = tcc.div %q, %c : (tensor<2x4x8xf32>, tensor<f32>) -> tensor<2x4x8xf32>
  %kt = tcc.transpose %y {perm = array<i64: 1, 2, 0>} : tensor<4x2x8xf32> -> tensor<2x8x4xf32>
  %s = tcc.matmul %qs, %kt : (tensor<2x4x8xf32>, tensor<2x8x4xf32>) -> tensor<2x4x4xf32>
  %s1 = tcc.mul %s, %one : (tensor<2x4x4xf32>, tensor<f32>) -> tensor<2x4x4xf32>
  %m1 = tcc.mul %mask, %one : (tensor<1x4x4xf32>, tensor<f32>) -> tensor<1x4x4xf32>
  %s2 = tcc.add %s1, %m1 : (tensor<2x4x4xf32>, tensor<1x4x4xf32>) -> tensor<2x4x4xf32>
  %p = tcc.softmax %s2 {axis = 2 : i64} : tensor<2x4x4xf32>
  %v = tcc.transpose %z {perm = array<i64: 1, 0, 2>} : tensor<4x2x8xf32> -> tensor<2x4x8xf32>
  %o = tcc.matmul %p, %v : (tensor<2x4x4xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  return %o : tensor<2x4x8xf32>
}

// -----

// A [B, T, H, D] head split (q.view(B, T, H, D).transpose(1, 2)) with a
// mask per batch entry [B, H, Tq, Tk]: sequence-major at rank 4; the
// mask's batch dims are the entries' (B, H) either way.
// CHECK-LABEL: func.func @seq_major_rank4
// CHECK-SAME: (%[[Q:[^:]+]]: tensor<2x4x3x8xf32>, %[[K:[^:]+]]: tensor<2x5x3x8xf32>, %[[V:[^:]+]]: tensor<2x5x3x6xf32>, %[[M:[^:]+]]: tensor<2x3x4x5xf32>)
// CHECK-NEXT: %[[O:.+]], %{{.+}} = tcc.attention %[[Q]], %[[K]], %[[V]], %[[M]] {scale = 1.000000e+00 : f64, seq_major = true} : (tensor<2x4x3x8xf32>, tensor<2x5x3x8xf32>, tensor<2x5x3x6xf32>, tensor<2x3x4x5xf32>) -> (tensor<2x4x3x6xf32>, tensor<2x3x4xf32>)
// CHECK-NEXT: %[[T:.+]] = tcc.transpose %[[O]] {perm = array<i64: 0, 2, 1, 3>}
// CHECK-NEXT: return %[[T]]
func.func @seq_major_rank4(%q: tensor<2x4x3x8xf32>, %k: tensor<2x5x3x8xf32>,
                           %v: tensor<2x5x3x6xf32>, %m: tensor<2x3x4x5xf32>)
    -> tensor<2x3x4x6xf32> {
  %qt = tcc.transpose %q {perm = array<i64: 0, 2, 1, 3>} : tensor<2x4x3x8xf32> -> tensor<2x3x4x8xf32>
  %kt = tcc.transpose %k {perm = array<i64: 0, 2, 1, 3>} : tensor<2x5x3x8xf32> -> tensor<2x3x5x8xf32>
  %vt = tcc.transpose %v {perm = array<i64: 0, 2, 1, 3>} : tensor<2x5x3x6xf32> -> tensor<2x3x5x6xf32>
  %s = tcc.matmul %qt, %kt {transpose_rhs = true} : (tensor<2x3x4x8xf32>, tensor<2x3x5x8xf32>) -> tensor<2x3x4x5xf32>
  %s1 = tcc.add %s, %m : (tensor<2x3x4x5xf32>, tensor<2x3x4x5xf32>) -> tensor<2x3x4x5xf32>
  %p = tcc.softmax %s1 {axis = 3 : i64} : tensor<2x3x4x5xf32>
  %o = tcc.matmul %p, %vt : (tensor<2x3x4x5xf32>, tensor<2x3x5x6xf32>) -> tensor<2x3x4x6xf32>
  return %o : tensor<2x3x4x6xf32>
}

// -----

// Packed when any of q, k and v is not a head split (here v is a plain
// argument): the transposes of q and k stay, the op reads [B, H, T, D].
// CHECK-LABEL: func.func @seq_major_needs_all_three
// CHECK-SAME: (%[[Q:[^:]+]]: tensor<2x4x3x8xf32>, %[[K:[^:]+]]: tensor<2x5x3x8xf32>, %[[V:[^:]+]]: tensor<2x3x5x6xf32>)
// CHECK-DAG: %[[QT:.+]] = tcc.transpose %[[Q]]
// CHECK-DAG: %[[KT:.+]] = tcc.transpose %[[K]]
// CHECK: %[[O:.+]], %{{.+}} = tcc.attention %[[QT]], %[[KT]], %[[V]] {scale = 1.000000e+00 : f64} :
// CHECK-NEXT: return %[[O]]
func.func @seq_major_needs_all_three(%q: tensor<2x4x3x8xf32>, %k: tensor<2x5x3x8xf32>,
                                     %v: tensor<2x3x5x6xf32>)
    -> tensor<2x3x4x6xf32> {
  %qt = tcc.transpose %q {perm = array<i64: 0, 2, 1, 3>} : tensor<2x4x3x8xf32> -> tensor<2x3x4x8xf32>
  %kt = tcc.transpose %k {perm = array<i64: 0, 2, 1, 3>} : tensor<2x5x3x8xf32> -> tensor<2x3x5x8xf32>
  %s = tcc.matmul %qt, %kt {transpose_rhs = true} : (tensor<2x3x4x8xf32>, tensor<2x3x5x8xf32>) -> tensor<2x3x4x5xf32>
  %p = tcc.softmax %s {axis = 3 : i64} : tensor<2x3x4x5xf32>
  %o = tcc.matmul %p, %v : (tensor<2x3x4x5xf32>, tensor<2x3x5x6xf32>) -> tensor<2x3x4x6xf32>
  return %o : tensor<2x3x4x6xf32>
}

// -----

// [B, H, T, D] as a hand-written attention exports it: K with
// transpose_rhs, the scores divided by sqrt(D) and a second factor, a mask
// that is a graph input, added on the left. Tq != Tk, D != Dv.
// CHECK-LABEL: func.func @rank4
// CHECK-SAME: (%[[Q:[^:]+]]: tensor<2x3x4x8xf32>, %[[K:[^:]+]]: tensor<2x3x5x8xf32>, %[[V:[^:]+]]: tensor<2x3x5x6xf32>, %[[M:[^:]+]]: tensor<4x5xf32>)
// CHECK-NEXT: %[[O:.+]], %{{.+}} = tcc.attention %[[Q]], %[[K]], %[[V]], %[[M]] {scale = 2.500000e-01 : f64} : (tensor<2x3x4x8xf32>, tensor<2x3x5x8xf32>, tensor<2x3x5x6xf32>, tensor<4x5xf32>) -> (tensor<2x3x4x6xf32>, tensor<2x3x4xf32>)
// CHECK-NEXT: return %[[O]]
func.func @rank4(%q: tensor<2x3x4x8xf32>, %k: tensor<2x3x5x8xf32>,
                 %v: tensor<2x3x5x6xf32>, %m: tensor<4x5xf32>)
    -> tensor<2x3x4x6xf32> {
  %c = tcc.constant dense<4.0> : tensor<f32>
  %two = tcc.constant dense<2.0> : tensor<f32>
  %s = tcc.matmul %q, %k {transpose_rhs = true} : (tensor<2x3x4x8xf32>, tensor<2x3x5x8xf32>) -> tensor<2x3x4x5xf32>
  %s1 = tcc.div %s, %c : (tensor<2x3x4x5xf32>, tensor<f32>) -> tensor<2x3x4x5xf32>
  %s2 = tcc.mul %two, %s1 : (tensor<f32>, tensor<2x3x4x5xf32>) -> tensor<2x3x4x5xf32>
  %s3 = tcc.div %s2, %two : (tensor<2x3x4x5xf32>, tensor<f32>) -> tensor<2x3x4x5xf32>
  %s4 = tcc.add %m, %s3 : (tensor<4x5xf32>, tensor<2x3x4x5xf32>) -> tensor<2x3x4x5xf32>
  %p = tcc.softmax %s4 {axis = 3 : i64} : tensor<2x3x4x5xf32>
  %o = tcc.matmul %p, %v : (tensor<2x3x4x5xf32>, tensor<2x3x5x6xf32>) -> tensor<2x3x4x6xf32>
  return %o : tensor<2x3x4x6xf32>
}

// -----

// Masks in other shapes: a padding mask per batch entry [B, 1, 1, Tk] is
// broadcast over the heads; a [Tk] mask becomes [1, Tk]; a [H, Tq, Tk]
// mask becomes [1, H, Tq, Tk] broadcast over the batch.
// CHECK-LABEL: func.func @mask_shapes
// CHECK-SAME: (%[[Q:[^:]+]]: tensor<2x3x4x8xf32>, %[[PAD:[^:]+]]: tensor<2x1x1x4xf32>, %[[ROW:[^:]+]]: tensor<4xf32>, %[[HEAD:[^:]+]]: tensor<3x4x4xf32>)
// CHECK: %[[B:.+]] = tcc.broadcast_to %[[PAD]] : tensor<2x1x1x4xf32> -> tensor<2x3x1x4xf32>
// CHECK: tcc.attention %[[Q]], %[[Q]], %[[Q]], %[[B]] {scale = 1.000000e+00 : f64}
// CHECK: %[[R:.+]] = tcc.reshape %[[ROW]] : tensor<4xf32> -> tensor<1x4xf32>
// CHECK: tcc.attention %[[Q]], %[[Q]], %[[Q]], %[[R]] {scale = 1.000000e+00 : f64}
// CHECK: %[[H1:.+]] = tcc.reshape %[[HEAD]] : tensor<3x4x4xf32> -> tensor<1x3x4x4xf32>
// CHECK: %[[H2:.+]] = tcc.broadcast_to %[[H1]] : tensor<1x3x4x4xf32> -> tensor<2x3x4x4xf32>
// CHECK: tcc.attention %[[Q]], %[[Q]], %[[Q]], %[[H2]] {scale = 1.000000e+00 : f64}
// CHECK-NOT: tcc.softmax
func.func @mask_shapes(%q: tensor<2x3x4x8xf32>, %pad: tensor<2x1x1x4xf32>,
                       %row: tensor<4xf32>, %head: tensor<3x4x4xf32>)
    -> (tensor<2x3x4x8xf32>, tensor<2x3x4x8xf32>, tensor<2x3x4x8xf32>) {
  %s = tcc.matmul %q, %q {transpose_rhs = true} : (tensor<2x3x4x8xf32>, tensor<2x3x4x8xf32>) -> tensor<2x3x4x4xf32>
  %a = tcc.add %s, %pad : (tensor<2x3x4x4xf32>, tensor<2x1x1x4xf32>) -> tensor<2x3x4x4xf32>
  %p = tcc.softmax %a {axis = 3 : i64} : tensor<2x3x4x4xf32>
  %o = tcc.matmul %p, %q : (tensor<2x3x4x4xf32>, tensor<2x3x4x8xf32>) -> tensor<2x3x4x8xf32>
  %s2 = tcc.matmul %q, %q {transpose_rhs = true} : (tensor<2x3x4x8xf32>, tensor<2x3x4x8xf32>) -> tensor<2x3x4x4xf32>
  %a2 = tcc.add %s2, %row : (tensor<2x3x4x4xf32>, tensor<4xf32>) -> tensor<2x3x4x4xf32>
  %p2 = tcc.softmax %a2 {axis = 3 : i64} : tensor<2x3x4x4xf32>
  %o2 = tcc.matmul %p2, %q : (tensor<2x3x4x4xf32>, tensor<2x3x4x8xf32>) -> tensor<2x3x4x8xf32>
  %s3 = tcc.matmul %q, %q {transpose_rhs = true} : (tensor<2x3x4x8xf32>, tensor<2x3x4x8xf32>) -> tensor<2x3x4x4xf32>
  %a3 = tcc.add %s3, %head : (tensor<2x3x4x4xf32>, tensor<3x4x4xf32>) -> tensor<2x3x4x4xf32>
  %p3 = tcc.softmax %a3 {axis = 3 : i64} : tensor<2x3x4x4xf32>
  %o3 = tcc.matmul %p3, %q : (tensor<2x3x4x4xf32>, tensor<2x3x4x8xf32>) -> tensor<2x3x4x8xf32>
  return %o, %o2, %o3 : tensor<2x3x4x8xf32>, tensor<2x3x4x8xf32>, tensor<2x3x4x8xf32>
}

// -----

// Constant masks: all zero is dropped; a mask that is not the causal
// pattern (here it also hides the diagonal) stays; a transposed v and a
// k^T that is no transpose get a transpose each; a k^T that transposes the
// last two dims is undone without one.
// CHECK-LABEL: func.func @constant_masks
// CHECK-SAME: (%[[Q:[^:]+]]: tensor<2x3x4xf32>, %[[KT:[^:]+]]: tensor<2x4x3xf32>, %[[VT:[^:]+]]: tensor<2x4x3xf32>)
// CHECK: %[[K:.+]] = tcc.transpose %[[KT]] {perm = array<i64: 0, 2, 1>} : tensor<2x4x3xf32> -> tensor<2x3x4xf32>
// CHECK: %[[V:.+]] = tcc.transpose %[[VT]] {perm = array<i64: 0, 2, 1>} : tensor<2x4x3xf32> -> tensor<2x3x4xf32>
// CHECK: tcc.attention %[[Q]], %[[K]], %[[V]] {scale = 1.000000e+00 : f64}
// CHECK: %[[M:.+]] = tcc.constant dense<{{.+}}> : tensor<3x3xf32>
// CHECK: tcc.attention %[[Q]], %[[Q]], %[[Q]], %[[M]] {scale = 1.000000e+00 : f64}
// CHECK-NOT: tcc.softmax
func.func @constant_masks(%q: tensor<2x3x4xf32>, %kt: tensor<2x4x3xf32>,
                          %vt: tensor<2x4x3xf32>)
    -> (tensor<2x3x4xf32>, tensor<2x3x4xf32>) {
  %zero = tcc.constant dense<0.0> : tensor<3x3xf32>
  %s = tcc.matmul %q, %kt : (tensor<2x3x4xf32>, tensor<2x4x3xf32>) -> tensor<2x3x3xf32>
  %a = tcc.add %s, %zero : (tensor<2x3x3xf32>, tensor<3x3xf32>) -> tensor<2x3x3xf32>
  %p = tcc.softmax %a {axis = 2 : i64} : tensor<2x3x3xf32>
  %o = tcc.matmul %p, %vt {transpose_rhs = true} : (tensor<2x3x3xf32>, tensor<2x4x3xf32>) -> tensor<2x3x4xf32>
  %m = tcc.constant dense<[[0.0, 0xFF800000, 0xFF800000], [0xFF800000, 0.0, 0xFF800000], [0.0, 0xFF800000, 0.0]]> : tensor<3x3xf32>
  %t = tcc.transpose %q {perm = array<i64: 0, 2, 1>} : tensor<2x3x4xf32> -> tensor<2x4x3xf32>
  %s2 = tcc.matmul %q, %t : (tensor<2x3x4xf32>, tensor<2x4x3xf32>) -> tensor<2x3x3xf32>
  %a2 = tcc.add %s2, %m : (tensor<2x3x3xf32>, tensor<3x3xf32>) -> tensor<2x3x3xf32>
  %p2 = tcc.softmax %a2 {axis = 2 : i64} : tensor<2x3x3xf32>
  %o2 = tcc.matmul %p2, %q : (tensor<2x3x3xf32>, tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  return %o, %o2 : tensor<2x3x4xf32>, tensor<2x3x4xf32>
}

// -----

// Left alone: a mask computed from a parameter (it would need a gradient),
// probabilities read twice, scores read twice, a scale applied after the
// mask, k broadcast over the batch, a softmax over another axis.
// The trainable mask is the one case the pass warns about (exported mask
// buffers are initializers, hence params, unless frozen).
// WARN: warning: attention left unfused: its mask depends on the trainable parameter 'w' (freeze it with --freeze w to fuse)
// WARN-NOT: warning
// CHECK-LABEL: func.func @unfused
// CHECK-NOT: tcc.attention
// CHECK-COUNT-6: tcc.softmax
// CHECK-NOT: tcc.attention
func.func @unfused(%q: tensor<2x3x4xf32> {tcc.kind = "input", tcc.name = "q"},
                   %w: tensor<3x3xf32> {tcc.kind = "param", tcc.name = "w"},
                   %k2: tensor<3x4xf32> {tcc.kind = "input", tcc.name = "k"},
                   %m: tensor<3x3xf32> {tcc.kind = "input", tcc.name = "m"})
    -> (tensor<2x3x4xf32>, tensor<2x3x3xf32>, tensor<2x3x4xf32>,
        tensor<2x3x3xf32>, tensor<2x3x4xf32>, tensor<2x3x4xf32>,
        tensor<2x3x4xf32>, tensor<2x3x4xf32>) {
  %c = tcc.constant dense<0.5> : tensor<f32>
  %wm = tcc.mul %w, %c : (tensor<3x3xf32>, tensor<f32>) -> tensor<3x3xf32>
  %s = tcc.matmul %q, %q {transpose_rhs = true} : (tensor<2x3x4xf32>, tensor<2x3x4xf32>) -> tensor<2x3x3xf32>
  %a = tcc.add %s, %wm : (tensor<2x3x3xf32>, tensor<3x3xf32>) -> tensor<2x3x3xf32>
  %p = tcc.softmax %a {axis = 2 : i64} : tensor<2x3x3xf32>
  %o = tcc.matmul %p, %q : (tensor<2x3x3xf32>, tensor<2x3x4xf32>) -> tensor<2x3x4xf32>

  %s2 = tcc.matmul %q, %q {transpose_rhs = true} : (tensor<2x3x4xf32>, tensor<2x3x4xf32>) -> tensor<2x3x3xf32>
  %p2 = tcc.softmax %s2 {axis = 2 : i64} : tensor<2x3x3xf32>
  %o2 = tcc.matmul %p2, %q : (tensor<2x3x3xf32>, tensor<2x3x4xf32>) -> tensor<2x3x4xf32>

  %s3 = tcc.matmul %q, %q {transpose_rhs = true} : (tensor<2x3x4xf32>, tensor<2x3x4xf32>) -> tensor<2x3x3xf32>
  %p3 = tcc.softmax %s3 {axis = 2 : i64} : tensor<2x3x3xf32>
  %o3 = tcc.matmul %p3, %q : (tensor<2x3x3xf32>, tensor<2x3x4xf32>) -> tensor<2x3x4xf32>

  %s4 = tcc.matmul %q, %q {transpose_rhs = true} : (tensor<2x3x4xf32>, tensor<2x3x4xf32>) -> tensor<2x3x3xf32>
  %a4 = tcc.add %s4, %m : (tensor<2x3x3xf32>, tensor<3x3xf32>) -> tensor<2x3x3xf32>
  %b4 = tcc.mul %a4, %c : (tensor<2x3x3xf32>, tensor<f32>) -> tensor<2x3x3xf32>
  %p4 = tcc.softmax %b4 {axis = 2 : i64} : tensor<2x3x3xf32>
  %o4 = tcc.matmul %p4, %q : (tensor<2x3x3xf32>, tensor<2x3x4xf32>) -> tensor<2x3x4xf32>

  %s5 = tcc.matmul %q, %k2 {transpose_rhs = true} : (tensor<2x3x4xf32>, tensor<3x4xf32>) -> tensor<2x3x3xf32>
  %p5 = tcc.softmax %s5 {axis = 2 : i64} : tensor<2x3x3xf32>
  %o5 = tcc.matmul %p5, %q : (tensor<2x3x3xf32>, tensor<2x3x4xf32>) -> tensor<2x3x4xf32>

  %s6 = tcc.matmul %q, %q {transpose_rhs = true} : (tensor<2x3x4xf32>, tensor<2x3x4xf32>) -> tensor<2x3x3xf32>
  %p6 = tcc.softmax %s6 {axis = 1 : i64} : tensor<2x3x3xf32>
  %o6 = tcc.matmul %p6, %q : (tensor<2x3x3xf32>, tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  return %o, %p2, %o2, %s3, %o3, %o4, %o5, %o6 : tensor<2x3x4xf32>, tensor<2x3x3xf32>, tensor<2x3x4xf32>, tensor<2x3x3xf32>, tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<2x3x4xf32>
}

// -----

// PyTorch 2.x's F.multi_head_attention_forward (after the canonicalizer):
// [T, B*H, D] heads transposed to [B*H, T, D] and viewed as [B, H, T, D]
// for scaled_dot_product_attention, whose export scales q and k by
// sqrt(scale) each. The op attends on the rank-3 values, sequence-major,
// and its result is viewed back.
// CHECK-LABEL: func.func @torch2_heads
// CHECK-SAME: (%[[X:[^:]+]]: tensor<4x4x8xf32>, %[[Y:[^:]+]]: tensor<4x4x8xf32>, %[[Z:[^:]+]]: tensor<4x4x8xf32>)
// CHECK-NOT: tcc.matmul
// CHECK: %[[O:.+]], %{{.+}} = tcc.attention %[[X]], %[[Y]], %[[Z]] {causal = true, scale = 2.500000e-01 : f64, seq_major = true} : (tensor<4x4x8xf32>, tensor<4x4x8xf32>, tensor<4x4x8xf32>) -> (tensor<4x4x8xf32>, tensor<4x4xf32>)
// CHECK-NEXT: %[[T:.+]] = tcc.transpose %[[O]] {perm = array<i64: 1, 0, 2>}
// CHECK-NEXT: %[[R:.+]] = tcc.reshape %[[T]] : tensor<4x4x8xf32> -> tensor<2x2x4x8xf32>
// CHECK-NEXT: return %[[R]]
func.func @torch2_heads(%x: tensor<4x4x8xf32>, %y: tensor<4x4x8xf32>,
                        %z: tensor<4x4x8xf32>) -> tensor<2x2x4x8xf32> {
  %c = tcc.constant dense<0.5> : tensor<1xf32>
  %mask = tcc.constant dense<[[0.0, 0xFF800000, 0xFF800000, 0xFF800000], [0.0, 0.0, 0xFF800000, 0xFF800000], [0.0, 0.0, 0.0, 0xFF800000], [0.0, 0.0, 0.0, 0.0]]> : tensor<4x4xf32>
  %q3 = tcc.transpose %x {perm = array<i64: 1, 0, 2>} : tensor<4x4x8xf32> -> tensor<4x4x8xf32>
  %q = tcc.reshape %q3 : tensor<4x4x8xf32> -> tensor<2x2x4x8xf32>
  %k3 = tcc.transpose %y {perm = array<i64: 1, 2, 0>} : tensor<4x4x8xf32> -> tensor<4x8x4xf32>
  %kt = tcc.reshape %k3 : tensor<4x8x4xf32> -> tensor<2x2x8x4xf32>
  %v3 = tcc.transpose %z {perm = array<i64: 1, 0, 2>} : tensor<4x4x8xf32> -> tensor<4x4x8xf32>
  %v = tcc.reshape %v3 : tensor<4x4x8xf32> -> tensor<2x2x4x8xf32>
  %qs = tcc.mul %q, %c : (tensor<2x2x4x8xf32>, tensor<1xf32>) -> tensor<2x2x4x8xf32>
  %ks = tcc.mul %kt, %c : (tensor<2x2x8x4xf32>, tensor<1xf32>) -> tensor<2x2x8x4xf32>
  %s = tcc.matmul %qs, %ks : (tensor<2x2x4x8xf32>, tensor<2x2x8x4xf32>) -> tensor<2x2x4x4xf32>
  %s1 = tcc.add %s, %mask : (tensor<2x2x4x4xf32>, tensor<4x4xf32>) -> tensor<2x2x4x4xf32>
  %p = tcc.softmax %s1 {axis = 3 : i64} : tensor<2x2x4x4xf32>
  %o = tcc.matmul %p, %v : (tensor<2x2x4x4xf32>, tensor<2x2x4x8xf32>) -> tensor<2x2x4x8xf32>
  return %o : tensor<2x2x4x8xf32>
}

// -----

// The same with a mask per head [B, H, T, T]: the views stay, and the op
// attends at rank 4 (its mask's batch dims are the entries').
// CHECK-LABEL: func.func @torch2_heads_mask_per_head
// CHECK: tcc.attention {{.+}} : (tensor<2x2x4x8xf32>, tensor<2x2x4x8xf32>, tensor<2x2x4x8xf32>, tensor<2x2x4x4xf32>)
func.func @torch2_heads_mask_per_head(%x: tensor<4x4x8xf32>, %y: tensor<4x4x8xf32>,
                                      %z: tensor<4x4x8xf32>, %mask: tensor<2x2x4x4xf32>) -> tensor<2x2x4x8xf32> {
  %q3 = tcc.transpose %x {perm = array<i64: 1, 0, 2>} : tensor<4x4x8xf32> -> tensor<4x4x8xf32>
  %q = tcc.reshape %q3 : tensor<4x4x8xf32> -> tensor<2x2x4x8xf32>
  %k3 = tcc.transpose %y {perm = array<i64: 1, 2, 0>} : tensor<4x4x8xf32> -> tensor<4x8x4xf32>
  %kt = tcc.reshape %k3 : tensor<4x8x4xf32> -> tensor<2x2x8x4xf32>
  %v3 = tcc.transpose %z {perm = array<i64: 1, 0, 2>} : tensor<4x4x8xf32> -> tensor<4x4x8xf32>
  %v = tcc.reshape %v3 : tensor<4x4x8xf32> -> tensor<2x2x4x8xf32>
  %s = tcc.matmul %q, %kt : (tensor<2x2x4x8xf32>, tensor<2x2x8x4xf32>) -> tensor<2x2x4x4xf32>
  %s1 = tcc.add %s, %mask : (tensor<2x2x4x4xf32>, tensor<2x2x4x4xf32>) -> tensor<2x2x4x4xf32>
  %p = tcc.softmax %s1 {axis = 3 : i64} : tensor<2x2x4x4xf32>
  %o = tcc.matmul %p, %v : (tensor<2x2x4x4xf32>, tensor<2x2x4x8xf32>) -> tensor<2x2x4x8xf32>
  return %o : tensor<2x2x4x8xf32>
}
