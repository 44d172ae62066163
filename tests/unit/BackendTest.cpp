//===- BackendTest.cpp - The registry and the Session interface -----------===//
//
// The backend registry (runtime/core/Backend.h) and what the one training
// loop asks of a session (runtime/core/Session.h), on the CPU backend: the
// CUDA backend's side of the same interface runs in CudaTrainLoopTest on a
// GPU.
//
//===----------------------------------------------------------------------===//
#include "runtime/core/Backend.h"
#include "runtime/core/NonFinite.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <cstdio>
#include <fstream>
#include <limits>
#include <unistd.h>

using namespace tcc::rt;

namespace {

/// x [2, 3] input -> relu -> y (program "run"), and a parameter w [3].
Artifact reluArtifact() {
  Artifact a;
  auto add = [&](const char *name, TensorKind kind, std::vector<int64_t> s) {
    TensorInfo t;
    t.name = name;
    t.kind = kind;
    t.shape = std::move(s);
    a.tensors.push_back(t);
    return static_cast<int32_t>(a.tensors.size() - 1);
  };
  int32_t x = add("x", TensorKind::Input, {2, 3});
  int32_t w = add("w", TensorKind::Param, {3});
  std::vector<float> init = {1, 2, 3};
  a.tensors[w].dataOffset = a.addBlob(init.data(), 12);
  int32_t y = add("y", TensorKind::Temp, {2, 3});
  a.tensors[y].program = "run";
  a.tensors[y].arenaOffset = 0;
  Program p{"run", {x}, {y}, {{"relu", {x}, {y}, {}, {}}}, 64};
  a.programs = {p};
  return a;
}

std::string errorOf(const std::function<void()> &f) {
  try {
    f();
  } catch (const Error &e) {
    return e.what();
  }
  return "";
}

} // namespace

TEST(Backend, TheCpuIsAlwaysThereAndListedFirst) {
  std::vector<std::string> names = backends::names();
  ASSERT_FALSE(names.empty());
  EXPECT_EQ(names[0], "cpu");
  EXPECT_TRUE(backends::loaded("cpu"));
  const Backend *cpu = backends::find("cpu");
  ASSERT_NE(cpu, nullptr);
  std::string why;
  EXPECT_TRUE(cpu->available(&why));
  EXPECT_TRUE(cpu->runs(Artifact()));
  EXPECT_EQ(cpu->deviceDescription(), "cpu");
}

TEST(Backend, UnknownBackendsAreNamedWithWhatThereIs) {
  std::string why;
  EXPECT_EQ(backends::find("tpu", &why), nullptr);
  EXPECT_EQ(why.rfind("this runtime has no 'tpu' backend (it has: cpu", 0), 0u)
      << why;
  // Not a module name: nothing outside the module folder is loaded.
  EXPECT_EQ(backends::find("../lib/x", &why), nullptr);
  EXPECT_NE(why.find("no '../lib/x' backend"), std::string::npos) << why;
  EXPECT_EQ(errorOf([] { openSession("tpu", reluArtifact(), ExecMode::Compiled); })
                .rfind("this runtime has no 'tpu' backend", 0),
            0u);
  EXPECT_FALSE(backends::moduleDirectory().empty());
}

