"""The single-machine KVStore (pushed and waited for): push + pull of keys
with two device copies each, summing only and with 2bit compression on
'device' (benchmarks/compare_kvstore_local.py puts MXNet 1.9.1 beside it)."""
import mx_kvstore as kvs
import mx_ndarray as nd
from mx_engine import cpu


class PushPull:
    """10 keys x ``size`` float32, copies on cpu(0) and cpu(1)."""
    params = ([1 << 10, 1 << 20], ["local", "device_2bit"])
    param_names = ["size", "store"]

    def setup(self, size, store):
        self.kv = kvs.create("device" if store == "device_2bit" else store)
        if store == "device_2bit":
            self.kv.set_gradient_compression({"type": "2bit", "threshold": 0.5})
        self.keys = list(range(10))
        self.kv.init(self.keys, [nd.zeros((size,)) for _ in self.keys])
        self.vals = [[nd.ones((size,), ctx=cpu(d)) for d in (0, 1)] for _ in self.keys]
        self.outs = [[nd.zeros((size,), ctx=cpu(d)) for d in (0, 1)] for _ in self.keys]
        nd.waitall()

    def time_push_pull(self, size, store):
        self.kv.push(self.keys, self.vals)
        self.kv.pull(self.keys, out=self.outs)
        nd.waitall()
