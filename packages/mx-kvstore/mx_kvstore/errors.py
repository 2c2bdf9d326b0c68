"""The KVStore's errors: MXNetError together with the built-in each fits,
so ``except KeyError`` / ``except ValueError`` still catch them."""
from mx_engine.base import MXNetError


class KVStoreError(MXNetError, ValueError):
    """A call the store refuses: a key initialised twice, a value whose
    shape or dtype differs from the key's, keys of mixed types, lists of
    different lengths, an unknown store type or compression."""


class UnknownKeyError(MXNetError, KeyError):
    """A push or pull of a key that was never initialised."""

    def __init__(self, api, key):
        super().__init__(api, key)
        self.api = api
        self.key = key

    def __str__(self):
        # KeyError's own __str__ would print the repr of the arguments.
        return f"KVStore.{self.api}: key {self.key!r} has not been initialized (call init first)"
