//===- KernelOfOp.cpp - The kernel and attributes one op lowers to --------===//
#include "compiler/codegen/KernelOfOp.h"

#include "dialects/tcc/TccOps.h"
#include "runtime/core/abi/GemmEpilogue.h"
#include "runtime/core/abi/Kernels.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Diagnostics.h"
#include "llvm/ADT/TypeSwitch.h"

#include <optional>

using namespace mlir;
namespace rt = ::tcc::rt;
using K = ::tcc::rt::abi::KernelId;

/// The kernel that runs `op`: the one its name without the dialect spells
/// (KernelList.def), a copy for a reshape; none for an op no kernel runs.
static std::optional<K> kernelOf(Operation *op) {
  if (isa<mlir::tcc::ReshapeOp>(op))
    return K::Copy;
  return rt::abi::kernelByName(op->getName().stripDialect().str());
}

/// Strides, pads and dilations of a convolution or pooling op (the
/// verifiers made strides and dilations 2 values, pads 4).
static rt::abi::Window2dAttrs window2d(ArrayRef<int64_t> s, ArrayRef<int64_t> p,
                                       ArrayRef<int64_t> d) {
  rt::abi::Window2dAttrs w;
  w.strideH = s[0], w.strideW = s[1];
  w.padTop = p[0], w.padLeft = p[1], w.padBottom = p[2], w.padRight = p[3];
  w.dilationH = d[0], w.dilationW = d[1];
  return w;
}

template <class Op> static rt::abi::Conv2dAttrs convAttrs(Op c) {
  rt::abi::Conv2dAttrs a;
  static_cast<rt::abi::Window2dAttrs &>(a) =
      window2d(c.getStrides(), c.getPads(), c.getDilations());
  a.groups = static_cast<int64_t>(c.getGroups());
  return a;
}

/// The window of a pooling op with dilations `d`.
template <class Op>
static rt::abi::Pool2dWindow poolWindow(Op p, ArrayRef<int64_t> d) {
  rt::abi::Pool2dWindow w;
  static_cast<rt::abi::Window2dAttrs &>(w) =
      window2d(p.getStrides(), p.getPads(), d);
  w.kernelH = p.getKernelShape()[0], w.kernelW = p.getKernelShape()[1];
  w.ceilMode = p.getCeilMode();
  return w;
}

