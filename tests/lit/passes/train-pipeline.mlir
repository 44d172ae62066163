// RUN: tcc-opt %s --tcc-train-pipeline="plan-memory=false fuse=false" --split-input-file | FileCheck %s
// RUN: tcc-opt %s --tcc-train-pipeline="loss=mse optimizer=sgd lr=0.1 optimize=false" --split-input-file | FileCheck %s --check-prefix=SGD
// RUN: tcc-opt %s --tcc-train-pipeline="plan-memory=false fuse=false gemm-epilogue=true" --split-input-file | FileCheck %s --check-prefix=EPI

// A two-layer MLP through the whole pipeline: loss, autodiff, optimizer,
// canonicalize and CSE (tcc-plan-memory, which reorders the ops, is off
// here; tests/lit/passes/plan-memory.mlir covers it).

module attributes {tcc.batch = 4 : i64} {
  func.func @forward(%x: tensor<4x8xf32> {tcc.kind = "input", tcc.name = "x"},
                     %w1: tensor<16x8xf32> {tcc.kind = "param", tcc.name = "fc1.weight"},
                     %b1: tensor<16xf32> {tcc.kind = "param", tcc.name = "fc1.bias"},
                     %w2: tensor<3x16xf32> {tcc.kind = "param", tcc.name = "fc2.weight"},
                     %b2: tensor<3xf32> {tcc.kind = "param", tcc.name = "fc2.bias"})
      -> (tensor<4x3xf32> {tcc.name = "logits"}) {
    %h = tcc.matmul %x, %w1 {transpose_rhs = true} : (tensor<4x8xf32>, tensor<16x8xf32>) -> tensor<4x16xf32>
    %hb = tcc.add %h, %b1 : (tensor<4x16xf32>, tensor<16xf32>) -> tensor<4x16xf32>
    %r = tcc.relu %hb : tensor<4x16xf32>
    %y = tcc.matmul %r, %w2 {transpose_rhs = true} : (tensor<4x16xf32>, tensor<3x16xf32>) -> tensor<4x3xf32>
    %yb = tcc.add %y, %b2 : (tensor<4x3xf32>, tensor<3xf32>) -> tensor<4x3xf32>
    return %yb : tensor<4x3xf32>
  }
}

