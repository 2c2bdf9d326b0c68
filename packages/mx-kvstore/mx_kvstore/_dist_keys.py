"""Where each key of a distributed store lives (design note 004, "mxnet::KVStore").

Every server owns an equal range of the 64-bit key space.  A key whose value
has fewer than ``MXNET_KVSTORE_BIGARRAY_BOUND`` elements lives whole on one
server, picked by ``hash(key) % num_servers`` (MXNet's hash: ``key * 9973``),
stored there as ``range_begin(server) + key``.  A larger value is split
evenly over all servers, each slice under the same relative key in its
server's range, so a server decodes every key by subtracting its own range
start.
"""
import math

from mx_kvstore._dist_mpi import env_int

KEY_SPACE = 2 ** 64 - 1
DEFAULT_BIGARRAY_BOUND = 1000 * 1000


def bigarray_bound():
    """MXNET_KVSTORE_BIGARRAY_BOUND (elements), MXNet's default 10^6."""
    return env_int("MXNET_KVSTORE_BIGARRAY_BOUND", DEFAULT_BIGARRAY_BOUND, 1, " elements")


def range_begin(server, num_servers):
    """The first key of ``server``'s range."""
    return (KEY_SPACE // num_servers) * server


def max_key(num_servers):
    """Keys must stay inside one server's range."""
    return KEY_SPACE // num_servers - 1


def _round_half_up(x):
    return int(math.floor(x + 0.5))


def partition(key, size, num_servers, bound):
    """``[(server, server_key, start, stop)]``: the slices of a flat value of
    ``size`` elements under ``key`` (an int >= 0), in order."""
    if not 0 <= key <= max_key(num_servers):
        raise ValueError(f"kvstore key {key} is outside 0..{max_key(num_servers)} "
                         f"for {num_servers} servers")
    if size < bound or num_servers == 1:
        server = (key * 9973) % num_servers
        return [(server, range_begin(server, num_servers) + key, 0, size)]
    parts = []
    for server in range(num_servers):
        start = _round_half_up(size / num_servers * server)
        stop = _round_half_up(size / num_servers * (server + 1))
        parts.append((server, range_begin(server, num_servers) + key, start, stop))
    return parts


def decode(server_key, server, num_servers):
    """The user's key of ``server_key`` stored on ``server``."""
    return server_key - range_begin(server, num_servers)


def partition_rows(key, rows, row_len, num_servers, bound):
    """As ``partition``, for a row_sparse key of ``rows`` rows of ``row_len``
    elements: a big one is split by whole rows (MXNet's EncodeRowSparseKey:
    rows ``round(rows/S*i) .. round(rows/S*(i+1))`` on server i), so each
    server holds whole rows.  Element ranges, as ``partition``'s."""
    parts = partition(key, rows * row_len, num_servers, bound)
    if len(parts) == 1:
        return parts
    out = []
    for server, skey, _, _ in parts:
        first = _round_half_up(rows / num_servers * server)
        last = _round_half_up(rows / num_servers * (server + 1))
        out.append((server, skey, first * row_len, last * row_len))
    return out
