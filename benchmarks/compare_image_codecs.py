"""Which JPEG decoder mx.recordio / mx.image use: measured, not assumed.

For 128x128 quality-90 JPEGs (the issue's ImageRecordIter workload) it times,
for each decoder installed in this interpreter:

- single-thread decode throughput (images/s, best of --repeat passes);
- two-thread throughput over one thread (a decoder that holds the GIL cannot
  go above 1.0; one that releases it reaches up to 2.0 on two free cores);
- whether it releases the GIL: the longest time a Python loop in the main
  thread goes without running while another thread decodes one 2048x2048
  JPEG (about the whole decode when the GIL is held; a few ms when it is
  released).  On a busy machine this is the robust signal: the two-thread
  ratio needs two idle cores.

Run: python benchmarks/compare_image_codecs.py [--images 500] [--repeat 5]
Decoders: OpenCV (opencv-python-headless, MXNet's), simplejpeg and
PyTurboJPEG (libjpeg-turbo; PyTurboJPEG needs the system libturbojpeg),
Pillow.  Every decoder yields the same HxWx3 uint8 layout (BGR or RGB).
Needs only NumPy and the decoders: no mx, so it runs in any venv.
"""
import argparse
import io
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np


def make_jpegs(count, size=128, quality=90, seed=0):
    """Smooth random images (photo-like spectra) encoded with OpenCV."""
    import cv2
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(count):
        img = rng.integers(0, 256, (size // 8, size // 8, 3), dtype=np.uint8)
        img = cv2.resize(img, (size, size), interpolation=cv2.INTER_CUBIC)
        noise = rng.integers(0, 24, img.shape, dtype=np.uint8)
        ok, buf = cv2.imencode(".jpg", cv2.add(img, noise), [cv2.IMWRITE_JPEG_QUALITY, quality])
        out.append(buf.tobytes())
    return out


def decoders():
    """{name: decode(bytes) -> HxWx3 uint8} for the decoders importable here."""
    found = {}
    try:
        import cv2
        cv2.setNumThreads(1)
        found["opencv " + cv2.__version__] = (
            lambda b: cv2.imdecode(np.frombuffer(b, np.uint8), cv2.IMREAD_COLOR))
    except ImportError:
        pass
    try:
        import simplejpeg
        found["simplejpeg " + simplejpeg.__version__] = (
            lambda b: simplejpeg.decode_jpeg(b, colorspace="BGR"))
    except ImportError:
        pass
    try:
        import turbojpeg
        tj = turbojpeg.TurboJPEG()
        found["PyTurboJPEG " + turbojpeg.__version__] = tj.decode
    except (ImportError, RuntimeError, OSError):
        pass   # the wheel is there but the system libturbojpeg is not
    try:
        import PIL
        from PIL import Image
        found["Pillow " + PIL.__version__] = (
            lambda b: np.asarray(Image.open(io.BytesIO(b)).convert("RGB")))
    except ImportError:
        pass
    return found


def best_rate(fn, repeat):
    """Best items/s over ``repeat`` calls of ``fn`` (which returns a count)."""
    fn()
    best = 0.0
    for _ in range(repeat):
        t = time.perf_counter()
        n = fn()
        best = max(best, n / (time.perf_counter() - t))
    return best


def longest_stall(decode, big_jpeg, repeat=3):
    """(decode ms of ``big_jpeg``, longest ms the calling thread went without
    the GIL while another thread decoded it): a decoder that holds the GIL
    stalls the caller for the whole decode, one that releases it for about
    a switch interval (5 ms) or a scheduler tick."""
    decode_ms = stall_ms = 0.0
    for _ in range(repeat):
        done = threading.Event()

        def work():
            t = time.perf_counter()
            decode(big_jpeg)
            nonlocal decode_ms
            decode_ms = max(decode_ms, 1e3 * (time.perf_counter() - t))
            done.set()
        worker = threading.Thread(target=work)
        last = time.perf_counter()
        worker.start()
        while not done.is_set():
            now = time.perf_counter()
            stall_ms = max(stall_ms, 1e3 * (now - last))
            last = now
        worker.join()
    return decode_ms, stall_ms


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--images", type=int, default=500)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    jpegs = make_jpegs(args.images)
    big = make_jpegs(1, size=2048)[0]
    rows = [("decoder", "1 thread img/s", "2 threads / 1", "2048px decode ms",
             "longest GIL stall ms")]
    for name, decode in decoders().items():
        assert decode(jpegs[0]).shape == (128, 128, 3)
        one = best_rate(lambda: sum(1 for b in jpegs if decode(b) is not None), args.repeat)
        with ThreadPoolExecutor(2) as pool:
            half = len(jpegs) // 2

            def two():
                parts = [pool.submit(lambda p: [decode(b) for b in p], part)
                         for part in (jpegs[:half], jpegs[half:])]
                return sum(len(f.result()) for f in parts)
            both = best_rate(two, args.repeat)
        decode_ms, stall_ms = longest_stall(decode, big)
        rows.append((name, f"{one:,.0f}", f"{both / one:.2f}", f"{decode_ms:.0f}",
                     f"{stall_ms:.1f}"))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for r in rows:
        print("  ".join(c.ljust(w) for c, w in zip(r, widths)))


if __name__ == "__main__":
    main()
