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
    positions but those labelled `ignore-index` (default -100), with
    `label-smoothing` (default 0) as PyTorch's CrossEntropyLoss; `mse` takes
    f32 targets shaped like the output (the two options are an error with
    any loss but cross_entropy).
    `output:NAME` adds no labels and trains the forward's result named NAME,
    a float scalar the graph computes itself. `@forward`
    stays, for evaluation, in inference mode (tcc.dropout is the identity).
    Step counters the model reads (`state` arguments of type tensor<i64>,
    such as the `rng.step` of tcc.dropout) are advanced: @train_step returns
    `tcc.increment` of each as an `update` result after the loss.
  }];
  let dependentDialects = ["mlir::tcc::TccDialect", "mlir::func::FuncDialect"];
  let options = [
    Option<"loss", "loss", "std::string", /*default=*/"\"cross_entropy\"",
           "Loss: cross_entropy, mse, or output:NAME (the model's own "
           "scalar output NAME)">,
    Option<"ignoreIndex", "ignore-index", "int64_t", /*default=*/"-100",
           "cross_entropy: positions with this label add nothing and are "
           "not counted in the mean (PyTorch's ignore_index)">,
    Option<"labelSmoothing", "label-smoothing", "double", /*default=*/"0.0",
           "cross_entropy: weight in [0, 1] of the uniform target (PyTorch's "
           "label_smoothing)">,
  ];
}

