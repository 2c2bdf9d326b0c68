"""Writes the MXNet 1.x reference files in this folder, with real MXNet:

    OPENBLAS_CORETYPE=Haswell /tmp/mxnet-venv/bin/python make_mxnet_json.py

(MXNet 1.9.1).  For each net of ``reference_nets.NETS``: ``<name>-symbol.json``
(``sym.save``) and ``<name>-meta.json`` (what MXNet lists and infers for
it: arguments, outputs, aux states, attr_dict, the shapes from
``SHAPES``), so that the tests know MXNet's answers without MXNet.  For
each hand-written pre-1.0 file of ``LEGACY``: ``<name>-upgraded.json``,
MXNet's re-save of it after its loader upgraded it.
"""
import json
import os
import sys

import mxnet as mx

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import reference_nets  # noqa: E402


def meta(sym, shapes):
    args, outs, aux = sym.infer_shape(**shapes)
    return {
        "list_arguments": sym.list_arguments(),
        "list_outputs": sym.list_outputs(),
        "list_auxiliary_states": sym.list_auxiliary_states(),
        "attr_dict": sym.attr_dict(),
        "shapes": shapes,
        "arg_shapes": [list(s) for s in args],
        "out_shapes": [list(s) for s in outs],
        "aux_shapes": [list(s) for s in aux],
    }


def main():
    for name in reference_nets.NETS:
        sym = reference_nets.build(mx, name)
        sym.save(os.path.join(HERE, f"{name}-symbol.json"))
        with open(os.path.join(HERE, f"{name}-meta.json"), "w") as f:
            json.dump(meta(sym, reference_nets.SHAPES[name]), f, indent=1, sort_keys=True)
            f.write("\n")
    for name in reference_nets.LEGACY:
        sym = mx.sym.load(os.path.join(HERE, f"{name}.json"))
        sym.save(os.path.join(HERE, f"{name}-upgraded.json"))
    print("wrote", ", ".join(reference_nets.NETS), "and", ", ".join(reference_nets.LEGACY))


if __name__ == "__main__":
    main()