// CHECK:       module attributes {tcc.batch = 4 : i64, tcc.optimizer = {{{.*}}name = "adamw"{{.*}}}}
// CHECK-LABEL: func.func @forward
// CHECK-SAME:    -> (tensor<4x3xf32> {tcc.name = "logits"})
// CHECK-NOT:     tcc.softmax_cross_entropy
// CHECK:         return
// CHECK-LABEL: func.func @train_step
// CHECK-SAME:    (%[[X:[^:]+]]: tensor<4x8xf32> {tcc.kind = "input", tcc.name = "x"},
// CHECK-SAME:     %[[W1:[^:]+]]: tensor<16x8xf32> {tcc.kind = "param", tcc.name = "fc1.weight"},
// CHECK-SAME:     %[[B1:[^:]+]]: tensor<16xf32> {tcc.kind = "param", tcc.name = "fc1.bias"},
// CHECK-SAME:     %[[W2:[^:]+]]: tensor<3x16xf32> {tcc.kind = "param", tcc.name = "fc2.weight"},
// CHECK-SAME:     %[[B2:[^:]+]]: tensor<3xf32> {tcc.kind = "param", tcc.name = "fc2.bias"},
// CHECK-SAME:     %[[LABELS:[^:]+]]: tensor<4xi64> {tcc.kind = "input", tcc.name = "labels"},
// CHECK-SAME:     %[[W1M:[^:]+]]: tensor<16x8xf32> {tcc.kind = "state", tcc.name = "fc1.weight.exp_avg"},
// CHECK-SAME:     %[[W1V:[^:]+]]: tensor<16x8xf32> {tcc.kind = "state", tcc.name = "fc1.weight.exp_avg_sq"},
// CHECK-SAME:     %[[B1M:[^:]+]]: tensor<16xf32> {tcc.kind = "state", tcc.name = "fc1.bias.exp_avg"},
// CHECK-SAME:     %[[B1V:[^:]+]]: tensor<16xf32> {tcc.kind = "state", tcc.name = "fc1.bias.exp_avg_sq"},
// CHECK-SAME:     %[[W2M:[^:]+]]: tensor<3x16xf32> {tcc.kind = "state", tcc.name = "fc2.weight.exp_avg"},
// CHECK-SAME:     %[[W2V:[^:]+]]: tensor<3x16xf32> {tcc.kind = "state", tcc.name = "fc2.weight.exp_avg_sq"},
// CHECK-SAME:     %[[B2M:[^:]+]]: tensor<3xf32> {tcc.kind = "state", tcc.name = "fc2.bias.exp_avg"},
// CHECK-SAME:     %[[B2V:[^:]+]]: tensor<3xf32> {tcc.kind = "state", tcc.name = "fc2.bias.exp_avg_sq"},
// CHECK-SAME:     %[[STEP:[^:]+]]: tensor<f32> {tcc.kind = "state", tcc.name = "adamw.step"},
// CHECK-SAME:     %[[LR:[^:]+]]: tensor<f32> {tcc.init = dense<1.000000e-03> : tensor<f32>, tcc.kind = "state", tcc.name = "optimizer.lr"})
// CHECK-SAME:    -> (tensor<f32> {tcc.kind = "loss", tcc.name = "loss"},
// CHECK-SAME:        tensor<16x8xf32> {tcc.kind = "update", tcc.name = "fc1.weight"}, tensor<16xf32> {tcc.kind = "update", tcc.name = "fc1.bias"},
// CHECK-SAME:        tensor<3x16xf32> {tcc.kind = "update", tcc.name = "fc2.weight"}, tensor<3xf32> {tcc.kind = "update", tcc.name = "fc2.bias"},
// CHECK-SAME:        tensor<16x8xf32> {tcc.kind = "update", tcc.name = "fc1.weight.exp_avg"}, tensor<16x8xf32> {tcc.kind = "update", tcc.name = "fc1.weight.exp_avg_sq"},
// CHECK-SAME:        tensor<16xf32> {tcc.kind = "update", tcc.name = "fc1.bias.exp_avg"}, tensor<16xf32> {tcc.kind = "update", tcc.name = "fc1.bias.exp_avg_sq"},
// CHECK-SAME:        tensor<3x16xf32> {tcc.kind = "update", tcc.name = "fc2.weight.exp_avg"}, tensor<3x16xf32> {tcc.kind = "update", tcc.name = "fc2.weight.exp_avg_sq"},
// CHECK-SAME:        tensor<3xf32> {tcc.kind = "update", tcc.name = "fc2.bias.exp_avg"}, tensor<3xf32> {tcc.kind = "update", tcc.name = "fc2.bias.exp_avg_sq"},
// CHECK-SAME:        tensor<f32> {tcc.kind = "update", tcc.name = "adamw.step"})
// CSE shares the 1.0 of the loss seed, of the count's floor and of the step
// increment.
// CHECK:         %[[ONE:.+]] = tcc.constant dense<1.000000e+00> : tensor<f32>
// CHECK-NOT:     tcc.constant
// Forward.
// CHECK:         %[[H:.+]] = tcc.matmul %[[X]], %[[W1]] {transpose_rhs = true}
// CHECK-NEXT:    %[[HB:.+]] = tcc.add %[[H]], %[[B1]]
// CHECK-NEXT:    %[[R:.+]] = tcc.relu %[[HB]]
// CHECK-NEXT:    %[[Y:.+]] = tcc.matmul %[[R]], %[[W2]] {transpose_rhs = true}
// CHECK-NEXT:    %[[YB:.+]] = tcc.add %[[Y]], %[[B2]]
// CHECK-NEXT:    %[[LOSS:.+]] = tcc.softmax_cross_entropy %[[YB]], %[[LABELS]]
// Backward: the seed over the count of labels that are not -100.
// CHECK-NEXT:    %[[IGN:.+]] = tcc.compare "eq", %[[LABELS]], %{{.+}} : (tensor<4xi64>, tensor<i64>) -> tensor<4xi1>
// CHECK-NEXT:    %[[IGNF:.+]] = tcc.cast %[[IGN]]
// CHECK-NEXT:    %[[NIGN:.+]] = tcc.reduce_sum %[[IGNF]]
// CHECK-NEXT:    %[[COUNT:.+]] = tcc.sub %{{.+}}, %[[NIGN]]
// CHECK-NEXT:    %[[DENOM:.+]] = tcc.maximum %[[COUNT]], %[[ONE]]
// CHECK-NEXT:    %[[PER:.+]] = tcc.div %[[ONE]], %[[DENOM]]
// CHECK-NEXT:    %[[DYB:.+]] = tcc.softmax_cross_entropy_grad %[[PER]], %[[YB]], %[[LABELS]]
// CHECK-NEXT:    %[[DB2:.+]] = tcc.reduce_sum %[[DYB]] {axes = array<i64: 0>} : tensor<4x3xf32> -> tensor<3xf32>
// CHECK-NEXT:    %[[DR:.+]] = tcc.matmul %[[DYB]], %[[W2]] : (tensor<4x3xf32>, tensor<3x16xf32>) -> tensor<4x16xf32>
// CHECK-NEXT:    %[[DW2:.+]] = tcc.matmul %[[DYB]], %[[R]] {transpose_lhs = true} : (tensor<4x3xf32>, tensor<4x16xf32>) -> tensor<3x16xf32>
// CHECK-NEXT:    %[[DHB:.+]] = tcc.relu_grad %[[DR]], %[[HB]] : tensor<4x16xf32>
// CHECK-NEXT:    %[[DB1:.+]] = tcc.reduce_sum %[[DHB]] {axes = array<i64: 0>} : tensor<4x16xf32> -> tensor<16xf32>
// CHECK-NEXT:    %[[DW1:.+]] = tcc.matmul %[[DHB]], %[[X]] {transpose_lhs = true} : (tensor<4x16xf32>, tensor<4x8xf32>) -> tensor<16x8xf32>
// Optimizer.
// CHECK-NEXT:    %[[T1:.+]] = tcc.add %[[STEP]], %[[ONE]]
// CHECK-NEXT:    %[[NW1:[^,]+]], %[[NW1M:[^,]+]], %[[NW1V:[^ ]+]] = tcc.adamw_update %[[W1]], %[[DW1]], %[[W1M]], %[[W1V]], %[[T1]], %[[LR]]
// CHECK-NEXT:    %[[NB1:[^,]+]], %[[NB1M:[^,]+]], %[[NB1V:[^ ]+]] = tcc.adamw_update %[[B1]], %[[DB1]], %[[B1M]], %[[B1V]], %[[T1]], %[[LR]]
// CHECK-NEXT:    %[[NW2:[^,]+]], %[[NW2M:[^,]+]], %[[NW2V:[^ ]+]] = tcc.adamw_update %[[W2]], %[[DW2]], %[[W2M]], %[[W2V]], %[[T1]], %[[LR]]
// CHECK-NEXT:    %[[NB2:[^,]+]], %[[NB2M:[^,]+]], %[[NB2V:[^ ]+]] = tcc.adamw_update %[[B2]], %[[DB2]], %[[B2M]], %[[B2V]], %[[T1]], %[[LR]]
// CHECK-NEXT:    return %[[LOSS]], %[[NW1]], %[[NB1]], %[[NW2]], %[[NB2]], %[[NW1M]], %[[NW1V]], %[[NB1M]], %[[NB1V]], %[[NW2M]], %[[NW2V]], %[[NB2M]], %[[NB2V]], %[[T1]] :

