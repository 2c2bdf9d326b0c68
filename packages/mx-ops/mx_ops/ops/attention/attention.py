"""Registrations of MXNet's interleaved attention matmuls
(contrib/transformer.cc): the multi-head attention products read straight
from the interleaved projections, with their shape rules and gradients.

  _contrib_interleaved_matmul_selfatt_qk(queries_keys_values, heads)
      (S, B, H*3*D) -> (B*H, S, S)            q k^T / sqrt(D)
  _contrib_interleaved_matmul_selfatt_valatt(queries_keys_values, attention, heads)
      (S, B, H*3*D), (B*H, S, S) -> (S, B, H*D)   attention v
  _contrib_interleaved_matmul_encdec_qk(queries, keys_values, heads)
      (Sq, B, H*D), (Sk, B, H*2*D) -> (B*H, Sq, Sk)
  _contrib_interleaved_matmul_encdec_valatt(keys_values, attention, heads)
      (Sk, B, H*2*D), (B*H, Sq, Sk) -> (Sq, B, H*D)
"""
import struct

from mx_ops.core._params import Param
from mx_ops.core.gradient import backward_op, set_gradient
from mx_ops.core.partial_infer import set_infer_shape_partial
from mx_ops.core.registry import (OpDef, ShapeError, TypeInferenceError, computes, gpu_compute,
                                  register)
from mx_ops.ops.attention import _attention_cpu
from mx_storage.resource import ResourceRequest

# The CuPy twin, imported on the first GPU call (core.registry.gpu_compute).
GPU = "mx_ops.ops.attention._attention_gpu"
_KERNELS = _attention_cpu.kernels()
_FLOATS = ("float16", "float32", "float64")
_PARAMS = {"heads": Param("int", low=1, doc="Set number of heads")}
_DOCS = {"queries_keys_values": "Interleaved queries, keys and values",
         "queries": "Queries", "keys_values": "Keys and values interleaved",
         "attention": "Attention maps", "ograd": "Gradient of the output"}


def _workspace(params, shapes):
    """Packing buffers for the GEMM of each thread (attention_cpu.h)."""
    return _attention_cpu.workspace_bytes()


def _pack(params, in_shapes):
    return struct.pack("=i", params["heads"])           # AttentionParam


def _projection(op, arg, shape, parts, heads):
    """(S, B, heads * parts * D) -> D, or ShapeError naming the argument."""
    shape = tuple(shape)
    if len(shape) != 3:
        raise ShapeError(f"{op}: argument '{arg}' must be 3-d (seq_length, batch_size, "
                         f"features), got shape {shape}")
    if shape[2] % (heads * parts):
        raise ShapeError(f"{op}: argument '{arg}' has {shape[2]} features, not a multiple of "
                         f"heads ({heads}) x {parts}")
    return shape[2] // (heads * parts)


def _attention(op, shape, batch_heads, rows, cols):
    shape = tuple(shape)
    if shape != (batch_heads, rows, cols):
        raise ShapeError(f"{op}: argument 'attention' has shape {shape}, expected "
                         f"{(batch_heads, rows, cols)} (batch_size * heads, query length, "
                         f"key length)")


def _selfatt_qk_shape(p, s):
    op, h = "interleaved_matmul_selfatt_qk", p["heads"]
    _projection(op, "queries_keys_values", s[0], 3, h)
    seq, batch = s[0][0], s[0][1]
    return [(batch * h, seq, seq)]


def _selfatt_valatt_shape(p, s):
    op, h = "interleaved_matmul_selfatt_valatt", p["heads"]
    d = _projection(op, "queries_keys_values", s[0], 3, h)
    seq, batch = s[0][0], s[0][1]
    _attention(op, s[1], batch * h, seq, seq)
    return [(seq, batch, h * d)]


def _encdec_qk_shape(p, s):
    op, h = "interleaved_matmul_encdec_qk", p["heads"]
    d = _projection(op, "queries", s[0], 1, h)
    dk = _projection(op, "keys_values", s[1], 2, h)
    if dk != d or s[1][1] != s[0][1]:
        raise ShapeError(f"{op}: argument 'keys_values' has shape {tuple(s[1])}, expected "
                         f"(key length, {s[0][1]}, {2 * h * d}) for 'queries' {tuple(s[0])}")
    return [(s[0][1] * h, s[0][0], s[1][0])]


def _encdec_valatt_shape(p, s):
    op, h = "interleaved_matmul_encdec_valatt", p["heads"]
    d = _projection(op, "keys_values", s[0], 2, h)
    att = tuple(s[1])
    if len(att) != 3:
        raise ShapeError(f"{op}: argument 'attention' must be 3-d (batch_size * heads, query "
                         f"length, key length), got shape {att}")
    _attention(op, att, s[0][1] * h, att[1], s[0][0])
    return [(att[1], s[0][1], h * d)]


