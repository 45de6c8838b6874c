"""task.spawn and the waits against a real server, on both stores: a
parent fans out to children and sums their results on its resumption
(each child run once, the parent's slot free while it waits); a job
waiting for a signal is woken by Client.signal with its payload, or by
its timeout; a signal sent before the wait is kept (AsyncClient.signal);
a sleep ends on its own; a refused spawn names the child's field and
spawns nothing."""

from __future__ import annotations

import asyncio
import datetime as dt
import threading
from typing import Any, Callable, Dict, List

import pytest

import jobd

from conftest import Server, WorkerThread, job_state, poll

CHILDREN = 20


def _worker(server: Server, queue: str, h: jobd.Handlers, concurrency: int = 1) -> jobd.Worker:
    return jobd.Worker(server.url, server.worker_key(), queues=[queue], handlers=h, concurrency=concurrency,
                       claim_wait=5.0, heartbeat_interval=0.5)


def test_parent_sums_children(server: Server, queue: str, start_worker: Callable[..., WorkerThread]) -> None:
    # One slot for the parent and its 20 children on one queue: the
    # children run only if the waiting parent gives its slot back.
    h = jobd.Handlers()
    lock = threading.Lock()
    child_runs: Dict[int, int] = {}
    parent_runs: List[Dict[str, Any]] = []

    @h.handler("sq")
    def square(task: jobd.SyncTask) -> int:
        n = int(task.args["n"])
        with lock:
            child_runs[n] = child_runs.get(n, 0) + 1
        return n * n

    @h.handler("fan")
    async def fan(task: jobd.Task) -> int:
        parent_runs.append(dict(task.children))
        if not task.children:
            got = await task.spawn([{"key": "c%d" % i, "kind": "sq", "args": {"n": i}, "queue": queue} for i in range(CHILDREN)])
            assert [c.key for c in got] == ["c%d" % i for i in range(CHILDREN)] and all(c.created for c in got)
            # A spawn again of a key spawned is that child, not a new one.
            again = await task.spawn("c0", "sq", {"n": 0}, queue=queue)
            assert (again.id, again.created) == (got[0].id, False)
            task.wait_for_children()
        return sum(task.child("c%d" % i) for i in range(CHILDREN))

    with server.client() as c:
        pid = c.submit("fan", {}, queue=queue).id
        w = _worker(server, queue, h)
        wt = start_worker(w)
        f = poll(job_state(c, pid, "succeeded", "failed"), "the parent", timeout=60)
        wt.stop()
        assert (f.state, f.result, f.attempt) == ("succeeded", sum(i * i for i in range(CHILDREN)), 1)
        assert child_runs == {i: 1 for i in range(CHILDREN)}
        assert len(parent_runs) == 2 and parent_runs[0] == {}
        resumed = parent_runs[1]
        assert sorted(resumed) == sorted("c%d" % i for i in range(CHILDREN))
        assert all(v["state"] == "succeeded" and v["id"] for v in resumed.values())
        assert w.stats.waited == 1
        kinds = [e.kind for e in c.events(pid)]
        assert "waiting" in kinds and "woken" in kinds


def test_child_error(server: Server, queue: str, start_worker: Callable[..., WorkerThread]) -> None:
    # task.child raises ChildError for a child that failed, naming it.
    h = jobd.Handlers()

    @h.handler("bad")
    def bad(task: jobd.SyncTask) -> None:
        raise jobd.Permanent("no")

    @h.handler("parent")
    def parent(task: jobd.SyncTask) -> str:
        if not task.children:
            task.spawn("only", "bad", {}, queue=queue)
            task.wait_for_children()
        with pytest.raises(jobd.ChildError) as e:
            task.child("only")
        with pytest.raises(jobd.ChildError):
            task.child("none")
        return "%s %s" % (e.value.key, e.value.state)

    with server.client() as c:
        pid = c.submit("parent", {}, queue=queue).id
        wt = start_worker(_worker(server, queue, h))
        f = poll(job_state(c, pid, "succeeded", "failed"), "the parent", timeout=60)
        wt.stop()
        assert (f.state, f.result) == ("succeeded", "only failed")


def test_signal_wakes_waiting_job(server: Server, queue: str, start_worker: Callable[..., WorkerThread]) -> None:
    h = jobd.Handlers()
    seen: List[Any] = []

    @h.handler("approve")
    def approve(task: jobd.SyncTask) -> Any:
        seen.append(task.signal)
        if task.signal is None:
            task.wait_for_signal("approved")
        return task.signal["payload"]

    with server.client() as c:
        jid = c.submit("approve", {}, queue=queue).id
        w = _worker(server, queue, h)
        wt = start_worker(w)
        j = poll(job_state(c, jid, "waiting"), "the job to wait")
        waits = [e.detail for e in c.events(jid) if e.kind == "waiting"]
        assert waits == ['signal "approved"'], waits
        assert not w.running  # the slot is free
        res = c.signal(jid, "approved", {"by": "ann"})
        assert res.delivered and res.job.id == jid
        f = poll(job_state(c, jid, "succeeded", "failed"), "the job")
        wt.stop()
        assert (f.state, f.result, f.attempt) == ("succeeded", {"by": "ann"}, 1)
        assert seen[0] is None and seen[1]["name"] == "approved" and not seen[1].get("timed_out")
        with pytest.raises(jobd.WrongStateError):
            c.signal(jid, "approved")


