"""The cases of the layout and sequence operators recorded from MXNet 1.9.1
(make_layout_reference.py writes layout_mxnet191.npz; test_layout.py
replays them).  Each case: name -> (operator, [input names],
{parameters}).  Inputs are the arrays of ``inputs()``; the gradient is
recorded for the cases named in GRAD_CASES (head gradient: grad_head's
values, the output's shape).  im2col and col2im are recorded for 2-D images
only: MXNet 1.9.1's CPU kernels fail on 1-D and 3-D ones (and on integer
dtypes); test_im2col.py holds those to NumPy."""
import numpy as np


def inputs():
    """The named input arrays (float32 unless said)."""
    r = np.random.RandomState(7)
    return {
        "x234": np.arange(24, dtype=np.float32).reshape(2, 3, 4),
        "x4": r.randn(2, 3, 4, 5).astype(np.float32),
        "x5": r.randn(1, 2, 3, 4, 5).astype(np.float32),
        "x4h": r.randn(2, 2, 3, 4).astype(np.float16),
        "c8": r.randn(2, 8, 2, 3).astype(np.float32),
        "s46": r.randn(2, 2, 4, 6).astype(np.float32),
        "b131": r.randn(1, 3, 1).astype(np.float32),
        "i234": np.arange(24, dtype=np.int32).reshape(2, 3, 4),
        "like23": np.zeros((1, 2, 3), np.float32),
        "seq": r.randn(4, 3, 2).astype(np.float32),
        "seqlen": np.array([2, 4, 1], np.float32),
        "seqlen_i": np.array([3, 0, 4], np.int32),
        # SequenceLast with a length of 0 reads outside the sequence in MXNet
        "seqlen_j": np.array([3, 1, 4], np.int32),
        "x34": r.randn(3, 4).astype(np.float32),
        "seq_b": r.randn(3, 4, 2).astype(np.float32),
        "col8": r.randn(2, 8, 12).astype(np.float32),
        "col6": r.randn(1, 6, 9).astype(np.float64),
    }


CASES = {
    "pad_const4": ("Pad", ["x4"], dict(mode="constant", pad_width=(0, 0, 0, 0, 1, 2, 2, 1),
                                       constant_value=1.5)),
    "pad_edge4": ("Pad", ["x4"], dict(mode="edge", pad_width=(0, 0, 0, 0, 2, 3, 1, 4))),
    "pad_reflect4": ("Pad", ["x4"], dict(mode="reflect", pad_width=(0, 0, 0, 0, 2, 1, 3, 4))),
    "pad_edge5": ("Pad", ["x5"], dict(mode="edge", pad_width=(0, 0, 0, 0, 1, 1, 2, 0, 0, 3))),
    "pad_reflect5": ("Pad", ["x5"], dict(mode="reflect",
                                         pad_width=(0, 0, 0, 0, 2, 2, 1, 3, 4, 1))),
    "pad_const5": ("Pad", ["x5"], dict(mode="constant", pad_width=(0, 0, 0, 0, 1, 0, 0, 2, 3, 1))),
    "pad_half": ("Pad", ["x4h"], dict(mode="reflect", pad_width=(0, 0, 0, 0, 1, 2, 3, 2))),
    "swapaxis": ("SwapAxis", ["x4"], dict(dim1=1, dim2=3)),
    "swapaxis_neg": ("SwapAxis", ["x234"], dict(dim1=-1, dim2=0)),
    "bcast_axis": ("broadcast_axis", ["b131"], dict(axis=(0, 2), size=(2, 5))),
    "d2s": ("depth_to_space", ["c8"], dict(block_size=2)),
    "s2d": ("space_to_depth", ["s46"], dict(block_size=2)),
    "repeat_none": ("repeat", ["x234"], dict(repeats=2)),
    "repeat_neg": ("repeat", ["x234"], dict(repeats=3, axis=-1)),
    "repeat_0": ("repeat", ["x234"], dict(repeats=2, axis=0)),
    "repeat_int": ("repeat", ["i234"], dict(repeats=2, axis=1)),
    "tile_long": ("tile", ["x234"], dict(reps=(2, 1, 1, 2))),
    "tile_short": ("tile", ["x234"], dict(reps=(2, 3))),
    "tile_2d": ("tile", ["x34"], dict(reps=(2, 3))),
    "reverse": ("reverse", ["x234"], dict(axis=(0, 2))),
    "slice_like": ("slice_like", ["x234", "like23"], dict()),
    "slice_like_axes": ("slice_like", ["x234", "like23"], dict(axes=(0, -1))),
    "squeeze_all": ("squeeze", ["b131"], dict()),
    "squeeze_axis": ("squeeze", ["b131"], dict(axis=(-1,))),
    "stack_neg": ("stack", ["x234", "x234"], dict(axis=-1)),
    "stack_mid": ("stack", ["x234", "x234", "x234"], dict(axis=1)),
    "split_v2": ("_split_v2", ["x234"], dict(indices=(0, 1, 3), axis=-1)),
    "split_v2_sections": ("_split_v2", ["x234"], dict(indices=(), sections=3, axis=1,
                                                      squeeze_axis=True)),
    "seqmask": ("SequenceMask", ["seq", "seqlen"], dict(use_sequence_length=True, value=-2.0)),
    "seqmask_ax1": ("SequenceMask", ["seq_b", "seqlen_i"], dict(use_sequence_length=True,
                                                                axis=1)),
    "seqmask_off": ("SequenceMask", ["seq"], dict()),
    "seqlast": ("SequenceLast", ["seq", "seqlen"], dict(use_sequence_length=True)),
    "seqlast_ax1": ("SequenceLast", ["seq_b", "seqlen_j"], dict(use_sequence_length=True,
                                                                axis=1)),
    "seqlast_off": ("SequenceLast", ["seq"], dict()),
    "seqrev": ("SequenceReverse", ["seq", "seqlen"], dict(use_sequence_length=True)),
    "seqrev_off": ("SequenceReverse", ["seq"], dict()),
    "arange_like": ("_contrib_arange_like", ["x234"], dict(start=1.5, step=0.5, repeat=2)),
    "arange_like_axis": ("_contrib_arange_like", ["i234"], dict(start=2, step=3, axis=-1)),
    "im2col_2d": ("im2col", ["x4"], dict(kernel=(2, 3), stride=(2, 1), dilate=(1, 2),
                                         pad=(1, 1))),
    "im2col_half": ("im2col", ["x4h"], dict(kernel=(3, 2), pad=(0, 1))),
    "col2im_2d": ("col2im", ["col8"], dict(output_size=(4, 5), kernel=(2, 2))),
    "col2im_strided": ("col2im", ["col6"], dict(output_size=(5, 6), kernel=(3, 2),
                                                stride=(2, 2), dilate=(1, 2), pad=(1, 1))),
}

GRAD_CASES = ["pad_const4", "pad_edge4", "pad_reflect4", "pad_reflect5", "swapaxis",
              "bcast_axis", "d2s", "s2d", "repeat_none", "repeat_neg", "tile_2d", "reverse",
              "slice_like_axes", "stack_mid", "seqmask", "seqlast", "seqlast_ax1", "seqrev",
              "im2col_2d", "col2im_2d", "col2im_strided"]


def grad_head(shape):
    """The head gradient of a gradient case: fixed, distinct values."""
    return (np.arange(int(np.prod(shape)), dtype=np.float64).reshape(shape) % 7 - 3) / 4
