//===- OffloadPlan.cpp - Which side of an offloaded step holds what -------===//
#include "runtime/core/OffloadPlan.h"

#include "runtime/core/Artifact.h"

#include <algorithm>
#include <string>

using namespace tcc::rt;

bool tcc::rt::isOffloaded(const Artifact &a) {
  return a.findProgram(kOptimizerProgram) != nullptr;
}

OffloadPlan tcc::rt::offloadPlan(const Artifact &a) {
  OffloadPlan plan;
  const Program *opt = a.findProgram(kOptimizerProgram);
  if (!opt)
    return plan;
  // Per tensor: read / written by the device programs and by the update.
  size_t n = a.tensors.size();
  std::vector<uint8_t> devRead(n), devWrite(n), hostRead(n), hostWrite(n);
  for (const Program &p : a.programs) {
    bool host = &p == opt;
    std::vector<uint8_t> &rd = host ? hostRead : devRead;
    std::vector<uint8_t> &wr = host ? hostWrite : devWrite;
    for (int32_t id : p.inputs)
      rd.at(id) = 1;
    for (int32_t id : p.outputs)
      rd.at(id) = 1;
    for (const Instr &in : p.instrs) {
      for (int32_t id : in.inputs)
        rd.at(id) = 1;
      for (int32_t id : in.outputs)
        wr.at(id) = 1;
    }
  }
  for (size_t i = 0; i < n; ++i) {
    const TensorInfo &t = a.tensors[i];
    int32_t id = static_cast<int32_t>(i);
    bool dev = devRead[i] || devWrite[i], host = hostRead[i] || hostWrite[i];
    if (!host)
      continue;
    std::string ref = "tensor '" + t.name + "'";
    if (devWrite[i] && hostWrite[i])
      throw Error(ref + " is written by both optimizer_step and a device "
                        "program");
    switch (t.kind) {
    case TensorKind::Param:
    case TensorKind::State:
      // The host's copy would be stale: nothing carries such a value over.
      if (devWrite[i] && hostRead[i])
        throw Error(ref + " is read by optimizer_step but written by a "
                          "device program");
      if (!dev) {
        plan.hostState.push_back(id);
        plan.hostStateBytes += t.byteSize();
      } else if (hostWrite[i] && devRead[i]) {
        plan.toDevice.push_back(id);
        plan.toDeviceBytes += t.byteSize();
      }
      break;
    case TensorKind::Input:
      if (!devWrite[i])
        throw Error(ref + ": optimizer_step reads an input that no device "
                          "program writes");
      plan.toHost.push_back(id);
      plan.toHostBytes += t.byteSize();
      break;
    case TensorKind::Temp:
      if (dev)
        throw Error(ref + " is a temporary of both sides");
      break;
    case TensorKind::Constant:
      break;
    }
  }
  return plan;
}

Artifact tcc::rt::programSubset(const Artifact &a,
                                const std::vector<std::string> &names,
                                std::vector<int32_t> &ids) {
  std::vector<uint8_t> used(a.tensors.size());
  for (const std::string &name : names) {
    const Program *p = a.findProgram(name);
    if (!p)
      throw Error("the artifact has no program '" + name + "'");
    for (int32_t id : p->inputs)
      used.at(id) = 1;
    for (int32_t id : p->outputs)
      used.at(id) = 1;
    for (const Instr &in : p->instrs) {
      for (int32_t id : in.inputs)
        used.at(id) = 1;
      for (int32_t id : in.outputs)
        used.at(id) = 1;
    }
  }
  // A 16-bit copy's initial value is its parameter's, found by name.
  for (size_t i = 0; i < a.tensors.size(); ++i)
    if (used[i] && a.tensors[i].init.kind == InitSpec::Kind::Cast) {
      int32_t src = a.findTensor(a.tensors[i].init.source);
      if (src >= 0)
        used[src] = 1;
    }
  Artifact out;
  out.meta = a.meta;
  out.blob = a.blob;
  out.onnxOffset = a.onnxOffset;
  out.onnxSize = a.onnxSize;
  out.hostLibOffset = a.hostLibOffset;
  out.hostLibSize = a.hostLibSize;
  out.hostLibIsa = a.hostLibIsa;
  out.device = a.device;
  ids.assign(a.tensors.size(), -1);
  for (size_t i = 0; i < a.tensors.size(); ++i)
    if (used[i]) {
      ids[i] = static_cast<int32_t>(out.tensors.size());
      out.tensors.push_back(a.tensors[i]);
    }
  auto remap = [&](std::vector<int32_t> &v) {
    for (int32_t &id : v)
      id = ids[id];
  };
  for (const Program &p : a.programs) {
    if (std::find(names.begin(), names.end(), p.name) == names.end())
      continue;
    Program q = p;
    remap(q.inputs);
    remap(q.outputs);
    for (Instr &in : q.instrs) {
      remap(in.inputs);
      remap(in.outputs);
    }
    out.programs.push_back(std::move(q));
  }
  return out;
}
