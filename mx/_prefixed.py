"""The operator sub-modules MXNet groups by name prefix (``mx.nd.linalg``
holds ``_linalg_*``, ``mx.nd.contrib`` holds ``_contrib_*``, ...): a module
``__getattr__``/``__dir__`` pair over an ``_internal`` module, so that an
operator registered under the prefix (built in or at run time) appears in
the sub-module without a second list to keep."""

__all__ = ["prefixed"]


def prefixed(module, prefix, internal):
    """``(__getattr__, __dir__)`` for ``module`` (its dotted name), serving
    ``internal.<prefix><name>`` as ``<name>``; an unknown name raises
    AttributeError naming ``module``."""
    def module_getattr(name):
        if not name.startswith("__"):
            try:
                return getattr(internal, prefix + name)
            except AttributeError:
                pass
        raise AttributeError(f"module '{module}' has no attribute '{name}'")

    def module_dir():
        return sorted(n[len(prefix):] for n in dir(internal) if n.startswith(prefix))

    return module_getattr, module_dir
