//===- ScheduleBuilder.cpp - Lowering tcc functions to schedules ----------===//
//
// One tcc op becomes one kernel call (reshape becomes a copy); constants
// become constant tensors in the blob. The order of the schedule is the order
// of the ops, which the passes keep topological. After lowering, the
// program's temps are given arena offsets by the memory planner.
//
//===----------------------------------------------------------------------===//
#include "compiler/codegen/ScheduleBuilder.h"

#include "compiler/codegen/KernelOfOp.h"
#include "compiler/codegen/MemoryPlanner.h"
#include "dialects/tcc/TccOps.h"
#include "runtime/core/abi/Kernels.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Diagnostics.h"
#include "llvm/ADT/DenseMap.h"

#include <cmath>
#include <cstring>
#include <map>
#include <optional>
#include <set>

using namespace mlir;
namespace rt = ::tcc::rt;
using K = ::tcc::rt::abi::KernelId;
using TccScheduleBuilder = ::tcc::ScheduleBuilder;

static FailureOr<rt::DType> dtypeOf(Type t, Location loc) {
  Type e = cast<ShapedType>(t).getElementType();
  if (e.isF32())
    return rt::DType::F32;
  if (e.isBF16())
    return rt::DType::BF16;
  if (e.isF16())
    return rt::DType::F16;
  // Bools (i1) are stored as i64 0/1: the kernels that take conditions and
  // masks read them as i64 (docs/ARCHITECTURE.md).
  if (e.isSignlessInteger(64) || e.isSignlessInteger(1))
    return rt::DType::I64;
  return emitError(loc) << "cannot lower tensors of element type " << e
                        << " (supported: f32, bf16, f16, i64, i1)";
}

/// The declared element type of a boundary tensor (the importer's
/// tcc.host_dtype attribute: an ONNX DOUBLE computed in f32, say), or
/// Native when there is none.
static FailureOr<rt::HostDType>
hostDTypeOf(StringAttr attr, const rt::TensorInfo &info, Location loc) {
  if (!attr)
    return rt::HostDType::Native;
  try {
    rt::HostDType h = rt::parseHostDType(attr.str());
    if (!rt::hostDTypeFits(h, info.dtype))
      return emitError(loc) << "tensor '" << info.name << "' of type "
                            << rt::dtypeName(info.dtype)
                            << " cannot be declared " << attr.getValue();
    return h;
  } catch (const rt::Error &e) {
    return emitError(loc) << "tensor '" << info.name << "': " << e.what();
  }
}

static std::vector<int64_t> shapeOf(Type t) {
  auto s = cast<RankedTensorType>(t).getShape();
  return {s.begin(), s.end()};
}

/// FNV-1a of the name, mixed with the seed (SplitMix64's finalizer): the
/// same (seed, name) always gives the same stream, different names differ.
static uint64_t tensorSeed(uint64_t seed, StringRef name) {
  auto mix = [](uint64_t z) {
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  };
  uint64_t h = 0xcbf29ce484222325ull;
  for (char c : name)
    h = (h ^ (uint8_t)c) * 0x100000001b3ull;
  return mix(h ^ mix(seed + 0x9e3779b97f4a7c15ull));
}

/// --weights seeded: what the values of a parameter (or state) look like.
/// Running statistics that are not all equal start at their mean: a random
/// draw could make a running variance negative. Non-finite values cannot be
/// described and stay in the blob (returns a Blob spec).
static rt::InitSpec measuredSpec(ArrayRef<float> v, bool isState,
                                 uint64_t seed) {
  rt::InitSpec s;
  double sum = 0;
  bool allEqual = true;
  for (float x : v) {
    if (!std::isfinite(x))
      return s;
    sum += x;
    allEqual &= x == v.front();
  }
  s.kind = rt::InitSpec::Kind::Constant;
  if (v.empty() || allEqual) {
    s.a = v.empty() ? 0.0 : (double)v.front();
    return s;
  }
  double mean = sum / (double)v.size(), sq = 0;
  for (float x : v)
    sq += ((double)x - mean) * ((double)x - mean);
  s.a = mean;
  if (isState)
    return s;
  s.kind = rt::InitSpec::Kind::Normal;
  s.b = std::sqrt(sq / (double)v.size()); // population standard deviation
  s.seed = seed;
  return s;
}

static rt::InitSpec constantSpec(double value) {
  rt::InitSpec s;
  s.kind = rt::InitSpec::Kind::Constant;
  s.a = value;
  return s;
}

