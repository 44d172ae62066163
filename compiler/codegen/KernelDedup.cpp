//===- KernelDedup.cpp - Generated kernels that repeat, compiled once -----===//
#include "compiler/codegen/KernelDedup.h"

#include <cctype>

using namespace tcc;

std::string tcc::withoutKernelNumber(const std::string &code, int64_t index) {
  std::string out;
  out.reserve(code.size());
  const std::string num = std::to_string(index);
  const std::string symbol = "tcc_fused_" + num;
  const std::string comment = "// kernel " + num + " ";
  size_t i = 0;
  if (code.compare(0, comment.size(), comment) == 0) {
    out += "// kernel # ";
    i = comment.size();
  }
  while (i < code.size()) {
    size_t at = code.find(symbol, i);
    if (at == std::string::npos) {
      out.append(code, i, std::string::npos);
      break;
    }
    size_t end = at + symbol.size();
    bool whole = end == code.size() || !std::isdigit((unsigned char)code[end]);
    // `xtcc_fused_1` is another name; generated code has none, but a number
    // inside a longer identifier must not be taken for the kernel's.
    bool starts = at == 0 || !(std::isalnum((unsigned char)code[at - 1]) ||
                               code[at - 1] == '_');
    out.append(code, i, at - i);
    out += whole && starts ? std::string("tcc_fused_#") : symbol;
    i = end;
  }
  return out;
}

int64_t KernelDedup::find(const std::string &code, int64_t index) {
  ++seen_;
  auto [it, inserted] = first_.emplace(withoutKernelNumber(code, index), index);
  return inserted ? -1 : it->second;
}
