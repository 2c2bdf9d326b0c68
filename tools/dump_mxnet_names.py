"""Writes tests/data/mxnet_1_9_1_names.json: the public names of MXNet
1.9.1's module tree, which tests/test_module_tree.py compares ``mx`` with.

Run with MXNet 1.9.1 installed (``python tools/dump_mxnet_names.py``).
Names bound to foreign objects (``ctypes``, ``numpy``, ``functools``...)
are left out: they are MXNet's imports, not its API.  Classes in CLASSES
list their attributes too: the public ones and the special methods their
own class hierarchy defines (``__getitem__``, ``__iadd__``...), not
``object``'s.
"""
import json
import os
import types

import mxnet as mx

MODULES = ["mx", "mx.nd", "mx.nd.op", "mx.nd.random", "mx.nd.linalg", "mx.nd.contrib",
           "mx.nd.sparse", "mx.sym", "mx.sym.op", "mx.sym.random", "mx.sym.linalg",
           "mx.sym.contrib", "mx.executor", "mx.context", "mx.base", "mx.name",
           "mx.attribute", "mx.util", "mx.runtime", "mx.engine", "mx.random", "mx.profiler",
           "mx.kv"]
CLASSES = ["mx.nd.NDArray", "mx.kv.KVStore"]


def _foreign(value):
    if isinstance(value, types.ModuleType):
        return not value.__name__.startswith("mxnet")
    owner = getattr(value, "__module__", None)
    # MXNet's generated operator functions say 'ndarray' or 'symbol'.
    return (isinstance(owner, str) and not owner.startswith("mxnet")
            and owner not in ("ndarray", "symbol"))


def public_names(module):
    return sorted(n for n in dir(module)
                  if not n.startswith("_") and not _foreign(getattr(module, n)))


def class_names(cls):
    names = {n for n in dir(cls) if not n.startswith("_")}
    for klass in cls.__mro__[:-1]:
        names |= {n for n in vars(klass) if n.startswith("__") and n.endswith("__")
                  and n not in ("__module__", "__doc__", "__slots__", "__dict__",
                                "__weakref__", "__init__", "__del__")}
    return sorted(names)


def main():
    names = {path: public_names(eval(path, {"mx": mx})) for path in MODULES}
    names.update({path: class_names(eval(path, {"mx": mx})) for path in CLASSES})
    out = os.path.join(os.path.dirname(__file__), "..", "tests", "data", "mxnet_1_9_1_names.json")
    with open(out, "w") as f:
        json.dump({"mxnet_version": mx.__version__, "names": names}, f, indent=1, sort_keys=True)
        f.write("\n")


if __name__ == "__main__":
    main()
