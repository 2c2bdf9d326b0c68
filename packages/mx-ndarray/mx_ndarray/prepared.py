"""TEMPORARY shim, replaced by wip-prepared (the real PreparedCall) before this session ends."""
from mx_ndarray._ndarray import invoke
from mx_ops import registry
from mx_ops.training import train_mode, predict_mode


class PreparedCall:
    def __init__(self, op, params, inputs, outputs, reqs):
        self.op = registry.get(op) if isinstance(op, str) else op
        self.params = {k: v for k, v in params.items() if not k.startswith("_")}
        self.inputs, self.outputs, self.reqs = inputs, outputs, reqs

    def push(self, is_train):
        n = self.op.visible_output_count(self.params)
        with (train_mode() if is_train else predict_mode()):
            invoke(self.op.name, self.inputs, out=self.outputs[:n] if n > 1 else self.outputs[0], **self.params)


def push_all(calls, is_train):
    for c in calls:
        c.push(is_train)
