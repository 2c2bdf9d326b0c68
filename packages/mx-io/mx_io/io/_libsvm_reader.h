// Reads LibSVM lines (`label[:weight] [qid:n] index:value index:value ...`,
// zero-based indices, `#` starts a comment) from byte ranges of files, in
// large blocks, without Python: LibSVMIter's batch filler calls it with the
// GIL released.  A malformed line stops the reader with an error that names
// the file, the byte offset of the line and the column.
#pragma once

#include <cerrno>
#include <charconv>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <system_error>
#include <vector>

namespace mxio {

// One part of one file: the bytes [begin, end) (whole lines).
struct ByteRange {
  std::string path;
  std::int64_t begin;
  std::int64_t end;
};

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
      : ranges_(ranges), num_columns_(num_columns) {}
  ~LibSVMReader() { close_file(); }
  LibSVMReader(const LibSVMReader&) = delete;
  LibSVMReader& operator=(const LibSVMReader&) = delete;

  // Back to the first line of the first range.
  void rewind() {
    close_file();
    range_ = 0;
    begin_ = end_ = 0;
    eof_ = false;
    error_.clear();
  }

  // Appends the next row's features to `rows` (ending the row) and stores
  // its label.  Returns 1 for a row, 0 after the last one, -1 on an error.
  int next_row(CsrRows* rows, float* label) {
    const char* line;
    std::size_t len;
    int got = next_line(&line, &len);
    if (got <= 0) return got;
    return parse_row(line, line + len, rows, label);
  }

  // The error: its message, the file, the byte offset of its line in the
  // file and the (1-based) column of the bad text.
  const std::string& error() const { return error_; }
  const std::string& error_file() const { return ranges_[opened_].path; }
  std::int64_t error_offset() const { return error_offset_; }
  std::int64_t error_column() const { return error_column_; }

 private:
  static constexpr std::size_t kBlock = 1 << 20;

  void close_file() {
    if (fp_ != nullptr) std::fclose(fp_);
    fp_ = nullptr;
  }

  bool open_next() {
    close_file();
    while (range_ < ranges_.size()) {
      const ByteRange& r = ranges_[range_];
      opened_ = range_++;
      if (r.end <= r.begin) continue;
      fp_ = std::fopen(r.path.c_str(), "rb");
      if (fp_ == nullptr || std::fseek(fp_, r.begin, SEEK_SET) != 0) {
        error_ = std::string("cannot open: ") + std::strerror(errno);
        error_offset_ = r.begin;
        error_column_ = 0;
        return false;
      }
      left_ = r.end - r.begin;
      file_pos_ = r.begin;
      eof_ = false;
      begin_ = end_ = 0;
      return true;
    }
    return false;
  }

  // Moves the unread tail to the front and reads more of the range after it.
  void refill() {
    if (begin_ > 0) {
      std::memmove(buf_.data(), buf_.data() + begin_, end_ - begin_);
      end_ -= begin_;
      begin_ = 0;
    }
    if (buf_.size() - end_ < kBlock) buf_.resize(end_ + kBlock);
    std::size_t want = buf_.size() - end_;
    if (static_cast<std::int64_t>(want) > left_) want = static_cast<std::size_t>(left_);
    std::size_t got = want ? std::fread(buf_.data() + end_, 1, want, fp_) : 0;
    end_ += got;
    left_ -= static_cast<std::int64_t>(got);
    if (got == 0) eof_ = true;
  }

  // The next line holding a row (blank and comment-only lines hold none).
  int next_line(const char** line, std::size_t* len) {
    for (;;) {
      if (fp_ == nullptr) {
        if (!open_next()) return error_.empty() ? 0 : -1;
      }
      const char* start = buf_.data() + begin_;
      const void* nl = std::memchr(start, '\n', end_ - begin_);
      std::size_t n, used;
      if (nl != nullptr) {
        n = static_cast<const char*>(nl) - start;
        used = n + 1;
      } else if (!eof_) {
        refill();
        continue;
      } else if (end_ > begin_) {       // the last line has no newline
        n = used = end_ - begin_;
      } else {                          // this range is done
        close_file();
        continue;
      }
      line_offset_ = file_pos_;
      file_pos_ += static_cast<std::int64_t>(used);
      begin_ += used;
      if (n > 0 && start[n - 1] == '\r') --n;
      const char* p = skip_space(start, start + n);
      if (p == start + n || *p == '#') continue;
      line_start_ = start;
      *line = start;
      *len = n;
      return 1;
    }
  }

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
    error_offset_ = line_offset_;
    error_column_ = static_cast<std::int64_t>(at - line_start_) + 1;
    return -1;
  }

  std::vector<ByteRange> ranges_;
  std::int64_t num_columns_;
  std::size_t range_ = 0, opened_ = 0;
  std::FILE* fp_ = nullptr;
  std::vector<char> buf_;
  std::size_t begin_ = 0, end_ = 0;
  std::int64_t left_ = 0, file_pos_ = 0, line_offset_ = 0;
  const char* line_start_ = nullptr;
  bool eof_ = false;
  std::string error_;
  std::int64_t error_offset_ = 0, error_column_ = 0;
};

}  // namespace mxio
