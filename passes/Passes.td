//===- Passes.td - tcc passes ------------------------------*- tablegen -*-===//
#ifndef TCC_PASSES_TD
#define TCC_PASSES_TD

include "mlir/Pass/PassBase.td"

def BuildLossPass : Pass<"tcc-build-loss", "mlir::ModuleOp"> {
  let summary = "Builds @train_step: @forward followed by a loss";
  let description = [{
    Clones `@forward` into `@train_step`, appends a data input named `labels`
    and returns the scalar loss of the forward's first result instead of the
    outputs. `cross_entropy` takes classes on the output's last axis and
    int64 labels shaped like the output without it, averaging over all other
    positions; `mse` takes f32 targets shaped like the output. `@forward`
    stays, for evaluation, in inference mode (tcc.dropout is the identity).
    Step counters the model reads (`state` arguments of type tensor<i64>,
    such as the `rng.step` of tcc.dropout) are advanced: @train_step returns
    `tcc.increment` of each as an `update` result after the loss.
  }];
  let dependentDialects = ["mlir::tcc::TccDialect", "mlir::func::FuncDialect"];
  let options = [
    Option<"loss", "loss", "std::string", /*default=*/"\"cross_entropy\"",
           "Loss: cross_entropy or mse">,
  ];
}

def AutodiffPass : Pass<"tcc-autodiff", "mlir::ModuleOp"> {
  let summary = "Reverse-mode differentiation of @train_step";
  let description = [{
    Differentiates the scalar first result of `@train_step` (kind `loss`)
    with respect to every argument of kind `param`, using each op's
    GradientOpInterface, and appends the gradients as results of kind `grad`
    named after their parameter.
  }];
  let dependentDialects = ["mlir::tcc::TccDialect"];
}

def AccumulateGradientsPass : Pass<"tcc-accumulate-gradients", "mlir::ModuleOp"> {
  let summary = "Splits @train_step into gradient accumulation and an apply step";
  let description = [{
    With `steps` = K > 1, gradient accumulation gives the update of one batch
    K times larger using micro-batches of the compiled size. `@train_step`
    (loss and `grad` results, after tcc-autodiff) becomes two functions:

    * `@accumulate_step`: the forward and backward of one micro-batch; each
      gradient is added to a zero-initialized state argument
      `<param>.grad_acc` (results of kind `update`); the loss and any other
      update results stay.
    * `@train_step`: takes the parameters and the accumulators, returns
      `grad_acc / K` as `grad` results (for tcc-apply-optimizer) and resets
      each accumulator to zero.

    The loss is a mean, so the mean of the K micro-batch gradients is the
    gradient of the K-times-larger batch. With K <= 1 the pass does nothing.
  }];
  let dependentDialects = ["mlir::tcc::TccDialect", "mlir::func::FuncDialect"];
  let options = [
    Option<"steps", "steps", "int64_t", /*default=*/"1",
           "Micro-batches per optimizer step">,
  ];
}

def ApplyOptimizerPass : Pass<"tcc-apply-optimizer", "mlir::ModuleOp"> {
  let summary = "Replaces the gradients of @train_step by optimizer updates";
  let description = [{
    Adds the optimizer's state as arguments of kind `state` (zero-initialized)
    and turns every `grad` result into `update` results: the new value of each
    parameter and of each state tensor, named after what they replace.
    Semantics follow torch.optim.SGD (momentum, weight decay, dampening 0) and
    torch.optim.AdamW.
  }];
  let dependentDialects = ["mlir::tcc::TccDialect"];
  let options = [
    Option<"optimizer", "optimizer", "std::string", /*default=*/"\"adamw\"",
           "Optimizer: sgd or adamw">,
    Option<"lr", "lr", "double", /*default=*/"-1.0",
           "Learning rate (default: 1e-3 for adamw, 1e-2 for sgd)">,
    Option<"momentum", "momentum", "double", /*default=*/"0.0",
           "SGD momentum">,
    Option<"weightDecay", "weight-decay", "double", /*default=*/"-1.0",
           "Weight decay (default: 0.01 for adamw, 0 for sgd)">,
    Option<"beta1", "beta1", "double", /*default=*/"0.9", "AdamW beta1">,
    Option<"beta2", "beta2", "double", /*default=*/"0.999", "AdamW beta2">,
    Option<"eps", "eps", "double", /*default=*/"1e-8", "AdamW epsilon">,
  ];
}

#endif // TCC_PASSES_TD
