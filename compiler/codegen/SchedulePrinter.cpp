//===- SchedulePrinter.cpp - Readable dump of an artifact's programs ------===//
#include "compiler/codegen/SchedulePrinter.h"

using namespace tcc;

static void printType(const rt::TensorInfo &t, std::ostream &os) {
  os << rt::dtypeName(t.dtype) << "[";
  for (size_t i = 0; i < t.shape.size(); ++i)
    os << (i ? "," : "") << t.shape[i];
  os << "]";
}

static void printRef(const rt::Artifact &a, int32_t id, std::ostream &os) {
  const rt::TensorInfo &t = a.tensors[id];
  os << "%" << id;
  if (t.kind != rt::TensorKind::Temp)
    os << " " << rt::tensorKindName(t.kind) << " \"" << t.name << "\"";
}

void tcc::printSchedule(const rt::Artifact &a, std::ostream &os) {
  for (const rt::Program &p : a.programs) {
    os << "program " << p.name << " (arena " << p.arenaBytes << " bytes)\n";
    for (int32_t id : p.inputs) {
      os << "  input ";
      printRef(a, id, os);
      os << " : ";
      printType(a.tensors[id], os);
      os << "\n";
    }
    for (const rt::Instr &in : p.instrs) {
      os << "  ";
      for (size_t i = 0; i < in.outputs.size(); ++i) {
        os << (i ? ", " : "");
        printRef(a, in.outputs[i], os);
      }
      os << " = " << in.kernel << "(";
      for (size_t i = 0; i < in.inputs.size(); ++i) {
        os << (i ? ", " : "");
        printRef(a, in.inputs[i], os);
      }
      os << ")";
      // Attributes as the artifact stores them (KernelAttrs.h names them).
      auto list = [&](const char *tag, const auto &values) {
        if (values.empty())
          return;
        os << " " << tag << "=[";
        const char *sep = "";
        for (auto v : values) {
          os << sep << v;
          sep = ",";
        }
        os << "]";
      };
      list("i", in.iattrs);
      list("f", in.fattrs);
      os << " :";
      for (int32_t id : in.outputs) {
        os << " ";
        printType(a.tensors[id], os);
        if (a.tensors[id].kind == rt::TensorKind::Temp)
          os << " @arena+" << a.tensors[id].arenaOffset;
      }
      os << "\n";
    }
    os << "  return";
    for (size_t i = 0; i < p.outputs.size(); ++i) {
      os << (i ? ", " : " ");
      printRef(a, p.outputs[i], os);
    }
    os << "\n";
  }
}
