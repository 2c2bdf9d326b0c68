"""Updater: the optimizer with a state per index (MXNet 1.9.1's
``mx.optimizer.Updater`` and ``get_updater``), called as
``updater(index, grad, weight)`` or with lists of each."""
from mx import ndarray as nd
from mx.optimizer import states as _states


class Updater:
    """Applies ``optimizer`` to weights by index, creating each index's state
    on its first update.  With an optimizer that aggregates (``aggregate_num
    > 0``), a list call updates the weights of one dtype
    ``aggregate_num`` at a time in one operator call."""

    def __init__(self, optimizer):
        self.optimizer = optimizer
        self.states = {}
        self.states_synced = {}
        self.aggregate_updates = optimizer.aggregate_num > 0

    def __call__(self, index, grad, weight):
        if isinstance(index, (list, tuple)):
            indices, grads, weights = list(index), list(grad), list(weight)
        else:
            indices, grads, weights = [index], [grad], [weight]
        if len(grads) != len(indices) or len(weights) != len(indices):
            raise ValueError(f"Updater: {len(indices)} indices, {len(grads)} grads and "
                             f"{len(weights)} weights; they must match")
        if weights:
            self.optimizer._set_current_context(weights[0].context.device_id)
        for i, idx in enumerate(indices):
            if isinstance(idx, bytes):
                indices[i] = idx = idx.decode("utf-8")
            if idx not in self.states:
                self.states[idx] = self.optimizer.create_state_multi_precision(idx, weights[i])
                self.states_synced[idx] = True
            elif not self.states_synced[idx]:
                self.states[idx] = self.sync_state_context(self.states[idx],
                                                           weights[i].context)
                self.states_synced[idx] = True
        if not self.aggregate_updates:
            for i, w, g in zip(indices, weights, grads):
                self.optimizer.update_multi_precision(i, w, g, self.states[i])
            return
        by_dtype = {}
        for entry in zip(indices, weights, grads):
            by_dtype.setdefault(entry[1].dtype, []).append(entry)
        size = self.optimizer.aggregate_num
        for entries in by_dtype.values():
            for start in range(0, len(entries), size):
                idx, w, g = (list(x) for x in zip(*entries[start:start + size]))
                self.optimizer.update_multi_precision(idx, w, g, [self.states[i] for i in idx])

    def sync_state_context(self, state, context):
        """``state`` with its arrays moved to ``context`` (tuple/list kept)."""
        if isinstance(state, nd.NDArray):
            return state.as_in_context(context)
        if isinstance(state, (tuple, list)):
            synced = [self.sync_state_context(s, context) for s in state]
            return tuple(synced) if isinstance(state, tuple) else synced
        return state

    def set_states(self, states):
        """Loads what ``get_states`` wrote, or MXNet 1.9.1's pickled states
        (through the restricted unpickler; see ``mx.optimizer.states``).
        States saved with the optimizer replace it too."""
        loaded, optimizer = _states.loads(states)
        self.states = loaded
        if optimizer is not None:
            self.optimizer = optimizer
            self.aggregate_updates = optimizer.aggregate_num > 0
        self.states_synced = dict.fromkeys(self.states, False)

    def get_states(self, dump_optimizer=False):
        """The states (and with ``dump_optimizer`` the optimizer) as bytes in
        the safe format of ``mx.optimizer.states`` (no pickle)."""
        return _states.dumps(self.states, self.optimizer if dump_optimizer else None)


def get_updater(optimizer):
    """An ``Updater`` for ``optimizer``, the callable KVStore and Module use."""
    return Updater(optimizer)
