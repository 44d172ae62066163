//===- Args.h - tcc-run's command-line parser -------------------*- C++ -*-===//
//
// tcc-run needs no LLVM, so it parses its flags itself: `--name VALUE` or
// `--name=VALUE`, boolean `--name`, repeatable list flags, positionals, and
// `--help`. Every mistake is an Error naming the flag and the value.
//
//===----------------------------------------------------------------------===//
#ifndef TCC_TOOLS_TCC_RUN_ARGS_H
#define TCC_TOOLS_TCC_RUN_ARGS_H

#include "runtime/core/ProcessMemory.h"

#include <cstdint>
#include <string>
#include <vector>

namespace tcc::run {

class Args {
public:
  /// `command` names the command in usage and errors ("tcc-run train");
  /// `usage` is its synopsis line, `about` one sentence.
  Args(std::string command, std::string usage, std::string about);

  /// --name (no value).
  void flag(const std::string &name, bool *out, const std::string &help);
  /// --name VALUE; `choices` (if any) are the only values accepted.
  void value(const std::string &name, std::string *out, const std::string &meta,
             const std::string &help, std::vector<std::string> choices = {});
  /// --name VALUE, repeatable.
  void list(const std::string &name, std::vector<std::string> *out,
            const std::string &meta, const std::string &help);
  /// --name N: a decimal integer >= `min`; *set tells whether it was given.
  void integer(const std::string &name, int64_t *out, int64_t min,
               const std::string &meta, const std::string &help,
               bool *set = nullptr);
  /// The next positional argument.
  void positional(std::string *out, const std::string &meta);

  /// Parses argv[first..argc). Returns false when --help was given (the help
  /// is printed on stdout). Throws tcc::rt::Error for an unknown flag, a
  /// missing or bad value, a missing or extra positional argument.
  bool parse(int argc, char **argv, int first);
  std::string help() const;

private:
  enum class Kind { Flag, Value, List, Integer };
  struct Option {
    std::string name, meta, help;
    Kind kind = Kind::Flag;
    void *out = nullptr;
    int64_t min = 0;
    bool *set = nullptr;
    std::vector<std::string> choices;
  };
  static Option option(const std::string &name, const std::string &meta,
                       const std::string &help, Kind kind, void *out);
  void apply(const Option &o, const std::string &v);
  std::string command_, usage_, about_;
  std::vector<Option> options_;
  std::vector<std::pair<std::string *, std::string>> positionals_;
};

using rt::formatBytes; // "12.3 MiB" and friends

} // namespace tcc::run

#endif // TCC_TOOLS_TCC_RUN_ARGS_H
