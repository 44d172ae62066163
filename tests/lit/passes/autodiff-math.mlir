// RUN: tcc-opt %s --tcc-autodiff --split-input-file | FileCheck %s

// The gradient rules of the math ops. Each case feeds the op under test into
// mse_loss against a data target, so its result gradient is
// %[[DY]] = mse_loss_grad(1.0, y, target).

// exp uses its output, log its input, sqrt/tanh/sigmoid their output and
// erf its input.
// CHECK-LABEL: func.func @train_step
// CHECK-SAME:    (%[[A:[^:]+]]: tensor<4xf32>
// CHECK:         %[[E:.+]] = tcc.exp %[[A]]
// CHECK-NEXT:    %[[L:.+]] = tcc.log %[[E]]
// CHECK-NEXT:    %[[S:.+]] = tcc.sqrt %[[L]]
// CHECK-NEXT:    %[[T:.+]] = tcc.tanh %[[S]]
// CHECK-NEXT:    %[[G:.+]] = tcc.sigmoid %[[T]]
// CHECK-NEXT:    %[[R:.+]] = tcc.erf %[[G]]
// CHECK:         %[[DY:.+]] = tcc.mse_loss_grad
// CHECK-NEXT:    %[[D1:.+]] = tcc.erf_grad %[[DY]], %[[G]] : tensor<4xf32>
// CHECK-NEXT:    %[[D2:.+]] = tcc.sigmoid_grad %[[D1]], %[[G]] : tensor<4xf32>
// CHECK-NEXT:    %[[D3:.+]] = tcc.tanh_grad %[[D2]], %[[T]] : tensor<4xf32>
// CHECK-NEXT:    %[[D4:.+]] = tcc.sqrt_grad %[[D3]], %[[S]] : tensor<4xf32>
// CHECK-NEXT:    %[[D5:.+]] = tcc.div %[[D4]], %[[E]] : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
// CHECK-NEXT:    %[[D6:.+]] = tcc.mul %[[D5]], %[[E]] : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
// CHECK-NEXT:    return %{{.+}}, %[[D6]]
func.func @train_step(%a: tensor<4xf32> {tcc.kind = "param", tcc.name = "a"},
                      %t: tensor<4xf32> {tcc.kind = "input", tcc.name = "labels"})
    -> (tensor<f32> {tcc.kind = "loss"}) {
  %0 = tcc.exp %a : tensor<4xf32>
  %1 = tcc.log %0 : tensor<4xf32>
  %2 = tcc.sqrt %1 : tensor<4xf32>
  %3 = tcc.tanh %2 : tensor<4xf32>
  %4 = tcc.sigmoid %3 : tensor<4xf32>
  %5 = tcc.erf %4 : tensor<4xf32>
  %l = tcc.mse_loss %5, %t : (tensor<4xf32>, tensor<4xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// gelu and pow_scalar: one backward op each, from the input.
// CHECK-LABEL: func.func @train_step
// CHECK-SAME:    (%[[A:[^:]+]]: tensor<4xf32>
// CHECK:         %[[G:.+]] = tcc.gelu %[[A]] {approximate = "tanh"}
// CHECK-NEXT:    %[[P:.+]] = tcc.pow_scalar %[[G]] {exponent = 3.000000e+00 : f64}
// CHECK:         %[[DY:.+]] = tcc.mse_loss_grad
// CHECK-NEXT:    %[[D1:.+]] = tcc.pow_scalar_grad %[[DY]], %[[G]] {exponent = 3.000000e+00 : f64} : tensor<4xf32>
// CHECK-NEXT:    %[[D2:.+]] = tcc.gelu_grad %[[D1]], %[[A]] {approximate = "tanh"} : tensor<4xf32>
// CHECK-NEXT:    return %{{.+}}, %[[D2]]
func.func @train_step(%a: tensor<4xf32> {tcc.kind = "param", tcc.name = "a"},
                      %t: tensor<4xf32> {tcc.kind = "input", tcc.name = "labels"})
    -> (tensor<f32> {tcc.kind = "loss"}) {
  %0 = tcc.gelu %a {approximate = "tanh"} : tensor<4xf32>
  %1 = tcc.pow_scalar %0 {exponent = 3.0 : f64} : tensor<4xf32>
  %l = tcc.mse_loss %1, %t : (tensor<4xf32>, tensor<4xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// pow with a broadcast exponent: the exponent is broadcast for pow_grad and
// its gradient summed back.
// CHECK-LABEL: func.func @train_step
// CHECK-SAME:    (%[[A:[^:]+]]: tensor<2x4xf32> {{[^)]+}}, %[[B:[^:]+]]: tensor<4xf32>
// CHECK:         %[[DY:.+]] = tcc.mse_loss_grad
// CHECK-NEXT:    %[[BB:.+]] = tcc.broadcast_to %[[B]] : tensor<4xf32> -> tensor<2x4xf32>
// CHECK-NEXT:    %[[DA:.+]], %[[DB:.+]] = tcc.pow_grad %[[DY]], %[[A]], %[[BB]] : tensor<2x4xf32>
// CHECK-NEXT:    %[[SB:.+]] = tcc.reduce_sum %[[DB]] {axes = array<i64: 0>} : tensor<2x4xf32> -> tensor<4xf32>
// CHECK-NEXT:    return %{{.+}}, %[[DA]], %[[SB]]
func.func @train_step(%a: tensor<2x4xf32> {tcc.kind = "param", tcc.name = "a"},
                      %b: tensor<4xf32> {tcc.kind = "param", tcc.name = "b"},
                      %t: tensor<2x4xf32> {tcc.kind = "input", tcc.name = "labels"})
    -> (tensor<f32> {tcc.kind = "loss"}) {
  %0 = tcc.pow %a, %b : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  %l = tcc.mse_loss %0, %t : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// layer_norm: one layer_norm_grad from the saved statistics.
// CHECK-LABEL: func.func @train_step
// CHECK-SAME:    (%[[X:[^:]+]]: tensor<2x4xf32> {{[^)]+}}, %[[S:[^:]+]]: tensor<4xf32> {{[^)]+}}, %[[B:[^:]+]]: tensor<4xf32>
// CHECK:         %[[Y:.+]], %[[M:.+]], %[[R:.+]] = tcc.layer_norm %[[X]], %[[S]], %[[B]]
// CHECK:         %[[DY:.+]] = tcc.mse_loss_grad
// CHECK-NEXT:    %[[DX:.+]], %[[DS:.+]], %[[DB:.+]] = tcc.layer_norm_grad %[[DY]], %[[X]], %[[S]], %[[M]], %[[R]] {axis = 1 : i64}
// CHECK-NEXT:    return %{{.+}}, %[[DX]], %[[DS]], %[[DB]]
func.func @train_step(%x: tensor<2x4xf32> {tcc.kind = "param", tcc.name = "x"},
                      %s: tensor<4xf32> {tcc.kind = "param", tcc.name = "s"},
                      %b: tensor<4xf32> {tcc.kind = "param", tcc.name = "b"},
                      %t: tensor<2x4xf32> {tcc.kind = "input", tcc.name = "labels"})
    -> (tensor<f32> {tcc.kind = "loss"}) {
  %y, %m, %r = tcc.layer_norm %x, %s, %b {axis = 1 : i64, epsilon = 1.0e-5 : f64} : (tensor<2x4xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<2x4xf32>, tensor<2x1xf32>, tensor<2x1xf32>)
  %l = tcc.mse_loss %y, %t : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// layer_norm whose statistics are used too: their gradients add to dx
// (1/N for the mean, -rstd^3 (x - mean) / N for rstd).
// CHECK-LABEL: func.func @train_step
// CHECK-SAME:    (%[[X:[^:]+]]: tensor<2x4xf32>
// CHECK:         %[[Y:.+]], %[[M:.+]], %[[R:.+]] = tcc.layer_norm %[[X]]
// CHECK:         %[[DX:.+]], %{{.+}}, %{{.+}} = tcc.layer_norm_grad
// CHECK:         %[[INVN:.+]] = tcc.constant dense<2.500000e-01> : tensor<f32>
// CHECK:         %[[GM:.+]] = tcc.mul %{{.+}}, %[[INVN]] : (tensor<2x1xf32>, tensor<f32>) -> tensor<2x1xf32>
// CHECK-NEXT:    %[[GMB:.+]] = tcc.broadcast_to %[[GM]] : tensor<2x1xf32> -> tensor<2x4xf32>
// CHECK-NEXT:    %[[DX2:.+]] = tcc.add %[[DX]], %[[GMB]]
// CHECK-NEXT:    %[[C:.+]] = tcc.sub %[[X]], %[[M]] : (tensor<2x4xf32>, tensor<2x1xf32>) -> tensor<2x4xf32>
// CHECK-NEXT:    %[[R3:.+]] = tcc.pow_scalar %[[R]] {exponent = 3.000000e+00 : f64}
// CHECK-NEXT:    %[[K:.+]] = tcc.mul %{{.+}}, %[[R3]]
// CHECK-NEXT:    %[[NEG:.+]] = tcc.constant dense<-2.500000e-01> : tensor<f32>
// CHECK-NEXT:    %[[K2:.+]] = tcc.mul %[[K]], %[[NEG]]
// CHECK-NEXT:    %[[T:.+]] = tcc.mul %[[C]], %[[K2]] : (tensor<2x4xf32>, tensor<2x1xf32>) -> tensor<2x4xf32>
// CHECK-NEXT:    %[[DX3:.+]] = tcc.add %[[DX2]], %[[T]]
// CHECK-NEXT:    return %{{.+}}, %[[DX3]]
func.func @train_step(%x: tensor<2x4xf32> {tcc.kind = "param", tcc.name = "x"},
                      %t: tensor<2x4xf32> {tcc.kind = "input", tcc.name = "labels"})
    -> (tensor<f32> {tcc.kind = "loss"}) {
  %s = tcc.constant dense<1.0> : tensor<4xf32>
  %b = tcc.constant dense<0.0> : tensor<4xf32>
  %y, %m, %r = tcc.layer_norm %x, %s, %b {axis = 1 : i64, epsilon = 1.0e-5 : f64} : (tensor<2x4xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<2x4xf32>, tensor<2x1xf32>, tensor<2x1xf32>)
  %0 = tcc.add %y, %m : (tensor<2x4xf32>, tensor<2x1xf32>) -> tensor<2x4xf32>
  %1 = tcc.mul %0, %r : (tensor<2x4xf32>, tensor<2x1xf32>) -> tensor<2x4xf32>
  %l = tcc.mse_loss %1, %t : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// dropout: dy times the saved mask; the step counter gets no gradient.
// CHECK-LABEL: func.func @train_step
// CHECK:         %[[Y:.+]], %[[MASK:.+]] = tcc.dropout
// CHECK:         %[[DY:.+]] = tcc.mse_loss_grad
// CHECK-NEXT:    %[[DX:.+]] = tcc.mul %[[DY]], %[[MASK]]
// CHECK-NEXT:    return %{{.+}}, %[[DX]]
func.func @train_step(%a: tensor<4xf32> {tcc.kind = "param", tcc.name = "a"},
                      %step: tensor<i64> {tcc.kind = "state", tcc.name = "rng.step"},
                      %t: tensor<4xf32> {tcc.kind = "input", tcc.name = "labels"})
    -> (tensor<f32> {tcc.kind = "loss"}) {
  %y, %mask = tcc.dropout %a, %step {ratio = 0.5 : f64, seed = 1 : i64} : tensor<4xf32>, tensor<i64>
  %l = tcc.mse_loss %y, %t : (tensor<4xf32>, tensor<4xf32>) -> tensor<f32>
  return %l : tensor<f32>
}