def test_signal_wait_times_out(server: Server, queue: str, start_worker: Callable[..., WorkerThread]) -> None:
    h = jobd.Handlers()

    @h.handler("approve")
    async def approve(task: jobd.Task) -> str:
        if task.signal is None:
            task.wait_for_signal("approved", timeout=0.3)
        assert task.signal["name"] == "approved"
        return "timed out" if task.signal.get("timed_out") else "approved"

    with server.client() as c:
        jid = c.submit("approve", {}, queue=queue).id
        wt = start_worker(_worker(server, queue, h))
        f = poll(job_state(c, jid, "succeeded", "failed"), "the job")
        wt.stop()
        assert (f.state, f.result, f.attempt) == ("succeeded", "timed out", 1)


def test_signal_before_wait_is_kept(server: Server, queue: str, start_worker: Callable[..., WorkerThread]) -> None:
    # The signal comes first (AsyncClient.signal): kept, not delivered;
    # the wait takes it at once.
    h = jobd.Handlers()

    @h.handler("approve")
    async def approve(task: jobd.Task) -> Any:
        if task.signal is None:
            task.wait_for_signal("go", timeout=dt.timedelta(hours=1))
        return task.signal["payload"]

    async def send(jid: str) -> jobd.SignalResult:
        async with server.aclient() as ac:
            return await ac.signal(jid, "go", [1, 2])

    with server.client() as c:
        jid = c.submit("approve", {}, queue=queue).id
        res = asyncio.run(send(jid))
        assert not res.delivered and res.job.state == "queued"
        wt = start_worker(_worker(server, queue, h))
        f = poll(job_state(c, jid, "succeeded", "failed"), "the job")
        wt.stop()
        assert (f.state, f.result) == ("succeeded", [1, 2])


def test_sleep_until(server: Server, queue: str, start_worker: Callable[..., WorkerThread]) -> None:
    h = jobd.Handlers()
    runs: List[dt.datetime] = []

    @h.handler("nap")
    async def nap(task: jobd.Task) -> int:
        runs.append(dt.datetime.now(dt.timezone.utc))
        if len(runs) == 1:
            task.sleep_until(runs[0] + dt.timedelta(milliseconds=300))
        return len(runs)

    with server.client() as c:
        jid = c.submit("nap", {}, queue=queue).id
        wt = start_worker(_worker(server, queue, h))
        f = poll(job_state(c, jid, "succeeded", "failed"), "the job")
        wt.stop()
        assert (f.state, f.result, f.attempt) == ("succeeded", 2, 1)
        assert runs[1] - runs[0] >= dt.timedelta(milliseconds=300)


def test_wait_arguments() -> None:
    # Bad waits are refused in the handler, before anything is sent.
    t = jobd.Task.__new__(jobd.Task)
    with pytest.raises(ValueError):
        t.wait_for_signal("")
    with pytest.raises(ValueError):
        t.wait_for_signal("x", timeout=0)
    with pytest.raises(TypeError):
        t.sleep_until(5)  # type: ignore[arg-type]
    with pytest.raises(jobd.Wait) as e:
        t.wait_for_signal("x", timeout=90)
    assert e.value.body == {"for": "signal", "signal": "x", "timeout": "90s"}


def test_spawn_refused(server: Server, queue: str, start_worker: Callable[..., WorkerThread]) -> None:
    # A spawn the server refuses raises its ValidationError, naming the
    # child's field, and spawns none of the children.
    h = jobd.Handlers()

    @h.handler("parent")
    async def parent(task: jobd.Task) -> Any:
        try:
            await task.spawn([jobd.Child("ok", jobd.JobSpec("c", queue=queue + "-kids")),
                              {"key": "bad", "kind": "c", "queue": queue + "-kids", "idempotency_key": "k"}])
        except jobd.ValidationError as e:
            return e.field
        return "spawned"

    with server.client() as c:
        pid = c.submit("parent", {}, queue=queue).id
        wt = start_worker(_worker(server, queue, h))
        f = poll(job_state(c, pid, "succeeded", "failed"), "the parent")
        wt.stop()
        assert (f.state, f.result) == ("succeeded", "children[1].idempotency_key")
        assert c.count(queue=queue + "-kids") == 0
