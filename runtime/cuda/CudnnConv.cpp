//===- CudnnConv.cpp - Convolutions through cuDNN -------------------------===//
//
// cuDNN 9 keeps the legacy convolution API (cudnn_cnn.h) beside the graph
// API; the legacy calls take exactly one convolution with fixed descriptors,
// which is what an instr is, and cudnnGet*Algorithm_v7 gives the heuristic
// ranking without running anything. What cuDNN is told is computed in
// CudnnConvPlan.cpp, where it is tested without a GPU.
//
//===----------------------------------------------------------------------===//
#include "runtime/cuda/CudnnConv.h"

#include "runtime/core/abi/KernelAbi.h"
#include "runtime/cuda/CudaCheck.h"
#include "runtime/cuda/CudnnConvPlan.h"

#if TCC_CUDA_HAS_CUDNN
#include <cudnn.h>
#endif

namespace tcc::rt::cuda {

using K = abi::KernelId;

static ConvPass passOf(const Instr &in) {
  return abi::is(in, K::Conv2d)            ? ConvPass::Forward
         : abi::is(in, K::Conv2dGradInput) ? ConvPass::GradInput
                                           : ConvPass::GradWeight;
}

/// The shape of a checked convolution instr, by its operand conventions
/// (runtime/core/abi/Kernels.h).
static CudnnConvShape shapeOf(const Instr &in,
                              const std::vector<TensorInfo> &t) {
  ConvPass pass = passOf(in);
  const auto &a = abi::attrs<K::Conv2d>(in);
  auto shape = [&](int32_t id) -> const std::vector<int64_t> & {
    return t[id].shape;
  };
  switch (pass) {
  case ConvPass::Forward: // [x, w(, b)] -> [y]
    return cudnnConvShape(pass, shape(in.inputs[0]), shape(in.inputs[1]),
                          shape(in.outputs[0]), a, in.inputs.size() == 3);
  case ConvPass::GradInput: // [dy, w] -> [dx]
    return cudnnConvShape(pass, shape(in.outputs[0]), shape(in.inputs[1]),
                          shape(in.inputs[0]), a, false);
  case ConvPass::GradWeight: // [dy, x] -> [dw]
    break;
  }
  return cudnnConvShape(pass, shape(in.inputs[1]), shape(in.outputs[0]),
                        shape(in.inputs[0]), a, false);
}

// At load, before the GPU is touched: what cuDNN's int descriptors cannot
// hold is refused with the rest of the artifact's checks.
int64_t prepare_conv(const Instr &in, const std::vector<TensorInfo> &t) {
  (void)shapeOf(in, t);
  return 0;
}

void launch_conv(const CudaArgs &a) {
  if (!a.conv)
    throw Error("the convolution has no cuDNN plan (the session did not set "
                "one up)");
  a.conv->run(a);
}

#if TCC_CUDA_HAS_CUDNN

bool cudnnBuilt() { return true; }

static void checkCudnn(cudnnStatus_t s, const char *expr) {
  if (s == CUDNN_STATUS_SUCCESS)
    return;
  throw Error(callName(expr) + " failed: " + cudnnGetErrorString(s));
}
#define TCC_CUDNN_CHECK(call) checkCudnn((call), #call)

CudnnHandle::CudnnHandle(cudaStream_t stream) {
  cudnnHandle_t h = nullptr;
  TCC_CUDNN_CHECK(cudnnCreate(&h));
  handle_ = h;
  TCC_CUDNN_CHECK(cudnnSetStream(h, stream));
}

CudnnHandle::~CudnnHandle() {
  if (handle_)
    cudnnDestroy(static_cast<cudnnHandle_t>(handle_));
}

struct CudnnConv::Impl {
  CudnnConvShape s;
  cudnnHandle_t h = nullptr;
  cudnnTensorDescriptor_t x = nullptr, y = nullptr, bias = nullptr;
  cudnnFilterDescriptor_t w = nullptr;
  cudnnConvolutionDescriptor_t conv = nullptr;
  int algo = 0;
  bool deterministic = false;
  int64_t workspace = 0;