int32_t TccScheduleBuilder::addTensor(rt::TensorInfo info) {
  artifact.tensors.push_back(std::move(info));
  return (int32_t)artifact.tensors.size() - 1;
}

FailureOr<int32_t> TccScheduleBuilder::persistent(BlockArgument arg) {
  auto fn = cast<func::FuncOp>(arg.getOwner()->getParentOp());
  unsigned i = arg.getArgNumber();
  auto kind = fn.getArgAttrOfType<StringAttr>(i, "tcc.kind");
  auto name = fn.getArgAttrOfType<StringAttr>(i, "tcc.name");
  Location loc = fn.getLoc();
  if (!kind || !name)
    return emitError(loc) << "argument #" << i << " of @" << fn.getSymName()
                          << " lacks tcc.kind/tcc.name";
  auto dtype = dtypeOf(arg.getType(), loc);
  if (failed(dtype))
    return failure();
  rt::TensorKind k;
  if (kind.getValue() == "param")
    k = rt::TensorKind::Param;
  else if (kind.getValue() == "state")
    k = rt::TensorKind::State;
  else if (kind.getValue() == "input")
    k = rt::TensorKind::Input;
  else if (kind.getValue() == "frozen") // tcc-lora's bases: read, never written
    k = rt::TensorKind::Constant;
  else
    return emitError(loc) << "argument '" << name.getValue()
                          << "' has unknown kind '" << kind.getValue() << "'";

  int32_t existing = artifact.findTensor(name.str());
  if (existing >= 0) {
    const rt::TensorInfo &t = artifact.tensors[existing];
    if (t.kind != k || t.dtype != *dtype || t.shape != shapeOf(arg.getType()))
      return emitError(loc) << "tensor '" << name.getValue()
                            << "' is used with two different types or kinds";
    return existing;
  }
  rt::TensorInfo info;
  info.name = name.str();
  info.kind = k;
  info.dtype = *dtype;
  info.shape = shapeOf(arg.getType());
  if (k == rt::TensorKind::Input) {
    auto host = hostDTypeOf(
        fn.getArgAttrOfType<StringAttr>(i, "tcc.host_dtype"), info, loc);
    if (failed(host))
      return failure();
    info.hostDType = *host;
  }
  auto initUniform =
      fn.getArgAttrOfType<DenseF64ArrayAttr>(i, "tcc.init_uniform");
  auto initDense = fn.getArgAttrOfType<DenseElementsAttr>(i, "tcc.init");
  if (k == rt::TensorKind::Param && !initialParams.count(info.name) &&
      (initUniform || initDense)) {
    // A parameter a pass adds (tcc-lora's adapters): uniform from the
    // runtime's generator, seeded by the pass's seed and the name, or the
    // pass's values.
    if (info.dtype != rt::DType::F32)
      return emitError(loc) << "the initial value of parameter '" << info.name
                            << "' must be f32";
    if (initUniform && initUniform.size() == 2) {
      auto seedAttr = fn.getArgAttrOfType<IntegerAttr>(i, "tcc.init_seed");
      info.init.kind = rt::InitSpec::Kind::Uniform;
      info.init.a = initUniform[0];
      info.init.b = initUniform[1];
      info.init.seed =
          tensorSeed(seedAttr ? (uint64_t)seedAttr.getInt() : 0, info.name);
    } else if (initDense && initDense.getType() == arg.getType()) {
      auto vals = initDense.getValues<float>();
      std::vector<float> f(vals.begin(), vals.end());
      if (initDense.isSplat() && std::isfinite(f.front()))
        info.init = constantSpec(f.front());
      else
        info.dataOffset = artifact.addBlob(f.data(), f.size() * sizeof(float));
    } else {
      return emitError(loc) << "parameter '" << info.name
                            << "' has a malformed tcc.init or tcc.init_uniform";
    }
  } else if (k == rt::TensorKind::Param || k == rt::TensorKind::Constant) {
    auto it = initialParams.find(info.name);
    if (it == initialParams.end())
      return emitError(loc)
             << "no initial value for parameter '" << info.name << "'";
    if ((int64_t)it->second.size() != info.numElements())
      return emitError(loc) << "initial value of '" << info.name << "' has "
                            << it->second.size() << " elements, expected "
                            << info.numElements();
    // A frozen weight is a constant: always its bytes (the artifact's
    // constants are never drawn).
    if (seededWeights && k == rt::TensorKind::Param)
      info.init = measuredSpec(it->second, /*isState=*/false,
                               tensorSeed(weightsSeed, info.name));
    if (info.init.kind == rt::InitSpec::Kind::Blob)
      info.dataOffset = artifact.addBlob(it->second.data(),
                                         it->second.size() * sizeof(float));
  } else if (auto of = fn.getArgAttrOfType<StringAttr>(i, "tcc.shadow_of");
             k == rt::TensorKind::State && of) {
    // tcc-shadow-weights' 16-bit copy starts as the cast of its parameter's
    // initial value, computed at load: the artifact carries no second copy.
    info.init.kind = rt::InitSpec::Kind::Cast;
    info.init.source = of.getValue().str();
  } else if (k == rt::TensorKind::State && initialParams.count(info.name)) {
    // Running statistics start from their initializer; optimizer state
    // (which has none) from zero.
    const std::vector<float> &init = initialParams.at(info.name);
    if ((int64_t)init.size() != info.numElements() ||
        info.dtype != rt::DType::F32)
      return emitError(loc)
             << "initial value of state '" << info.name << "' has "
             << init.size() << " elements, expected " << info.numElements();
    if (seededWeights)
      info.init = measuredSpec(init, /*isState=*/true,
                               tensorSeed(weightsSeed, info.name));
    if (info.init.kind == rt::InitSpec::Kind::Blob)
      info.dataOffset =
          artifact.addBlob(init.data(), init.size() * sizeof(float));
  } else if (auto init = fn.getArgAttrOfType<DenseElementsAttr>(i, "tcc.init");
             k == rt::TensorKind::State && init) {
    // State a pass starts at a given value (tcc-mixed-precision's loss scale).
    if (info.dtype != rt::DType::F32 || init.getType() != arg.getType())
      return emitError(loc) << "tcc.init of state '" << info.name
                            << "' must be an f32 tensor of its type";
    auto vals = init.getValues<float>();
    std::vector<float> f(vals.begin(), vals.end());
    // Seeded, only a fill is described: a pass's exact values stay exact.
    if (seededWeights && init.isSplat() && std::isfinite(f.front()))
      info.init = constantSpec(f.front());
    else
      info.dataOffset = artifact.addBlob(f.data(), f.size() * sizeof(float));
  } else if (k == rt::TensorKind::State) {
    if (seededWeights) {
      info.init = constantSpec(0.0);
    } else {
      std::vector<uint8_t> zeros(info.byteSize(), 0);
      info.dataOffset = artifact.addBlob(zeros.data(), zeros.size());
    }
  }
  return addTensor(std::move(info));
}

