//===- UnaryFnFusedCase.h - The unary family as one fused region -*- C++
//-*-===//
//
// The body that FusedCodegenTest and CudaCodegenTest fuse for the family
// of runtime/core/prelude/UnaryFn.h: over %x, %w and %dy (6x33 f32), result
// %r<i> is f_i(x) + f_i'(x) dy for each function (with ONNX's default
// parameters; clip with one infinite bound; asin, acos, atanh and acosh of
// arguments in their domain), and the last one softplus and
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
  // The argument: %x, or for the functions with a domain %u = tanh(tanh(x))
  // in (-0.77, 0.77) and %v = cosh(x) + cosh(w) >= 2 (away from the poles
  // at +-1, near which the backends' last-bit differences in the argument
  // would be amplified).
  static const char *const fns[][3] = {
      {"abs", "", "%x"},
      {"sign", "", "%x"},
      {"floor", "", "%x"},
      {"ceil", "", "%x"},
      {"round", "", "%x"},
      {"sin", "", "%x"},
      {"cos", "", "%x"},
      {"hard_swish", "", "%x"},
      {"hard_sigmoid", "{alpha = 0.2 : f64, beta = 0.5 : f64}", "%x"},
      {"leaky_relu", "{alpha = 0.01 : f64}", "%x"},
      {"elu", "{alpha = 0.5 : f64}", "%x"},
      {"selu", "{alpha = 1.6732632 : f64, beta = 1.0507010 : f64}", "%x"},
      {"softplus", "", "%x"},
      {"mish", "", "%x"},
      {"clip", "{alpha = -1.0 : f64, beta = 0x7FF0000000000000 : f64}", "%x"},
      {"tan", "", "%x"},
      {"asin", "", "%u"},
      {"acos", "", "%u"},
      {"atan", "", "%x"},
      {"sinh", "", "%x"},
      {"cosh", "", "%x"},
      {"asinh", "", "%x"},
      {"acosh", "", "%v"},
      {"atanh", "", "%u"},
      {"softsign", "", "%x"},
      {"shrink", "{alpha = 0.5 : f64, beta = 0.25 : f64}", "%x"},
      {"celu", "{alpha = 0.5 : f64}", "%x"},
      {"thresholded_relu", "{alpha = 1.0 : f64}", "%x"},
      {"norm_sqrt", "", "%v"}};
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
  body += "%tx = tcc.tanh %x" + t;
  body += "%u = tcc.tanh %tx" + t;
  body += "%cx = tcc.unary_fn \"cosh\" %x" + t;
  body += "%cw = tcc.unary_fn \"cosh\" %w" + t;
  body += "%v = tcc.add %cx, %cw" + add;
  for (int i = 0; i < TCC_UFN_COUNT; ++i)
    term(i, fns[i][0], fns[i][2], fns[i][1]);
  term(TCC_UFN_COUNT, "softplus", "%w", "");
  return body;
}

} // namespace tcc::test

#endif // TCC_TESTS_UNIT_UNARYFNFUSEDCASE_H
