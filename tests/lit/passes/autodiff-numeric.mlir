// RUN: tcc-opt %s --tcc-build-loss --tcc-autodiff --mlir-print-op-generic | %python %S/Inputs/gradcheck.py --classes 3 | FileCheck %s
// RUN: tcc-opt %s --tcc-build-loss=loss=mse --tcc-autodiff --mlir-print-op-generic | %python %S/Inputs/gradcheck.py | FileCheck %s
// RUN: tcc-opt %s --tcc-build-loss="ignore-index=1 label-smoothing=0.2" --tcc-autodiff --mlir-print-op-generic | %python %S/Inputs/gradcheck.py --classes 3 | FileCheck %s

// Numerical check of every gradient rule: the gradients tcc-autodiff builds
// for this model (each differentiable op, broadcasting on both sides, batched
// matmuls in all transpose combinations, fan-out) must match central finite
// differences of the loss, for both losses. Inputs/gradcheck.py evaluates the
// IR with NumPy in float64.

// CHECK: gradcheck w: OK
// CHECK: gradcheck u: OK
// CHECK: gradcheck v: OK
// CHECK: gradcheck s: OK
// CHECK: gradcheck d: OK
// CHECK: gradcheck q: OK
// CHECK: gradcheck k: OK
// CHECK-NOT: FAIL

module attributes {tcc.batch = 2 : i64} {
  func.func @forward(%x: tensor<2x3x4xf32> {tcc.kind = "input", tcc.name = "x"},
                     %w: tensor<5x4xf32> {tcc.kind = "param", tcc.name = "w"},
                     %u: tensor<3x3xf32> {tcc.kind = "param", tcc.name = "u"},
                     %v: tensor<2x3x3xf32> {tcc.kind = "param", tcc.name = "v"},
                     %s: tensor<1x5xf32> {tcc.kind = "param", tcc.name = "s"},
                     %d: tensor<5xf32> {tcc.kind = "param", tcc.name = "d"},
                     %q: tensor<3x1xf32> {tcc.kind = "param", tcc.name = "q"},
                     %k: tensor<1x3x3xf32> {tcc.kind = "param", tcc.name = "k"})
      -> (tensor<2x5x3xf32> {tcc.name = "y"}) {
    %a = tcc.matmul %x, %w {transpose_rhs = true} : (tensor<2x3x4xf32>, tensor<5x4xf32>) -> tensor<2x3x5xf32>
    %b = tcc.matmul %u, %a {transpose_lhs = true} : (tensor<3x3xf32>, tensor<2x3x5xf32>) -> tensor<2x3x5xf32>
    %c = tcc.matmul %b, %v {transpose_lhs = true, transpose_rhs = true} : (tensor<2x3x5xf32>, tensor<2x3x3xf32>) -> tensor<2x5x3xf32>
    %c2 = tcc.matmul %c, %u : (tensor<2x5x3xf32>, tensor<3x3xf32>) -> tensor<2x5x3xf32>
    %e = tcc.transpose %c2 {perm = array<i64: 0, 2, 1>} : tensor<2x5x3xf32> -> tensor<2x3x5xf32>
    %e2 = tcc.matmul %k, %e : (tensor<1x3x3xf32>, tensor<2x3x5xf32>) -> tensor<2x3x5xf32>
    %f = tcc.mul %e2, %s : (tensor<2x3x5xf32>, tensor<1x5xf32>) -> tensor<2x3x5xf32>
    %g = tcc.div %f, %d : (tensor<2x3x5xf32>, tensor<5xf32>) -> tensor<2x3x5xf32>
    %h = tcc.sub %q, %g : (tensor<3x1xf32>, tensor<2x3x5xf32>) -> tensor<2x3x5xf32>
    %i = tcc.neg %h : tensor<2x3x5xf32>
    %j = tcc.relu %i : tensor<2x3x5xf32>
    %sm = tcc.softmax %j {axis = 1 : i64} : tensor<2x3x5xf32>
    %l = tcc.log_softmax %sm {axis = 2 : i64} : tensor<2x3x5xf32>
    %m = tcc.reduce_mean %l {axes = array<i64: 1>, keepdims = true} : tensor<2x3x5xf32> -> tensor<2x1x5xf32>
    %n = tcc.reduce_sum %g {axes = array<i64: 0, 2>} : tensor<2x3x5xf32> -> tensor<3xf32>
    %o = tcc.broadcast_to %n : tensor<3xf32> -> tensor<2x5x3xf32>
    %p = tcc.reshape %m : tensor<2x1x5xf32> -> tensor<2x5x1xf32>
    %r = tcc.add %p, %o : (tensor<2x5x1xf32>, tensor<2x5x3xf32>) -> tensor<2x5x3xf32>
    %t = tcc.mul %r, %c : (tensor<2x5x3xf32>, tensor<2x5x3xf32>) -> tensor<2x5x3xf32>
    return %t : tensor<2x5x3xf32>
  }
}
