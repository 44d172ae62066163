//===- KernelCacheTest.cpp - The compiled-kernel cache --------------------===//
#include "compiler/codegen/KernelCache.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>

using namespace tcc;

namespace {
/// Points TCC_CACHE_DIR at a fresh directory for one test.
struct TempCache {
  llvm::SmallString<128> dir;
  std::string saved;
  bool had = false;
  TempCache() {
    if (const char *d = std::getenv("TCC_CACHE_DIR")) {
      had = true;
      saved = d;
    }
    EXPECT_FALSE(llvm::sys::fs::createUniqueDirectory("tcc-kcache", dir));
    setenv("TCC_CACHE_DIR", dir.c_str(), 1);
  }
  ~TempCache() {
    llvm::sys::fs::remove_directories(dir);
    if (had)
      setenv("TCC_CACHE_DIR", saved.c_str(), 1);
    else
      unsetenv("TCC_CACHE_DIR");
  }
  std::string entry(const std::string &key) const {
    llvm::SmallString<128> p(dir);
    llvm::sys::path::append(p, "nvrtc", key);
    return std::string(p);
  }
};
} // namespace

TEST(KernelCache, KeysDependOnEveryPartAndItsBoundaries) {
  std::string k = kernelCacheKey({"nvrtc 13.0", "sm_90a", "src"});
  EXPECT_EQ(k.size(), 64u);
  EXPECT_EQ(k, kernelCacheKey({"nvrtc 13.0", "sm_90a", "src"}));
  EXPECT_NE(k, kernelCacheKey({"nvrtc 13.1", "sm_90a", "src"}));
  EXPECT_NE(k, kernelCacheKey({"nvrtc 13.0", "sm_80", "src"}));
  EXPECT_NE(k, kernelCacheKey({"nvrtc 13.0", "sm_90a", "src "}));
  // Moving bytes from one part to the next is another key.
  EXPECT_NE(kernelCacheKey({"ab", "c"}), kernelCacheKey({"a", "bc"}));
}

TEST(KernelCache, StoresAndReadsBack) {
  TempCache c;
  std::string key = kernelCacheKey({"x"});
  EXPECT_FALSE(kernelCacheGet("nvrtc", key));
  std::vector<uint8_t> bytes = {0x7f, 'E', 'L', 'F', 0, 1, 2, 255};
  ASSERT_TRUE(kernelCachePut("nvrtc", key, bytes));
  std::optional<std::vector<uint8_t>> got = kernelCacheGet("nvrtc", key);
  ASSERT_TRUE(got);
  EXPECT_EQ(*got, bytes);
  // No temporary is left beside the entry.
  std::error_code ec;
  int files = 0;
  for (llvm::sys::fs::directory_iterator it(c.dir + "/nvrtc", ec), end;
       it != end && !ec; it.increment(ec))
    ++files;
  EXPECT_EQ(files, 1);
  // An empty payload is an entry too.
  ASSERT_TRUE(kernelCachePut("nvrtc", kernelCacheKey({"y"}), {}));
  EXPECT_TRUE(kernelCacheGet("nvrtc", kernelCacheKey({"y"})));
}

TEST(KernelCache, DamagedEntriesAreMisses) {
  TempCache c;
  std::string key = kernelCacheKey({"z"});
  std::vector<uint8_t> bytes(100, 7);
  ASSERT_TRUE(kernelCachePut("nvrtc", key, bytes));
  std::string path = c.entry(key);
  {
    // One payload byte changed: the hash no longer matches.
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(48 + 50);
    f.put(8);
  }
  EXPECT_FALSE(kernelCacheGet("nvrtc", key));
  ASSERT_TRUE(kernelCachePut("nvrtc", key, bytes));
  // Truncated: the recorded length no longer matches.
  ASSERT_EQ(0, truncate(path.c_str(), 48 + 60));
  EXPECT_FALSE(kernelCacheGet("nvrtc", key));
  // Not an entry at all.
  std::ofstream(path, std::ios::binary) << "hello";
  EXPECT_FALSE(kernelCacheGet("nvrtc", key));
}

TEST(KernelCache, OffStoresNothing) {
  TempCache c;
  setenv("TCC_CACHE_DIR", "off", 1);
  EXPECT_EQ(kernelCacheDir(), "");
  EXPECT_FALSE(kernelCachePut("nvrtc", kernelCacheKey({"w"}), {1, 2}));
  EXPECT_FALSE(kernelCacheGet("nvrtc", kernelCacheKey({"w"})));
}

TEST(KernelCache, UnwritableDirectoryIsAMissNotAnError) {
  TempCache c;
  std::string file = std::string(c.dir) + "/plain-file";
  std::ofstream(file) << "x";
  setenv("TCC_CACHE_DIR", file.c_str(), 1); // a file, not a directory
  EXPECT_FALSE(kernelCachePut("nvrtc", kernelCacheKey({"v"}), {1}));
  EXPECT_FALSE(kernelCacheGet("nvrtc", kernelCacheKey({"v"})));
}
