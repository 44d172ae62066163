//===- Args.cpp - tcc-run's command-line parser ---------------------------===//
#include "tools/tcc-run/Args.h"

#include "runtime/core/Artifact.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>

using namespace tcc::run;
using tcc::rt::Error;

Args::Args(std::string command, std::string usage, std::string about)
    : command_(std::move(command)), usage_(std::move(usage)),
      about_(std::move(about)) {}

Args::Option Args::option(const std::string &name, const std::string &meta,
                          const std::string &help, Kind kind, void *out) {
  Option o;
  o.name = name;
  o.meta = meta;
  o.help = help;
  o.kind = kind;
  o.out = out;
  return o;
}

void Args::flag(const std::string &name, bool *out, const std::string &help) {
  options_.push_back(option(name, "", help, Kind::Flag, out));
}

void Args::value(const std::string &name, std::string *out,
                 const std::string &meta, const std::string &help,
                 std::vector<std::string> choices) {
  Option o = option(name, meta, help, Kind::Value, out);
  o.choices = std::move(choices);
  options_.push_back(std::move(o));
}

void Args::list(const std::string &name, std::vector<std::string> *out,
                const std::string &meta, const std::string &help) {
  options_.push_back(option(name, meta, help, Kind::List, out));
}

void Args::integer(const std::string &name, int64_t *out, int64_t min,
                   const std::string &meta, const std::string &help,
                   bool *set) {
  Option o = option(name, meta, help, Kind::Integer, out);
  o.min = min;
  o.set = set;
  options_.push_back(std::move(o));
}

void Args::positional(std::string *out, const std::string &meta) {
  positionals_.push_back({out, meta});
}

void Args::apply(const Option &o, const std::string &v) {
  switch (o.kind) {
  case Kind::Flag:
    *static_cast<bool *>(o.out) = true;
    return;
  case Kind::Value:
    if (!o.choices.empty()) {
      bool ok = false;
      std::string all;
      for (const std::string &c : o.choices) {
        ok |= c == v;
        all += (all.empty() ? "" : ", ") + c;
      }
      if (!ok)
        throw Error("--" + o.name + " must be one of " + all + ", got '" + v +
                    "'");
    }
    *static_cast<std::string *>(o.out) = v;
    return;
  case Kind::List:
    static_cast<std::vector<std::string> *>(o.out)->push_back(v);
    return;
  case Kind::Integer: {
    errno = 0;
    char *end = nullptr;
    long long n = std::strtoll(v.c_str(), &end, 10);
    if (v.empty() || *end != '\0' || errno == ERANGE)
      throw Error("--" + o.name + " takes an integer, got '" + v + "'");
    if (n < o.min)
      throw Error("--" + o.name + " must be at least " + std::to_string(o.min) +
                  ", got " + v);
    *static_cast<int64_t *>(o.out) = n;
    if (o.set)
      *o.set = true;
    return;
  }
  }
}

bool Args::parse(int argc, char **argv, int first) {
  size_t nextPositional = 0;
  bool onlyPositionals = false;
  for (int i = first; i < argc; ++i) {
    std::string arg = argv[i];
    if (!onlyPositionals && arg == "--") {
      onlyPositionals = true;
      continue;
    }
    if (!onlyPositionals && (arg == "--help" || arg == "-h")) {
      std::fputs(help().c_str(), stdout);
      return false;
    }
    if (onlyPositionals || arg.size() < 2 || arg[0] != '-') {
      if (nextPositional == positionals_.size())
        throw Error("unexpected argument '" + arg + "' (see " + command_ +
                    " --help)");
      *positionals_[nextPositional++].first = arg;
      continue;
    }
    std::string name = arg.substr(arg[1] == '-' ? 2 : 1), value;
    size_t eq = name.find('=');
    bool inlineValue = eq != std::string::npos;
    if (inlineValue) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
    }
    const Option *o = nullptr;
    for (const Option &c : options_)
      if (c.name == name)
        o = &c;
    if (!o)
      throw Error("unknown option '" + arg.substr(0, arg.find('=')) +
                  "' (see " + command_ + " --help)");
    if (o->kind == Kind::Flag) {
      if (inlineValue)
        throw Error("--" + name + " takes no value");
      apply(*o, "");
      continue;
    }
    if (!inlineValue) {
      if (i + 1 >= argc)
        throw Error("--" + name + " needs a value: --" + name + " " + o->meta);
      value = argv[++i];
    }
    apply(*o, value);
  }
  if (nextPositional < positionals_.size())
    throw Error("missing " + positionals_[nextPositional].second + ": " +
                usage_);
  return true;
}

std::string Args::help() const {
  std::string s = "usage: " + usage_ + "\n\n" + about_ + "\n\noptions:\n";
  for (const Option &o : options_) {
    std::string left = "  --" + o.name + (o.meta.empty() ? "" : " " + o.meta);
    if (left.size() < 26)
      left.resize(26, ' ');
    else
      left += "\n" + std::string(26, ' ');
    // Words wrapped at 80 columns, continued under the first.
    size_t col = 26;
    std::string text = o.help + " ";
    for (size_t at = 0, sp; (sp = text.find(' ', at)) != std::string::npos;
         at = sp + 1) {
      std::string word = text.substr(at, sp - at);
      if (col > 26 && col + 1 + word.size() > 80) {
        left += "\n" + std::string(26, ' ');
        col = 26;
      }
      left += (col > 26 ? " " : "") + word;
      col += (col > 26 ? 1 : 0) + word.size();
    }
    s += left + "\n";
  }
  s += "  --help                  this text\n";
  return s;
}