def _same_float(op, names):
    def infer(params, dtypes):
        for name, dt in zip(names[1:], dtypes[1:]):
            if dt != dtypes[0]:
                raise TypeInferenceError(f"{op}: argument '{name}' has dtype {dt}, which "
                                         f"differs from '{names[0]}' {dtypes[0]}")
        if dtypes[0] not in _FLOATS:
            raise TypeInferenceError(f"{op}: dtype {dtypes[0]} is not supported; supported: "
                                     f"{', '.join(_FLOATS)}")
        return [dtypes[0]] * (len(names) - 1 if names[0] == "ograd" else 1)
    return infer


# --- partial inference (graph-level FInferShape: 0 = unknown) -----------------------
def _dims(shape):
    """(seq, batch, features) of a 3-d shape, 0 where unknown."""
    return tuple(shape) if shape is not None and len(shape) == 3 else (0, 0, 0)


def _partial(name):
    """The output from what is known of the inputs (a batch of unknown size
    gives B*heads unknown), and the attention maps' shape from the
    projections for the valatt ops."""
    def rule(params, ins, outs):
        h = params["heads"]
        if name == "selfatt_qk":
            s, b, _ = _dims(ins[0])
            outs.assign(0, (b * h, s, s), why=f"queries_keys_values {ins[0]}")
        elif name == "selfatt_valatt":
            s, b, e = _dims(ins[0])
            ins.assign(1, (b * h, s, s), why=f"queries_keys_values {ins[0]}")
            outs.assign(0, (s, b, e // 3), why=f"queries_keys_values {ins[0]}")
        elif name == "encdec_qk":
            sq, bq, _ = _dims(ins[0])
            sk, bk, _ = _dims(ins[1])
            outs.assign(0, ((bq or bk) * h, sq, sk),
                        why=f"queries {ins[0]}, keys_values {ins[1]}")
        else:
            sk, b, e = _dims(ins[0])
            sq = ins[1][1] if ins[1] is not None and len(ins[1]) == 3 else 0
            ins.assign(1, (b * h, sq, sk), why=f"keys_values {ins[0]}")
            outs.assign(0, (sq, b, e // 2), why=f"keys_values {ins[0]}, attention {ins[1]}")
        return ins, outs
    return rule


def _register(name, arguments, infer_shape, reads, doc):
    op = f"interleaved_matmul_{name}"
    register(OpDef(
        f"_contrib_{op}", arguments=arguments, params=_PARAMS,
        input_docs={a: _DOCS[a] for a in arguments}, infer_shape=infer_shape,
        infer_type=_same_float(op, arguments),
        compute=computes(_KERNELS[f"_contrib_{op}"], gpu_compute(GPU, name)),
        pack_params=_pack, resources=(ResourceRequest.TEMP_SPACE,), workspace=_workspace,
        doc=doc))
    back = ("ograd",) + arguments
    register(OpDef(
        f"_backward_{op}", arguments=back, params=_PARAMS,
        outputs=tuple(f"grad_{a}" for a in arguments),
        input_docs={a: _DOCS[a] for a in back},
        infer_shape=lambda p, s: [tuple(x) for x in s[1:]],
        infer_type=_same_float(f"_backward_{op}", back),
        compute=computes(_KERNELS[f"_backward_{op}"], gpu_compute(GPU, f"backward_{name}")),
        pack_params=_pack, resources=(ResourceRequest.TEMP_SPACE,), workspace=_workspace,
        differentiable=False, doc=f"Backward of _contrib_{op}."))
    set_gradient(f"_contrib_{op}", backward_op(op, reads))
    set_infer_shape_partial(f"_contrib_{op}", _partial(name))


_register("selfatt_qk", ("queries_keys_values",), _selfatt_qk_shape,
          lambda n, g: [g[0], n.inputs[0]],
          "Matrix products of the queries and keys of multi-head self-attention, read "
          "from their interleaved projections (seq_length, batch_size, heads * 3 * head_dim)"
          ": out[b * heads + h] = q k^T / sqrt(head_dim).")
_register("selfatt_valatt", ("queries_keys_values", "attention"), _selfatt_valatt_shape,
          lambda n, g: [g[0], n.inputs[0], n.inputs[1]],
          "Products of the attention maps (batch_size * heads, seq, seq) with the values "
          "of the interleaved projections: out (seq_length, batch_size, heads * head_dim).")
_register("encdec_qk", ("queries", "keys_values"), _encdec_qk_shape,
          lambda n, g: [g[0], n.inputs[0], n.inputs[1]],
          "Matrix products of the queries (seq_q, batch_size, heads * head_dim) and the keys "
          "of the interleaved key/value projections (seq_k, batch_size, heads * 2 * head_dim)"
          " of encoder-decoder attention, scaled by 1/sqrt(head_dim).")
_register("encdec_valatt", ("keys_values", "attention"), _encdec_valatt_shape,
          lambda n, g: [g[0], n.inputs[0], n.inputs[1]],
          "Products of the attention maps (batch_size * heads, seq_q, seq_k) with the "
          "values of the interleaved key/value projections: out (seq_q, batch_size, "
          "heads * head_dim).")
