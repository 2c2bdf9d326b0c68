// Reads the rows of CSV files (one file or several in turn) as numbers, in
// large blocks (_block_lines.h), without Python: the CSVIter's batch filler
// calls it with the GIL released.  Errors name the file, the line and the column.
#pragma once

#include <charconv>
#include <cstdint>
#include <cstring>
#include <string>
#include <system_error>
#include <type_traits>
#include <vector>

#include "_block_lines.h"

namespace mxio {

class CsvReader {
 public:
  explicit CsvReader(const std::vector<std::string>& files)
      : lines_(whole_files(files)) {}

  // Back to the first row of the first file.
  void rewind() {
    lines_.rewind();
    error_.clear();
  }

  // Parses the next non-empty row into out[0..n).  Returns 1 for a row, 0
  // at the end of the last file, -1 on an error (error() says which).
  template <class T>
  int next_row(T* out, std::size_t n) {
    const char* line;
    std::size_t len;
    do {
      int got = lines_.next(&line, &len);
      if (got < 0) error_ = lines_.error();
      if (got <= 0) return got;
    } while (len == 0);                 // blank lines carry no row
    return parse_row(line, len, out, n);
  }

  const std::string& error() const { return error_; }

 private:
  static std::vector<ByteRange> whole_files(const std::vector<std::string>& files) {
    std::vector<ByteRange> ranges(files.size());
    for (std::size_t i = 0; i < files.size(); ++i) ranges[i].path = files[i];
    return ranges;
  }

  template <class T>
  static const char* parse_number(const char* p, const char* end, T* value) {
    if (p < end && *p == '+') ++p;
    std::from_chars_result r;
    if constexpr (std::is_floating_point_v<T>) {
      r = std::from_chars(p, end, *value, std::chars_format::general);
    } else {
      r = std::from_chars(p, end, *value);
    }
    return r.ec == std::errc() ? r.ptr : nullptr;
  }

  template <class T>
  int parse_row(const char* p, std::size_t len, T* out, std::size_t n) {
    const char* end = p + len;
    std::size_t col = 0;
    for (;;) {
      while (p < end && (*p == ' ' || *p == '\t')) ++p;
      const char* field = p;
      const char* after = (col < n) ? parse_number(p, end, out + col) : nullptr;
      if (after != nullptr) {
        p = after;
        while (p < end && (*p == ' ' || *p == '\t')) ++p;
      }
      if (after == nullptr || (p < end && *p != ',')) {
        if (col >= n) return fail_columns(count_columns(field, end) + col, n);
        const char* stop = static_cast<const char*>(std::memchr(field, ',', end - field));
        return fail("column " + std::to_string(col + 1) + ": '" +
                    std::string(field, stop ? stop : end) + "' is not a number");
      }
      ++col;
      if (p == end) break;
      ++p;                              // the comma
    }
    if (col != n) return fail_columns(col, n);
    return 1;
  }

  static std::size_t count_columns(const char* p, const char* end) {
    std::size_t cols = 1;
    for (; p < end; ++p) cols += (*p == ',');
    return cols;
  }

  int fail_columns(std::size_t got, std::size_t want) {
    return fail("the row has " + std::to_string(got) + " values, the shape needs " +
                std::to_string(want));
  }

  int fail(const std::string& what) {
    error_ = lines_.path() + ", line " + std::to_string(lines_.line_number()) + ": " + what;
    return -1;
  }

  BlockLines lines_;
  std::string error_;
};

}  // namespace mxio
