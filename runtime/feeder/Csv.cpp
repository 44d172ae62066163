//===- Csv.cpp - Numeric CSV reader ---------------------------------------===//
#include "runtime/feeder/Csv.h"
#include "runtime/core/Artifact.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

namespace tcc::rt {

static std::string trim(const std::string &s) {
  size_t b = s.find_first_not_of(" \t\r");
  if (b == std::string::npos)
    return "";
  size_t e = s.find_last_not_of(" \t\r");
  return s.substr(b, e - b + 1);
}

static std::vector<std::string> splitFields(const std::string &line) {
  std::vector<std::string> fields;
  size_t start = 0;
  for (;;) {
    size_t comma = line.find(',', start);
    fields.push_back(trim(line.substr(start, comma - start)));
    if (comma == std::string::npos)
      return fields;
    start = comma + 1;
  }
}

/// Parses the whole field as a number; false if it is not one.
static bool parseNumber(const std::string &field, double &out) {
  if (field.empty())
    return false;
  char *end = nullptr;
  out = std::strtod(field.c_str(), &end);
  return *end == '\0';
}

HostArray parseCsv(const std::string &text, const std::string &what) {
  HostArray a;
  a.path = what;
  a.dtype = FileDType::F64;
  std::vector<double> values;
  int64_t cols = -1, rows = 0;
  std::istringstream in(text);
  std::string line;
  for (int64_t lineNo = 1; std::getline(in, line); ++lineNo) {
    if (trim(line).empty())
      continue;
    std::vector<std::string> fields = splitFields(line);
    std::vector<double> row(fields.size());
    size_t bad = fields.size();
    bool text = false; // some field is neither a number nor empty
    for (size_t i = 0; i < fields.size(); ++i)
      if (!parseNumber(fields[i], row[i])) {
        bad = std::min(bad, i);
        text = text || !fields[i].empty();
      }
    std::string where = what + " line " + std::to_string(lineNo);
    if (bad != fields.size()) {
      if (text && cols < 0) { // the first line may be a header
        cols = static_cast<int64_t>(fields.size());
        continue;
      }
      throw Error(where + ": column " + std::to_string(bad + 1) +
                  (fields[bad].empty()
                       ? " is empty"
                       : " ('" + fields[bad] + "') is not a number"));
    }
    if (cols >= 0 && static_cast<int64_t>(fields.size()) != cols)
      throw Error(where + ": " + std::to_string(fields.size()) +
                  " columns, expected " + std::to_string(cols));
    cols = static_cast<int64_t>(fields.size());
    for (size_t i = 0; i < row.size(); ++i)
      if (!std::isfinite(row[i]))
        throw Error(where + " (sample " + std::to_string(rows) + "): column " +
                    std::to_string(i + 1) + " is " +
                    (std::isnan(row[i]) ? "NaN" : "Inf"));
    values.insert(values.end(), row.begin(), row.end());
    ++rows;
  }
  if (rows == 0)
    throw Error(what + ": no data rows");
  a.shape =
      cols == 1 ? std::vector<int64_t>{rows} : std::vector<int64_t>{rows, cols};
  a.bytes.resize(values.size() * sizeof(double));
  if (!a.bytes.empty())
    std::memcpy(a.bytes.data(), values.data(), a.bytes.size());
  return a;
}

HostArray loadCsv(const std::string &path) {
  std::ifstream f(path, std::ios::binary);
  if (!f)
    throw Error(path + ": cannot open: " + std::strerror(errno));
  std::stringstream ss;
  ss << f.rdbuf();
  if (f.bad())
    throw Error(path + ": read error");
  return parseCsv(ss.str(), path);
}

} // namespace tcc::rt
