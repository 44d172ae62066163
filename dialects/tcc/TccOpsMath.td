//===- TccOpsMath.td - tcc ops: math, activations, normalization -*- tablegen -*-===//
//
// Included from TccOps.td; shares its classes (Tcc_InferOp, Tcc_DiffOp, ...).
//
//===----------------------------------------------------------------------===//
#ifndef TCC_OPS_MATH_TD
#define TCC_OPS_MATH_TD

#endif // TCC_OPS_MATH_TD
