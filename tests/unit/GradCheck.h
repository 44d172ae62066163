//===- GradCheck.h - The cases of GradCheckTest.cpp ------------*- C++ -*-===//
//
// A case is a tiny loss over one differentiable op; GradCheckTest.cpp
// compares its gradients with finite differences. The cases are grouped by
// the ops they test, one GradCheckCases*.cpp each.
//
//===----------------------------------------------------------------------===//
#ifndef TCC_TESTS_UNIT_GRADCHECK_H
#define TCC_TESTS_UNIT_GRADCHECK_H

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

namespace gradcheck {

struct Param {
  std::string name, type; // type like "3x4xf32"
  float lo = -1, hi = 1;  // initial values are uniform in [lo, hi]
};

struct Case {
  std::string op;   // the tcc op under test (for coverage)
  std::string name; // unique test name
  std::vector<Param> params;
  std::string body;            // defines %y from the params (and %labels)
  std::string resultType;      // type of %y, like "3x4xf32" or "f32"
  std::string labelsType = {}; // "" or like "4xi64"
  int64_t classes = 0;         // label range for labelsType
  // Points where the derivative jumps: initial values within 0.1 of one
  // move 0.1 away (the finite-difference step is 0.01).
  std::vector<float> kinks = {};
};

/// A case of `tcc.unary_fn` over a 3x4 parameter in [lo, hi].
inline Case unaryFn(const std::string &name, const std::string &fn, float lo,
                    float hi, std::vector<float> kinks = {},
                    const std::string &attrs = "") {
  return {"tcc.unary_fn",
          name,
          {{"a", "3x4xf32", lo, hi}},
          "%y = tcc.unary_fn \"" + fn + "\" %a " + attrs + " : tensor<3x4xf32>",
          "3x4xf32",
          "",
          0,
          std::move(kinks)};
}

/// gtest prints a case by its name.
inline void PrintTo(const Case &c, std::ostream *os) { *os << c.name; }

std::vector<Case> coreCases();
std::vector<Case> mathCases();
std::vector<Case> indexCases();
std::vector<Case> attentionCases();
std::vector<Case> logicCases();
std::vector<Case> convCases();

} // namespace gradcheck

#endif // TCC_TESTS_UNIT_GRADCHECK_H
