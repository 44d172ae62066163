//===- ActivationAnalysis.cpp - Activations of a training step ------------===//
#include "passes/ActivationAnalysis.h"

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Matchers.h"

#include <cstdio>

using namespace mlir;
using namespace mlir::tcc;

int64_t mlir::tcc::runtimeTensorBytes(Type type) {
  auto t = dyn_cast<RankedTensorType>(type);
  if (!t || !t.hasStaticShape())
    return -1;
  Type e = t.getElementType();
  int64_t elemBytes;
  if (e.isInteger(1))
    elemBytes = 8; // bools are stored as i64 0/1
  else if (e.isIntOrFloat())
    elemBytes = std::max<int64_t>(1, (e.getIntOrFloatBitWidth() + 7) / 8);
  else
    return -1;
  return t.getNumElements() * elemBytes;
}

static Operation *findLossOp(func::FuncOp fn) {
  if (fn.isExternal())
    return nullptr;
  Block &body = fn.getBody().front();
  auto ret = dyn_cast<func::ReturnOp>(body.getTerminator());
  if (!ret)
    return nullptr;
  for (unsigned i = 0, e = fn.getNumResults(); i < e; ++i) {
    auto kind = fn.getResultAttrOfType<StringAttr>(i, "tcc.kind");
    if (!kind || kind.getValue() != "loss")
      continue;
    Operation *op = ret.getOperand(i).getDefiningOp();
    if (op && op->getBlock() == &body)
      return op;
  }
  return nullptr;
}

bool mlir::tcc::isActivation(Value v, Operation *lossOp) {
  Operation *def = v.getDefiningOp();
  if (!def || !lossOp || def->getBlock() != lossOp->getBlock() ||
      !def->isBeforeInBlock(lossOp) || matchPattern(def, m_Constant()))
    return false;
  Block *body = lossOp->getBlock();
  for (Operation *user : v.getUsers()) {
    Operation *u = body->findAncestorOpInBlock(*user);
    if (u && u != lossOp && lossOp->isBeforeInBlock(u) &&
        !u->hasTrait<OpTrait::IsTerminator>())
      return true;
  }
  return false;
}

std::optional<ActivationInfo> mlir::tcc::analyzeActivations(func::FuncOp fn) {
  Operation *loss = findLossOp(fn);
  if (!loss)
    return std::nullopt;
  ActivationInfo info;
  info.lossOp = loss;
  for (Operation &op : fn.getBody().front()) {
    if (&op == loss)
      break;
    for (Value r : op.getResults()) {
      if (!isActivation(r, loss))
        continue;
      int64_t bytes = std::max<int64_t>(0, runtimeTensorBytes(r.getType()));
      info.activations.push_back({r, bytes});
      info.totalBytes += bytes;
    }
  }
  return info;
}

std::string mlir::tcc::formatBytes(int64_t bytes) {
  static const char *units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = (double)bytes;
  int u = 0;
  while (v >= 1024 && u < 4) {
    v /= 1024;
    ++u;
  }
  char buf[32];
  if (u == 0)
    std::snprintf(buf, sizeof buf, "%lld B", (long long)bytes);
  else
    std::snprintf(buf, sizeof buf, v < 10 ? "%.2f %s" : "%.1f %s", v, units[u]);
  return buf;
}
