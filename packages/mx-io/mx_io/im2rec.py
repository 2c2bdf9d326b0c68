"""``python -m mx_io.im2rec``: image lists and RecordIO databases, as
MXNet 1.9.1's ``tools/im2rec.py`` makes them.

With ``--list`` it walks ``root`` and writes ``<prefix>.lst`` files
(``index<TAB>label(s)<TAB>relative path`` per line, shuffled with seed 100,
split by ``--train-ratio``/``--test-ratio`` and ``--chunks``).  Without it,
every ``<prefix>*.lst`` becomes a ``.rec``/``.idx`` pair: each image is read,
optionally centre-cropped and resized (shorter edge), encoded and packed with
its label(s), exactly as MXNet's script does, so the files are the same
bytes.  Images are decoded and encoded in ``--num-thread`` threads (OpenCV
releases the GIL) and written in list order; an unreadable image is reported
and skipped.
"""
import argparse
import os
import random
import sys
import time
from collections import deque
from concurrent.futures import ThreadPoolExecutor

from mx_io import _image_codec, recordio


def list_images(root, recursive, exts):
    """(index, relative path, label) of every image under ``root``: with
    ``recursive`` each folder is a label, numbered in walk order (printed)."""
    items = []
    if recursive:
        labels = {}
        for path, dirs, files in os.walk(root, followlinks=True):
            dirs.sort()
            for fname in sorted(files):
                fpath = os.path.join(path, fname)
                if os.path.splitext(fname)[1].lower() in exts and os.path.isfile(fpath):
                    label = labels.setdefault(path, len(labels))
                    items.append((len(items), os.path.relpath(fpath, root), label))
        for path, label in labels.items():
            print(os.path.relpath(path, root), label)
    else:
        for fname in sorted(os.listdir(root)):
            fpath = os.path.join(root, fname)
            if os.path.splitext(fname)[1].lower() in exts and os.path.isfile(fpath):
                items.append((len(items), os.path.relpath(fpath, root), 0))
    return items


def write_list(path, items):
    """Writes ``items`` ((index, path, label, ...)) as a ``.lst`` file."""
    with open(path, "w") as out:
        for item in items:
            labels = "".join(f"{label:f}\t" for label in item[2:])
            out.write(f"{item[0]:d}\t{labels}{item[1]}\n")


def make_lists(args):
    """The ``--list`` mode: ``.lst`` files of the images under ``args.root``."""
    items = list_images(args.root, args.recursive, args.exts)
    if args.shuffle:
        random.Random(100).shuffle(items)
    chunk_size = (len(items) + args.chunks - 1) // args.chunks
    for c in range(args.chunks):
        chunk = items[c * chunk_size:(c + 1) * chunk_size]
        stem = args.prefix + (f"_{c}" if args.chunks > 1 else "")
        n_train = int(chunk_size * args.train_ratio)
        n_test = int(chunk_size * args.test_ratio)
        if args.train_ratio == 1.0:
            write_list(stem + ".lst", chunk)
            continue
        if args.test_ratio:
            write_list(stem + "_test.lst", chunk[:n_test])
        if args.train_ratio + args.test_ratio < 1.0:
            write_list(stem + "_val.lst", chunk[n_test + n_train:])
        write_list(stem + "_train.lst", chunk[n_test:n_test + n_train])


def read_list(path):
    """[index, path, label, ...] per valid line of a ``.lst`` file; a bad
    line is reported and skipped."""
    items = []
    with open(path) as lst:
        for lineno, line in enumerate(lst, 1):
            fields = [f.strip() for f in line.strip().split("\t")]
            if len(fields) < 3:
                print(f"im2rec: {path}:{lineno}: skipped, a line needs index, label(s) and "
                      f"path separated by tabs, got {line.rstrip()!r}", file=sys.stderr)
                continue
            try:
                items.append([int(fields[0]), fields[-1]] + [float(v) for v in fields[1:-1]])
            except ValueError as err:
                print(f"im2rec: {path}:{lineno}: skipped, {err}", file=sys.stderr)
    return items


