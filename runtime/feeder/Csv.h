//===- Csv.h - Numeric CSV reader -----------------------------------------===//
#ifndef TCC_RUNTIME_FEEDER_CSV_H
#define TCC_RUNTIME_FEEDER_CSV_H

#include "runtime/feeder/HostArray.h"

namespace tcc::rt {

/// Reads comma-separated numeric rows as f64: shape [rows, cols], or [rows]
/// for a single column. A first line with a non-numeric field is a header
/// and skipped; blank lines are ignored. Ragged rows, empty or non-numeric
/// fields and NaN/Inf values throw an Error naming the file and line.
HostArray loadCsv(const std::string &path);
/// Same, from text; `what` names the source in errors.
HostArray parseCsv(const std::string &text, const std::string &what);

} // namespace tcc::rt

#endif // TCC_RUNTIME_FEEDER_CSV_H
