"""The worker against a real server, on both stores: the whole remote
lifecycle, cancellation, shutdown, a worker process SIGKILLed mid-job, 503
retries and a lost outcome answer."""

from __future__ import annotations

import asyncio
import datetime as dt
import os
import signal
import subprocess
import sys
import threading
import time
from typing import Any, Callable, Dict, List

import pytest

import jobd

from conftest import Server, WorkerThread, job_state, poll, worker_env
from proxy import busy, no_route


def _worker(server: Server, queues: Any, handlers: jobd.Handlers, key: str = "", **kw: Any) -> jobd.Worker:
    kw.setdefault("claim_wait", 5.0)
    return jobd.Worker(server.url, key or server.worker_key(), queues=queues, handlers=handlers, **kw)


def _kinds(c: jobd.Client, job_id: str) -> List[str]:
    return [e.kind for e in c.events(job_id)]


def test_worker_lifecycle(server: Server, queue: str, start_worker: Callable[..., WorkerThread]) -> None:
    h = jobd.Handlers()

    @h.handler("steps")
    async def steps(task: jobd.Task) -> Dict[str, Any]:
        await task.progress(1, 2, "load", items=[{"file": "a.csv", "rows": 10}])
        await task.save_checkpoint({"file": "a.csv"})
        await task.progress(2, 2, "load", items=[{"file": "a.csv", "rows": 10}, {"file": "b.csv", "rows": 5}])
        return {"rows": 15, "args": task.args}

    @h.handler("flaky")
    async def flaky(task: jobd.Task) -> Dict[str, Any]:
        if task.attempt == 1:
            await task.save_checkpoint({"done": 1})
            raise RuntimeError("first attempt fails")
        return {"checkpoint": task.checkpoint, "attempt": task.attempt}

    @h.handler("blocking")
    def blocking(task: jobd.SyncTask) -> str:
        task.progress(1, 1, "thread")
        task.save_checkpoint({"in": "thread"})
        return "from %s" % threading.current_thread().name

    @h.handler("permanent")
    async def permanent(task: jobd.Task) -> None:
        try:
            int("x")
        except ValueError as e:
            raise jobd.Permanent("bad input") from e

    @h.handler("later")
    async def later(task: jobd.Task) -> None:
        raise jobd.RetryAfter(3600, "come back in an hour")

    @h.handler("throttled")
    async def throttled(task: jobd.Task) -> None:
        raise jobd.Permanent("wrapped") from jobd.Throttle(dt.timedelta(hours=1), "429 from the bank")

    @h.handler("unencodable")
    async def unencodable(task: jobd.Task) -> object:
        return object()

    with server.client() as c:
        # A throttle holds back its whole queue: it has one of its own.
        ids = {k: c.submit(k, {"k": k}, queue=queue + ".t" if k == "throttled" else queue, max_attempts=3).id
               for k in ("steps", "flaky", "blocking", "permanent", "later", "throttled", "unencodable", "unknown")}
        w = _worker(server, [{"queue": queue, "concurrency": 4}, {"queue": queue + ".t", "concurrency": 1}], h)
        wt = start_worker(w)
        final = {k: poll(job_state(c, i, "succeeded", "failed"), k) for k, i in ids.items() if k not in ("later", "throttled")}
        later_job = poll(lambda: _after_failure(c, ids["later"]), "later")
        thr_job = poll(lambda: _after_failure(c, ids["throttled"], "throttled"), "throttled")
        wt.stop()

        s = final["steps"]
        assert (s.state, s.result, s.attempt) == ("succeeded", {"rows": 15, "args": {"k": "steps"}}, 1)
        assert s.progress == jobd.Progress("load", 2, 2, [{"file": "a.csv", "rows": 10}, {"file": "b.csv", "rows": 5}])
        assert s.checkpoint == {"file": "a.csv"}

        f = final["flaky"]
        assert (f.state, f.attempt, f.result) == ("succeeded", 2, {"checkpoint": {"done": 1}, "attempt": 2}), "checkpoint kept across retries"
        assert "retried" in _kinds(c, f.id)

        b = final["blocking"]
        assert b.state == "succeeded" and b.result.startswith("from jobd-handler") and b.checkpoint == {"in": "thread"}

        p = final["permanent"]
        assert (p.state, p.attempt) == ("failed", 1) and p.error.startswith("bad input: ValueError")

        assert later_job.attempt == 1 and later_job.error == "come back in an hour"
        assert later_job.run_at is not None and later_job.run_at - dt.datetime.now(dt.timezone.utc) > dt.timedelta(minutes=50)

        assert "429 from the bank" in thr_job.error and "throttled" in _kinds(c, thr_job.id)
        assert thr_job.run_at is not None and thr_job.run_at - dt.datetime.now(dt.timezone.utc) > dt.timedelta(minutes=50)

        u = final["unencodable"]
        assert (u.state, u.attempt) == ("failed", 1) and "encode result" in u.error
        n = final["unknown"]
        assert (n.state, n.attempt) == ("failed", 1) and "no handler for kind 'unknown'" in n.error

        assert w.stats.succeeded == 3 and w.stats.outcome_errors == 0 and w.stats.dropped == 0
        for i in (ids["later"], ids["throttled"]):
            c.cancel(i)


