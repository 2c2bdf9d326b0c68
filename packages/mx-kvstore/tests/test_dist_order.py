"""PostOrder: a key's requests are posted in the order of the calls that
made them, whatever order the engine runs their functions in, and a
function the engine skipped gives up its turn."""
import random
import threading

from hypothesis import given, settings, strategies as st

from mx_kvstore._dist_transport import PostOrder


def _post(posted, what, done, then=None):
    """A transfer's start: records its post, finishes, leaves nothing for later."""
    posted.append(what)
    if then is not None:
        then()
    done()


def _transfers(order, count, posted):
    """count gated transfers; each records its ticket when it posts."""
    gates = []
    for _ in range(count):
        ticket = order.ticket()
        gates.append(order.gate(ticket, lambda done, t=ticket: _post(posted, t, done)))
    return gates


@settings(max_examples=200, deadline=None)
@given(st.data())
def test_posts_leave_in_ticket_order_whatever_order_the_engine_runs_them(data):
    count = data.draw(st.integers(1, 12))
    runs = data.draw(st.permutations(range(count)))
    skipped = data.draw(st.sets(st.sampled_from(range(count))))
    order, posted, finished = PostOrder(), [], []
    gates = _transfers(order, count, posted)
    for i in runs:
        if i in skipped:
            gates[i].release()              # the engine skipped it: no call
        else:
            gates[i](lambda error=None, i=i: finished.append((i, error)))
            gates[i].release()              # the engine's release after done
        # Nothing posts before every earlier ticket has posted or was skipped.
        assert posted == sorted(posted)
    assert posted == [i for i in range(count) if i not in skipped]
    assert sorted(finished) == [(i, None) for i in range(count) if i not in skipped]


def test_a_failing_post_fails_its_transfer_and_the_next_ones_still_post():
    order, posted, errors = PostOrder(), [], {}

    def broken(done):
        raise ValueError("no such server")
    first = order.gate(order.ticket(), broken)
    second = order.gate(order.ticket(), lambda done: _post(posted, 1, done))
    second(lambda error=None: errors.setdefault(1, error))
    assert posted == []                     # waits for the first
    first(lambda error=None: errors.setdefault(0, error))
    assert posted == [1]
    assert errors == {0: "ValueError: no such server", 1: None}


def test_what_a_post_leaves_for_later_runs_after_the_next_posts_and_unlocked():
    """A shared-memory push posts its header, then copies its chunks in:
    the copies run after the posts ready behind it (a pull after the push
    reaches the server while the push still copies) and outside the lock
    (another thread's post does not wait for them)."""
    order, events = PostOrder(), []
    push_ticket, pull_ticket = order.ticket(), order.ticket()
    other = threading.Thread(target=lambda: order.gate(order.ticket(), lambda done: _post(
        events, "next post", done))(lambda error=None: None))

    def copies():
        events.append("push copies start")
        other.start()           # posts while this copy still runs: the lock is free
        other.join(5)
        events.append("push copies end")

    def push(done):
        events.append("push header")
        return copies
    pull = order.gate(pull_ticket, lambda done: _post(events, "pull header", done))
    pull(lambda error=None: None)               # the engine ran the pull first: it waits
    order.gate(push_ticket, push)(lambda error=None: None)
    assert not other.is_alive()
    assert events == ["push header", "pull header", "push copies start", "next post",
                      "push copies end"]


def test_engine_threads_running_gates_concurrently_keep_the_order():
    order, posted = PostOrder(), []
    gates = _transfers(order, 200, posted)
    shuffled = list(range(200))
    random.Random(7).shuffle(shuffled)
    parts = [shuffled[k::4] for k in range(4)]
    threads = [threading.Thread(target=lambda p=p: [gates[i](lambda error=None: None) for i in p])
               for p in parts]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    assert posted == list(range(200))


def test_a_transfer_the_engine_skips_after_a_failed_input_gives_up_its_turn():
    import pytest
    from mx_engine import Context
    from mx_engine.base import MXNetError
    from mx_ndarray import ndarray as nd
    from mx_kvstore._dist_engine import push_transfer

    cpu = Context("cpu", 0)
    failed, skipped_out, later_out = nd.zeros((2,)), nd.zeros((2,)), nd.zeros((2,))
    push_transfer(lambda done: done("the server is gone"), [], [failed], cpu, "Failing")
    order, posted, went = PostOrder(), [], threading.Event()
    skipped = order.gate(order.ticket(), lambda done: _post(posted, "skipped", done))
    later = order.gate(order.ticket(), lambda done: _post(posted, "later", done, went.set))
    push_transfer(skipped, [failed], [skipped_out], cpu, "ReadsTheFailed")
    push_transfer(later, [], [later_out], cpu, "Later")
    assert went.wait(timeout=20), "the transfer after a skipped one never posted"
    later_out.wait_to_read()
    assert posted == ["later"]
    with pytest.raises(MXNetError, match="the server is gone"):
        failed.wait_to_read()
