"""FairPool: threads shared by keys in turns. Each key has at most per_key jobs running, a key
with one job is not held behind another key's queue, every job runs once and its result or
error reaches its caller; and on a real endpoint, one user's heavy requests leave a thread for
everyone else's."""

import asyncio
import threading
import time

import pytest
from hypothesis import given, settings, strategies as st

from kafkasec.protocol.api_keys import ApiKey
from kafkasec.server.fair_pool import FairPool

from server_support import add_users, heavy_then_light, logged_in, open_security, request, run, serving


def test_a_key_with_one_job_runs_while_another_keys_jobs_wait_their_turns():
    async def scenario():
        pool = FairPool(2, "test")
        release = threading.Event()
        started = []

        def heavy(index):
            started.append(("mallory", index))
            release.wait(10)
            return index

        try:
            heavy_jobs = [asyncio.ensure_future(pool.run("mallory", heavy, index)) for index in range(4)]
            await asyncio.sleep(0.05)
            assert started == [("mallory", 0)]  # per_key = threads - 1: one of mallory's at a time
            assert pool.waiting("mallory") == 3
            # alice is served by the other thread, though mallory queued first.
            assert await asyncio.wait_for(pool.run("alice", lambda: "alice's answer"), 5) == "alice's answer"
            release.set()
            assert await asyncio.gather(*heavy_jobs) == [0, 1, 2, 3]
        finally:
            pool.shutdown()

    asyncio.run(scenario())


def test_an_error_reaches_its_caller_and_the_pool_goes_on():
    async def scenario():
        pool = FairPool(1, "test")
        try:
            with pytest.raises(ZeroDivisionError):
                await pool.run("k", lambda: 1 / 0)
            assert await pool.run("k", lambda: 42) == 42
        finally:
            pool.shutdown()

    asyncio.run(scenario())


def test_a_cancelled_caller_drops_its_waiting_job():
    async def scenario():
        pool = FairPool(1, "test")
        release = threading.Event()
        ran = []
        try:
            blocking = asyncio.ensure_future(pool.run("a", release.wait, 10))
            await asyncio.sleep(0.05)
            dropped = asyncio.ensure_future(pool.run("a", ran.append, "dropped"))
            await asyncio.sleep(0.01)
            dropped.cancel()
            release.set()
            await blocking
            assert await pool.run("a", ran.append, "kept") is None
            assert ran == ["kept"]
        finally:
            pool.shutdown()

    asyncio.run(scenario())


@pytest.mark.parametrize("threads, per_key", [(0, None), (2, 3), (2, 0)])
def test_bad_sizes_are_refused(threads, per_key):
    with pytest.raises(ValueError):
        FairPool(threads, "test", per_key=per_key)


@settings(max_examples=40, deadline=None)
@given(
    keys=st.lists(st.sampled_from("abcd"), min_size=1, max_size=40),
    threads=st.integers(1, 4),
    per_key=st.integers(1, 4),
)
def test_every_job_runs_once_and_no_key_exceeds_its_share(keys, threads, per_key):
    per_key = min(per_key, threads)
    running: dict[str, int] = {}
    most: dict[str, int] = {}
    lock = threading.Lock()

    def job(key, index):
        with lock:
            running[key] = running.get(key, 0) + 1
            most[key] = max(most.get(key, 0), running[key])
        time.sleep(0.001)
        with lock:
            running[key] -= 1
        return index

    async def scenario():
        pool = FairPool(threads, "test", per_key=per_key)
        try:
            return await asyncio.gather(*(pool.run(key, job, key, index) for index, key in enumerate(keys)))
        finally:
            pool.shutdown()

    assert asyncio.run(scenario()) == list(range(len(keys)))
    assert max(most.values()) <= per_key


def test_one_users_heavy_requests_leave_a_thread_for_other_users(tmp_path):
    """Four DescribeGroups of 40,000 group ids from a user with no ACLs, on four connections,
    and then a small one from another user: the small one is answered before the heavy user's
    second answer (with one FIFO pool of two threads it waited for two of them)."""
    heavy_groups = [f"g{index}" for index in range(40_000)]
    with open_security(tmp_path / "state.db", **{"num.io.threads": "2"}) as security:
        add_users(security)
        with serving(security) as endpoint:
            answered, light_answer, answers = run(heavy_then_light(
                endpoint, request(ApiKey.DESCRIBE_GROUPS, 5, groups=heavy_groups), request(ApiKey.DESCRIBE_GROUPS, 5, groups=["g1"])))
            assert answered.index("alice") < 2, answered
            assert [group.error_code for group in light_answer.groups] == [30]  # GROUP_AUTHORIZATION_FAILED
            assert all(len(answer.groups) == 40_000 for answer in answers)


def test_a_blocking_mechanisms_slow_step_runs_off_the_loop(tmp_path):
    """A plugin mechanism whose step waits 2 s (a directory that is slow to answer), marked
    blocking: a SCRAM login and request on another connection are answered meanwhile."""
    import enum

    from kafkasec import hookimpl
    from kafkasec.sasl import SaslExchange, SaslMechanism, sasl_transitions

    class State(enum.Enum):
        RECEIVE_TOKEN = "RECEIVE_TOKEN"
        COMPLETE = "COMPLETE"
        FAILED = "FAILED"

    class SlowDirectory(SaslExchange):
        TRANSITIONS = sasl_transitions({State.RECEIVE_TOKEN: ("_receive", {State.COMPLETE})}, State.FAILED)
        INITIAL, COMPLETE, FAILED = State.RECEIVE_TOKEN, State.COMPLETE, State.FAILED
        mechanism_name = "X-SLOW"

        def _receive(self, data):
            time.sleep(2.0)  # the directory's answer
            self._authorization_id = data.decode()
            return b""

    class SlowPlugin:
        @staticmethod
        @hookimpl
        def kafkasec_sasl_mechanisms(security):
            return [SaslMechanism("X-SLOW", lambda security, listener: SlowDirectory(), blocking=True)]

    from kafkasec.client.connection import KafkaConnection
    from kafkasec.protocol import wire

    settings = {"sasl.enabled.mechanisms": "SCRAM-SHA-256,X-SLOW"}
    with open_security(tmp_path / "state.db", plugins=[SlowPlugin()], **settings) as security:
        add_users(security)
        with serving(security) as endpoint:

            async def scenario():
                slow = await KafkaConnection.open(endpoint.host, endpoint.port)
                handshake = wire.build(wire.request_schema(ApiKey.SASL_HANDSHAKE, 1), mechanism="X-SLOW")
                await slow.request(handshake)
                step = wire.build(wire.request_schema(ApiKey.SASL_AUTHENTICATE, 2), auth_bytes=b"carol")
                slow_login = asyncio.ensure_future(slow.request(step))
                await asyncio.sleep(0.2)  # the slow step is under way
                started = time.monotonic()
                other = await logged_in(endpoint, "alice")
                await other.negotiate()
                other_took = time.monotonic() - started
                slow_answer = await slow_login
                await other.close()
                await slow.close()
                return other_took, int(slow_answer.error_code)

            other_took, code = run(scenario())
            assert code == 0
            assert other_took < 1.5  # the loop did not wait for the 2 s step
