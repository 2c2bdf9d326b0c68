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

inline float clamp_to(float v, float lo, float hi) { return v < lo ? lo : (v > hi ? hi : v); }

template <typename T> inline T convert(float v);
template <> inline float convert<float>(float v) { return v; }
template <> inline uint8_t convert<uint8_t>(float v) { return static_cast<uint8_t>(v); }

// Writes out[c][i][j] for the whole slot.  Float output is
// (pixel - mean[c] or mean_img[c][i][j]) * mult[c]; uint8 output is the pixel.
template <typename T>
void pack_image(const uint8_t* img, T* out, const PackParams& p, bool normalise) {
  const std::size_t plane = static_cast<std::size_t>(p.out_h) * p.out_w;
  for (int c = 0; c < p.out_c; ++c) {
    // OpenCV decodes BGR; the batch is RGB (MXNet's swap_indices).
    const int src_c = p.img_c == 3 ? 2 - c : (c < p.img_c ? c : 0);
    T* dst_plane = out + c * plane;
    const float* mean_plane = p.mean_img ? p.mean_img + c * plane : nullptr;
    const float mean = p.mean ? p.mean[c] : 0.0f;
    const float mult = p.mult ? p.mult[c] : 1.0f;
    for (int i = 0; i < p.out_h; ++i) {
      const int sy = p.crop_y + i - p.pad;
      const bool row_inside = sy >= 0 && sy < p.img_h;
      const uint8_t* src_row = row_inside ? img + static_cast<std::size_t>(sy) * p.img_w * p.img_c : nullptr;
      T* dst_row = dst_plane + static_cast<std::size_t>(i) * p.out_w;
      const float* mean_row = mean_plane ? mean_plane + static_cast<std::size_t>(i) * p.out_w : nullptr;
      for (int j = 0; j < p.out_w; ++j) {
        const int sx = p.crop_x + j - p.pad;
        const float v = (row_inside && sx >= 0 && sx < p.img_w)
                            ? static_cast<float>(src_row[static_cast<std::size_t>(sx) * p.img_c + src_c])
                            : p.fill;
        const int dj = p.mirror ? p.out_w - 1 - j : j;
        if (normalise) {
          const float m = mean_row ? mean_row[dj] : mean;
          dst_row[dj] = convert<T>((v - m) * mult);
        } else {
          dst_row[dj] = convert<T>(clamp_to(v, 0.0f, 255.0f));
        }
      }
    }
  }
}

}  // namespace mxio
