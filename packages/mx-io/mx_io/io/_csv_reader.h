// Reads the rows of CSV files (one file or several in turn) as numbers, in
// large blocks, without Python: the CSVIter's batch filler calls it with
// the GIL released.  Errors name the file, the line and the column.
#pragma once

#include <cerrno>
#include <charconv>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <system_error>
#include <type_traits>
#include <vector>

namespace mxio {

class CsvReader {
 public:
  explicit CsvReader(const std::vector<std::string>& files) : files_(files) {}
  ~CsvReader() { close_file(); }
  CsvReader(const CsvReader&) = delete;
  CsvReader& operator=(const CsvReader&) = delete;

  // Back to the first row of the first file.
  void rewind() {
    close_file();
    file_ = 0;
    begin_ = end_ = 0;
    line_ = 0;
    eof_ = false;
    error_.clear();
  }

  // Parses the next non-empty row into out[0..n).  Returns 1 for a row, 0
  // at the end of the last file, -1 on an error (error() says which).
  template <class T>
  int next_row(T* out, std::size_t n) {
    const char* line;
    std::size_t len;
    int got = next_line(&line, &len);
    if (got <= 0) return got;
    return parse_row(line, len, out, n);
  }

  const std::string& error() const { return error_; }

 private:
  static constexpr std::size_t kBlock = 1 << 20;

  void close_file() {
    if (fp_ != nullptr) std::fclose(fp_);
    fp_ = nullptr;
  }

  bool open_next() {
    close_file();
    while (file_ < files_.size()) {
      fp_ = std::fopen(files_[file_].c_str(), "rb");
      if (fp_ == nullptr) {
        error_ = files_[file_] + ": cannot open: " + std::strerror(errno);
        return false;
      }
      opened_ = file_++;
      line_ = 0;
      eof_ = false;
      begin_ = end_ = 0;
      return true;
    }
    return false;
  }

  // Moves the unread tail to the front and reads more after it.
  void refill() {
    if (begin_ > 0) {
      std::memmove(buf_.data(), buf_.data() + begin_, end_ - begin_);
      end_ -= begin_;
      begin_ = 0;
    }
    if (buf_.size() - end_ < kBlock) buf_.resize(end_ + kBlock);
    std::size_t got = std::fread(buf_.data() + end_, 1, buf_.size() - end_, fp_);
    end_ += got;
    if (got == 0) eof_ = true;
  }

  // The next non-empty line (without its end of line).
  int next_line(const char** line, std::size_t* len) {
    for (;;) {
      if (fp_ == nullptr) {
        if (!open_next()) return error_.empty() ? 0 : -1;
      }
      const char* start = buf_.data() + begin_;
      const void* nl = std::memchr(start, '\n', end_ - begin_);
      std::size_t n;
      if (nl != nullptr) {
        n = static_cast<const char*>(nl) - start;
        begin_ += n + 1;
      } else if (!eof_) {
        refill();
        continue;
      } else if (end_ > begin_) {       // the last line has no newline
        n = end_ - begin_;
        begin_ = end_;
      } else {                          // this file is done
        close_file();
        continue;
      }
      ++line_;
      if (n > 0 && start[n - 1] == '\r') --n;
      if (n == 0) continue;             // blank lines carry no row
      *line = start;
      *len = n;
      return 1;
    }
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
    error_ = files_[opened_] + ", line " + std::to_string(line_) + ": " + what;
    return -1;
  }

  std::vector<std::string> files_;
  std::size_t file_ = 0, opened_ = 0;
  std::FILE* fp_ = nullptr;
  std::vector<char> buf_;
  std::size_t begin_ = 0, end_ = 0;
  std::int64_t line_ = 0;
  bool eof_ = false;
  std::string error_;
};

}  // namespace mxio