def _after_failure(c: jobd.Client, job_id: str, event: str = "retried") -> Any:
    j = c.get(job_id)
    return j if j.state == "queued" and event in _kinds(c, job_id) else None


def test_concurrency_per_queue(server: Server, queue: str, start_worker: Callable[..., WorkerThread]) -> None:
    q1, q2 = queue + ".a", queue + ".b"
    release = threading.Event()
    h = jobd.Handlers()

    @h.handler("hold")
    def hold(task: jobd.SyncTask) -> None:
        release.wait(60)

    with server.client() as c:
        for q in (q1, q1, q1, q1, q2, q2):
            c.submit("hold", queue=q)
        wt = start_worker(_worker(server, '[{"queue":"%s","concurrency":2},{"queue":"%s","concurrency":1}]' % (q1, q2), h))
        poll(lambda: c.count(queue=q1, state="running") == 2 and c.count(queue=q2, state="running") == 1, "2 + 1 running")
        assert c.count(queue=q1, state="queued") == 2 and c.count(queue=q2, state="queued") == 1
        release.set()
        poll(lambda: c.count(queue=q1, state="succeeded") == 4 and c.count(queue=q2, state="succeeded") == 2, "all done")
        wt.stop()


def test_cancel_reaches_an_async_handler(server: Server, queue: str, start_worker: Callable[..., WorkerThread]) -> None:
    seen: Dict[str, Any] = {}
    h = jobd.Handlers()

    @h.handler("block")
    async def block(task: jobd.Task) -> None:
        await task.progress(0, 1, "waiting")
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            seen[task.id] = task.stop_reason
            raise

    with server.client() as c:
        j = c.submit("block", queue=queue, lease_ttl=30)
        w = _worker(server, [queue], h, heartbeat_interval=0.2)
        wt = start_worker(w)
        poll(lambda: c.get(j.id).progress.phase == "waiting", "the handler to run")
        c.cancel(j.id)
        done = poll(job_state(c, j.id, "canceled", "failed", "succeeded"), "the job to end")
        assert done.state == "canceled" and seen == {j.id: "canceled"}
        wt.stop()


def test_cancel_reaches_a_threaded_handler(server: Server, queue: str, start_worker: Callable[..., WorkerThread]) -> None:
    seen: Dict[str, Any] = {}
    h = jobd.Handlers()

    @h.handler("loop")
    def loop(task: jobd.SyncTask) -> None:
        task.progress(0, 1, "looping")
        while not task.stop_event.wait(0.02):
            pass
        seen[task.id] = (task.cancelled, task.cancel_requested, task.stop_reason)
        task.raise_if_cancelled()

    with server.client() as c:
        j = c.submit("loop", queue=queue, lease_ttl=30)
        wt = start_worker(_worker(server, [queue], h, heartbeat_interval=0.2))
        poll(lambda: c.get(j.id).progress.phase == "looping", "the handler to run")
        c.cancel(j.id)
        done = poll(job_state(c, j.id, "canceled", "failed", "succeeded"), "the job to end")
        assert done.state == "canceled" and seen == {j.id: (True, True, "canceled")}
        wt.stop()


def test_stop_waits_for_running_jobs_and_stops_claiming(server: Server, queue: str, start_worker: Callable[..., WorkerThread]) -> None:
    gate = threading.Event()
    h = jobd.Handlers()

    @h.handler("gated")
    def gated(task: jobd.SyncTask) -> str:
        task.progress(0, 1, "in")
        gate.wait(60)
        return "finished"

    with server.client() as c:
        j = c.submit("gated", queue=queue)
        w = _worker(server, [queue], h, shutdown_timeout=60)
        wt = start_worker(w)
        poll(lambda: c.get(j.id).progress.phase == "in", "the handler to run")
        w.stop()
        poll(lambda: not w.claiming, "the claims to stop")
        later = c.submit("gated", queue=queue)
        gate.set()
        wt.thread.join(60)
        assert c.get(j.id).state == "succeeded", "a job that ends within the shutdown timeout completes"
        assert c.get(later.id).state == "queued", "nothing is claimed once the worker stops"
        c.cancel(later.id)