TEST(Backend, CpuSessionThroughTheInterface) {
  Artifact a = reluArtifact();
  std::unique_ptr<Session> s = openSession("cpu", a, ExecMode::Compiled);
  EXPECT_STREQ(s->backend(), "cpu");
  EXPECT_EQ(s->deviceDescription(), "cpu");
  EXPECT_FALSE(s->traits().asynchronous);
  EXPECT_EQ(s->traits().inputSlots, 1u);
  EXPECT_GT(s->orderingThreads(), 0);

  // Data in and out; the CPU's tensors are host memory.
  std::vector<float> x = {-1, 2, -3, 4, -5, 6}, y(6), w(3);
  s->upload(0, x.data());
  s->download(1, w.data());
  EXPECT_EQ(w, (std::vector<float>{1, 2, 3}));
  ASSERT_NE(s->hostData(1), nullptr);
  EXPECT_EQ(std::memcmp(s->hostData(1), w.data(), 12), 0);
  // The temporary has no buffer before its program ran.
  EXPECT_NE(errorOf([&] { s->download(2, y.data()); }).find("not live"),
            std::string::npos);

  std::unique_ptr<Event> from = s->createEvent(), to = s->createEvent();
  s->record(*from);
  s->run("run");
  s->record(*to);
  s->wait(*to);
  EXPECT_GE(s->seconds(*from, *to), 0.0);
  float first = -1;
  s->readAsync(2, &first, sizeof first);
  EXPECT_EQ(first, 0.0f);
  s->download(2, y.data());
  EXPECT_EQ(y, (std::vector<float>{0, 2, 0, 4, 0, 6}));
  EXPECT_NE(errorOf([&] { s->readAsync(2, y.data(), 100); })
                .find("100 bytes of tensor 'y', which has 24"),
            std::string::npos);
  EXPECT_GE(timeRun(*s, "run"), 0.0);
  // writeAsync: a prefix of a tensor, seen by the next run.
  float two[2] = {7, 8};
  s->writeAsync(0, two, sizeof two);
  s->run("run");
  s->download(2, y.data());
  EXPECT_EQ(y, (std::vector<float>{7, 8, 0, 4, 0, 6}));
  EXPECT_NE(errorOf([&] { s->writeAsync(0, y.data(), 100); })
                .find("100 bytes into tensor 'x', which has 24"),
            std::string::npos);

  // One input slot: a batch is written into the input itself.
  std::unique_ptr<InputSlots> slots = s->inputSlots({0}, 1);
  EXPECT_EQ(slots->count(), 1u);
  std::vector<uint8_t> batch(24, 0);
  slots->stage(0, {batch});
  slots->use(0);
  s->run("run");
  slots->release(0);
  s->download(2, y.data());
  EXPECT_EQ(y, std::vector<float>(6, 0.0f));
  EXPECT_EQ(errorOf([&] { slots->stage(0, {std::vector<uint8_t>(8)}); }),
            "the batch for input 'x' has 8 bytes, the tensor 24");
  EXPECT_NE(errorOf([&] { s->inputSlots({1}, 1); }).find("not an input"),
            std::string::npos);

  // The non-finite scan over host copies, and the description.
  std::vector<int32_t> scanned = nonFiniteScanned(s->tensors());
  EXPECT_EQ(scanned, std::vector<int32_t>{1});
  EXPECT_FALSE(s->anyNonFinite(scanned));
  w[1] = std::numeric_limits<float>::quiet_NaN();
  s->upload(1, w.data());
  EXPECT_TRUE(s->anyNonFinite(scanned));
  EXPECT_EQ(findNonFinite(s->tensors(),
                          [&](int32_t id) -> const void * {
                            return s->hostData(id);
                          }),
            "parameter 'w' has 1 non-finite value (first: NaN at index 1)");
  std::unique_ptr<HostBuffer> host = s->allocateHost(100);
  EXPECT_EQ(host->size(), 100u);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(host->data()) % 64, 0u);
}

// A module file that is not a loadable library: the registry says which
// backend did not load and the loader's reason, and keeps saying it.
TEST(Backend, AModuleThatDoesNotLoadIsNamedWithTheReason) {
  std::string name = "broken" + std::to_string(::getpid());
  std::string path =
      backends::moduleDirectory() + "/libtcc_backend_" + name + ".so";
  {
    std::ofstream f(path, std::ios::binary);
    ASSERT_TRUE(f) << "cannot write " << path;
    f << "not an ELF file";
  }
  std::string why, again;
  const Backend *b = backends::find(name, &why);
  const Backend *b2 = backends::find(name, &again);
  std::remove(path.c_str());
  EXPECT_EQ(b, nullptr);
  EXPECT_EQ(b2, nullptr);
  EXPECT_EQ(why.rfind("the '" + name + "' backend did not load: ", 0), 0u)
      << why;
  EXPECT_NE(why.find(path), std::string::npos) << why; // dlerror names it
  EXPECT_EQ(again, why);
}
