// ImageRecordIter's last per-image step, without the GIL: pad, crop, mirror,
// BGR->RGB, HWC->CHW and (for float output) normalisation, reading the
// decoded (and resized/warped) image once and writing one batch slot.
//
// MXNet 1.9.1 does the same work in image_aug_default.cc (copyMakeBorder,
// the crop ROI) and iter_image_recordio_2.cc (ProcessImage: mirror, channel
// swap, (pixel - mean) * scale / std); here the padding is never
// materialised: a crop pixel outside the image reads fill_value.
#pragma once
#include <cstddef>
#include <cstdint>

namespace mxio {

struct PackParams {
  int img_h, img_w, img_c;    // the source image (HWC, BGR or grey)
  int out_h, out_w, out_c;    // the slot (CHW, RGB or grey)
  int crop_y, crop_x;         // the crop's top-left corner in padded coordinates
  int pad;                    // border added on every side
  float fill;                 // value of the border pixels (a byte, 0-255)
  bool mirror;                // flip the crop left-right
  const float* mean;          // per output channel (float output)
  const float* mult;          // per output channel: scale / std
  const float* mean_img;      // out_c*out_h*out_w or nullptr
};

// One output row of one channel: dst[dj] = value(pixel) with dj = j or,
// mirrored, out_w - 1 - j.  The crop columns split into a left border, the
// image and a right border, each a branch-free loop.  ``value`` maps a byte
// and the output column to the output (a lookup table, a mean-image
// subtraction or the byte itself).
template <typename T, bool Mirror, typename Value>
inline void pack_row(const uint8_t* src_row, int img_w, int img_c, int src_c, int x0, int out_w,
                     uint8_t fill, T* dst_row, Value value) {
  int left = out_w, right = out_w;          // [left, right): columns inside the image
  if (src_row != nullptr) {
    left = x0 < 0 ? (-x0 < out_w ? -x0 : out_w) : 0;
    right = x0 + out_w > img_w ? (img_w - x0 > left ? img_w - x0 : left) : out_w;
  }
  auto column = [out_w](int j) { return Mirror ? out_w - 1 - j : j; };
  for (int j = 0; j < left; ++j) dst_row[column(j)] = value(fill, column(j));
  if (left < right) {
    const uint8_t* src = src_row + (static_cast<std::ptrdiff_t>(x0) * img_c + src_c);
    for (int j = left; j < right; ++j)
      dst_row[column(j)] = value(src[static_cast<std::ptrdiff_t>(j) * img_c], column(j));
  }
  for (int j = right; j < out_w; ++j) dst_row[column(j)] = value(fill, column(j));
}

enum class Mode { kCopy, kTable, kMeanImage };

template <typename T, Mode M, bool Mirror>
void pack_planes(const uint8_t* img, T* out, const PackParams& p) {
  const std::size_t plane = static_cast<std::size_t>(p.out_h) * p.out_w;
  const std::size_t img_row = static_cast<std::size_t>(p.img_w) * p.img_c;
  const uint8_t fill = static_cast<uint8_t>(p.fill);
  float table[256];
  for (int c = 0; c < p.out_c; ++c) {
    // OpenCV decodes BGR; the batch is RGB (MXNet's swap_indices).
    const int src_c = p.img_c == 3 ? 2 - c : (c < p.img_c ? c : 0);
    const float mult = p.mult[c];
    if (M == Mode::kTable) {
      // (pixel - mean) * mult for each of the 256 bytes: one load per value.
      for (int v = 0; v < 256; ++v) table[v] = (static_cast<float>(v) - p.mean[c]) * mult;
    }
    for (int i = 0; i < p.out_h; ++i) {
      const int sy = p.crop_y + i - p.pad;
      const uint8_t* src_row = (sy >= 0 && sy < p.img_h) ? img + sy * img_row : nullptr;
      const std::size_t at = c * plane + static_cast<std::size_t>(i) * p.out_w;
      T* dst = out + at;
      const float* mean_row = M == Mode::kMeanImage ? p.mean_img + at : nullptr;
      if (M == Mode::kCopy) {
        pack_row<T, Mirror>(src_row, p.img_w, p.img_c, src_c, p.crop_x - p.pad, p.out_w, fill,
                            dst, [](uint8_t v, int) { return static_cast<T>(v); });
      } else if (M == Mode::kTable) {
        pack_row<T, Mirror>(src_row, p.img_w, p.img_c, src_c, p.crop_x - p.pad, p.out_w, fill,
                            dst, [&table](uint8_t v, int) { return static_cast<T>(table[v]); });
      } else {
        pack_row<T, Mirror>(src_row, p.img_w, p.img_c, src_c, p.crop_x - p.pad, p.out_w, fill,
                            dst, [mean_row, mult](uint8_t v, int dj) {
                              return static_cast<T>((static_cast<float>(v) - mean_row[dj]) * mult);
                            });
      }
    }
  }
}

// BGR image to three RGB planes in one pass over each source row (reading
// every pixel once rather than once per channel): the common case.
template <typename T, Mode M, bool Mirror>
void pack_bgr(const uint8_t* img, T* out, const PackParams& p) {
  const std::size_t plane = static_cast<std::size_t>(p.out_h) * p.out_w;
  const std::size_t img_row = static_cast<std::size_t>(p.img_w) * 3;
  const int x0 = p.crop_x - p.pad, out_w = p.out_w;
  float table[3][256];
  if (M == Mode::kTable) {
    for (int c = 0; c < 3; ++c)
      for (int v = 0; v < 256; ++v) table[c][v] = (static_cast<float>(v) - p.mean[c]) * p.mult[c];
  }
  auto value = [&table](int c, uint8_t v) {
    return M == Mode::kTable ? static_cast<T>(table[c][v]) : static_cast<T>(v);
  };
  const uint8_t fill = static_cast<uint8_t>(p.fill);
  const T fills[3] = {value(0, fill), value(1, fill), value(2, fill)};
  for (int i = 0; i < p.out_h; ++i) {
    const int sy = p.crop_y + i - p.pad;
    T* r = out + static_cast<std::size_t>(i) * out_w;
    T* g = r + plane;
    T* b = g + plane;
    int left = out_w, right = out_w;        // [left, right): columns inside the image
    if (sy >= 0 && sy < p.img_h) {
      left = x0 < 0 ? (-x0 < out_w ? -x0 : out_w) : 0;
      right = x0 + out_w > p.img_w ? (p.img_w - x0 > left ? p.img_w - x0 : left) : out_w;
    }
    auto column = [out_w](int j) { return Mirror ? out_w - 1 - j : j; };
    auto put_fill = [&](int j) {
      const int dj = column(j);
      r[dj] = fills[0];
      g[dj] = fills[1];
      b[dj] = fills[2];
    };
    for (int j = 0; j < left; ++j) put_fill(j);
    for (int j = right; j < out_w; ++j) put_fill(j);
    if (left < right) {
      const uint8_t* src = img + sy * img_row + static_cast<std::ptrdiff_t>(x0) * 3;
      for (int j = left; j < right; ++j) {
        const uint8_t* px = src + static_cast<std::ptrdiff_t>(j) * 3;
        const int dj = column(j);
        r[dj] = value(0, px[2]);
        g[dj] = value(1, px[1]);
        b[dj] = value(2, px[0]);
      }
    }
  }
}

template <typename T, Mode M>
void pack_mode(const uint8_t* img, T* out, const PackParams& p) {
  if (M != Mode::kMeanImage && p.img_c == 3 && p.out_c == 3) {
    if (p.mirror) pack_bgr<T, M, true>(img, out, p);
    else pack_bgr<T, M, false>(img, out, p);
  } else if (p.mirror) {
    pack_planes<T, M, true>(img, out, p);
  } else {
    pack_planes<T, M, false>(img, out, p);
  }
}

// Writes out[c][i][j] for the whole slot.  Normalised (float) output is
// (pixel - mean[c] or mean_img[c][i][j]) * mult[c]; otherwise the pixel.
template <typename T>
void pack_image(const uint8_t* img, T* out, const PackParams& p, bool normalise) {
  if (!normalise) pack_mode<T, Mode::kCopy>(img, out, p);
  else if (p.mean_img != nullptr) pack_mode<T, Mode::kMeanImage>(img, out, p);
  else pack_mode<T, Mode::kTable>(img, out, p);
}

}  // namespace mxio
