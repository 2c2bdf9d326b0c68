"""TrainingCurves: per-epoch train and validation metrics, plotted to a PNG."""
import os


def _pyplot():
    try:
        import matplotlib
    except ImportError:
        raise ImportError("mx.callback.TrainingCurves needs matplotlib to write its PNG; "
                          "install it with `pip install matplotlib`") from None
    matplotlib.use("Agg", force=False)      # no display needed; keeps an interactive one
    import matplotlib.pyplot as plt
    return plt


class TrainingCurves:
    """Collects the training and validation metrics of each epoch and plots
    them, one panel per metric, into the PNG ``path``.

    ``fit`` hands it the metrics through three callbacks::

        curves = mx.callback.TrainingCurves("curves.png")
        mod.fit(train_iter, eval_data=val_iter, eval_metric="acc",
                batch_end_callback=[mx.callback.Speedometer(64), curves.batch_end],
                epoch_end_callback=curves.epoch_end,
                eval_end_callback=curves.eval_end)

    ``batch_end`` only keeps a reference to the training metric (it reads
    nothing, so it never waits); ``epoch_end`` reads it once per epoch;
    ``eval_end`` reads the validation metric ``fit`` scored.  The PNG is
    rewritten after each of the last two, so it is current while training
    runs.  ``history`` maps ``"train-<name>"``/``"validation-<name>"`` to
    ``[(epoch, value), ...]``.

    matplotlib is imported when the PNG is first written; without it that
    raises ImportError naming matplotlib.
    """
    def __init__(self, path, title=None):
        self.path = os.fspath(path)
        self.title = title
        self.history = {}
        self._train_metric = None
        _pyplot()       # fail at construction, not after the first epoch

    def batch_end(self, param):
        """batch_end_callback: remembers the training metric."""
        self._train_metric = param.eval_metric

    def epoch_end(self, epoch, symbol=None, arg_params=None, aux_params=None):
        """epoch_end_callback: records the training metric of ``epoch``."""
        if self._train_metric is not None:
            self._record("train", epoch, self._train_metric.get_name_value())
            self.plot()

    def eval_end(self, param):
        """eval_end_callback: records the validation metric of ``param.epoch``."""
        if param.eval_metric is not None:
            self._record("validation", param.epoch, param.eval_metric.get_name_value())
            self.plot()

    def _record(self, split, epoch, name_value):
        for name, value in name_value:
            points = self.history.setdefault(f"{split}-{name}", [])
            points[:] = [p for p in points if p[0] != epoch] + [(epoch, float(value))]

    def plot(self, path=None):
        """Writes the curves so far to ``path`` (default: the constructor's)."""
        plt = _pyplot()
        from matplotlib.ticker import MaxNLocator
        names = sorted({key.split("-", 1)[1] for key in self.history})
        if not names:
            return
        fig, axes = plt.subplots(1, len(names), figsize=(4.5 * len(names), 3.5),
                                 squeeze=False)
        for ax, name in zip(axes[0], names):
            for split, style in (("train", "o-"), ("validation", "s--")):
                points = self.history.get(f"{split}-{name}")
                if points:
                    ax.plot([p[0] for p in points], [p[1] for p in points], style, label=split)
            ax.xaxis.set_major_locator(MaxNLocator(integer=True))
            ax.set_xlabel("epoch")
            ax.set_ylabel(name)
            ax.grid(True, alpha=0.3)
            ax.legend()
        if self.title:
            fig.suptitle(self.title)
        fig.tight_layout()
        fig.savefig(path or self.path, dpi=100)
        plt.close(fig)
