// onednn_conv_shapes.cpp - oneDNN 2.6 convolutions on ResNet-18's shapes
// (torchvision, 32x32 inputs, batch 32): forward, backward-data and
// backward-weights with the layouts left to oneDNN (blocked, reorders from
// and to NCHW/OIHW included in the times) or fixed to NCHW/OIHW ('p').
// The figures behind runtime/cpu/OneDnnConv.cpp's choice of blocked layouts
// (benchmarks/results/onednn_cpu_2026-11-28.md). Not built by CMake:
//
//   g++ -O2 benchmarks/onednn_conv_shapes.cpp -o /tmp/ocs -ldnnl
//   OMP_NUM_THREADS=2 /tmp/ocs b   # blocked
//   OMP_NUM_THREADS=2 /tmp/ocs p   # plain NCHW
//
// Each time is the minimum of 20 runs; the total weighs each shape by how
// often ResNet-18 has it; GF/s counts every tap of the window (2*N*O*OH*OW*
// C*KH*KW), padding included, as tcc's profile does.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <dnnl.hpp>
#include <vector>

using namespace dnnl;
using tag = memory::format_tag;
using dt = memory::data_type;
struct S {
  int n, c, h, o, k, s, p;
};
static double now() {
  return std::chrono::duration<double>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}
