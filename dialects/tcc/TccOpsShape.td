//===- TccOpsShape.td - tcc ops: data movement and shape -*- tablegen -*-===//
//
// Included from TccOps.td; shares its classes (Tcc_InferOp, Tcc_DiffOp, ...).
//
//===----------------------------------------------------------------------===//
#ifndef TCC_OPS_SHAPE_TD
#define TCC_OPS_SHAPE_TD

#endif // TCC_OPS_SHAPE_TD