  ~Impl() {
    if (x)
      cudnnDestroyTensorDescriptor(x);
    if (y)
      cudnnDestroyTensorDescriptor(y);
    if (bias)
      cudnnDestroyTensorDescriptor(bias);
    if (w)
      cudnnDestroyFilterDescriptor(w);
    if (conv)
      cudnnDestroyConvolutionDescriptor(conv);
  }
  int64_t paddedSlot() const { return (s.paddedBytes() + 255) / 256 * 256; }
  void describeOutput();
  void describeConv(bool tf32);
  void chooseAlgo(bool tf32);
};

/// y [n, o, oh, ow] and the bias [1, o, 1, 1].
void CudnnConv::Impl::describeOutput() {
  TCC_CUDNN_CHECK(cudnnCreateTensorDescriptor(&y));
  TCC_CUDNN_CHECK(cudnnSetTensor4dDescriptor(
      y, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, s.n, s.o, s.oh, s.ow));
  if (s.bias) {
    TCC_CUDNN_CHECK(cudnnCreateTensorDescriptor(&bias));
    TCC_CUDNN_CHECK(cudnnSetTensor4dDescriptor(bias, CUDNN_TENSOR_NCHW,
                                               CUDNN_DATA_FLOAT, 1, s.o, 1, 1));
  }
}

/// x, the filter and the convolution, checked against cuDNN's output size.
void CudnnConv::Impl::describeConv(bool tf32) {
  TCC_CUDNN_CHECK(cudnnCreateTensorDescriptor(&x));
  TCC_CUDNN_CHECK(cudnnCreateFilterDescriptor(&w));
  TCC_CUDNN_CHECK(cudnnCreateConvolutionDescriptor(&conv));
  TCC_CUDNN_CHECK(cudnnSetTensor4dDescriptor(
      x, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, s.n, s.c, s.h, s.w));
  TCC_CUDNN_CHECK(cudnnSetFilter4dDescriptor(
      w, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, s.o, s.cg, s.kh, s.kw));
  TCC_CUDNN_CHECK(cudnnSetConvolution2dDescriptor(
      conv, s.padH, s.padW, s.strideH, s.strideW, s.dilH, s.dilW,
      CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
  TCC_CUDNN_CHECK(cudnnSetConvolutionGroupCount(conv, s.groups));
  // FMA math keeps fp32 convolutions off TF32 tensor cores, as the session
  // keeps its GEMMs unless asked (SessionOptions::tf32).
  TCC_CUDNN_CHECK(cudnnSetConvolutionMathType(conv, tf32 ? CUDNN_DEFAULT_MATH
                                                         : CUDNN_FMA_MATH));
  int n, c, oh, ow;
  TCC_CUDNN_CHECK(
      cudnnGetConvolution2dForwardOutputDim(conv, x, w, &n, &c, &oh, &ow));
  if (n != s.n || c != s.o || oh != s.oh || ow != s.ow)
    throw Error("cuDNN sizes the convolution's output [" + std::to_string(n) +
                "," + std::to_string(c) + "," + std::to_string(oh) + "," +
                std::to_string(ow) + "], not the artifact's [" +
                std::to_string(s.n) + "," + std::to_string(s.o) + "," +
                std::to_string(s.oh) + "," + std::to_string(s.ow) + "]");
}

/// cuDNN's heuristic answers as candidates, with the workspace each needs
/// (asked of cuDNN for each, since the heuristics' own figure may be 0).
template <class Perf, class Size>
static std::vector<ConvAlgoCandidate> candidates(const Perf *perf, int count,
                                                 Size workspaceOf) {
  std::vector<ConvAlgoCandidate> c;
  for (int i = 0; i < count; ++i) {
    ConvAlgoCandidate k;
    k.algo = static_cast<int>(perf[i].algo);
    k.ok = perf[i].status == CUDNN_STATUS_SUCCESS;
    k.deterministic = perf[i].determinism == CUDNN_DETERMINISTIC;
    size_t bytes = 0;
    if (k.ok)
      k.ok = workspaceOf(perf[i].algo, &bytes) == CUDNN_STATUS_SUCCESS;
    k.workspace = static_cast<int64_t>(bytes);
    c.push_back(k);
  }
  return c;
}

void CudnnConv::Impl::chooseAlgo(bool tf32) {
  std::vector<ConvAlgoCandidate> c;
  std::vector<cudnnMathType_t> math;
  auto keepMath = [&](const auto *perf, int count) {
    for (int i = 0; i < count; ++i)
      math.push_back(perf[i].mathType);
  };
  int count = 0;
  switch (s.pass) {
  case ConvPass::Forward: {
    cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
    TCC_CUDNN_CHECK(cudnnGetConvolutionForwardAlgorithm_v7(
        h, x, w, conv, y, CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &count, perf));
    c = candidates(perf, count, [&](cudnnConvolutionFwdAlgo_t a, size_t *b) {
      return cudnnGetConvolutionForwardWorkspaceSize(h, x, w, conv, y, a, b);
    });
    keepMath(perf, count);
    break;
  }
  case ConvPass::GradInput: {
    cudnnConvolutionBwdDataAlgoPerf_t
        perf[CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT];
    TCC_CUDNN_CHECK(cudnnGetConvolutionBackwardDataAlgorithm_v7(
        h, w, y, conv, x, CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT, &count, perf));
    c = candidates(perf, count,
                   [&](cudnnConvolutionBwdDataAlgo_t a, size_t *b) {
                     return cudnnGetConvolutionBackwardDataWorkspaceSize(
                         h, w, y, conv, x, a, b);
                   });
    keepMath(perf, count);
    break;
  }
  case ConvPass::GradWeight: {
    cudnnConvolutionBwdFilterAlgoPerf_t
        perf[CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT];
    TCC_CUDNN_CHECK(cudnnGetConvolutionBackwardFilterAlgorithm_v7(
        h, x, y, conv, w, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT, &count,
        perf));
    c = candidates(perf, count,
                   [&](cudnnConvolutionBwdFilterAlgo_t a, size_t *b) {
                     return cudnnGetConvolutionBackwardFilterWorkspaceSize(
                         h, x, y, conv, w, a, b);
                   });
    keepMath(perf, count);
    break;
  }
  }
  std::optional<size_t> pick = pickConvAlgo(c);
  if (!pick)
    throw Error("cuDNN has no algorithm for this convolution (" +
                std::to_string(count) + " heuristic answers, none runs)");
  algo = c[*pick].algo;
  deterministic = c[*pick].deterministic;
  workspace = c[*pick].workspace;
  // An answer may be for tensor-op math (TF32) only when that is allowed.
  if (tf32)
    TCC_CUDNN_CHECK(cudnnSetConvolutionMathType(conv, math[*pick]));
}

CudnnConv::CudnnConv(const CudnnHandle &handle, const Instr &in,
                     const std::vector<TensorInfo> &tensors, bool tf32)
    : impl_(std::make_unique<Impl>()) {
  Impl &m = *impl_;
  m.s = shapeOf(in, tensors);
  m.h = static_cast<cudnnHandle_t>(handle.get());
  if (m.s.emptyOutput)
    return;
  if (m.s.emptySum) { // zeros (y = the bias, broadcast): no padded copy
    m.s.padded = false;
    if (m.s.bias)
      m.describeOutput();
    return;
  }
  m.describeOutput();
  m.describeConv(tf32);
  m.chooseAlgo(tf32);
}

CudnnConv::~CudnnConv() = default;

int64_t CudnnConv::scratchBytes() const {
  return impl_->paddedSlot() + impl_->workspace;
}

std::string CudnnConv::describe() const {
  const Impl &m = *impl_;
  const char *pass = m.s.pass == ConvPass::Forward     ? "fwd"
                     : m.s.pass == ConvPass::GradInput ? "bwd data"
                                                       : "bwd filter";
  return std::string(pass) + " algo " + std::to_string(m.algo) +
         (m.deterministic ? ", deterministic" : ", not deterministic") + ", " +
         std::to_string(m.workspace) + " B workspace" +
         (m.s.padded ? ", padded copy" : "");
}

/// Copies `planes` planes of rows x cols f32 words between two NCHW
/// buffers of plane extents srcH x srcW and dstH x dstW, from (sy, sx) of
/// each source plane to (dy, dx) of each destination plane.
static void copyWindow(const void *src, int64_t srcH, int64_t srcW, int64_t sy,
                       int64_t sx, void *dst, int64_t dstH, int64_t dstW,
                       int64_t dy, int64_t dx, int64_t rows, int64_t cols,
                       int64_t planes, cudaStream_t stream) {
  cudaMemcpy3DParms p{};
  p.srcPtr = {const_cast<void *>(src), size_t(srcW) * 4, size_t(srcW) * 4,
              size_t(srcH)};
  p.srcPos = {size_t(sx) * 4, size_t(sy), 0};
  p.dstPtr = {dst, size_t(dstW) * 4, size_t(dstW) * 4, size_t(dstH)};
  p.dstPos = {size_t(dx) * 4, size_t(dy), 0};
  p.extent = {size_t(cols) * 4, size_t(rows), size_t(planes)};
  p.kind = cudaMemcpyDeviceToDevice;
  TCC_CUDA_CHECK(cudaMemcpy3DAsync(&p, stream));
}

void CudnnConv::run(const CudaArgs &a) const {
  const Impl &m = *impl_;
  const CudnnConvShape &s = m.s;
  if (s.emptyOutput)
    return;
  const float one = 1.0f, zero = 0.0f;
  void *out = a.out[0].data;
  if (s.emptySum) {
    TCC_CUDA_CHECK(cudaMemsetAsync(
        out, 0, static_cast<size_t>(a.out[0].numel) * 4, a.stream));
    if (s.bias)
      TCC_CUDNN_CHECK(
          cudnnAddTensor(m.h, &one, m.bias, a.in[2].data, &one, m.y, out));
    return;
  }
  char *scratch = static_cast<char *>(a.scratch);
  void *padded = scratch;
  void *ws = scratch + m.paddedSlot();
  int64_t planes = int64_t(s.n) * s.c;
  // The input x (forward, weight gradient) in its zero-padded copy.
  auto padInput = [&](const void *x) -> const void * {
    if (!s.padded)
      return x;
    TCC_CUDA_CHECK(cudaMemsetAsync(padded, 0, s.paddedBytes(), a.stream));
    copyWindow(x, s.srcH, s.srcW, 0, 0, padded, s.h, s.w, s.extraTop,
               s.extraLeft, s.srcH, s.srcW, planes, a.stream);
    return padded;
  };
  switch (s.pass) {
  case ConvPass::Forward: {
    const void *x = padInput(a.in[0].data);
    TCC_CUDNN_CHECK(cudnnConvolutionForward(
        m.h, &one, m.x, x, m.w, a.in[1].data, m.conv,
        static_cast<cudnnConvolutionFwdAlgo_t>(m.algo), ws,
        static_cast<size_t>(m.workspace), &zero, m.y, out));
    if (s.bias)
      TCC_CUDNN_CHECK(
          cudnnAddTensor(m.h, &one, m.bias, a.in[2].data, &one, m.y, out));
    return;
  }
  case ConvPass::GradInput: {
    void *dx = s.padded ? padded : out;
    TCC_CUDNN_CHECK(cudnnConvolutionBackwardData(
        m.h, &one, m.w, a.in[1].data, m.y, a.in[0].data, m.conv,
        static_cast<cudnnConvolutionBwdDataAlgo_t>(m.algo), ws,
        static_cast<size_t>(m.workspace), &zero, m.x, dx));
    if (s.padded) // the gradient of the real input: the copy's interior
      copyWindow(padded, s.h, s.w, s.extraTop, s.extraLeft, out, s.srcH, s.srcW,
                 0, 0, s.srcH, s.srcW, planes, a.stream);
    return;
  }
  case ConvPass::GradWeight: {
    const void *x = padInput(a.in[1].data);
    TCC_CUDNN_CHECK(cudnnConvolutionBackwardFilter(
        m.h, &one, m.x, x, m.y, a.in[0].data, m.conv,
        static_cast<cudnnConvolutionBwdFilterAlgo_t>(m.algo), ws,
        static_cast<size_t>(m.workspace), &zero, m.w, out));
    return;
  }
  }
}

#else // !TCC_CUDA_HAS_CUDNN

bool cudnnBuilt() { return false; }

static Error noCudnn() {
  return Error("this build of the CUDA backend has no cuDNN, which its "
               "convolutions need; rebuild with cuDNN installed in the CUDA "
               "toolkit, or run on the CPU (--device cpu)");
}

CudnnHandle::CudnnHandle(cudaStream_t) { throw noCudnn(); }
CudnnHandle::~CudnnHandle() = default;

struct CudnnConv::Impl {};

CudnnConv::CudnnConv(const CudnnHandle &, const Instr &,
                     const std::vector<TensorInfo> &, bool) {
  throw noCudnn();
}
CudnnConv::~CudnnConv() = default;
int64_t CudnnConv::scratchBytes() const { return 0; }
std::string CudnnConv::describe() const { return "no cuDNN"; }
void CudnnConv::run(const CudaArgs &) const { throw noCudnn(); }

#endif // TCC_CUDA_HAS_CUDNN

} // namespace tcc::rt::cuda