def test_shutdown_releases_a_handler_that_ignores_its_cancel(server: Server, queue: str, start_worker: Callable[..., WorkerThread]) -> None:
    let_go = threading.Event()
    h = jobd.Handlers()

    @h.handler("stubborn")
    def stubborn(task: jobd.SyncTask) -> str:
        task.progress(0, 1, "in")
        let_go.wait(60)  # ignores task.stop_event
        return "too late"

    with server.client() as c:
        j = c.submit("stubborn", queue=queue)
        w = _worker(server, [queue], h, shutdown_timeout=0.1, hard_stop_grace=0.1)
        wt = start_worker(w)
        poll(lambda: c.get(j.id).progress.phase == "in", "the handler to run")
        wt.stop()
        after = c.get(j.id)
        assert after.state == "queued" and _kinds(c, j.id)[-1] == "requeued"
        assert (w.stats.abandoned, w.stats.released) == (1, 1)
        let_go.set()
        c.cancel(j.id)


def _spawn_worker(server: Server, queue: str, name: str, concurrency: int, *extra: str) -> subprocess.Popen:  # type: ignore[type-arg]
    env = worker_env()
    env["PYTEST_WORKER_NAME"] = name
    env["JOBD_WORKER_KEY"] = server.worker_key(name)
    return subprocess.Popen(
        [sys.executable, "-m", "jobd", "worker", "--server", server.url, "--module", "pyworker_handlers",
         "--queue", queue, "--concurrency", str(concurrency), "--claim-wait", "5", *extra],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
    )


def test_sigterm_releases_running_jobs(server: Server, queue: str) -> None:
    with server.client() as c:
        a = c.submit("hang", queue=queue)
        b = c.submit("hang-threaded", queue=queue)
        proc = _spawn_worker(server, queue, "A", 2, "--shutdown-timeout", "0.5")
        try:
            for j in (a, b):
                poll(lambda: c.get(j.id).progress.phase == "started", "%s to run" % j.kind)
            proc.send_signal(signal.SIGTERM)
            out, _ = proc.communicate(timeout=60)
        finally:
            proc.kill()
        assert proc.returncode == 0, out.decode()
        for j in (a, b):
            after = c.get(j.id)
            assert after.state == "queued" and _kinds(c, j.id)[-1] == "requeued", (j.kind, after.state, _kinds(c, j.id))
            c.cancel(j.id)


def test_sigkilled_worker_jobs_finish_once_on_another(server: Server, queue: str, start_worker: Callable[..., WorkerThread]) -> None:
    with server.client() as c:
        ids = [c.submit("hang", {"i": i}, queue=queue, lease_ttl=2).id for i in range(3)]
        proc = _spawn_worker(server, queue, "A", 3)
        try:
            for i in ids:
                poll(lambda: c.get(i).progress.phase == "started", "the jobs to run on A")
            proc.send_signal(signal.SIGKILL)
            proc.wait(30)
        finally:
            proc.kill()
        h = jobd.Handlers()

        @h.handler("hang")
        async def finish_on_b(task: jobd.Task) -> Dict[str, Any]:
            return {"worker": "B", "attempt": task.attempt}

        w = _worker(server, [{"queue": queue, "concurrency": 3}], h)
        wt = start_worker(w)
        for i in ids:
            j = poll(job_state(c, i, "succeeded", "failed"), "job %s to end on B" % i, timeout=60)
            assert (j.state, j.result) == ("succeeded", {"worker": "B", "attempt": 2})
            kinds = _kinds(c, i)
            assert kinds.count("succeeded") == 1 and kinds.count("rescued") == 1, kinds
        wt.stop()
        assert (w.stats.claimed, w.stats.succeeded) == (3, 3)


def _noop_handlers() -> jobd.Handlers:
    h = jobd.Handlers()

    @h.handler("x")
    async def x(task: jobd.Task) -> Dict[str, Any]:
        return {"i": task.args["i"]}

    return h


