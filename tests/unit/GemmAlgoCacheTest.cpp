//===- GemmAlgoCacheTest.cpp - Autotuned GEMM algorithms across runs ------===//
//
// The file behind TCC_CUDA_GEMM_AUTOTUNE_CACHE (GemmAlgoCache.h): picks
// survive a reload in their scope only, a damaged file is an error naming
// it and what is wrong, and a failed write leaves the old file whole.
//
//===----------------------------------------------------------------------===//
#include "runtime/cuda/GemmAlgoCache.h"
#include "runtime/core/Artifact.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <unistd.h>

using namespace tcc::rt;
using cuda::GemmAlgoCache;

namespace {

/// A file name of this process in the temporary directory.
std::string tempPath(const std::string &name) {
  return (std::filesystem::temp_directory_path() /
          ("tcc_gemm_algo_cache_" + std::to_string(::getpid()) + "_" + name))
      .string();
}

void writeFile(const std::string &path, const std::string &text) {
  std::ofstream(path, std::ios::trunc) << text;
}

std::string readFile(const std::string &path) {
  std::stringstream s;
  s << std::ifstream(path).rdbuf();
  return s.str();
}

const GemmAlgoCache::Algo kAlgo = {0x0123456789abcdefull, 1, 2, 3, 4, 5, 6,
                                   0xffffffffffffffffull};

} // namespace

TEST(GemmAlgoCache, PicksSurviveAReloadInTheirScope) {
  std::string path = tempPath("picks.json");
  std::remove(path.c_str());
  {
    GemmAlgoCache c(path, "H100 sm_90, cuBLASLt 130000");
    EXPECT_FALSE(c.find("2,2,0,1,768").has_value());
    c.store("2,2,0,1,768", kAlgo);
    EXPECT_EQ(c.find("2,2,0,1,768"), kAlgo);
  }
  GemmAlgoCache again(path, "H100 sm_90, cuBLASLt 130000");
  EXPECT_EQ(again.find("2,2,0,1,768"), kAlgo);
  EXPECT_FALSE(again.find("2,2,0,1,769").has_value());
  // Another GPU or cuBLASLt sees none of them, and keeps them on storing.
  GemmAlgoCache other(path, "H200 sm_90, cuBLASLt 130000");
  EXPECT_FALSE(other.find("2,2,0,1,768").has_value());
  GemmAlgoCache::Algo zero{};
  other.store("2,2,0,1,768", zero);
  GemmAlgoCache third(path, "H100 sm_90, cuBLASLt 130000");
  EXPECT_EQ(third.find("2,2,0,1,768"), kAlgo);
  EXPECT_NE(readFile(path).find("\"format\": \"tcc-gemm-algos\""),
            std::string::npos);
  std::remove(path.c_str());
}

TEST(GemmAlgoCache, ADamagedFileIsAnErrorNamingIt) {
  std::string path = tempPath("damaged.json");
  const std::string good = "\"0123456789abcdef" + std::string(112, '0') + "\"";
  struct Case {
    std::string text, says;
  } cases[] = {
      {"{not json", "not JSON"},
      {"{\"format\": \"other\", \"version\": 1, \"scopes\": {}}",
       "no \"format\": \"tcc-gemm-algos\""},
      {"{\"format\": \"tcc-gemm-algos\", \"version\": 2, \"scopes\": {}}",
       "version is not 1"},
      {"{\"format\": \"tcc-gemm-algos\", \"version\": 1}",
       "no \"scopes\" object"},
      {"{\"format\": \"tcc-gemm-algos\", \"version\": 1, \"scopes\": "
       "{\"g\": 3}}",
       "scope 'g' is not an object"},
      {"{\"format\": \"tcc-gemm-algos\", \"version\": 1, \"scopes\": "
       "{\"g\": {\"1,2\": \"00ff\"}}}",
       "scope 'g', problem '1,2' is not 128 lowercase hex digits"},
  };
  for (const Case &c : cases) {
    writeFile(path, c.text);
    try {
      GemmAlgoCache cache(path, "g");
      ADD_FAILURE() << "no error for " << c.text;
    } catch (const Error &e) {
      std::string m = e.what();
      EXPECT_NE(m.find("TCC_CUDA_GEMM_AUTOTUNE_CACHE " + path +
                       " is not a tcc GEMM algorithm cache: " + c.says),
                std::string::npos)
          << m;
      EXPECT_NE(m.find("remove it to start a new one"), std::string::npos);
    }
  }
  // A well-formed file loads.
  writeFile(path, "{\"format\": \"tcc-gemm-algos\", \"version\": 1, "
                  "\"scopes\": {\"g\": {\"1,2\": " +
                      good + "}}}");
  GemmAlgoCache cache(path, "g");
  ASSERT_TRUE(cache.find("1,2").has_value());
  EXPECT_EQ((*cache.find("1,2"))[0], 0x0123456789abcdefull);
  std::remove(path.c_str());
}

TEST(GemmAlgoCache, AFailedWriteSaysWhereAndKeepsTheOldFile) {
  std::string path = tempPath("kept.json");
  std::remove(path.c_str());
  GemmAlgoCache c(path, "g");
  c.store("1", kAlgo);
  std::string before = readFile(path);
  // The temporary file cannot be made: a directory holds its name.
  std::filesystem::create_directories(path + ".tmp");
  try {
    c.store("2", kAlgo);
    ADD_FAILURE() << "no error";
  } catch (const Error &e) {
    EXPECT_NE(std::string(e.what()).find("TCC_CUDA_GEMM_AUTOTUNE_CACHE " +
                                         path + ": cannot write " + path +
                                         ".tmp"),
              std::string::npos)
        << e.what();
  }
  EXPECT_EQ(readFile(path), before);
  std::filesystem::remove_all(path + ".tmp");
  std::remove(path.c_str());
}

TEST(GemmAlgoCache, EnvironmentValue) {
  EXPECT_FALSE(cuda::gemmAlgoCachePath(nullptr).has_value());
  EXPECT_FALSE(cuda::gemmAlgoCachePath("").has_value());
  EXPECT_EQ(cuda::gemmAlgoCachePath("/tmp/a.json"), "/tmp/a.json");
}
