//===- Backend.cpp - The registry of backends and their modules -----------===//
#include "runtime/core/Backend.h"

#include <dirent.h>
#include <dlfcn.h>

#include <algorithm>
#include <map>
#include <mutex>

namespace tcc::rt {

namespace {
/// Function-local, so a backend library's static registration may run
/// before or after this file's statics are initialized.
struct Registry {
  std::recursive_mutex mutex;
  std::map<std::string, std::unique_ptr<Backend>> backends;
  std::map<std::string, std::string> loadErrors; // a module that failed
};
Registry &registry() {
  static Registry *r = new Registry; // never destroyed: modules stay loaded
  return *r;
}

const char kModulePrefix[] = "libtcc_backend_";
const char kModuleSuffix[] = ".so";
} // namespace

BackendRegistration::BackendRegistration(std::unique_ptr<Backend> b) {
  Registry &r = registry();
  std::lock_guard<std::recursive_mutex> lock(r.mutex);
  std::string name = b->name();
  r.backends[name] = std::move(b);
}

std::string backends::moduleDirectory() {
  Dl_info info{};
  if (!dladdr(reinterpret_cast<void *>(&backends::moduleDirectory), &info) ||
      !info.dli_fname)
    return ".";
  std::string path = info.dli_fname;
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? "." : path.substr(0, slash);
}

bool backends::loaded(const std::string &name) {
  Registry &r = registry();
  std::lock_guard<std::recursive_mutex> lock(r.mutex);
  return r.backends.count(name) != 0;
}

std::vector<std::string> backends::names() {
  std::vector<std::string> out;
  {
    Registry &r = registry();
    std::lock_guard<std::recursive_mutex> lock(r.mutex);
    for (const auto &[name, b] : r.backends)
      out.push_back(name);
  }
  if (DIR *d = opendir(moduleDirectory().c_str())) {
    size_t pre = sizeof kModulePrefix - 1, suf = sizeof kModuleSuffix - 1;
    while (dirent *e = readdir(d)) {
      std::string f = e->d_name;
      if (f.size() > pre + suf && f.compare(0, pre, kModulePrefix) == 0 &&
          f.compare(f.size() - suf, suf, kModuleSuffix) == 0)
        out.push_back(f.substr(pre, f.size() - pre - suf));
    }
    closedir(d);
  }
  std::sort(out.begin(), out.end(),
            [](const std::string &a, const std::string &b) {
              return (a != "cpu") < (b != "cpu") ||
                     ((a != "cpu") == (b != "cpu") && a < b);
            });
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

static std::string joined(const std::vector<std::string> &v) {
  std::string s;
  for (const std::string &x : v)
    s += (s.empty() ? "" : ", ") + x;
  return s;
}

const Backend *backends::find(const std::string &name, std::string *why) {
  Registry &r = registry();
  std::lock_guard<std::recursive_mutex> lock(r.mutex);
  auto it = r.backends.find(name);
  if (it != r.backends.end())
    return it->second.get();
  auto failed = r.loadErrors.find(name);
  if (failed == r.loadErrors.end()) {
    bool plain = !name.empty() &&
                 name.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789"
                                        "_") == std::string::npos;
    std::string path =
        moduleDirectory() + "/" + kModulePrefix + name + kModuleSuffix;
    std::string error;
    if (!plain) {
      error = "not a backend name";
    } else if (!dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL)) {
      // Loading registers the backend (its static registration ran).
      const char *e = dlerror();
      error = e ? e : "dlopen failed";
    } else if (!r.backends.count(name)) {
      error = path + " registers no backend '" + name + "'";
    }
    if (error.empty())
      return r.backends[name].get();
    r.loadErrors[name] = error;
    failed = r.loadErrors.find(name);
  }
  if (why) {
    std::vector<std::string> all = names();
    bool listed = std::find(all.begin(), all.end(), name) != all.end();
    *why = listed ? "the '" + name + "' backend did not load: " + failed->second
                  : "this runtime has no '" + name + "' backend (it has: " +
                        joined(all) + ")";
  }
  return nullptr;
}

std::unique_ptr<Session> openSession(const std::string &backend,
                                     const Artifact &a, ExecMode mode,
                                     const SessionOptions &o) {
  std::string why;
  const Backend *b = backends::find(backend, &why);
  if (!b)
    throw Error(why);
  return b->open(a, mode, o);
}

} // namespace tcc::rt