def shorter_edge_size(shape, size):
    """OpenCV (width, height) that makes the shorter edge ``size``, as
    MXNet's im2rec rounds it."""
    h, w = shape[:2]
    return (size, h * size // w) if h > w else (w * size // h, size)


def center_square(img):
    """The centred square crop of ``img``."""
    h, w = img.shape[:2]
    if h > w:
        top = (h - w) // 2
        return img[top:top + w]
    left = (w - h) // 2
    return img[:, left:left + h]


def encode_item(args, item):
    """The packed record of one ``.lst`` item, or an error message."""
    index, relpath, labels = item[0], item[1], item[2:]
    fullpath = os.path.join(args.root, relpath)
    label = labels if (len(labels) > 1 and args.pack_label) else labels[0]
    header = recordio.IRHeader(0, label, index, 0)
    try:
        if args.pass_through:
            with open(fullpath, "rb") as f:
                return recordio.pack(header, f.read()), None
        cv2 = _image_codec.cv2()
        img = cv2.imread(fullpath, args.color)
        if img is None:
            return None, f"cannot read '{fullpath}' as an image"
        if args.center_crop:
            img = center_square(img)
        if args.resize:
            img = cv2.resize(img, shorter_edge_size(img.shape, args.resize))
        return recordio.pack_img(header, img, quality=args.quality, img_fmt=args.encoding), None
    except (OSError, ValueError) as err:
        return None, f"'{fullpath}': {err}"


def encoded_in_order(args, items):
    """(item, record or None, error) per item in list order, encoded by
    ``args.num_thread`` threads with a bounded number in flight."""
    if args.num_thread <= 1:
        for item in items:
            yield (item, *encode_item(args, item))
        return
    with ThreadPoolExecutor(args.num_thread) as pool:
        pending = deque()
        for item in items:
            pending.append((item, pool.submit(encode_item, args, item)))
            if len(pending) >= 4 * args.num_thread:
                item0, fut = pending.popleft()
                yield (item0, *fut.result())
        while pending:
            item0, fut = pending.popleft()
            yield (item0, *fut.result())


def progress(iterable, total, desc):
    """tqdm's bar where tqdm is installed, else MXNet's line per 1000 images."""
    try:
        from tqdm import tqdm
    except ImportError:
        def lines():
            last = time.time()
            for count, x in enumerate(iterable):
                if count % 1000 == 0:
                    now = time.time()
                    print("time:", now - last, " count:", count)
                    last = now
                yield x
        return lines()
    return tqdm(iterable, total=total, desc=desc, unit="img")


def make_record(args, lst_path, working_dir):
    """``.rec``/``.idx`` beside ``lst_path`` from its items; returns the
    number of images skipped."""
    stem = os.path.splitext(os.path.basename(lst_path))[0]
    items = read_list(lst_path)
    record = recordio.MXIndexedRecordIO(os.path.join(working_dir, stem + ".idx"),
                                        os.path.join(working_dir, stem + ".rec"), "w")
    skipped = 0
    try:
        for item, packed, error in progress(encoded_in_order(args, items), len(items), stem):
            if packed is None:
                skipped += 1
                print(f"im2rec: skipped image {item[0]}: {error}", file=sys.stderr)
                continue
            record.write_idx(item[0], packed)
    finally:
        record.close()
    return skipped


def make_records(args):
    """Every ``<prefix>*.lst`` beside the prefix becomes a record file."""
    working_dir = args.prefix if os.path.isdir(args.prefix) else os.path.dirname(args.prefix)
    lists = sorted(os.path.join(working_dir, f) for f in os.listdir(working_dir))
    lists = [f for f in lists
             if os.path.isfile(f) and f.startswith(args.prefix) and f.endswith(".lst")]
    if not lists:
        print(f"Did not find and list file with prefix {args.prefix}")
    for lst in lists:
        print("Creating .rec file from", lst, "in", working_dir)
        skipped = make_record(args, lst, working_dir)
        if skipped:
            print(f"im2rec: {skipped} image(s) of {lst} skipped", file=sys.stderr)


def parse_args(argv=None):
    """im2rec's command line: MXNet's options and defaults."""
    parser = argparse.ArgumentParser(
        prog="python -m mx_io.im2rec", formatter_class=argparse.ArgumentDefaultsHelpFormatter,
        description="Create an image list or make a record database by reading from an "
                    "image list")
    parser.add_argument("prefix", help="prefix of input/output lst and rec files.")
    parser.add_argument("root", help="path to folder containing images.")
    lists = parser.add_argument_group("Options for creating image lists")
    lists.add_argument("--list", action="store_true",
                       help="create image list(s) <prefix>.lst by walking root; otherwise "
                            "read <prefix>*.lst and create <prefix>*.rec")
    lists.add_argument("--exts", nargs="+", default=[".jpeg", ".jpg", ".png"],
                       help="list of acceptable image extensions.")
    lists.add_argument("--chunks", type=int, default=1, help="number of chunks.")
    lists.add_argument("--train-ratio", type=float, default=1.0,
                       help="Ratio of images to use for training.")
    lists.add_argument("--test-ratio", type=float, default=0,
                       help="Ratio of images to use for testing.")
    lists.add_argument("--recursive", action="store_true",
                       help="walk subfolders and give each folder its own label; otherwise "
                            "only the images in root, with label 0.")
    lists.add_argument("--shuffle", action=argparse.BooleanOptionalAction, default=True,
                       help="randomize the image order in <prefix>.lst (seed 100).")
    records = parser.add_argument_group("Options for creating database")
    records.add_argument("--pass-through", action="store_true",
                         help="whether to skip transformation and save image as is")
    records.add_argument("--resize", type=int, default=0,
                         help="resize the shorter edge of image to the newsize; original "
                              "images are packed by default.")
    records.add_argument("--center-crop", action="store_true",
                         help="crop the centre square of each image.")
    records.add_argument("--quality", type=int, default=95,
                         help="JPEG quality for encoding, 1-100; or PNG compression, 1-9")
    records.add_argument("--num-thread", type=int, default=1,
                         help="number of threads decoding and encoding; records keep the "
                              "list's order.")
    records.add_argument("--color", type=int, default=1, choices=[-1, 0, 1],
                         help="1: colour (alpha dropped), 0: grayscale, -1: unchanged.")
    records.add_argument("--encoding", type=str, default=".jpg", choices=[".jpg", ".png"],
                         help="specify the encoding of the images.")
    records.add_argument("--pack-label", action="store_true",
                         help="Whether to also pack multi dimensional label in the record file")
    args = parser.parse_args(argv)
    if args.chunks < 1:
        parser.error(f"--chunks must be at least 1, got {args.chunks}")
    args.prefix = os.path.abspath(args.prefix)
    args.root = os.path.abspath(args.root)
    return args


def main(argv=None):
    args = parse_args(argv)
    if args.list:
        make_lists(args)
    else:
        make_records(args)


if __name__ == "__main__":
    main()
