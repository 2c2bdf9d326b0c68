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
  float fill;                 // value of the border pixels
  bool mirror;                // flip the crop left-right
  const float* mean;          // per output channel (float output)
  const float* mult;          // per output channel: scale / std
  const float* mean_img;      // out_c*out_h*out_w or nullptr
};

template <typename T> inline T convert(float v);
template <> inline float convert<float>(float v) { return v; }
template <> inline uint8_t convert<uint8_t>(float v) { return static_cast<uint8_t>(v); }

// One output row of one channel.  The crop columns split into a left
// border, the image, a right border; each part is a branch-free loop.
template <typename T, bool Normalise, bool Mirror, bool MeanImage>
void pack_row(const uint8_t* src_row, int img_w, int img_c, int src_c, int x0, int out_w,
              float fill, float mean, const float* mean_row, float mult, T* dst_row) {
  auto put = [&](int j, float v) {
    const int dj = Mirror ? out_w - 1 - j : j;
    if (Normalise) {
      const float m = MeanImage ? mean_row[dj] : mean;
      dst_row[dj] = convert<T>((v - m) * mult);
    } else {
      dst_row[dj] = convert<T>(v);
    }
  };
  int left = 0, right = out_w;             // [left, right): columns inside the image
  if (src_row == nullptr) {
    left = right = out_w;
  } else {
    if (x0 < 0) left = -x0 < out_w ? -x0 : out_w;
    if (x0 + out_w > img_w) right = img_w - x0 > left ? img_w - x0 : left;
  }
  for (int j = 0; j < left; ++j) put(j, fill);
  const uint8_t* src = src_row ? src_row + (static_cast<std::ptrdiff_t>(x0) * img_c + src_c) : nullptr;
  for (int j = left; j < right; ++j) put(j, static_cast<float>(src[static_cast<std::ptrdiff_t>(j) * img_c]));
  for (int j = right; j < out_w; ++j) put(j, fill);
}

template <typename T, bool Normalise, bool Mirror, bool MeanImage>
void pack_planes(const uint8_t* img, T* out, const PackParams& p) {
  const std::size_t plane = static_cast<std::size_t>(p.out_h) * p.out_w;
  const std::size_t img_row = static_cast<std::size_t>(p.img_w) * p.img_c;
  for (int c = 0; c < p.out_c; ++c) {
    // OpenCV decodes BGR; the batch is RGB (MXNet's swap_indices).
    const int src_c = p.img_c == 3 ? 2 - c : (c < p.img_c ? c : 0);
    const float mean = p.mean ? p.mean[c] : 0.0f;
    const float mult = p.mult ? p.mult[c] : 1.0f;
    for (int i = 0; i < p.out_h; ++i) {
      const int sy = p.crop_y + i - p.pad;
      const uint8_t* src_row = (sy >= 0 && sy < p.img_h) ? img + sy * img_row : nullptr;
      const std::size_t at = c * plane + static_cast<std::size_t>(i) * p.out_w;
      pack_row<T, Normalise, Mirror, MeanImage>(src_row, p.img_w, p.img_c, src_c,
                                                p.crop_x - p.pad, p.out_w, p.fill, mean,
                                                MeanImage ? p.mean_img + at : nullptr, mult,
                                                out + at);
    }
  }
}

// Writes out[c][i][j] for the whole slot.  Float output is
// (pixel - mean[c] or mean_img[c][i][j]) * mult[c]; uint8 output is the pixel.
template <typename T>
void pack_image(const uint8_t* img, T* out, const PackParams& p, bool normalise) {
  const bool mean_image = normalise && p.mean_img != nullptr;
  if (!normalise) {
    if (p.mirror) pack_planes<T, false, true, false>(img, out, p);
    else pack_planes<T, false, false, false>(img, out, p);
  } else if (mean_image) {
    if (p.mirror) pack_planes<T, true, true, true>(img, out, p);
    else pack_planes<T, true, false, true>(img, out, p);
  } else {
    if (p.mirror) pack_planes<T, true, true, false>(img, out, p);
    else pack_planes<T, true, false, false>(img, out, p);
  }
}

}  // namespace mxio
