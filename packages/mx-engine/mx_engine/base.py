"""Errors shared by every mx package (``mx.base`` re-exports them)."""


class MXNetError(RuntimeError):
    """An error raised by the engine or an operator, as MXNet's ``MXNetError``.

    Derives from RuntimeError so ``except RuntimeError`` still catches it;
    more precise errors subclass it together with the matching built-in.
    """