// SGD:       tcc.optimizer = {lr = 1.000000e-01 : f64, momentum = 0.000000e+00 : f64, name = "sgd", weight_decay = 0.000000e+00 : f64}
// SGD-LABEL: func.func @train_step
// SGD-SAME:    %[[LABELS:[^:]+]]: tensor<4x3xf32> {tcc.kind = "input", tcc.name = "labels"},
// SGD-SAME:    %[[LR:[^:]+]]: tensor<f32> {tcc.init = dense<1.000000e-01> : tensor<f32>, tcc.kind = "state", tcc.name = "optimizer.lr"})
// SGD-SAME:    -> (tensor<f32> {tcc.kind = "loss", tcc.name = "loss"}, tensor<16x8xf32> {tcc.kind = "update", tcc.name = "fc1.weight"}, tensor<16xf32> {tcc.kind = "update", tcc.name = "fc1.bias"}, tensor<3x16xf32> {tcc.kind = "update", tcc.name = "fc2.weight"}, tensor<3xf32> {tcc.kind = "update", tcc.name = "fc2.bias"})
// SGD:         %[[LOSS:.+]] = tcc.mse_loss %[[YB:.+]], %[[LABELS]]
// SGD-NEXT:    %[[ONE:.+]] = tcc.constant dense<1.000000e+00> : tensor<f32>
// SGD-NEXT:    tcc.mse_loss_grad %[[ONE]], %[[YB]], %[[LABELS]]
// SGD-COUNT-4: tcc.sgd_update {{.+}}, %[[LR]] {weight_decay = 0.000000e+00 : f64}
// SGD-NEXT:    return %[[LOSS]], %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}} :