int main(int argc, char **argv) {
  bool blocked = argc > 1 && argv[1][0] == 'b';
  int reps = 20;
  engine eng(engine::kind::cpu, 0);
  stream st(eng);
  std::vector<S> shapes = {
      {32, 3, 32, 64, 7, 2, 3},   {32, 64, 8, 64, 3, 1, 1},
      {32, 64, 8, 128, 3, 2, 1},  {32, 128, 4, 128, 3, 1, 1},
      {32, 64, 8, 128, 1, 2, 0},  {32, 128, 4, 256, 3, 2, 1},
      {32, 256, 2, 256, 3, 1, 1}, {32, 256, 2, 512, 3, 2, 1},
      {32, 512, 1, 512, 3, 1, 1}};
  int mult[] = {1, 4, 1, 3, 1, 1, 3, 1, 3};
  double tot[3] = {0, 0, 0};
  double flops = 0;
  for (size_t si = 0; si < shapes.size(); ++si) {
    S s = shapes[si];
    int oh = (s.h + 2 * s.p - s.k) / s.s + 1;
    memory::dims xd = {s.n, s.c, s.h, s.h}, wd = {s.o, s.c, s.k, s.k},
                 yd = {s.n, s.o, oh, oh}, bd = {s.o};
    auto xu = memory::desc(xd, dt::f32, tag::nchw),
         wu = memory::desc(wd, dt::f32, tag::oihw),
         yu = memory::desc(yd, dt::f32, tag::nchw),
         bu = memory::desc(bd, dt::f32, tag::x);
    auto xa = blocked ? memory::desc(xd, dt::f32, tag::any) : xu,
         wa = blocked ? memory::desc(wd, dt::f32, tag::any) : wu,
         ya = blocked ? memory::desc(yd, dt::f32, tag::any) : yu;
    memory::dims str = {s.s, s.s}, dil = {0, 0}, pad = {s.p, s.p};
    primitive_attr attr;
    attr.set_scratchpad_mode(scratchpad_mode::library);
    auto fd = convolution_forward::desc(prop_kind::forward_training,
                                        algorithm::convolution_direct, xa, wa,
                                        bu, ya, str, dil, pad, pad);
    auto fpd = convolution_forward::primitive_desc(fd, attr, eng);
    auto bdd = convolution_backward_data::desc(algorithm::convolution_direct,
                                               xa, wa, ya, str, dil, pad, pad);
    auto bdpd = convolution_backward_data::primitive_desc(bdd, attr, eng, fpd);
    auto bwd = convolution_backward_weights::desc(
        algorithm::convolution_direct, xa, wa, bu, ya, str, dil, pad, pad);
    auto bwpd =
        convolution_backward_weights::primitive_desc(bwd, attr, eng, fpd);
    memory xm(xu, eng), wm(wu, eng), ym(yu, eng), bm(bu, eng), dxm(xu, eng),
        dwm(wu, eng), dym(yu, eng), dbm(bu, eng);
    std::fill((float *)xm.get_data_handle(),
              (float *)xm.get_data_handle() + xu.get_size() / 4, 0.5f);
    std::fill((float *)wm.get_data_handle(),
              (float *)wm.get_data_handle() + wu.get_size() / 4, 0.25f);
    std::fill((float *)dym.get_data_handle(),
              (float *)dym.get_data_handle() + yu.get_size() / 4, 0.1f);
    auto R = [&](memory &from, memory::desc to) -> memory {
      if (from.get_desc() == to)
        return from;
      memory m(to, eng);
      reorder(from, m).execute(st, from, m);
      return m;
    };
    convolution_forward fwd(fpd);
    convolution_backward_data bdp(bdpd);
    convolution_backward_weights bwp(bwpd);
    double t[3] = {1e9, 1e9, 1e9};
    for (int r = 0; r < reps; ++r) {
      double t0 = now();
      {
        memory x = R(xm, fpd.src_desc()), w = R(wm, fpd.weights_desc());
        memory y = fpd.dst_desc() == yu ? ym : memory(fpd.dst_desc(), eng);
        fwd.execute(st, {{DNNL_ARG_SRC, x},
                         {DNNL_ARG_WEIGHTS, w},
                         {DNNL_ARG_BIAS, bm},
                         {DNNL_ARG_DST, y}});
        if (!(y.get_desc() == yu))
          reorder(y, ym).execute(st, y, ym);
        st.wait();
      }
      double t1 = now();
      {
        memory dy = R(dym, bdpd.diff_dst_desc()),
               w = R(wm, bdpd.weights_desc());
        memory dx = bdpd.diff_src_desc() == xu
                        ? dxm
                        : memory(bdpd.diff_src_desc(), eng);
        bdp.execute(st, {{DNNL_ARG_DIFF_DST, dy},
                         {DNNL_ARG_WEIGHTS, w},
                         {DNNL_ARG_DIFF_SRC, dx}});
        if (!(dx.get_desc() == xu))
          reorder(dx, dxm).execute(st, dx, dxm);
        st.wait();
      }
      double t2 = now();
      {
        memory dy = R(dym, bwpd.diff_dst_desc()), x = R(xm, bwpd.src_desc());
        memory dw = bwpd.diff_weights_desc() == wu
                        ? dwm
                        : memory(bwpd.diff_weights_desc(), eng);
        bwp.execute(st, {{DNNL_ARG_DIFF_DST, dy},
                         {DNNL_ARG_SRC, x},
                         {DNNL_ARG_DIFF_WEIGHTS, dw},
                         {DNNL_ARG_DIFF_BIAS, dbm}});
        if (!(dw.get_desc() == wu))
          reorder(dw, dwm).execute(st, dw, dwm);
        st.wait();
      }
      double t3 = now();
      t[0] = std::min(t[0], t1 - t0);
      t[1] = std::min(t[1], t2 - t1);
      t[2] = std::min(t[2], t3 - t2);
    }
    double f = 2.0 * s.n * s.o * oh * oh * s.c * s.k * s.k;
    printf("%3d->%3d %dx%d k%d s%d: fwd %.3f bd %.3f bw %.3f ms  (%.0f GF/s "
           "fwd) impl %s | %s | %s\n",
           s.c, s.o, s.h, s.h, s.k, s.s, t[0] * 1e3, t[1] * 1e3, t[2] * 1e3,
           f / t[0] / 1e9, fpd.impl_info_str(), bdpd.impl_info_str(),
           bwpd.impl_info_str());
    for (int i = 0; i < 3; ++i)
      tot[i] += t[i] * mult[si];
    flops += f * mult[si];
  }
  printf("total fwd %.2f bd %.2f bw %.2f ms; %.2f GFLOP fwd -> %.1f GF/s "
         "overall\n",
         tot[0] * 1e3, tot[1] * 1e3, tot[2] * 1e3, flops / 1e9,
         3 * flops / (tot[0] + tot[1] + tot[2]) / 1e9);
}
