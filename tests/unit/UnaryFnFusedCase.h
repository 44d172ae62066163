//===- UnaryFnFusedCase.h - The unary family as one fused region -*- C++
//-*-===//
//
// The body that FusedCodegenTest and CudaCodegenTest fuse for the family
// of runtime/core/prelude/UnaryFn.h: over %x, %w and %dy (6x33 f32), result
// %r<i> is f_i(x) + f_i'(x) dy for each function (with ONNX's default
// parameters; clip with one infinite bound), and the last one softplus and
// its gradient of %w, which the tests draw across its threshold of 20.
//
//===----------------------------------------------------------------------===//
#ifndef TCC_TESTS_UNIT_UNARYFNFUSEDCASE_H
#define TCC_TESTS_UNIT_UNARYFNFUSEDCASE_H

#include "runtime/core/prelude/UnaryFn.h"

#include <string>

namespace tcc::test {

/// Results of unaryFnFamilyBody: one per function, and softplus of %w.
constexpr int kUnaryFnFamilyResults = TCC_UFN_COUNT + 1;

inline std::string unaryFnFamilyBody() {
  static const char *const fns[][2] = {
      {"abs", ""},
      {"sign", ""},
      {"floor", ""},
      {"ceil", ""},
      {"round", ""},
      {"sin", ""},
      {"cos", ""},
      {"hard_swish", ""},
      {"hard_sigmoid", "{alpha = 0.2 : f64, beta = 0.5 : f64}"},
      {"leaky_relu", "{alpha = 0.01 : f64}"},
      {"elu", "{alpha = 0.5 : f64}"},
      {"selu", "{alpha = 1.6732632 : f64, beta = 1.0507010 : f64}"},
      {"softplus", ""},
      {"mish", ""},
      {"clip", "{alpha = -1.0 : f64, beta = 0x7FF0000000000000 : f64}"},
      {"tan", ""},
      {"asin", ""},
      {"acos", ""},
      {"atan", ""},
      {"sinh", ""},
      {"cosh", ""},
      {"asinh", ""},
      {"acosh", ""},
      {"atanh", ""},
      {"softsign", ""},
      {"shrink", "{alpha = 0.5 : f64, beta = 0.25 : f64}"},
      {"celu", "{alpha = 0.5 : f64}"},
      {"thresholded_relu", "{alpha = 1.0 : f64}"}};
  static_assert(sizeof(fns) / sizeof(fns[0]) == TCC_UFN_COUNT,
                "a new function needs a row here");
  const std::string t = " : tensor<6x33xf32>\n  ";
  const std::string add =
      " : (tensor<6x33xf32>, tensor<6x33xf32>) -> tensor<6x33xf32>\n  ";
  std::string body;
  auto term = [&](int i, const char *fn, const char *x, const char *attrs) {
    std::string n = std::to_string(i);
    body += "%f" + n + " = tcc.unary_fn \"" + fn + "\" " + x + " " + attrs + t;
    body += "%g" + n + " = tcc.unary_fn_grad \"" + fn + "\" %dy, " + x + " " +
            attrs + t;
    body += "%r" + n + " = tcc.add %f" + n + ", %g" + n + add;
  };
  for (int i = 0; i < TCC_UFN_COUNT; ++i)
    term(i, fns[i][0], "%x", fns[i][1]);
  term(TCC_UFN_COUNT, "softplus", "%w", "");
  return body;
}

} // namespace tcc::test

#endif // TCC_TESTS_UNIT_UNARYFNFUSEDCASE_H
