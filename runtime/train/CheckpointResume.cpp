//===- CheckpointResume.cpp - Checkpoint directories and resuming ---------===//
//
// Naming, saving with pruning, picking the checkpoint to resume from,
// checking that the run may resume from it and restoring its tensors.
// The newest checkpoint is found by scanning rather than through a "latest"
// pointer: a pointer is one more file that a crash could leave stale, while
// each ckpt-*.tcckpt either is complete (renamed into place after fsync) or
// fails its checksum and is skipped.
//
//===----------------------------------------------------------------------===//
#include "runtime/train/Checkpoint.h"

#include "runtime/core/Session.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <dirent.h>
#include <map>
#include <sys/stat.h>

namespace tcc::rt {

static constexpr const char *kPrefix = "ckpt-";
static constexpr const char *kSuffix = ".tcckpt";

std::string checkpointFileName(int64_t step) {
  char buf[48];
  std::snprintf(buf, sizeof(buf), "%s%08lld%s", kPrefix,
                static_cast<long long>(step), kSuffix);
  return buf;
}

static bool endsWith(const std::string &s, const std::string &suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

/// The step of a checkpoint file name, or -1 for any other name.
static int64_t stepOfName(const std::string &name) {
  std::string prefix = kPrefix, suffix = kSuffix;
  if (name.size() <= prefix.size() + suffix.size() ||
      name.compare(0, prefix.size(), prefix) != 0 || !endsWith(name, suffix))
    return -1;
  std::string digits =
      name.substr(prefix.size(), name.size() - prefix.size() - suffix.size());
  if (digits.size() > 18 ||
      !std::all_of(digits.begin(), digits.end(),
                   [](char c) { return c >= '0' && c <= '9'; }))
    return -1;
  return std::stoll(digits);
}

static std::vector<std::string> entries(const std::string &dir) {
  std::vector<std::string> names;
  DIR *d = ::opendir(dir.c_str());
  if (!d)
    return names;
  while (const dirent *e = ::readdir(d))
    names.push_back(e->d_name);
  ::closedir(d);
  return names;
}

static std::string join(const std::string &dir, const std::string &name) {
  return !dir.empty() && dir.back() == '/' ? dir + name : dir + "/" + name;
}

std::vector<CheckpointFile> listCheckpoints(const std::string &dir) {
  std::vector<CheckpointFile> out;
  for (const std::string &name : entries(dir)) {
    int64_t step = stepOfName(name);
    if (step >= 0)
      out.push_back({step, join(dir, name)});
  }
  std::sort(out.begin(), out.end(),
            [](const CheckpointFile &a, const CheckpointFile &b) {
              return a.step < b.step;
            });
  return out;
}

static bool isDirectory(const std::string &path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

void makeCheckpointDir(const std::string &dir) {
  if (dir.empty() || isDirectory(dir))
    return;
  size_t slash = dir.find_last_of('/', dir.size() - 2);
  if (slash != std::string::npos && slash > 0)
    makeCheckpointDir(dir.substr(0, slash));
  if (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST)
    throw Error(dir + ": cannot create the checkpoint directory: " +
                std::strerror(errno));
  if (!isDirectory(dir))
    throw Error(dir + ": exists and is not a directory");
}

std::string
saveCheckpoint(const std::string &dir, const CheckpointMeta &meta,
               const std::vector<TensorRef> &tensors, int64_t keep,
               const std::function<void(const std::string &)> &warn) {
  if (keep < 1)
    throw Error("--keep-checkpoints must be at least 1, got " +
                std::to_string(keep));
  makeCheckpointDir(dir);
  std::string path = join(dir, checkpointFileName(meta.step));
  writeCheckpoint(path, meta, tensors);

  // Only now that the new checkpoint is durable may older ones go. Files of
  // later steps (left by a run that was resumed from an older checkpoint)
  // are kept: they are replaced when this run reaches their step.
  std::vector<CheckpointFile> older;
  for (const CheckpointFile &f : listCheckpoints(dir))
    if (f.step < meta.step)
      older.push_back(f);
  size_t drop = older.size() > static_cast<size_t>(keep - 1)
                    ? older.size() - static_cast<size_t>(keep - 1)
                    : 0;
  std::vector<std::string> victims;
  for (size_t i = 0; i < drop; ++i)
    victims.push_back(older[i].path);
  // Temporaries of writes a crash interrupted.
  for (const std::string &name : entries(dir))
    if (endsWith(name, std::string(kSuffix) + ".tmp") &&
        stepOfName(name.substr(0, name.size() - 4)) >= 0)
      victims.push_back(join(dir, name));
  for (const std::string &v : victims)
    if (std::remove(v.c_str()) != 0 && errno != ENOENT && warn)
      warn("cannot delete old checkpoint " + v + ": " + std::strerror(errno));
  return path;
}

Checkpoint
loadNewestCheckpoint(const std::string &from,
                     const std::function<void(const std::string &)> &warn) {
  struct stat st;
  if (::stat(from.c_str(), &st) != 0)
    throw Error("cannot resume from " + from + ": " + std::strerror(errno));
  if (!S_ISDIR(st.st_mode))
    return readCheckpoint(from);
  std::vector<CheckpointFile> files = listCheckpoints(from);
  if (files.empty())
    throw Error("cannot resume from " + from +
                ": the directory holds no checkpoint (ckpt-NNNNNNNN" + kSuffix +
                ")");
  std::string problems;
  for (auto it = files.rbegin(); it != files.rend(); ++it) {
    try {
      Checkpoint c = readCheckpoint(it->path);
      if (c.meta.step != it->step)
        throw Error(it->path + ": holds step " + std::to_string(c.meta.step) +
                    ", not the step its name says");
      if (!problems.empty() && warn)
        warn("resuming from the newest valid checkpoint, " + it->path);
      return c;
    } catch (const Error &e) {
      if (warn)
        warn(std::string(e.what()) + "; skipping it");
      problems += std::string(problems.empty() ? "" : "; ") + e.what();
    }
  }
  throw Error("cannot resume from " + from +
              ": no valid checkpoint: " + problems);
}

//===-- Restoring and resuming
//---------------------------------------------===//

void restoreCheckpoint(Session &s, const Checkpoint &c) {
  restoreCheckpoint(
      s.tensors(), [&](int32_t id) { return hostTensor(s, id); }, c);
}

void restoreCheckpoint(const std::vector<TensorInfo> &tensors,
                       const std::function<void *(int32_t)> &dest,
                       const Checkpoint &c) {
  std::map<std::string, const CheckpointTensor *> byName;
  for (const CheckpointTensor &t : c.tensors)
    byName[t.name] = &t;
  std::vector<std::pair<int32_t, const CheckpointTensor *>> copies;
  for (size_t id = 0; id < tensors.size(); ++id) {
    const TensorInfo &t = tensors[id];
    if (!isCheckpointed(t.kind))
      continue;
    auto it = byName.find(t.name);
    if (it == byName.end())
      throw Error(c.path + ": has no tensor '" + t.name + "' (" +
                  tensorKindName(t.kind) + " " + formatShape(t.shape) + " " +
                  dtypeName(t.dtype) + ")");
    const CheckpointTensor &ct = *it->second;
    if (ct.dtype != t.dtype || ct.shape != t.shape || ct.kind != t.kind)
      throw Error(c.path + ": tensor '" + t.name + "' is " +
                  tensorKindName(ct.kind) + " " + formatShape(ct.shape) + " " +
                  dtypeName(ct.dtype) + " in the checkpoint but " +
                  tensorKindName(t.kind) + " " + formatShape(t.shape) + " " +
                  dtypeName(t.dtype) + " in the artifact");
    copies.push_back({static_cast<int32_t>(id), &ct});
    byName.erase(it);
  }
  if (!byName.empty())
    throw Error(c.path + ": tensor '" + byName.begin()->first +
                "' is not a param or state of the artifact");
  for (const auto &[id, ct] : copies)
    if (void *to = ct->size ? dest(id) : nullptr)
      std::memcpy(to, c.data(*ct), ct->size);
}

static std::string lengthFlag(const CheckpointMeta &m) {
  return m.epochs >= 0 ? "--epochs " + std::to_string(m.epochs)
                       : "--steps " + std::to_string(m.totalSteps);
}

static std::string describe(const DataIdentity &d) {
  return d.path + " (" + d.dtype + " " + formatShape(d.shape) + ", CRC-32 " +
         hex32(d.crc32) + ")";
}

void checkResumable(const Checkpoint &c, const CheckpointMeta &now,
                    const std::function<void(const std::string &)> &warn) {
  const CheckpointMeta &was = c.meta;
  auto fail = [&](const std::string &msg) {
    throw Error("cannot resume from " + c.path + ": " + msg);
  };
  if (was.artifactCrc != now.artifactCrc)
    fail("it was written for another artifact (source '" + was.artifactSource +
         "', CRC-32 " + hex32(was.artifactCrc) + "); this one is source '" +
         now.artifactSource + "', CRC-32 " + hex32(now.artifactCrc) +
         ". Resume with the artifact it was trained with");
  // The data before the run's geometry: other data of another size changes
  // the length of --epochs and the batches per epoch too, and the data is
  // what the user changed.
  for (const DataIdentity &d : was.data) {
    auto it =
        std::find_if(now.data.begin(), now.data.end(),
                     [&](const DataIdentity &n) { return n.name == d.name; });
    if (it == now.data.end())
      fail("its run was fed input '" + d.name + "' from " + describe(d) +
           ", this run is not");
    if (it->crc32 != d.crc32 || it->shape != d.shape || it->dtype != d.dtype)
      fail((d.dtype.rfind("tokens", 0) == 0 ? "--tokens "
                                            : "--data " + d.name + "=") +
           describe(*it) + " differs from the data the run was trained on, " +
           describe(d));
  }
  for (const DataIdentity &n : now.data)
    if (std::none_of(was.data.begin(), was.data.end(),
                     [&](const DataIdentity &d) { return d.name == n.name; }))
      fail("this run feeds input '" + n.name + "', its run did not");
  // Another rank count is another global batch: the optimization and the
  // data order would differ from the run being continued, so it is refused
  // rather than resumed approximately.
  if (was.ranks != now.ranks)
    fail("its run had " + std::to_string(was.ranks) +
         " rank(s) (global batch " + std::to_string(was.ranks * was.batchSize) +
         "), this run has " + std::to_string(now.ranks) + " (global batch " +
         std::to_string(now.ranks * now.batchSize) + "); resume with " +
         (was.ranks > 1 ? "mpirun -np " + std::to_string(was.ranks)
                        : std::string("one process (no mpirun)")));
  if (was.epochs != now.epochs || was.totalSteps != now.totalSteps)
    fail("its run was " + lengthFlag(was) + " (" +
         std::to_string(was.totalSteps) + " steps), this run is " +
         lengthFlag(now) + " (" + std::to_string(now.totalSteps) +
         " steps); pass the same length to resume");
  if (was.seed != now.seed)
    fail("its run used --seed " + std::to_string(was.seed) +
         ", this run --seed " + std::to_string(now.seed) +
         "; pass the same seed to resume");
  if (was.shuffle != now.shuffle)
    fail(std::string("its run ") +
         (was.shuffle ? "shuffled" : "used --no-shuffle") + ", this run " +
         (now.shuffle ? "shuffles" : "uses --no-shuffle"));
  if (was.batchSize != now.batchSize ||
      was.batchesPerEpoch != now.batchesPerEpoch)
    fail("its run had batch size " + std::to_string(was.batchSize) + " and " +
         std::to_string(was.batchesPerEpoch) + " batches per epoch, this run " +
         std::to_string(now.batchSize) + " and " +
         std::to_string(now.batchesPerEpoch));
  if (!was.lrSchedule.empty() && was.lrSchedule != now.lrSchedule)
    fail("its run's learning rate followed '" + was.lrSchedule +
         "', this run's '" + now.lrSchedule +
         "'; pass the same --lr and --lr-schedule flags to resume");
  if (was.blasThreads != now.blasThreads && warn)
    warn("warning: " + c.path + " was written by a run with " +
         std::to_string(was.blasThreads) + " BLAS threads, this run has " +
         std::to_string(now.blasThreads) +
         " (TCC_NUM_THREADS): the losses may differ in the last bits from "
         "an uninterrupted run");
}

} // namespace tcc::rt
