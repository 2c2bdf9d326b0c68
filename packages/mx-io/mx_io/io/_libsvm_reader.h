// Reads LibSVM lines (`label[:weight] [qid:n] index:value index:value ...`,
// zero-based indices, `#` starts a comment) from byte ranges of files
// (_block_lines.h), without Python: LibSVMIter's batch filler calls it with
// the GIL released.  A malformed line stops the reader with an error that names
// the file, the byte offset of the line and the column.
#pragma once

#include <charconv>
#include <cstdint>
#include <cstring>
#include <string>
#include <system_error>
#include <vector>

#include "_block_lines.h"

namespace mxio {

// A CSR row set being built: one batch's rows.
struct CsrRows {
  std::vector<float> values;
  std::vector<std::int64_t> indices;
  std::vector<std::int64_t> indptr{0};

  void end_row() { indptr.push_back(static_cast<std::int64_t>(values.size())); }
};

class LibSVMReader {
 public:
  LibSVMReader(const std::vector<ByteRange>& ranges, std::int64_t num_columns)
      : lines_(ranges), num_columns_(num_columns) {}

  // Back to the first line of the first range.
  void rewind() {
    lines_.rewind();
    error_.clear();
  }

  // Appends the next row's features to `rows` (ending the row) and stores
  // its label.  Returns 1 for a row, 0 after the last one, -1 on an error.
  // Blank and comment-only lines hold no row.
  int next_row(CsrRows* rows, float* label) {
    const char* line;
    std::size_t len;
    for (;;) {
      int got = lines_.next(&line, &len);
      if (got < 0) {
        error_ = lines_.error();
        error_column_ = 0;
        return -1;
      }
      if (got == 0) return 0;
      const char* p = skip_space(line, line + len);
      if (p < line + len && *p != '#') break;
    }
    line_start_ = line;
    return parse_row(line, line + len, rows, label);
  }

  // The error: its message, the file, the byte offset of its line in the
  // file and the (1-based) column of the bad text (0: the file could not
  // be read).
  const std::string& error() const { return error_; }
  const std::string& error_file() const { return lines_.path(); }
  std::int64_t error_offset() const { return lines_.line_offset(); }
  std::int64_t error_column() const { return error_column_; }

 private:
  static bool is_space(char c) { return c == ' ' || c == '\t' || c == '\r'; }

  static const char* skip_space(const char* p, const char* end) {
    while (p < end && is_space(*p)) ++p;
    return p;
  }

  static const char* token_end(const char* p, const char* end) {
    while (p < end && !is_space(*p)) ++p;
    return p;
  }

  // A float ending exactly at `stop`, or nullptr.
  static const char* parse_float(const char* p, const char* stop, float* value) {
    if (p < stop && *p == '+') ++p;
    auto r = std::from_chars(p, stop, *value, std::chars_format::general);
    return (r.ec == std::errc() && r.ptr == stop) ? r.ptr : nullptr;
  }

  int parse_row(const char* p, const char* end, CsrRows* rows, float* label) {
    p = skip_space(p, end);
    const char* stop = token_end(p, end);
    const char* colon = static_cast<const char*>(std::memchr(p, ':', stop - p));
    // The label, with an optional `:weight` (read, unused, as MXNet).
    float weight;
    if (parse_float(p, colon ? colon : stop, label) == nullptr)
      return fail(p, "label '" + std::string(p, stop) + "' is not a number");
    if (colon != nullptr && parse_float(colon + 1, stop, &weight) == nullptr)
      return fail(colon + 1, "weight '" + std::string(colon + 1, stop) + "' is not a number");
    for (p = skip_space(stop, end); p < end && *p != '#'; p = skip_space(stop, end)) {
      stop = token_end(p, end);
      colon = static_cast<const char*>(std::memchr(p, ':', stop - p));
      if (colon == nullptr)
        return fail(p, "'" + std::string(p, stop) + "' has no ':' (index:value expected)");
      if (colon - p == 3 && std::memcmp(p, "qid", 3) == 0) continue;   // query ids: unused
      std::int64_t index;
      const char* q = (p < colon && *p == '+') ? p + 1 : p;
      auto r = std::from_chars(q, colon, index);
      if (r.ec != std::errc() || r.ptr != colon)
        return fail(p, "index '" + std::string(p, colon) + "' is not an integer");
      if (index < 0 || index >= num_columns_)
        return fail(p, "index " + std::to_string(index) + " is out of range [0, " +
                           std::to_string(num_columns_) + ")");
      float value;
      if (parse_float(colon + 1, stop, &value) == nullptr)
        return fail(colon + 1, "value '" + std::string(colon + 1, stop) + "' is not a number");
      rows->indices.push_back(index);
      rows->values.push_back(value);
    }
    rows->end_row();
    return 1;
  }

  int fail(const char* at, const std::string& what) {
    error_ = what;
    error_column_ = static_cast<std::int64_t>(at - line_start_) + 1;
    return -1;
  }

  BlockLines lines_;
  std::int64_t num_columns_;
  const char* line_start_ = nullptr;
  std::string error_;
  std::int64_t error_column_ = 0;
};

}  // namespace mxio
