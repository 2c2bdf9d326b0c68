"""Environment variables, devices, data iterators and data sets for
``mx.test_utils``; the helpers over layers mx does not have yet say so."""
import contextlib
import os

from mx_ndarray import waitall


# -- environment, devices, data --------------------------------------------------------
@contextlib.contextmanager
def environment(*args):
    """Sets environment variables inside the block (``environment(name,
    value)`` or ``environment({name: value})``; None unsets) and restores
    them after it, even on error."""
    if len(args) == 1 and isinstance(args[0], dict):
        env_vars = args[0]
    else:
        assert len(args) == 2, 'Expecting one dict arg or two args: env var name and value'
        env_vars = {args[0]: args[1]}

    def set_environ(values):
        for name, value in values.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value

    snapshot = {name: os.environ.get(name) for name in env_vars}
    set_environ(env_vars)
    try:
        yield
    finally:
        # Work queued inside the block may still read the variables.
        waitall()
        set_environ(snapshot)


def list_gpus():
    """The GPU ids available (``range(mx.context.num_gpus())``)."""
    from mx_engine._context import num_gpus
    return range(num_gpus())


def is_cd_run():
    return os.environ.get("CD_JOB", 0) == "1"


def is_aarch64_run():
    import platform
    return platform.machine() == "aarch64"


@contextlib.contextmanager
def discard_stderr():
    """Sends file descriptor 2, the process's stderr (native code's too),
    to /dev/null inside the block."""
    fd = 2
    saved = os.dup(fd)
    with open(os.devnull, 'w') as null:
        os.dup2(null.fileno(), fd)
        try:
            yield
        finally:
            os.dup2(saved, fd)
            os.close(saved)


def get_im2rec_path(home_env="MXNET_HOME"):
    """The path of tools/im2rec.py under ``$MXNET_HOME`` (mx ships no
    tools/ of its own)."""
    home = os.environ.get(home_env)
    path = os.path.join(home, 'tools', 'im2rec.py') if home else None
    if path and os.path.isfile(path):
        return path
    raise IOError(f'Could not find path to tools/im2rec.py (set {home_env} to an MXNet checkout)')


def has_tvm_ops():
    """False: mx has no TVM-generated operators."""
    return False


def is_op_runnable():
    """True: without TVM operators every op runs on every context."""
    return True


class _DataIterBase:
    """Stand-in for mx.io.DataIter until mx-io lands (its issue): the
    iterator protocol over ``next()``."""

    def __init__(self, batch_size=0):
        self.batch_size = batch_size

    def __iter__(self):
        return self

    def __next__(self):
        return self.next()

    def reset(self):
        pass


class DummyIter(_DataIterBase):
    """An iterator that returns the first batch of ``real_iter`` forever
    (for speed tests)."""

    def __init__(self, real_iter):
        super().__init__()
        self.real_iter = real_iter
        self.provide_data = real_iter.provide_data
        self.provide_label = real_iter.provide_label
        self.batch_size = real_iter.batch_size
        self.the_batch = next(real_iter)

    def next(self):
        return self.the_batch


# Downloads: mx fetches nothing; each helper names the files to provide.
def _no_download(what, files):
    raise RuntimeError(f"{what}: mx downloads nothing; provide {files} yourself "
                       f"(MXNet 1.9.1 fetched them from data.mxnet.io)")


def download(url, fname=None, dirname=None, overwrite=False, retries=5):
    fname = fname or url.split("/")[-1]
    path = os.path.join(dirname, fname) if dirname else fname
    if os.path.exists(path) and not overwrite:
        return path
    _no_download("download", f"the file {path!r} (from {url})")


def download_model(model_name, dst_dir='./', meta_info=None):
    _no_download("download_model", f"'{model_name}-symbol.json' and '{model_name}-0000.params' "
                 f"in {dst_dir!r}")


_MNIST = ("train-labels-idx1-ubyte.gz", "train-images-idx3-ubyte.gz",
          "t10k-labels-idx1-ubyte.gz", "t10k-images-idx3-ubyte.gz")


def get_mnist():
    _no_download("get_mnist", "the MNIST files " + ", ".join(_MNIST)
                 + " in the current directory")


def get_mnist_pkl():
    _no_download("get_mnist_pkl", "'data/mnist.pkl.gz'")


def get_mnist_ubyte():
    _no_download("get_mnist_ubyte", "'data/train-images-idx3-ubyte', "
                 "'data/train-labels-idx1-ubyte', 'data/t10k-images-idx3-ubyte' and "
                 "'data/t10k-labels-idx1-ubyte'")


def get_cifar10():
    _no_download("get_cifar10", "'data/cifar/train.rec', 'data/cifar/test.rec', "
                 "'data/cifar/train.lst' and 'data/cifar/test.lst'")


def get_mnist_iterator(batch_size, input_shape, num_parts=1, part_index=0):
    _no_download("get_mnist_iterator", "the MNIST files in 'data/' (and mx.io.MNISTIter, "
                 "not in mx yet)")


def get_zip_data(data_dir, url, data_origin_name):
    _no_download("get_zip_data", f"{os.path.join(data_dir, data_origin_name)!r}, unpacked")


def get_bz2_data(data_dir, data_name, url, data_origin_name):
    _no_download("get_bz2_data", f"{os.path.join(data_dir, data_name)!r}")


# -- helpers over layers mx does not have yet ----------------------------------------------
def check_gluon_hybridize_consistency(net_builder, data_l, numpy_func=None, test_grad=True,
                                      rtol=1E-4, atol=1E-4):
    raise NotImplementedError("check_gluon_hybridize_consistency: mx.gluon does not exist yet")