def LoraPass : Pass<"tcc-lora", "mlir::ModuleOp"> {
  let summary = "Adds low-rank adapters (LoRA) to weight products and freezes the rest";
  let description = [{
    Fine-tuning with LoRA, as Hugging Face PEFT: every weight product of
    `@forward` (a `tcc.matmul` whose right operand is a rank-2 `param`
    argument, read only by matrix products) whose weight name matches one of
    `targets` (glob patterns, llvm::GlobPattern) gets two new parameters,
    `<W>.lora_A` of shape [rank, in] and `<W>.lora_B` of shape [out, rank],
    and computes `x op(W) + (alpha / rank) * (x A^T) B^T`. A starts
    Kaiming-uniform as PEFT's (`kaiming_uniform_(a=sqrt(5))`: uniform in
    +-1/sqrt(in)), drawn by the runtime's seeded generator (`tcc.init_uniform`
    with `tcc.init_seed`); B starts at zero, so the adapted model starts as
    the base model. Every other parameter becomes `{tcc.kind = "frozen"}`:
    no gradient, no optimizer state, stored once as a constant named after
    its initializer. The module gets `tcc.lora` (rank, alpha, the adapted
    weights and their layout), which export uses to merge the adapters.
    Runs on @forward before tcc-build-loss. Convolution weights are refused.

    ```mlir
    %y = tcc.matmul %x, %w {transpose_rhs = true} : (tensor<4x8xf32>, tensor<3x8xf32>) -> tensor<4x3xf32>
    // rank=2, alpha=4 becomes
    %y = tcc.matmul %x, %w {transpose_rhs = true} : ...
    %h = tcc.matmul %x, %a {transpose_rhs = true} : (tensor<4x8xf32>, tensor<2x8xf32>) -> tensor<4x2xf32>
    %d = tcc.matmul %h, %b {transpose_rhs = true} : (tensor<4x2xf32>, tensor<3x2xf32>) -> tensor<4x3xf32>
    %s = tcc.mul %d, %two : ...
    %y2 = tcc.add %y, %s : ...
    ```
  }];
  let dependentDialects = ["mlir::tcc::TccDialect", "mlir::func::FuncDialect"];
  let options = [
    Option<"rank", "rank", "int64_t", /*default=*/"0",
           "Adapter rank r (1 <= r <= min(in, out) of every adapted weight)">,
    Option<"alpha", "alpha", "double", /*default=*/"0.0",
           "LoRA alpha; the branch is scaled by alpha / rank (<= 0: rank, "
           "a scale of 1)">,
    ListOption<"targets", "targets", "std::string",
               "Glob patterns over parameter names: the weights to adapt">,
    Option<"seed", "seed", "int64_t", /*default=*/"0",
           "Seed of the adapters' A initialization">,
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

def AllReduceGradientsPass
    : Pass<"tcc-all-reduce-gradients", "mlir::ModuleOp"> {
  let summary = "Averages @train_step's gradients over data-parallel ranks";
  let description = [{
    For `mpirun -np N tcc train` (`tcc compile --data-parallel`): the `grad`
    results of `@train_step` are averaged over the ranks before anything
    reads them, as PyTorch's DistributedDataParallel does. Gradients go into
    buckets of up to `bucket-bytes` in the order the backward makes them
    (their definitions' order in the block), and each bucket becomes one
    `tcc.all_reduce` right after its last gradient, so the first buckets
    travel while the rest of the backward runs. A gradient that is
    `x * c` (tcc-accumulate-gradients' `grad_acc * (1/K)`) is reduced as
    `x`, keeping the multiply after the reduction for tcc-clip-gradients.
    Runs after tcc-autodiff and tcc-accumulate-gradients (so it reduces once
    per optimizer step) and before tcc-clip-gradients (which then takes the
    norm of the averaged gradients, the same on every rank).

    ```mlir
    %r0, %r1 = tcc.all_reduce %g0, %g1 {bucket = 0}
        : tensor<4x8xf32>, tensor<8xf32>
    ```
  }];
  let dependentDialects = ["mlir::tcc::TccDialect"];
  let options = [
    Option<"bucketBytes", "bucket-bytes", "int64_t", /*default=*/"26214400",
           "Bytes of gradients per all-reduce bucket (DDP's 25 MiB)">,
  ];
}

def ShardOptimizerStatePass
    : Pass<"tcc-shard-optimizer-state", "mlir::ModuleOp"> {
  let summary = "Shards the optimizer state over data-parallel ranks (ZeRO 1)";
  let description = [{
    For `tcc compile --data-parallel --zero-shards N`: each rank keeps and
    updates 1/N of the optimizer state. Per parameter p of n elements
    (c = ceil(n/N); rank r owns elements [r*c, min(n, (r+1)*c))), the
    gradient bucket's `tcc.all_reduce` becomes a `tcc.reduce_scatter` that
    leaves each rank the average of its c elements; the update reads
    `tcc.shard_slice` of p, that gradient shard and state arguments of type
    `tensor<c x f32>` (zero past n), and one `tcc.all_gather` per bucket,
    after the last of the bucket's updates, makes the new parameters from
    their new shards (numbered after the reduce-scatter buckets; both kinds
    are asynchronous buckets in the schedule). Runs after tcc-all-reduce-gradients and
    tcc-apply-optimizer (and tcc-clip-gradients). Element-wise optimizers
    only (sgd, adam, adamw, lion): Adafactor's factored moments and RMS
    clipping need whole rows, columns and parameters. The update may read its gradient through
    multiplies by scalars (accumulation's mean, clipping's coefficient),
    taken of the shard; clipping's `tcc.global_norm` becomes
    `tcc.sharded_global_norm` of the shards; any other reader of an
    averaged gradient is an error. Records
    `tcc.zero = {shards, states = {state name = param name}}` on the module.

    ```mlir
    %gs = tcc.reduce_scatter %g {bucket = 0, shards = 2}
        : tensor<3x2xf32> -> tensor<3xf32>
    %ps = tcc.shard_slice %p {shards = 2} : tensor<3x2xf32> -> tensor<3xf32>
    %u, %m1 = tcc.lion_update %ps, %gs, %m, %lr ... : tensor<3xf32>
    %p1 = tcc.all_gather %u {bucket = 1, shards = 2}
        : tensor<3xf32> -> tensor<3x2xf32>
    ```
  }];
  let dependentDialects = ["mlir::tcc::TccDialect"];
  let options = [
    Option<"shards", "shards", "int64_t", /*default=*/"2",
           "Ranks the state is sharded over (the run's rank count)">,
  ];
}

def OffloadOptimizerPass : Pass<"tcc-offload-optimizer", "mlir::ModuleOp"> {
  let summary = "Moves the optimizer update of @train_step into @optimizer_step";
  let description = [{
    For `tcc compile --offload-optimizer`: the optimizer's update ops, every
    op that reads what they compute (fp16's skip selects), and the ops that
    only prepare their operands from arguments (AdamW's step counter) move
    into a new function `@optimizer_step`, which the runtime runs after
    `@train_step` (on the host, once the runtime streams the values across;
    today on the same session). The cut is at the update ops' operands: each
    value `@train_step` computes and an update reads (the clipped, averaged
    gradient; fp16's `finite` flag) becomes a result `{tcc.kind = "offload",
    tcc.name = "offload.grad.P"}` (`offload.value.N` when it is not the
    gradient of a parameter P) and an argument of `@optimizer_step` of kind
    `input` with that name; the code generator writes the one into the other.
    `update` results computed by moved ops move with them; `state`
    arguments only they read (the optimizer's moments, `optimizer.lr`) leave
    `@train_step`. Refused: sharded state (`tcc.zero`, its collectives would
    move), a moved op with side effects, any other result that depends on
    the update.

    ```mlir
    // before: @train_step(%w {param}, %m {state}, %lr {state}, %x {input})
    %g = ... backward ...
    %w1, %m1 = tcc.sgd_momentum_update %w, %g, %m, %lr ...
    return %loss, %w1, %m1
    // after:
    // @train_step(%w, %x) -> (%loss, %g {offload, "offload.grad.w"})
    // @optimizer_step(%w, %m, %lr, %g {input, "offload.grad.w"})
    //     -> (%w1 {update "w"}, %m1 {update "w.momentum"})
    ```
  }];
  let dependentDialects = ["mlir::tcc::TccDialect"];
}

def ClipGradientsPass : Pass<"tcc-clip-gradients", "mlir::ModuleOp"> {
  let summary = "Clips the gradients of @train_step by their global norm";
  let description = [{
    As `torch.nn.utils.clip_grad_norm_(params, max_norm)`: the global L2 norm
    of every `grad` result of `@train_step` (one `tcc.global_norm`, f64
    accumulation), the coefficient `min(1, max-norm / (norm + 1e-6))`, and
    each gradient multiplied by it. Runs after tcc-autodiff and
    tcc-accumulate-gradients (so it clips the accumulated gradients of the
    whole batch) and before tcc-apply-optimizer. The norm before clipping
    is returned as a result `{tcc.kind = "metric", tcc.name = "grad_norm"}`;
    with `track` and no `max-norm` only that (no clipping). With fp16 loss
    scaling, tcc-mixed-precision (later) unscales the norm and folds the
    coefficient into its unscaling multiplier.

    ```mlir
    %n = tcc.global_norm %g0, %g1 : tensor<4x8xf32>, tensor<8xf32>
    %d = tcc.add %n, %eps : (tensor<f32>, tensor<f32>) -> tensor<f32>
    %q = tcc.div %c, %d : (tensor<f32>, tensor<f32>) -> tensor<f32>
    %k = tcc.minimum %q, %one : (tensor<f32>, tensor<f32>) -> tensor<f32>
    %g0c = tcc.mul %g0, %k : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
    ```
  }];
  let dependentDialects = ["mlir::tcc::TccDialect"];
  let options = [
    Option<"maxNorm", "max-norm", "double", /*default=*/"0.0",
           "Clip the global gradient norm to this (0: no clipping)">,
    Option<"track", "track", "bool", /*default=*/"false",
           "Return the grad_norm metric even without clipping">,
  ];
}

def ApplyOptimizerPass : Pass<"tcc-apply-optimizer", "mlir::ModuleOp"> {
  let summary = "Replaces the gradients of @train_step by optimizer updates";
  let description = [{
    Adds the optimizer's state as arguments of kind `state` (zero-initialized,
    except `optimizer.lr`, the learning rate the update ops read, which starts
    at `lr`) and turns every `grad` result into `update` results: the new
    value of each parameter and of each state tensor, named after what they
    replace. Semantics follow torch.optim.SGD (momentum, Nesterov, weight
    decay, dampening 0), torch.optim.Adam, torch.optim.AdamW, Lion
    (Chen et al. 2023) and torch.optim.Adafactor (PyTorch 2.5). Parameters matching a `no-decay` pattern (a glob over
    their names, or `1d`: every parameter of rank below 2) get no weight
    decay.
  }];
  let dependentDialects = ["mlir::tcc::TccDialect"];
  let options = [
    Option<"optimizer", "optimizer", "std::string", /*default=*/"\"adamw\"",
           "Optimizer: sgd, adam, adamw, lion or adafactor">,
    Option<"lr", "lr", "double", /*default=*/"-1.0",
           "Learning rate (default: 1e-3 for adam/adamw, 1e-2 for sgd and "
           "adafactor, 1e-4 for lion)">,
    Option<"momentum", "momentum", "double", /*default=*/"0.0",
           "SGD momentum">,
    Option<"nesterov", "nesterov", "bool", /*default=*/"false",
           "SGD: Nesterov momentum (needs momentum > 0)">,
    Option<"weightDecay", "weight-decay", "double", /*default=*/"-1.0",
           "Weight decay (default: 0.01 for adamw, 0 otherwise)">,
    Option<"beta1", "beta1", "double", /*default=*/"-1.0",
           "beta1 of adam/adamw/lion (default 0.9)">,
    Option<"beta2", "beta2", "double", /*default=*/"-1.0",
           "beta2 of adam/adamw (default 0.999) or lion (default 0.99)">,
    Option<"eps", "eps", "double", /*default=*/"-1.0",
           "epsilon of adam/adamw (default 1e-8), eps1 of adafactor "
           "(default: the f32 machine epsilon)">,
    ListOption<"noDecay", "no-decay", "std::string",
               "Parameters without weight decay: glob patterns over their "
               "names, or `1d` (every parameter of rank < 2)">,
  ];
}

def PadShapesPass : Pass<"tcc-pad-shapes", "mlir::ModuleOp"> {
  let summary = "Pads GEMM dimensions to tile multiples and slices results back";
  let description = [{
    For every `tcc.matmul` whose M, N or K (read with the transpose flags;
    batch dimensions stay) is not a multiple of the target's tile, the
    operands are padded with zeros at the end of their last two dimensions
    (`tcc.slice_grad` with zero starts and unit steps is a zero pad) and the
    result is sliced back with `tcc.slice`. Zero K entries add zeros to each
    dot product; padded M rows and N columns are dropped by the slice, so the
    rewrite is numerically invisible up to the summation order of the GEMM.
    Dimensions of at least `vocab-threshold` elements (vocabularies) use
    `vocab-multiple`, the others `multiple`; 0 leaves them alone. A value is
    padded once per function however many matmuls read it, and a padded
    matmul result feeds a later pad directly (its padding is already zero).
    Runs on every function, after tcc-apply-optimizer.

    ```mlir
    %y = tcc.matmul %x, %w : (tensor<4x10xf32>, tensor<10x3xf32>) -> tensor<4x3xf32>
    // multiple=8 becomes
    %xp = tcc.slice_grad %x {shape = array<i64: 8, 16>, starts = array<i64: 0, 0>, steps = array<i64: 1, 1>} : tensor<4x10xf32> -> tensor<8x16xf32>
    %wp = tcc.slice_grad %w {shape = array<i64: 16, 8>, starts = array<i64: 0, 0>, steps = array<i64: 1, 1>} : tensor<10x3xf32> -> tensor<16x8xf32>
    %p = tcc.matmul %xp, %wp : (tensor<8x16xf32>, tensor<16x8xf32>) -> tensor<8x8xf32>
    %y = tcc.slice %p {sizes = array<i64: 4, 3>, starts = array<i64: 0, 0>, steps = array<i64: 1, 1>} : tensor<8x8xf32> -> tensor<4x3xf32>
    ```
  }];
  let dependentDialects = ["mlir::tcc::TccDialect", "mlir::func::FuncDialect"];
  let options = [
    Option<"multiple", "multiple", "int64_t", /*default=*/"0",
           "Pad M, N and K to a multiple of this (0: off)">,
    Option<"vocabMultiple", "vocab-multiple", "int64_t", /*default=*/"0",
           "Multiple for dimensions of at least vocab-threshold elements "
           "(0: use multiple)">,
    Option<"vocabThreshold", "vocab-threshold", "int64_t",
           /*default=*/"8192",
           "Size from which a dimension counts as vocabulary-sized">,
  ];
}

def RematerializePass : Pass<"tcc-rematerialize", "mlir::func::FuncOp"> {
  let summary = "Recomputes activations in the backward to fit a memory budget";
  let description = [{
    In a function with a `loss` result, keeps at most `memory-budget` bytes
    of activations (values computed before the loss op and read after it)
    and recomputes the others right before their first use after the loss,
    from kept values, parameters, inputs and constants. The set is chosen by
    a parametric minimum cut over the forward that minimizes the recompute
    cost (element-wise, data movement, normalization and dropout are cheap;
    matmul, convolution and tcc.attention cost their FLOPs, and are never
    recomputed with `recompute=cheap`). A budget below what any plan can keep is an error
    naming the budget, that minimum and the activation total. `tcc.dropout` is recomputed from the same seed and
    `rng.step`, so its mask is the original's. 0 turns the pass off. Runs
    after the last CSE, which would merge the clones back.

    ```mlir
    // memory-budget = 4096: %g (4 KiB, read by the backward) is recomputed
    %h = tcc.matmul %x, %w ...
    %g = tcc.gelu %h ...
    %loss = ...
    %g2 = tcc.gelu %h ...        // right before its first use
    %dw = tcc.matmul %g2, %dy ...
    ```
  }];
  let dependentDialects = ["mlir::tcc::TccDialect"];
  let options = [
    Option<"memoryBudget", "memory-budget", "int64_t", /*default=*/"0",
           "Bytes of activations to keep at most (0: off)">,
    Option<"recompute", "recompute", "std::string", /*default=*/"\"all\"",
           "What may be recomputed: all (matmul and convolution too, at "
           "their FLOP cost, when cheaper ops do not reach the budget) or "
           "cheap (element-wise, data movement, normalization, dropout)">,
  ];
  let statistics = [
    Statistic<"numRecomputed", "recomputed-ops",
              "Forward ops cloned into the backward">,
    Statistic<"activationBytesBefore", "activation-bytes-before",
              "Activation bytes before rematerialization">,
    Statistic<"activationBytesAfter", "activation-bytes-after",
              "Activation bytes kept after rematerialization">,
  ];
}

def PlanMemoryPass : Pass<"tcc-plan-memory", "mlir::ModuleOp"> {
  let summary = "Reorders each function's ops to lower its peak memory";
  let description = [{
    Reschedules every function (a topological order of the data dependences,
    plus: the op producing an `update` result follows every other reader of
    the parameter or state it overwrites, so the code generator can write it
    in place) to lower the peak of live temporary bytes, predicted as the
    runtime will allocate them. Above all, optimizer updates and the ops
    feeding only them run as soon as their gradient is complete, so each
    gradient dies at once. Candidate orders (original, hoist, feed, sink,
    greedy; see PlanMemory.cpp) are simulated and the lowest peak wins.

    Each function gets `tcc.memory`, the predicted anatomy in bytes: weights,
    optimizer_state, grad_accumulators, other_state, inputs, constants; the
    temporaries live at the peak split into activations, gradients and
    temporaries (summing to temp_peak); saved_activations (all values
    computed before the loss and read after it); peak (persistent +
    temp_peak); and the schedule chosen.

    Example: in `@train_step` of an MLP trained with AdamW, each
    `tcc.adamw_update` moves from the end of the function to right after the
    op completing its gradient.

    Then, with `group-updates`, an AdamW update moves down to just before the
    next one with the same attributes (the CUDA runtime runs consecutive
    AdamW updates as one multi-tensor launch) where the predicted peak grows
    by at most 1/1024 of the chosen order's: typically a bias's update,
    whose gradient comes out of the region that made the activation
    gradient before the weight's does.
  }];
  let dependentDialects = ["mlir::tcc::TccDialect"];
  let options = [
    Option<"strategy", "strategy", "std::string", /*default=*/"\"auto\"",
           "auto (lowest predicted peak), original, hoist, feed, sink or "
           "greedy">,
    Option<"annotate", "annotate", "bool", /*default=*/"true",
           "Attach the predicted anatomy as tcc.memory">,
    Option<"groupUpdates", "group-updates", "bool", /*default=*/"true",
           "Move an AdamW update next to the following one where the peak "
           "grows by at most 1/1024">,
  ];
  let statistics = [
    Statistic<"numGrouped", "grouped-updates",
              "AdamW updates moved next to the following one">,
  ];
}

def FusePass : Pass<"tcc-fuse", "mlir::func::FuncOp"> {
  let summary = "Groups element-wise ops and row normalizations into tcc.fused";
  let description = [{
    Chains of element-wise ops, and element-wise ops around last-axis row
    ops (softmax, log_softmax, their gradients, layer_norm, last-axis
    reduce_sum/reduce_mean, softmax_cross_entropy and its gradient), become
    one `tcc.fused` op each, which the CPU code generator compiles into one
    generated kernel. A layer_norm_grad over the last axis is first expanded
    into primitive ops so its input gradient fuses too, and (with
    `column-sums`) its scale and bias gradients join that region as column
    sums, so one pass reads dy and x for all three. Matmuls, convolutions,
    gathers, transposes and optimizer updates stay outside. Runs after
    autodiff (tcc.fused is not differentiable).
  }];
  let options = [
    Option<"columnSums", "column-sums", "bool", /*default=*/"true",
           "layer norm parameter gradients and bias gradients join the "
           "regions that read or compute what they sum, as column sums "
           "(false: library kernels)">
  ];
  let dependentDialects = ["mlir::tcc::TccDialect"];
}

def MixedPrecisionPass : Pass<"tcc-mixed-precision", "mlir::ModuleOp"> {
  let summary = "bf16/fp16 GEMMs and element-wise ops, fp32 master weights";
  let description = [{
    In @train_step, @accumulate_step and @forward, GEMMs (matmul, conv2d and
    its gradients) compute in the low type; element-wise and data-movement
    ops (add, mul, gelu, dropout, relu, transpose, reshape, ...) follow a low
    operand; reductions, softmax, normalizations, exp/log, losses, gathers
    and optimizer updates stay f32. `tcc.cast` is inserted at the
    boundaries; arguments and results keep their types, so parameters are
    f32 master weights and their gradients reach the optimizer in f32.

    With `fp16`, dynamic loss scaling as torch.cuda.amp.GradScaler: the
    backward's seed is multiplied by the state `loss_scale` (initially
    `loss-scale-init`), gradients are unscaled in f32 before the optimizer,
    and a step with an Inf/NaN gradient keeps every parameter and optimizer
    state (each becomes `tcc.where(finite, new, old)`), halves the scale and
    counts itself in the state `loss_scale.skipped`; after
    `growth-interval` finite steps in a row the scale doubles.

    Example (bf16): `%y = tcc.matmul %x, %w` becomes
    `%xl = tcc.cast %x : tensor<4x8xf32> -> tensor<4x8xbf16>` (the same for
    `%w`) and `%y = tcc.matmul %xl, %wl` on bf16, with a cast back where an
    f32 op reads `%y`.
  }];
  let dependentDialects = ["mlir::tcc::TccDialect", "mlir::func::FuncDialect"];
  let options = [
    Option<"precision", "precision", "std::string", /*default=*/"\"bf16\"",
           "fp32 (no change), bf16 or fp16">,
    Option<"lossScaleInit", "loss-scale-init", "double", /*default=*/"65536.0",
           "fp16: the initial loss scale">,
    Option<"growthInterval", "growth-interval", "int64_t", /*default=*/"2000",
           "fp16: finite steps in a row after which the scale doubles">,
  ];
}

def GemmEpiloguePass : Pass<"tcc-gemm-epilogue", "mlir::func::FuncOp"> {
  let summary = "Folds bias adds, activations and bias gradients into GEMMs";
  let description = [{
    Forms tcc.matmul_epilogue, which cuBLASLt runs as one GEMM with an
    epilogue: matmul [+ a [N] bias] [+ relu or tanh GELU] in the forward
    (a GELU whose pre-activation the backward reads saves it as a second
    result), the tanh GELU gradient of a matmul (with the bias gradient
    summed from it) in the backward, and the bias gradient
    (reduce_sum over all leading axes) of the operand a weight-gradient
    GEMM sums over K. ReLU's backward is first rewritten to read the ReLU's
    output (exact), so the pre-activation is not saved. Runs after autodiff
    (the op is not differentiable) and before tcc-fuse.
    ```mlir
    %h = tcc.matmul %x, %w : (tensor<8x4xf32>, tensor<4x16xf32>) -> tensor<8x16xf32>
    %s = tcc.add %h, %b : (tensor<8x16xf32>, tensor<16xf32>) -> tensor<8x16xf32>
    %y = tcc.relu %s : tensor<8x16xf32>
    ```
    becomes
    `%y = tcc.matmul_epilogue %x, %w bias %b {epilogue = "bias_relu"}`.
    With `column-sums` (tcc-fuse's), a bias gradient whose summed value a
    fusible op computes stays a reduce_sum: it joins that op's region as a
    column sum, which reads nothing again; so does the bias gradient of a
    QKV projection whose attention_grad tcc-pack-attention packs, which
    that op then sums.
  }];
  let options = [
    Option<"columnSums", "column-sums", "bool", /*default=*/"false",
           "leave bias gradients of values a fused region or a packed "
           "attention_grad computes to their column sums">
  ];
  let dependentDialects = ["mlir::tcc::TccDialect"];
}

def SinkTransposesPass : Pass<"tcc-sink-transposes", "mlir::func::FuncOp"> {
  let summary = "Moves transposes and row regroupings down until they cancel";
  let description = [{
    Runs on the forward before autodiff. A transpose that keeps the last
    axis moves below ops that work on rows of it (GEMMs with a 2-D right
    operand, element-wise ops with a bias-like operand, last-axis slices
    and reshapes) when every path then meets the inverse transpose; a
    reshape that only regroups leading axes moves down the same way to a
    reshape back. A sequence-major tcc.attention over
    nn.MultiheadAttention's head split of a transposed [B, T, E] value reads
    [B, T, H, D] instead. For MHA with batch_first this removes the
    transposes of the block's input and output.
    ```mlir
    %t = tcc.transpose %x {perm = array<i64: 1, 0, 2>} : tensor<2x4x8xf32> -> tensor<4x2x8xf32>
    %y = tcc.matmul %t, %w : (tensor<4x2x8xf32>, tensor<8x8xf32>) -> tensor<4x2x8xf32>
    %z = tcc.transpose %y {perm = array<i64: 1, 0, 2>} : tensor<4x2x8xf32> -> tensor<2x4x8xf32>
    ```
    becomes `%z = tcc.matmul %x, %w`.
  }];
  let dependentDialects = ["mlir::tcc::TccDialect"];
}

def TrimConvTapsPass : Pass<"tcc-trim-conv-taps", "mlir::func::FuncOp"> {
  let summary = "Drops convolution taps that read only padding";
  let description = [{
    Runs on the forward before autodiff. A kernel row or column whose taps
    read padding for every output (known from the static shapes) is sliced
    off the weight, and the pads shrink to match, which is exact. A 3x3
    convolution with pad 1 on a 1x1 map becomes a 1x1 one on the centre
    taps:
    ```mlir
    %y = tcc.conv2d %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, groups = 1 : i64} : (tensor<4x8x1x1xf32>, tensor<8x8x3x3xf32>) -> tensor<4x8x1x1xf32>
    ```
    becomes
    ```mlir
    %c = tcc.slice %w {starts = array<i64: 0, 0, 1, 1>, sizes = array<i64: 8, 8, 1, 1>, steps = array<i64: 1, 1, 1, 1>} : tensor<8x8x3x3xf32> -> tensor<8x8x1x1xf32>
    %y = tcc.conv2d %x, %c {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, groups = 1 : i64} : (tensor<4x8x1x1xf32>, tensor<8x8x1x1xf32>) -> tensor<4x8x1x1xf32>
    ```
    The sliced-off taps get a zero gradient through the slice, as they do
    through the full convolution. With `gemm`, a convolution left with a
    1x1 output, no leading pads, one group and unit dilation (the case
    above) is a tcc.matmul of the flattened input and weight.
  }];
  let options = [
    Option<"gemm", "gemm", "bool", /*default=*/"true",
           "rewrite convolutions with a 1x1 output that read the input's "
           "first kH x kW positions as GEMMs">,
  ];
  let dependentDialects = ["mlir::tcc::TccDialect"];
}

def ShadowWeightsPass : Pass<"tcc-shadow-weights", "mlir::ModuleOp"> {
  let summary = "AdamW writes the 16-bit copies of the weights the next step's GEMMs read";
  let description = [{
    Runs after tcc-mixed-precision (bf16 or fp16). Every step casts each f32
    master weight a GEMM reads down to 16 bits: a read of 4 and a write of 2
    bytes per element, and one kernel per weight. When @train_step's AdamW
    update of parameter `N` is returned as N's new value, and @train_step or
    @accumulate_step (gradient accumulation) reads `tcc.cast N` to one
    16-bit type, the update also writes that cast of the new value
    (`tcc.adamw_update ... -> tensor<...xbf16>`, 2 bytes per element more)
    into a new state `N.bf16` or `N.f16` (`tcc.shadow_of = "N"`), and the
    casts in @train_step and @accumulate_step read that state instead. Its
    initial value is the cast of N's (the runtime computes it at load), so
    every step sees exactly the values the casts gave: losses do not change.
    @forward keeps its casts: it reads the master weights alone, whatever
    wrote them. With fp16 loss scaling the copy's update gets the same
    `tcc.where(finite, new, old)` as the weight's. Casts of a view of a
    parameter are left as they are.
    ```mlir
    %wl = tcc.cast %w : tensor<8x4xf32> -> tensor<8x4xbf16>
    %w1, %m1, %v1 = tcc.adamw_update %w, %g, %m, %v, %t {...} : tensor<8x4xf32>, tensor<f32>
    ```
    becomes, with a state argument `%ws` named "w.bf16",
    `%w1, %m1, %v1, %ws1 = tcc.adamw_update %w, %g, %m, %v, %t {...} : tensor<8x4xf32>, tensor<f32> -> tensor<8x4xbf16>`,
    the GEMM reads `%ws`, and `%ws1` is returned as the update of "w.bf16".
  }];
  let dependentDialects = ["mlir::tcc::TccDialect", "mlir::func::FuncDialect"];
}

def PackAttentionPass : Pass<"tcc-pack-attention", "mlir::func::FuncOp"> {
  let summary = "Sequence-major attention reads q, k and v inside the QKV projection";
  let description = [{
    Runs after autodiff. A sequence-major tcc.attention whose query, key
    and value are the head splits of the thirds [0, E), [E, 2E), [2E, 3E)
    of the last axis of one [B..., T, 3E] value (a fused QKV projection)
    reads reshape(value) : [B..., T, 3H, D] as `fused_qkv` instead; a
    tcc.attention_grad of the same operands whose three gradients are only
    concatenated back into the projection's gradient writes that gradient
    as its one result instead. The slices, copies of the projection, are
    erased once nothing reads them.
    ```mlir
    %q0 = tcc.slice %x {sizes = array<i64: 2, 4, 8>, starts = array<i64: 0, 0, 0>, steps = array<i64: 1, 1, 1>} : tensor<2x4x24xf32> -> tensor<2x4x8xf32>
    %q = tcc.reshape %q0 : tensor<2x4x8xf32> -> tensor<2x4x2x4xf32>
    (k and v from columns 8 and 16 alike)
    %o, %lse = tcc.attention %q, %k, %v {scale = 0.5 : f64, seq_major = true} : ...
    ```
    becomes `%p = tcc.reshape %x : tensor<2x4x24xf32> -> tensor<2x4x6x4xf32>`
    and `tcc.attention %p, %p, %p {fused_qkv = true, ...}`.

    With `column-sums`, the projection's bias gradient - a reduce_sum of the
    merged gradient over every axis but the last, f32 - becomes the
    attention_grad's second result (`column_sums`): the backward kernels
    add each tile's columns while they hold it, instead of a GEMM epilogue
    or a reduction reading the gradient again (tcc-gemm-epilogue leaves
    such a sum alone under the same option).
  }];
  let options = [
    Option<"columnSums", "column-sums", "bool", /*default=*/"false",
           "a fused-QKV attention_grad also writes the projection's bias "
           "gradient (its column sums)">
  ];
  let dependentDialects = ["mlir::tcc::TccDialect"];
}

def FuseAttentionPass : Pass<"tcc-fuse-attention", "mlir::func::FuncOp"> {
  let summary = "Replaces matmul(softmax(q k^T * scale + mask), v) with tcc.attention";
  let description = [{
    Runs before autodiff, so the backward is tcc.attention_grad, which
    recomputes the attention probabilities from the saved row log-sum-exp
    instead of saving them ([..., Tq, Tk] per layer). Scalar constant
    factors on q, k or the scores fold into `scale`; a k^T written as a
    transpose is transposed back (two transposes compose into one); a
    constant causal mask (0 on and below the diagonal, -inf above) becomes
    `causal = true` and an all-zero one is dropped. Graphs whose
    probabilities or scores have other users, whose operands broadcast
    against each other, or whose mask depends on a `param` argument (it
    would need a gradient) are left as they are.
    ```mlir
    %s = tcc.matmul %q, %k {transpose_rhs = true} : (tensor<8x16x32xf32>, tensor<8x16x32xf32>) -> tensor<8x16x16xf32>
    %c = tcc.constant dense<0.17677669> : tensor<f32>
    %t = tcc.mul %s, %c : (tensor<8x16x16xf32>, tensor<f32>) -> tensor<8x16x16xf32>
    %p = tcc.softmax %t {axis = 2 : i64} : tensor<8x16x16xf32>
    %o = tcc.matmul %p, %v : (tensor<8x16x16xf32>, tensor<8x16x32xf32>) -> tensor<8x16x32xf32>
    ```
    becomes `%o, %lse = tcc.attention %q, %k, %v {scale = 0.17677669...}`.
  }];
  let dependentDialects = ["mlir::tcc::TccDialect"];
  let statistics = [
    Statistic<"numFused", "fused-attention", "Attention subgraphs fused">,
  ];
}

def CutCrossEntropyPass : Pass<"tcc-cut-cross-entropy", "mlir::ModuleOp"> {
  let summary = "Fuses the LM head matmul and its cross-entropy so the logits are never stored";
  let description = [{
    Runs after tcc-build-loss and before tcc-autodiff. A
    `tcc.softmax_cross_entropy` whose logits are `matmul(hidden, W)` (plus a
    bias over the vocabulary), used by nothing else, becomes
    `tcc.linear_cross_entropy`: its kernels stream the vocabulary in slices
    of `block` columns (a GEMM per slice and an online log-sum-exp), and its
    gradient recomputes each slice from the saved row log-sum-exp, so
    neither the logits [N, V] nor their gradient is stored. ignore_index and
    label_smoothing carry over. Heads of fewer than `min-classes` classes
    are left alone (tcc compile passes 256). The module gets `tcc.cut_cross_entropy`, a
    sentence saying what was fused or why nothing was (tcc compile
    --report prints it).
    ```mlir
    %t = tcc.transpose %w {perm = array<i64: 1, 0>} : tensor<256x128xf32> -> tensor<128x256xf32>
    %m = tcc.matmul %h, %t : (tensor<4x8x128xf32>, tensor<128x256xf32>) -> tensor<4x8x256xf32>
    %l = tcc.add %b, %m : (tensor<256xf32>, tensor<4x8x256xf32>) -> tensor<4x8x256xf32>
    %loss = tcc.softmax_cross_entropy %l, %y : (tensor<4x8x256xf32>, tensor<4x8xi64>) -> tensor<f32>
    ```
    becomes `%loss, %lse = tcc.linear_cross_entropy %h, %w, %y, %b
    {transpose_weight = true, block = 2048 : i64}`.
  }];
  let dependentDialects = ["mlir::tcc::TccDialect"];
  let options = [
    Option<"block", "block", "int64_t", /*default=*/"2048",
           "Vocabulary columns per slice of the fused kernels">,
    Option<"minClasses", "min-classes", "int64_t", /*default=*/"1",
           "Heads with fewer classes are left alone (a classifier's few "
           "logits cost little to store, and recomputing them costs a GEMM)">,
  ];
  let statistics = [
    Statistic<"numFused", "fused-heads", "Head + cross-entropy pairs fused">,
  ];
}

//===----------------------------------------------------------------------===//
// Test-only passes: each prints what one helper analysis of passes/ decides
// (as MLIR's -test-print-liveness does), so that its lit test can check the
// answers. They change nothing and are in no pipeline. Output goes to stderr;
// values are named as the printer numbers them in their function.
//===----------------------------------------------------------------------===//

def TestPrintActivationsPass
    : Pass<"tcc-test-print-activations", "mlir::ModuleOp"> {
  let summary = "Test only: prints ActivationAnalysis (which values a "
                "training step saves across its loss, and their bytes)";
  let description = [{
    For tests/lit/passes/test-print-activations.mlir; changes nothing. For each
    function with a body, in module order:

    ```
    activations @forward: no loss result
    activations @train_step: loss %6 = tcc.mse_loss (tensor<f32>)
      %0 = tcc.constant (tensor<f32>): not an activation
      %2 = tcc.relu (tensor<16x8xf32>): activation, 512 bytes (512 B)
      total: 3 activations, 1792 bytes (1.75 KiB)
    ```

    `no loss result` when analyzeActivations has nothing to analyze; else
    its loss op, then one line per result of each op before the loss op, in
    block order: an activation with its bytes (runtimeTensorBytes, then
    formatBytes), or not one; then ActivationInfo's count and totalBytes.
  }];
}

def TestPrintFusionPass : Pass<"tcc-test-print-fusion", "mlir::ModuleOp"> {
  let summary = "Test only: prints FusionModel (what may join a fused region "
                "over which domain, and why a producer-consumer pair is cut)";
  let description = [{
    For tests/lit/passes/test-print-fusion.mlir; changes nothing. Only the model
    is asked: tcc-fuse's clustering (which regions it merges, its cycle and
    loss checks) is not run. For each function with a body, in module order,
    first each op of the entry block:

    ```
    fusion @chain
      %0 = tcc.add: elementwise, domain 4x8
        operand 0: rows [4] strides [8] col 1; full, scale 8
        operand 1: rows [4] strides [0] col 1; constant, scale 0
        result 0: full
      %2 = tcc.matmul: not fusible
    ```

    (`classify`; for a fusible op `ownDomain` as rows x cols, `data
    movement` (isDataMovement), `pad N` (padOf), per operand its
    `operandView` over that domain (or `does not fit`) with the View's flags
    full (isFullNative), row (isRowNative), constant, and its rowScale (or
    `no scale`), per result its `resultLayout`: full, row, scalar, padded or
    `does not fit`); then, for each value a fusible op reads from another
    fusible op of the block, the two as one region:

    ```
      %1 = tcc.gelu reads %0 = tcc.add: joins, domain 4x8
      %3 = tcc.mul reads %2 = tcc.softmax_cross_entropy: cut, domain 4x8: tcc.mul: reads a whole-region result
    ```

    (`regionDomain` of the pair, `regionIsLegal` and its reason).
  }];
}

def TestPrintMemoryPass : Pass<"tcc-test-print-memory", "mlir::ModuleOp"> {
  let summary = "Test only: prints MemoryModel (dependences, update chains, "
                "temporaries' bytes and lifetimes, predicted peak and anatomy)";
  let description = [{
    For tests/lit/passes/test-print-memory.mlir; changes nothing. For each
    function of one block, in module order, builds a FuncMemoryModel and
    prints, with ops numbered by block position (#i, terminator excluded):

    ```
    memory @train_step: 10 ops, 7 temps
      #1 %1 = tcc.matmul: preds [#0]
      #7 %7 = tcc.matmul: preds [#0, #6], feeds update #8
      #8 %new_param, %new_momentum_buffer = tcc.sgd_momentum_update: preds [#7, #1], update, chain inputs [#1, #0]
      temp 0: def #0, 128 bytes, users [#1, #7], live #0..#7
      temp 2: def #2, 4 bytes, returned, users [], live #2..end
      temp 6: def #7, 256 bytes, gradient, users [#8], live #7..#8
      persistent: weights 256, weight_copies 0, optimizer_state 256, grad_accumulators 0, other_state 8, inputs 144, constants 4 (total 668)
      at the peak: activations 128, gradients 256, temporaries 36 (temp_peak 420)
      saved_activations 160
      peak 1088
    ```

    Per op its predecessors (data and in-place anti-dependences), and
    whether it produces an update (with its chain's inputs) or feeds only
    one. Per temp (in definition order) its def, bytes, whether it is a
    gradient or returned (liveToEnd), its readers and its life in block
    order: from its def to its last reader, or to the end if returned. Then
    the MemoryAnatomy that `simulate` predicts for the block order (after
    tcc-plan-memory: the chosen schedule).
  }];
}

#endif // TCC_PASSES_TD