/// Adds a constant tensor holding `dense` to the blob.
FailureOr<int32_t>
TccScheduleBuilder::constantTensor(DenseElementsAttr dense,
                                   const std::string &program, Location loc) {
  auto dtype = dtypeOf(dense.getType(), loc);
  if (failed(dtype))
    return failure();
  rt::TensorInfo info;
  info.name = program + ".const" + std::to_string(artifact.tensors.size());
  info.kind = rt::TensorKind::Constant;
  info.dtype = *dtype;
  info.shape = shapeOf(dense.getType());
  std::vector<uint8_t> bytes(info.byteSize());
  // An empty constant has nothing to copy (and memcpy no null pointers).
  auto copy = [&](const void *src) {
    if (!bytes.empty())
      std::memcpy(bytes.data(), src, bytes.size());
  };
  if (*dtype == rt::DType::BF16 || *dtype == rt::DType::F16) {
    // 16-bit floats: their bit patterns (already rounded by the compiler).
    std::vector<uint16_t> h;
    for (const APFloat &v : dense.getValues<APFloat>())
      h.push_back(static_cast<uint16_t>(v.bitcastToAPInt().getZExtValue()));
    copy(h.data());
  } else if (*dtype == rt::DType::F32) {
    auto vals = dense.getValues<float>();
    std::vector<float> f(vals.begin(), vals.end());
    copy(f.data());
  } else if (dense.getElementType().isInteger(1)) {
    auto vals = dense.getValues<bool>();
    std::vector<int64_t> v(vals.begin(), vals.end());
    copy(v.data());
  } else {
    auto vals = dense.getValues<int64_t>();
    std::vector<int64_t> v(vals.begin(), vals.end());
    copy(v.data());
  }
  info.dataOffset = artifact.addBlob(bytes.data(), bytes.size());
  return addTensor(std::move(info));
}