// With GEMM epilogues (tcc compile --target cuda): each layer is one GEMM,
// ReLU's backward reads its output, each weight gradient also sums the
// bias gradient (the one reduce_sum left counts the labels).
// EPI-LABEL: func.func @train_step
// EPI:         %[[H:.+]] = tcc.matmul_epilogue %{{.+}}, %{{.+}} bias %{{.+}} {epilogue = "bias_relu", transpose_rhs = true}
// EPI-NEXT:    tcc.matmul_epilogue %[[H]], %{{.+}} bias %{{.+}} {epilogue = "bias", transpose_rhs = true}
// EPI-NOT:     tcc.reduce_sum {{.*}} : tensor<4x{{[0-9]+}}xf32>
// EPI:         tcc.matmul_epilogue %{{.+}}, %[[H]] {epilogue = "bgrad_lhs", transpose_lhs = true}
// EPI:         tcc.relu_grad %{{.+}}, %[[H]]
// EPI-NEXT:    tcc.matmul_epilogue %{{.+}}, %{{.+}} {epilogue = "bgrad_lhs", transpose_lhs = true}
// EPI-NOT:     tcc.reduce_sum {{.*}} : tensor<4x{{[0-9]+}}xf32>
// EPI:         return

// -----

// A second output head that the loss does not read: its parameter still gets
// an update, from a zero gradient.

module attributes {tcc.batch = 2 : i64} {
  func.func @forward(%x: tensor<2x4xf32> {tcc.kind = "input", tcc.name = "x"},
                     %w: tensor<4x3xf32> {tcc.kind = "param", tcc.name = "head"},
                     %v: tensor<4x1xf32> {tcc.kind = "param", tcc.name = "aux"})
      -> (tensor<2x3xf32> {tcc.name = "logits"}, tensor<2x1xf32> {tcc.name = "aux"}) {
    %y = tcc.matmul %x, %w : (tensor<2x4xf32>, tensor<4x3xf32>) -> tensor<2x3xf32>
    %a = tcc.matmul %x, %v : (tensor<2x4xf32>, tensor<4x1xf32>) -> tensor<2x1xf32>
    return %y, %a : tensor<2x3xf32>, tensor<2x1xf32>
  }
}

// CHECK-LABEL: func.func @train_step
// CHECK-SAME:    (%[[X:[^:]+]]: tensor<2x4xf32> {{[^)]+}}, %[[W:[^:]+]]: tensor<4x3xf32> {{[^)]+}}, %[[V:[^:]+]]: tensor<4x1xf32> {{[^)]+}}, %[[LABELS:[^:]+]]: tensor<2xi64>
// CHECK-DAG:     %[[ZERO:.+]] = tcc.constant dense<0.000000e+00> : tensor<4x1xf32>
// CHECK-NOT:     tcc.matmul %[[X]], %[[V]]
// CHECK:         tcc.adamw_update %[[W]],
// CHECK-NEXT:    tcc.adamw_update %[[V]], %[[ZERO]],

// SGD-LABEL: func.func @train_step
// SGD:         %[[ZERO:.+]] = tcc.constant dense<0.000000e+00> : tensor<4x1xf32>
// SGD:         tcc.sgd_update %{{.+}}, %[[ZERO]]
