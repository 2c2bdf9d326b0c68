"""mx.metric: an epoch's metric work (reset, 100 updates, get) on (128, 10)
float32 scores.  MXNet 1.9.1 side by side: ``benchmarks/compare_metric.py``."""
import numpy as np

import mx

METRICS = {"accuracy": lambda: mx.metric.Accuracy(),
           "top5": lambda: mx.metric.TopKAccuracy(top_k=5),
           "cross-entropy": lambda: mx.metric.CrossEntropy()}


class MetricEpoch:
    params = [list(METRICS)]
    param_names = ["metric"]

    def setup(self, metric):
        rng = np.random.default_rng(7)
        scores = rng.random((100, 128, 10), dtype=np.float32)
        self.preds = [mx.nd.array(s / s.sum(axis=1, keepdims=True)) for s in scores]
        self.labels = [mx.nd.array(rng.integers(0, 10, 128).astype(np.float32))
                       for _ in range(100)]
        self.metric = METRICS[metric]()
        mx.nd.waitall()

    def time_update_get(self, metric):
        self.metric.reset()
        for label, pred in zip(self.labels, self.preds):
            self.metric.update([label], [pred])
        self.metric.get()       # waits for the queued statistics