FailureOr<int32_t> TccScheduleBuilder::offloadTarget(func::FuncOp fn,
                                                     unsigned i, Value v) {
  auto rname = fn.getResultAttrOfType<StringAttr>(i, "tcc.name");
  auto dtype = dtypeOf(v.getType(), fn.getLoc());
  if (!rname || failed(dtype))
    return emitError(fn.getLoc())
           << "offload result #" << i << " of @" << fn.getSymName()
           << " needs a tcc.name and a tensor type";
  int32_t existing = artifact.findTensor(rname.str());
  if (existing >= 0) {
    const rt::TensorInfo &t = artifact.tensors[existing];
    if (t.kind != rt::TensorKind::Input || t.dtype != *dtype ||
        t.shape != shapeOf(v.getType()))
      return emitError(fn.getLoc())
             << "tensor '" << rname.getValue()
             << "' is used with two different types or kinds";
    return existing;
  }
  rt::TensorInfo info;
  info.name = rname.str();
  info.kind = rt::TensorKind::Input;
  info.dtype = *dtype;
  info.shape = shapeOf(v.getType());
  return addTensor(std::move(info));
}

LogicalResult TccScheduleBuilder::lower(func::FuncOp fn,
                                        const std::string &name) {
  rt::Program prog;
  prog.name = name;
  llvm::DenseMap<Value, int32_t> ids;
  llvm::StringMap<BlockArgument> argByName;

  for (BlockArgument arg : fn.getArguments()) {
    auto id = persistent(arg);
    if (failed(id))
      return failure();
    ids[arg] = *id;
    argByName[artifact.tensors[*id].name] = arg;
    if (artifact.tensors[*id].kind == rt::TensorKind::Input)
      prog.inputs.push_back(*id);
  }

  Block &body = fn.getBody().front();
  auto ret = cast<func::ReturnOp>(body.getTerminator());
  // Where each `update` result must end up.
  llvm::DenseMap<Value, int32_t> updateTarget;
  std::vector<std::pair<Value, int32_t>> updates;
  for (auto [i, v] : llvm::enumerate(ret.getOperands())) {
    auto kind = fn.getResultAttrOfType<StringAttr>(i, "tcc.kind");
    if (kind && kind.getValue() == "offload") {
      // tcc-offload-optimizer's cut: written into the input of that name,
      // which @optimizer_step reads (and the runtime may carry across).
      auto target = offloadTarget(fn, i, v);
      if (failed(target))
        return failure();
      updates.push_back({v, *target});
      updateTarget.try_emplace(v, *target);
      continue;
    }
    if (!kind || kind.getValue() != "update")
      continue;
    auto rname = fn.getResultAttrOfType<StringAttr>(i, "tcc.name");
    int32_t target = rname ? artifact.findTensor(rname.str()) : -1;
    if (target < 0 || (artifact.tensors[target].kind != rt::TensorKind::Param &&
                       artifact.tensors[target].kind != rt::TensorKind::State))
      return emitError(fn.getLoc())
             << "result #" << i << " updates '"
             << (rname ? rname.getValue() : "?")
             << "', which is not a parameter or state of @" << fn.getSymName();
    updates.push_back({v, target});
    updateTarget.try_emplace(v, target);
  }

  // Writing an op's result straight into a persistent tensor is safe when the
  // old value (the argument of that name) is not read after the op, and the op
  // either does not read it, or reads it element by element, or is a
  // generated kernel that lists (that result, each operand holding the old
  // value) as a pair it may run in place (fp16 loss scaling's fused
  // where(finite, new, old) of a weight). No temporary is a view of a
  // persistent tensor (MemoryPlanner), so other operands cannot alias it.
  llvm::DenseSet<Value> writtenInPlace;
  auto inPlaceOk = [&](Operation *op, int32_t target, const rt::Instr &in,
                       unsigned result) {
    auto it = argByName.find(artifact.tensors[target].name);
    if (it == argByName.end())
      return true;
    for (OpOperand &use : it->second.getUses()) {
      Operation *user = use.getOwner();
      if (user == op) {
        // A fused instr's attributes already hold its pairs; any other
        // kernel runs in place when it is element-wise (KernelList.def).
        if (!rt::instrAllowsInPlace(in, result, use.getOperandNumber()))
          return false;
      } else if (!user->isBeforeInBlock(op) && user != ret) {
        return false;
      }
    }
    return true;
  };

  // Data-parallel buckets: all_reduce averages its operands in place (its
  // results are their tensors), and all_reduce_wait goes right before the
  // first instr that reads one of them, so the backward between runs while
  // the bucket is on the wire. The sharded step's reduce_scatter and
  // all_gather buckets are started the same way and write their results
  // on the communicator's thread; shard_wait goes before the first reader
  // of a result (for the gathered parameters, usually the step's end).
  llvm::DenseMap<int32_t, int64_t> pendingBucket;
  std::map<int64_t, std::vector<int32_t>> bucketTensors;
  std::map<int64_t, int64_t> shardsOfBucket; // shard buckets only
  auto waitFor = [&](const std::vector<int32_t> &reads) {
    std::set<int64_t> buckets;
    for (int32_t id : reads)
      if (auto it = pendingBucket.find(id); it != pendingBucket.end())
        buckets.insert(it->second);
    for (int64_t b : buckets) {
      rt::Instr wait;
      if (auto s = shardsOfBucket.find(b); s != shardsOfBucket.end()) {
        wait.kernel = rt::abi::name(K::ShardWait);
        rt::abi::setAttrs(wait, rt::abi::ShardAttrs{s->second, b});
      } else {
        wait.kernel = rt::abi::name(K::AllReduceWait);
        rt::abi::setAttrs(wait, rt::abi::AllReduceAttrs{b});
      }
      wait.inputs = bucketTensors[b];
      for (int32_t id : wait.inputs)
        pendingBucket.erase(id);
      prog.instrs.push_back(std::move(wait));
    }
  };

  for (Operation &op : body.without_terminator()) {
    rt::Instr in;
    if (auto ar = dyn_cast<mlir::tcc::AllReduceOp>(op)) {
      in.kernel = rt::abi::name(K::AllReduce);
      int64_t bucket = (int64_t)ar.getBucket();
      rt::abi::setAttrs(in, rt::abi::AllReduceAttrs{bucket});
      if (bucketTensors.count(bucket))
        return ar.emitError("bucket ") << bucket << " appears twice";
      for (auto [x, r] : llvm::zip(ar.getInputs(), ar.getResults())) {
        int32_t id = ids.lookup(x);
        if (artifact.tensors[id].kind != rt::TensorKind::Temp ||
            !x.hasOneUse() || pendingBucket.count(id))
          return ar.emitError("operand '")
                 << artifact.tensors[id].name
                 << "' must be a temporary that only the all_reduce reads";
        in.inputs.push_back(id);
        ids[r] = id;
        pendingBucket[id] = bucket;
      }
      bucketTensors[bucket] = in.inputs;
      prog.instrs.push_back(std::move(in));
      continue;
    }
    if (auto c = dyn_cast<mlir::tcc::ConstantOp>(op)) {
      auto dense = dyn_cast<DenseElementsAttr>(c.getValue());
      if (!dense)
        return c.emitError("only dense constants can be lowered");
      // A splat is stored as one scalar and broadcast at run time, so large
      // zero or one tensors cost no artifact space.
      if (!dense.isSplat() || dense.getNumElements() <= 1 ||
          !isa<FloatType>(dense.getElementType())) {
        auto id = constantTensor(dense, name, c.getLoc());
        if (failed(id))
          return failure();
        ids[c.getResult()] = *id;
        continue;
      }
      auto scalarType = RankedTensorType::get({}, dense.getElementType());
      auto id = constantTensor(dense.resizeSplat(scalarType), name, c.getLoc());
      if (failed(id))
        return failure();
      in.kernel = rt::abi::name(K::BroadcastTo);
      in.inputs.push_back(*id);
    } else if (failed(::tcc::describeKernel(&op, in))) {
      return failure();
    }
    for (Value v : op.getOperands())
      in.inputs.push_back(ids.lookup(v));
    waitFor(in.inputs);
    // A shard bucket's results are written after the instr returns: each
    // must be read (so the memory plan keeps it until the wait) or be a
    // parameter the step updates.
    std::optional<std::pair<int64_t, int64_t>> shardBucket;
    if (isa<mlir::tcc::ReduceScatterOp, mlir::tcc::AllGatherOp>(op)) {
      auto at = rt::abi::attrsOf<rt::abi::ShardAttrs>(in);
      if (bucketTensors.count(at.bucket))
        return op.emitError("bucket ") << at.bucket << " appears twice";
      for (Value r : op.getResults())
        if (r.use_empty())
          return op.emitError("a result of the bucket is never read");
      shardBucket = {at.bucket, at.shards};
    }
    for (Value r : op.getResults()) {
      auto dtype = dtypeOf(r.getType(), op.getLoc());
      if (failed(dtype))
        return failure();
      auto target = updateTarget.find(r);
      if (target != updateTarget.end() &&
          inPlaceOk(&op, target->second, in,
                    cast<OpResult>(r).getResultNumber())) {
        ids[r] = target->second;
        writtenInPlace.insert(r);
        in.outputs.push_back(target->second);
        continue;
      }
      rt::TensorInfo info;
      info.name = name + ".t" + std::to_string(artifact.tensors.size());
      info.kind = rt::TensorKind::Temp;
      info.dtype = *dtype;
      info.shape = shapeOf(r.getType());
      info.program = name;
      int32_t id = addTensor(std::move(info));
      ids[r] = id;
      in.outputs.push_back(id);
    }
    if (shardBucket) {
      auto [bucket, shards] = *shardBucket;
      for (int32_t id : in.outputs)
        pendingBucket[id] = bucket;
      bucketTensors[bucket] = in.outputs;
      shardsOfBucket[bucket] = shards;
    }
    prog.instrs.push_back(std::move(in));
  }

  // Buckets nothing read in the step (gradients it returns) are waited for
  // before it ends.
  {
    std::vector<int32_t> all;
    for (auto &[id, bucket] : pendingBucket)
      all.push_back(id);
    waitFor(all);
  }
  for (auto [i, v] : llvm::enumerate(ret.getOperands())) {
    auto kind = fn.getResultAttrOfType<StringAttr>(i, "tcc.kind");
    if (kind && (kind.getValue() == "update" || kind.getValue() == "offload"))
      continue;
    int32_t id = ids.lookup(v);
    auto host =
        hostDTypeOf(fn.getResultAttrOfType<StringAttr>(i, "tcc.host_dtype"),
                    artifact.tensors[id], fn.getLoc());
    if (failed(host))
      return failure();
    // A tensor is read as one type: an output declared otherwise than the
    // input, constant or earlier output it is (a Cast from DOUBLE to FLOAT
    // returns its input) reads a copy.
    const rt::TensorInfo &src = artifact.tensors[id];
    bool claimed = llvm::is_contained(prog.outputs, id);
    if (src.hostDType != *host &&
        (src.kind != rt::TensorKind::Temp || claimed)) {
      rt::TensorInfo info;
      info.name = name + ".t" + std::to_string(artifact.tensors.size());
      info.kind = rt::TensorKind::Temp;
      info.dtype = src.dtype;
      info.shape = src.shape;
      info.program = name;
      rt::Instr copy;
      copy.kernel = rt::abi::name(K::Copy);
      copy.inputs = {id};
      id = addTensor(std::move(info));
      copy.outputs = {id};
      prog.instrs.push_back(std::move(copy));
    }
    artifact.tensors[id].hostDType = *host;
    // A metric (tcc-clip-gradients' grad_norm) is an output the runtime
    // finds by its name, which its temporary takes.
    if (kind && kind.getValue() == "metric") {
      auto mname = fn.getResultAttrOfType<StringAttr>(i, "tcc.name");
      rt::TensorInfo &t = artifact.tensors[id];
      if (!mname || t.kind != rt::TensorKind::Temp || claimed ||
          artifact.findTensor(mname.str()) >= 0)
        return emitError(fn.getLoc())
               << "metric result #" << i << " of @" << fn.getSymName()
               << " needs a unique tcc.name and a value of its own";
      t.name = mname.str();
    }
    prog.outputs.push_back(id);
  }
  // Updates that could not be written in place are copied at the end.
  for (auto [v, target] : updates) {
    if (writtenInPlace.contains(v) && ids.lookup(v) == target)
      continue;
    rt::Instr copy;
    copy.kernel = rt::abi::name(K::Copy);
    copy.inputs = {ids.lookup(v)};
    copy.outputs = {target};
    prog.instrs.push_back(std::move(copy));
  }

  ::tcc::planProgramMemory(artifact, prog, planMemory);
  artifact.programs.push_back(std::move(prog));
  return success();
}
