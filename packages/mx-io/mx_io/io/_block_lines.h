// The lines of byte ranges of files (one after another), read in large
// blocks without Python: the text iterators' parsers (CSV, LibSVM) call it
// with the GIL released.
#pragma once

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

namespace mxio {

// One part of one file: the bytes [begin, end) (whole lines).
struct ByteRange {
  std::string path;
  std::int64_t begin = 0;
  std::int64_t end = std::numeric_limits<std::int64_t>::max();
};

class BlockLines {
 public:
  explicit BlockLines(const std::vector<ByteRange>& ranges) : ranges_(ranges) {}
  ~BlockLines() { close_file(); }
  BlockLines(const BlockLines&) = delete;
  BlockLines& operator=(const BlockLines&) = delete;

  // Back to the first line of the first range.
  void rewind() {
    close_file();
    range_ = 0;
    begin_ = end_ = 0;
    line_ = 0;
    eof_ = false;
    error_.clear();
  }

  // The next line, without its end of line (a trailing '\r' dropped).
  // Returns 1 for a line, 0 after the last range, -1 when a file cannot be
  // read (error() says why).  The line stays valid until the next call.
  int next(const char** line, std::size_t* len) {
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
      ++line_;
      if (n > 0 && start[n - 1] == '\r') --n;
      *line = start;
      *len = n;
      return 1;
    }
  }

  // The file of the last line (or of the error), the line's number counted
  // from the start of its range (its line number when the range starts the
  // file), and its byte offset in the file.
  const std::string& path() const { return ranges_[opened_].path; }
  std::int64_t line_number() const { return line_; }
  std::int64_t line_offset() const { return line_offset_; }
  const std::string& error() const { return error_; }

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
        error_ = r.path + ": cannot open: " + std::strerror(errno);
        close_file();
        return false;
      }
      left_ = r.end - r.begin;
      file_pos_ = r.begin;
      line_ = 0;
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

  std::vector<ByteRange> ranges_;
  std::size_t range_ = 0, opened_ = 0;
  std::FILE* fp_ = nullptr;
  std::vector<char> buf_;
  std::size_t begin_ = 0, end_ = 0;
  std::int64_t left_ = 0, file_pos_ = 0, line_offset_ = 0, line_ = 0;
  bool eof_ = false;
  std::string error_;
};

}  // namespace mxio