namespace tcc {

LogicalResult describeKernel(Operation *op, rt::Instr &in) {
  std::optional<K> id = kernelOf(op);
  auto noKernel = [&] {
    return op->emitError("no kernel for '")
           << op->getName() << "' in the CPU code generator";
  };
  if (!id)
    return noKernel();
  in.kernel = rt::abi::name(*id);
  return llvm::TypeSwitch<Operation *, LogicalResult>(op)
      .Case<mlir::tcc::ReshapeOp>([&](auto) { return success(); })
      .Case<mlir::tcc::FusedOp>([&](mlir::tcc::FusedOp f) -> LogicalResult {
        // A generated kernel (compiler/codegen/FusedCodegen.cpp numbers them).
        if (!f.getKernel())
          return f.emitError("tcc.fused has no kernel number: the fused "
                             "code generator has not run");
        // Pairs the generated code may run in place; the memory plan
        // decides which share a buffer (MemoryPlanner.cpp).
        std::vector<int64_t> pairs;
        if (auto p = f.getInPlace())
          pairs.assign(p->begin(), p->end());
        rt::abi::setAttrs(in,
                          rt::abi::FusedAttrs{(int64_t)*f.getKernel(), pairs});
        return success();
      })
      .Case<mlir::tcc::MatmulOp>([&](auto m) {
        rt::abi::setAttrs(
            in, rt::abi::MatmulAttrs{m.getTransposeLhs(), m.getTransposeRhs()});
        return success();
      })
      .Case<mlir::tcc::MatmulEpilogueOp>(
          [&](mlir::tcc::MatmulEpilogueOp m) -> LogicalResult {
            // The epilogue travels as its code
            // (runtime/core/abi/GemmEpilogue.h).
            auto *e = rt::gemmEpilogueByName(m.getEpilogue().str().c_str());
            if (!e)
              return m.emitError("no kernel for the GEMM epilogue '")
                     << m.getEpilogue() << "'";
            rt::abi::setAttrs(
                in, rt::abi::MatmulEpilogueAttrs{m.getTransposeLhs(),
                                                 m.getTransposeRhs(), e->code});
            return success();
          })
      // in [q, k, v (, mask)] / [q, k, v, out, lse, dout (, mask)]: the
      // operand order of the ops (runtime/core/abi/Kernels.h); with
      // fused_qkv, q, k and v are the one projection tensor.
      .Case<mlir::tcc::AttentionOp, mlir::tcc::AttentionGradOp>([&](auto a) {
        rt::abi::setAttrs(
            in, rt::abi::AttentionAttrs{a.getCausal(), a.getSeqMajor(),
                                        a.getFusedQkv(),
                                        a.getScale().convertToDouble()});
        return success();
      })
      .Case<mlir::tcc::ReduceSumOp, mlir::tcc::ReduceMeanOp>([&](auto r) {
        ArrayRef<int64_t> axes = r.getAxes();
        rt::abi::setAttrs(in, rt::abi::AxesAttrs{{axes.data(), axes.size()}});
        return success();
      })
      .Case<mlir::tcc::TransposeOp>([&](auto t) {
        ArrayRef<int64_t> perm = t.getPerm();
        rt::abi::setAttrs(in, rt::abi::PermAttrs{{perm.data(), perm.size()}});
        return success();
      })
      // The axis of the softmax family, gather (and its gradient, which
      // reads the table size from its output's shape) and concat.
      .Case<mlir::tcc::SoftmaxOp, mlir::tcc::LogSoftmaxOp,
            mlir::tcc::SoftmaxGradOp, mlir::tcc::LogSoftmaxGradOp,
            mlir::tcc::GatherOp, mlir::tcc::ConcatOp, mlir::tcc::GatherGradOp>(
          [&](auto s) {
            rt::abi::setAttrs(in, rt::abi::AxisAttrs{(int64_t)s.getAxis()});
            return success();
          })
      .Case<mlir::tcc::SliceOp, mlir::tcc::SliceGradOp>([&](auto s) {
        ArrayRef<int64_t> starts = s.getStarts(), steps = s.getSteps();
        rt::abi::setAttrs(in,
                          rt::abi::WindowAttrs{{starts.data(), starts.size()},
                                               {steps.data(), steps.size()}});
        return success();
      })
      .Case<mlir::tcc::CastOp>([&](auto c) {
        Type to = cast<ShapedType>(c.getType()).getElementType();
        rt::abi::setAttrs(in, rt::abi::CastAttrs{to.isInteger(1)}); // x != 0
        return success();
      })
      // Convolution, pooling, batch norm: attributes as KernelAttrs.h
      // lays them out.
      .Case<mlir::tcc::Conv2dOp, mlir::tcc::Conv2dGradInputOp,
            mlir::tcc::Conv2dGradWeightOp>([&](auto c) {
        rt::abi::setAttrs(in, convAttrs(c));
        return success();
      })
      .Case<mlir::tcc::MaxPool2dOp>([&](auto p) {
        rt::abi::setAttrs(
            in, rt::abi::MaxPool2dAttrs{poolWindow(p, p.getDilations())});
        return success();
      })
      .Case<mlir::tcc::AvgPool2dOp, mlir::tcc::AvgPool2dGradOp>([&](auto p) {
        rt::abi::setAttrs(in, rt::abi::AvgPool2dAttrs{poolWindow(p, {1, 1}),
                                                      p.getCountIncludePad()});
        return success();
      })
      .Case<mlir::tcc::BatchNormTrainOp, mlir::tcc::BatchNormTrainGradOp>(
          [&](auto b) {
            rt::abi::setAttrs(
                in, rt::abi::EpsAttrs{b.getEpsilon().convertToDouble()});
            return success();
          })
      // Math, normalization, dropout.
      .Case<mlir::tcc::PowScalarOp, mlir::tcc::PowScalarGradOp>([&](auto p) {
        rt::abi::setAttrs(
            in, rt::abi::PowScalarAttrs{p.getExponent().convertToDouble()});
        return success();
      })
      .Case<mlir::tcc::UnaryFnOp, mlir::tcc::UnaryFnGradOp>([&](auto f) {
        rt::abi::setAttrs(in, rt::abi::UnaryFnAttrs{
                                  f.getFnCode(), f.getAlpha().convertToDouble(),
                                  f.getBeta().convertToDouble()});
        return success();
      })
      .Case<mlir::tcc::GeluOp, mlir::tcc::GeluGradOp>([&](auto g) {
        rt::abi::setAttrs(in, rt::abi::GeluAttrs{g.getApproximate() == "tanh"});
        return success();
      })
      .Case<mlir::tcc::LayerNormOp>([&](auto l) {
        rt::abi::setAttrs(
            in, rt::abi::LayerNormAttrs{(int64_t)l.getAxis(),
                                        l.getEpsilon().convertToDouble()});
        return success();
      })
      .Case<mlir::tcc::LayerNormGradOp, mlir::tcc::LayerNormParamGradOp>(
          [&](auto l) {
            rt::abi::setAttrs(in, rt::abi::AxisAttrs{(int64_t)l.getAxis()});
            return success();
          })
      .Case<mlir::tcc::RandomOp>([&](auto r) {
        rt::abi::setAttrs(in, rt::abi::RandomAttrs{(int64_t)r.getSeed(),
                                                   r.getNormal(),
                                                   r.getA().convertToDouble(),
                                                   r.getB().convertToDouble()});
        return success();
      })
      .Case<mlir::tcc::DropoutOp>([&](auto d) {
        rt::abi::setAttrs(
            in, rt::abi::DropoutAttrs{(int64_t)d.getSeed(),
                                      d.getRatio().convertToDouble()});
        return success();
      })
      // Sharded optimizer state (tcc-shard-optimizer-state).
      .Case<mlir::tcc::ReduceScatterOp, mlir::tcc::AllGatherOp>([&](auto r) {
        rt::abi::setAttrs(in, rt::abi::ShardAttrs{(int64_t)r.getShards(),
                                                  (int64_t)r.getBucket()});
        return success();
      })
      .Case<mlir::tcc::ShardSliceOp,
            mlir::tcc::ShardedGlobalNormOp>([&](auto r) {
        rt::abi::setAttrs(in, rt::abi::ShardAttrs{(int64_t)r.getShards(), 0});
        return success();
      })
      // Optimizer updates: the learning rate is an operand (optimizer.lr).
      .Case<mlir::tcc::SgdUpdateOp>([&](auto u) {
        rt::abi::setAttrs(
            in, rt::abi::SgdAttrs{u.getWeightDecay().convertToDouble()});
        return success();
      })
      .Case<mlir::tcc::SgdMomentumUpdateOp>([&](auto u) {
        rt::abi::setAttrs(
            in, rt::abi::SgdMomentumAttrs{u.getMomentum().convertToDouble(),
                                          u.getWeightDecay().convertToDouble(),
                                          u.getNesterov()});
        return success();
      })
      .Case<mlir::tcc::AdafactorUpdateOp>([&](auto u) {
        rt::abi::setAttrs(
            in, rt::abi::AdafactorAttrs{u.getBeta2Decay().convertToDouble(),
                                        u.getEps1().convertToDouble(),
                                        u.getEps2().convertToDouble(),
                                        u.getD().convertToDouble(),
                                        u.getWeightDecay().convertToDouble()});
        return success();
      })
      .Case<mlir::tcc::LionUpdateOp>([&](auto u) {
        rt::abi::setAttrs(
            in, rt::abi::LionAttrs{u.getBeta1().convertToDouble(),
                                   u.getBeta2().convertToDouble(),
                                   u.getWeightDecay().convertToDouble()});
        return success();
      })
      .Case<mlir::tcc::AdamWUpdateOp>([&](auto u) {
        rt::abi::setAttrs(
            in, rt::abi::AdamwAttrs{u.getBeta1().convertToDouble(),
                                    u.getBeta2().convertToDouble(),
                                    u.getEps().convertToDouble(),
                                    u.getWeightDecay().convertToDouble(),
                                    u.getL2Decay()});
        return success();
      })
      // Comparisons, logic and extrema (TccOpsLogic.td).
      .Case<mlir::tcc::CompareOp>([&](auto c) {
        rt::abi::setAttrs(
            in, rt::abi::CompareAttrs{c.predicateCode(c.getPredicate())});
        return success();
      })
      .Case<mlir::tcc::LogicOp>([&](auto l) {
        rt::abi::setAttrs(in, rt::abi::LogicAttrs{l.kindCode(l.getKind())});
        return success();
      })
      .Case<mlir::tcc::ReduceMaxOp, mlir::tcc::ReduceMinOp,
            mlir::tcc::ReduceProdOp, mlir::tcc::ReduceProdGradOp>([&](auto r) {
        ArrayRef<int64_t> axes = r.getAxes();
        rt::abi::setAttrs(in, rt::abi::AxesAttrs{{axes.data(), axes.size()}});
        return success();
      })
      .Case<mlir::tcc::CumSumOp>([&](auto c) {
        rt::abi::setAttrs(in, rt::abi::CumSumAttrs{(int64_t)c.getAxis(),
                                                   c.getExclusive(),
                                                   c.getReverse()});
        return success();
      })
      .Case<mlir::tcc::ArgMaxOp, mlir::tcc::ArgMinOp>([&](auto r) {
        rt::abi::setAttrs(in, rt::abi::ArgAttrs{(int64_t)r.getAxis(),
                                                r.getSelectLastIndex()});
        return success();
      })
      .Case<mlir::tcc::MaximumOp, mlir::tcc::MinimumOp>(
          [](auto) { return success(); })
      .Case<mlir::tcc::ModOp>([&](auto m) {
        rt::abi::setAttrs(in, rt::abi::ModAttrs{m.getFmod()});
        return success();
      })
      // Indexing by data (TccOpsIndex.td).
      .Case<mlir::tcc::GatherElementsOp>([&](auto g) {
        rt::abi::setAttrs(in, rt::abi::AxisAttrs{(int64_t)g.getAxis()});
        return success();
      })
      .Case<mlir::tcc::ScatterElementsOp>([&](auto sc) {
        rt::abi::setAttrs(in, rt::abi::ScatterAttrs{
                                  (int64_t)sc.getAxis(),
                                  mlir::tcc::ScatterElementsOp::reductionCode(
                                      sc.getReduction())});
        return success();
      })
      .Case<mlir::tcc::GatherNdOp>([&](auto g) {
        rt::abi::setAttrs(in,
                          rt::abi::GatherNdAttrs{(int64_t)g.getBatchDims()});
        return success();
      })
      .Case<mlir::tcc::ScatterNdOp>([&](auto sc) {
        rt::abi::setAttrs(in, rt::abi::ScatterNdAttrs{
                                  (int64_t)sc.getBatchDims(),
                                  mlir::tcc::ScatterElementsOp::reductionCode(
                                      sc.getReduction())});
        return success();
      })
      .Case<mlir::tcc::SoftmaxCrossEntropyOp,
            mlir::tcc::SoftmaxCrossEntropyGradOp>([&](auto c) {
        rt::abi::setAttrs(in, rt::abi::CrossEntropyAttrs{
                                  c.getIgnoreIndexAttr().getInt(),
                                  c.getLabelSmoothing().convertToDouble()});
        return success();
      })
      .Case<mlir::tcc::LinearCrossEntropyOp,
            mlir::tcc::LinearCrossEntropyGradOp>([&](auto c) {
        rt::abi::setAttrs(in, rt::abi::LinearCrossEntropyAttrs{
                                  c.getTransposeWeight(),
                                  c.getIgnoreIndexAttr().getInt(),
                                  c.getLabelSmoothing().convertToDouble(),
                                  (int64_t)c.getBlock()});
        return success();
      })
      .Case<mlir::tcc::TopKOp>([&](auto t) {
        rt::abi::setAttrs(
            in, rt::abi::TopKAttrs{(int64_t)t.getAxis(), t.getLargest()});
        return success();
      })
      // Kernels without attributes (NoAttrs).
      .Case<mlir::tcc::WhereOp, mlir::tcc::MaxPool2dGradOp, mlir::tcc::ExpOp,
            mlir::tcc::LogOp, mlir::tcc::SqrtOp, mlir::tcc::TanhOp,
            mlir::tcc::SigmoidOp, mlir::tcc::ErfOp, mlir::tcc::SqrtGradOp,
            mlir::tcc::TanhGradOp, mlir::tcc::SigmoidGradOp,
            mlir::tcc::ErfGradOp, mlir::tcc::PowOp, mlir::tcc::PowGradOp,
            mlir::tcc::IncrementOp, mlir::tcc::AddOp, mlir::tcc::SubOp,
            mlir::tcc::MulOp, mlir::tcc::DivOp, mlir::tcc::NegOp,
            mlir::tcc::ReluOp, mlir::tcc::ReluGradOp, mlir::tcc::BroadcastToOp,
            mlir::tcc::MseLossOp, mlir::tcc::MseLossGradOp,
            mlir::tcc::GlobalNormOp>([](auto) { return success(); })
      .Default([&](Operation *) { return noKernel(); });
}

} // namespace tcc
