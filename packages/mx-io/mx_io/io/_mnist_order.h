// MNISTIter's example order.  MXNet 1.9.1 shuffles once with std::shuffle
// over std::mt19937(seed); its wheels' libstdc++ drew one number per swap
// (newer ones draw one for two swaps), with uniform_int_distribution's
// rejection downscaling.  That algorithm is written out here so the same
// seed gives MXNet's order whatever library this is built with.
#pragma once

#include <cstddef>
#include <cstdint>
#include <random>
#include <utility>

namespace mxio {

// A uniform integer in [0, hi], as libstdc++'s uniform_int_distribution
// takes it from a 32-bit engine.
inline std::uint64_t draw_upto(std::mt19937& g, std::uint64_t hi) {
  const std::uint64_t engine_range = g.max() - g.min();
  if (engine_range <= hi) return g() - g.min();
  const std::uint64_t buckets = hi + 1;
  const std::uint64_t scaling = engine_range / buckets;
  const std::uint64_t past = buckets * scaling;
  std::uint64_t r;
  do {
    r = static_cast<std::uint64_t>(g()) - g.min();
  } while (r >= past);
  return r / scaling;
}

inline void mnist_order(unsigned* order, std::size_t n, unsigned seed, bool shuffle) {
  for (std::size_t i = 0; i < n; ++i) order[i] = static_cast<unsigned>(i);
  if (!shuffle) return;
  std::mt19937 g(seed);
  for (std::size_t i = 1; i < n; ++i) std::swap(order[i], order[draw_upto(g, i)]);
}

}  // namespace mxio
