//===- TccOpsConv.td - tcc ops: convolution, pooling, batch norm -*- tablegen -*-===//
//
// Included from TccOps.td; shares its classes (Tcc_InferOp, Tcc_DiffOp, ...).
//
//===----------------------------------------------------------------------===//
#ifndef TCC_OPS_CONV_TD
#define TCC_OPS_CONV_TD

#endif // TCC_OPS_CONV_TD