def test_outcomes_one_per_request_without_the_batch_route(server: Server, queue: str, make_proxy: Callable[..., Any], start_worker: Callable[..., WorkerThread]) -> None:
    proxy = make_proxy(server.url, lambda m, p: no_route(m, p) if p == "/api/v1/worker/outcomes" else "forward")
    with server.client() as c:
        ids = [c.submit("x", {"i": i}, queue=queue).id for i in range(20)]
        w = jobd.Worker(proxy.url, server.worker_key(), queues=[{"queue": queue, "concurrency": 8}],
                        handlers=_noop_handlers(), claim_wait=5)
        wt = start_worker(w)
        for n, i in enumerate(ids):
            assert poll(job_state(c, i, "succeeded", "failed"), "job %d" % n).result == {"i": n}
        wt.stop()
    assert len(proxy.requests("/complete")) == 20 and len(proxy.requests("/worker/outcomes")) <= 1
    assert w.stats.succeeded == 20 and w.stats.outcome_errors == 0


def test_outcomes_go_in_batches(server: Server, queue: str, make_proxy: Callable[..., Any], start_worker: Callable[..., WorkerThread]) -> None:
    proxy = make_proxy(server.url, lambda m, p: "forward")
    with server.client() as c:
        ids = [r.job.id for r in c.submit_many([{"kind": "x", "args": {"i": i}, "queue": queue} for i in range(200)]) if r.job]
        w = jobd.Worker(proxy.url, server.worker_key(), queues=[{"queue": queue, "concurrency": 32}],
                        handlers=_noop_handlers(), claim_wait=5)
        wt = start_worker(w)
        for n, i in enumerate(ids):
            assert poll(job_state(c, i, "succeeded", "failed"), "job %d" % n).result == {"i": n}
        wt.stop()
    batches = proxy.requests("/worker/outcomes")
    assert proxy.requests("/complete") == [] and 0 < len(batches) < 200
    assert w.stats.succeeded == 200 and w.stats.outcome_errors == 0


def test_503_is_retried_after_retry_after(server: Server, queue: str, make_proxy: Callable[..., Any], start_worker: Callable[..., WorkerThread]) -> None:
    answered: List[str] = []

    def rule(method: str, path: str) -> object:
        if (path.endswith("/complete") or path.endswith("/worker/outcomes")) and not answered:
            answered.append(path)
            return busy(1)
        return "forward"

    proxy = make_proxy(server.url, rule)
    h = jobd.Handlers()

    @h.handler("x")
    async def x(task: jobd.Task) -> str:
        return "ok"

    with server.client() as c:
        j = c.submit("x", queue=queue)
        key = server.worker_key()
        w = jobd.Worker(proxy.url, key, queues=[queue], handlers=h, claim_wait=5)
        wt = start_worker(w)
        assert poll(job_state(c, j.id, "succeeded", "failed"), "the job").state == "succeeded"
        wt.stop()
    completes = [r for r in proxy.log if r[2].endswith("/complete") or r[2].endswith("/worker/outcomes")]
    assert [r[3] for r in completes][:2] == ["answer", "forward"]
    assert completes[1][0] - completes[0][0] >= 1.0, "sent again after Retry-After"
    assert w.stats.succeeded == 1 and w.stats.resent == 0


def test_lost_outcome_answer_is_resent(server: Server, queue: str, make_proxy: Callable[..., Any], start_worker: Callable[..., WorkerThread]) -> None:
    # The proxy drops the answer of the first outcome the server accepted.
    def rule(method: str, path: str) -> object:
        if (path.endswith("/complete") or path.endswith("/worker/outcomes")) and not proxy.dropped:
            return "drop-ok"
        return "forward"

    proxy = make_proxy(server.url, rule)
    h = jobd.Handlers()

    @h.handler("x")
    async def x(task: jobd.Task) -> str:
        return "ok"

    with server.client() as c:
        j = c.submit("x", queue=queue)
        w = jobd.Worker(proxy.url, server.worker_key(), queues=[queue], handlers=h, claim_wait=5)
        wt = start_worker(w)
        assert poll(job_state(c, j.id, "succeeded", "failed"), "the job").state == "succeeded"
        poll(lambda: j.id in w.stats.states or w.stats.outcome_errors, "the outcome's answer")
        wt.stop()
        assert len(proxy.dropped) == 1 and w.stats.resent == 1, "the answer was dropped and the outcome sent again"
        assert _kinds(c, j.id).count("succeeded") == 1
        assert w.stats.outcome_errors == 0 and w.stats.states == {j.id: "succeeded"}, "the repeat is accepted"


def test_repeated_outcome_answers_200(server: Server, queue: str) -> None:
    with server.client() as c, server.client(server.worker_key()) as w:
        c.submit("x", queue=queue)
        (job,) = w.claim([queue])
        assert w.complete(job, {"n": 1}) == "succeeded"
        assert w.complete(job, {"n": 1}) == "succeeded"
