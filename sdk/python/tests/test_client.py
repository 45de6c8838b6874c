"""The callers' side: Client and AsyncClient against a real server, on both
stores."""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import threading
import urllib.request
import uuid
from typing import Any, Callable, Dict, List

import pytest

import jobd
from jobd.errors import PROBLEM_BASE, PROBLEM_KINDS

from conftest import Server, job_state, poll
from proxy import no_route


def test_submit_get_list_iterate_count(server: Server, queue: str) -> None:
    with server.client() as c:
        ids = [c.submit("noop", {"n": i}, queue=queue, priority=50, lease_ttl=dt.timedelta(seconds=90)).id for i in range(5)]
        j = c.get(ids[0])
        assert (j.queue, j.kind, j.args, j.state, j.priority, j.lease_ttl) == (queue, "noop", {"n": 0}, "queued", 50, 90.0)
        assert j.created_at is not None and j.created_at.tzinfo is not None

        first = c.submit("noop", {"n": 9}, queue=queue, idempotency_key="k-" + queue)
        again = c.submit("noop", {"n": 9}, queue=queue, idempotency_key="k-" + queue)
        assert (first.created, again.created, again.id) == (True, False, first.id)
        ids.append(first.id)

        page = c.list(queue=queue, limit=2)
        assert page.total == 6 and len(page.jobs) == 2 and page.next_cursor
        seen = [x.id for x in c.iterate(queue=queue, limit=2)]
        assert seen == list(reversed(ids)), "newest first, every job once"
        assert c.count(queue=queue) == 6
        assert c.count(queue=queue, state=["running", "succeeded"]) == 0
        assert [x.id for x in c.iterate(queue=queue, state="queued", kind="nothing")] == []


def test_submit_many_without_the_batch_route(server: Server, queue: str, make_proxy: Callable[..., Any]) -> None:
    # A server without POST /api/v1/jobs/batch (a proxy answers 404 for it)
    # is sent one request per job: a refused job does not stop the others.
    proxy = make_proxy(server.url, lambda m, p: no_route(m, p) if p.startswith("/api/v1/jobs/batch") else "forward")
    with jobd.Client(proxy.url, server.admin) as c:
        res = c.submit_many([
            jobd.JobSpec("a", {"x": 1}, queue=queue),
            {"kind": "b", "queue": "jobd.reserved"},
            {"kind": "c", "queue": queue, "max_attempts": 0},
        ])
        assert res[0].ok and res[0].job is not None and res[0].job.created
        assert isinstance(res[1].error, jobd.ValidationError) and res[1].error.field == "queue"
        assert isinstance(res[2].error, jobd.ValidationError) and res[2].error.field == "max_attempts"
        assert c.submit_many([{"kind": "d", "queue": queue}])[0].ok
        assert [r[2] for r in proxy.log].count("/api/v1/jobs/batch") == 1, "the route is asked for once"
    with server.client() as c:
        assert c.count(queue=queue) == 2


def test_submit_many_batch_route_is_all_or_nothing(server: Server, queue: str) -> None:
    with server.client() as c:
        with pytest.raises(jobd.ValidationError) as e:
            c.submit_many([{"kind": "a", "queue": queue}, {"kind": "b", "queue": "jobd.reserved"}])
        assert e.value.field == "jobs[1].queue" and c.count(queue=queue) == 0
        specs = [jobd.JobSpec("k", {"i": i}, queue=queue, idempotency_key="%s-%d" % (queue, i)) for i in range(1500)]
        res = c.submit_many(specs)
        assert len(res) == 1500 and all(r.job is not None and r.job.created for r in res)
        again = c.submit_many(specs[:3])
        assert [r.job.id for r in again if r.job] == [r.job.id for r in res[:3] if r.job]
        assert all(r.job is not None and r.job.created is False for r in again)
        assert c.count(queue=queue) == 1500


def test_async_submit_many(server: Server, queue: str) -> None:
    async def main() -> None:
        async with server.aclient() as c:
            res = await c.submit_many([{"kind": "k", "queue": queue, "args": {"i": i}} for i in range(40)])
            assert all(r.ok and r.job is not None and r.job.created for r in res)
            ids = [r.job.id for r in res if r.job]
            assert [(await c.get(i)).args for i in ids] == [{"i": i} for i in range(40)], "one answer per job, in order"
            assert await c.count(queue=queue) == 40

    asyncio.run(main())


def test_problem_documents_are_typed_errors(server: Server, queue: str) -> None:
    with server.client() as c:
        with pytest.raises(jobd.ValidationError) as e:
            c.submit("x", queue="jobd.mine")
        assert (e.value.status, e.value.field, e.value.kind) == (422, "queue", "validation")
        assert e.value.type == PROBLEM_BASE + "validation"
        assert isinstance(e.value, jobd.InvalidRequestError)

        with pytest.raises(jobd.NotFoundError):
            c.get(str(uuid.uuid4()))
        with pytest.raises(jobd.BadRequestError):
            c.get("not-a-uuid")

        c.submit("x", {"a": 1}, queue=queue, idempotency_key="same")
        with pytest.raises(jobd.IdempotencyMismatchError) as im:
            c.submit("x", {"a": 2}, queue=queue, idempotency_key="same")
        assert im.value.field == "idempotency_key" and isinstance(im.value, jobd.InvalidRequestError)

        j = c.submit("x", queue=queue)
        c.cancel(j.id)
        with pytest.raises(jobd.WrongStateError) as ws:
            c.cancel(j.id)
        assert isinstance(ws.value, jobd.ConflictError) and ws.value.status == 409

    with server.client("jobd_wrong_credential") as bad:
        with pytest.raises(jobd.UnauthorizedError):
            bad.get(str(uuid.uuid4()))
    with server.client(server.worker_key()) as wk:
        with pytest.raises(jobd.ForbiddenError):
            wk.submit("x", queue=queue)
        with pytest.raises(jobd.ForbiddenError) as fb:
            wk.claim(["jobd.webhooks"])
        assert fb.value.field == "queues"


def test_every_problem_kind_has_its_error_class(server: Server) -> None:
    with urllib.request.urlopen(server.url + "/openapi.json") as r:
        doc = json.load(r)
    kinds = doc["components"]["x-problem-kinds"]["kinds"]
    assert {k["type"] for k in kinds} == set(doc["components"]["schemas"]["Problem"]["properties"]["type"]["enum"])
    assert {PROBLEM_BASE + k for k in PROBLEM_KINDS} == {k["type"] for k in kinds}
    for k in kinds:
        cls = PROBLEM_KINDS[k["type"][len(PROBLEM_BASE):]]
        assert (cls.problem_status, cls.problem_class) == (k["status"], k["class"]), k["type"]
        err = jobd.errors.error_from_answer(k["status"], json.dumps({"type": k["type"], "status": k["status"], "title": k["title"], "field": "f"}).encode())
        assert type(err) is cls and err.field == "f" and err.status == k["status"]
    assert jobd.is_retryable(jobd.errors.error_from_answer(503, b'{"type":"%sbusy","status":503}' % PROBLEM_BASE.encode()))
    assert isinstance(jobd.errors.error_from_answer(502, b"<html>bad gateway</html>"), jobd.UnavailableError)


def test_cancel_retry_events(server: Server, queue: str) -> None:
    with server.client() as c:
        j = c.submit("x", queue=queue)
        assert c.cancel(j.id).state == "canceled"
        assert c.retry(j.id).state == "queued"
        assert [e.kind for e in c.events(j.id)] == ["queued", "canceled", "manual-retry"]
        with pytest.raises(jobd.WrongStateError):
            c.retry(j.id)


def _work_one(server: Server, queue: str, steps: int, gate: threading.Event) -> None:
    """Claims one job with the plain protocol methods and reports steps of
    progress, each after gate is set again."""
    with server.client(server.worker_key()) as w:
        got: List[jobd.ClaimedJob] = []
        while not got:
            got = w.claim([queue], wait=5)
        job = got[0]
        for i in range(1, steps + 1):
            assert gate.wait(30)
            gate.clear()
            w.progress(job, i, steps, "step", items=[{"i": i}])
        w.complete(job, {"steps": steps})


def test_stream_follows_changes_across_reconnects(server: Server, queue: str) -> None:
    # The server ends every stream after 1 s (--stream-max-age 1s): the
    # stream is followed again with Last-Event-ID; each version shows once
    # and none is lost. The job moves on only once the stream has
    # reconnected since its last version.
    with server.client() as c:
        j = c.submit("x", queue=queue)
        stream = c.stream(j.id)
        seen: List[jobd.Job] = []
        reader = threading.Thread(target=lambda: seen.extend(stream))
        reader.start()
        poll(lambda: seen, "the first version")
        gate = threading.Event()
        worker = threading.Thread(target=_work_one, args=(server, queue, 3, gate))
        worker.start()
        for step in range(3):
            poll(lambda: any(v.state == "running" and v.progress.done == step for v in seen), "version %d" % step)
            conns = stream.connections
            poll(lambda: stream.connections > conns, "the stream to reconnect")
            gate.set()
        reader.join(30)
        worker.join(30)
        # The last step and the completion may fall between two reads.
        assert [(v.state, v.progress.done) for v in seen if (v.state, v.progress.done) != ("running", 3)] == [
            ("queued", 0), ("running", 0), ("running", 1), ("running", 2), ("succeeded", 3),
        ]
        assert seen[-1].result == {"steps": 3}
        assert stream.connections >= 4 and stream.last_event_id
        again = c.stream(j.id, last_event_id=stream.last_event_id)
        assert list(again) == [] and again.connections == 0, "the final version is not sent again (204)"


def test_wait_returns_the_final_job(server: Server, queue: str) -> None:
    with server.client() as c:
        j = c.submit("x", queue=queue)
        with pytest.raises(TimeoutError):
            c.wait(j.id, timeout=0.3)
        gate = threading.Event()
        gate.set()
        t = threading.Thread(target=_work_one, args=(server, queue, 1, gate))
        t.start()
        updates: List[str] = []
        final = c.wait(j.id, timeout=30, on_update=lambda v: updates.append(v.state))
        t.join(30)
        assert final.state == "succeeded" and final.result == {"steps": 1}
        assert updates[-1] == "succeeded"
        assert c.get(j.id, wait=1).state == "succeeded"


def test_wait_long_polls_without_an_event_stream(server: Server, queue: str, make_proxy: Callable[..., Any]) -> None:
    # A proxy that does not pass event streams (it answers the stream with
    # a page of its own): wait long-polls GET /api/v1/jobs/{id}?wait=.
    page = b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: 4\r\n\r\nnope"
    proxy = make_proxy(server.url, lambda m, p: page if "/stream" in p else "forward")
    with jobd.Client(proxy.url, server.admin) as c:
        j = c.submit("x", queue=queue)
        # The job moves on only once wait has seen it unfinished, so that
        # wait has to long-poll (a job done before wait began would need
        # no ?wait= request at all).
        gate = threading.Event()
        t = threading.Thread(target=_work_one, args=(server, queue, 1, gate))
        t.start()
        seen: List[str] = []

        def update(v: jobd.Job) -> None:
            seen.append(v.state)
            gate.set()

        assert c.wait(j.id, timeout=30, on_update=update).state == "succeeded"
        t.join(30)
        assert seen[-1] == "succeeded"
        with pytest.raises(jobd.InvalidRequestError):
            list(c.stream(j.id))

    async def main() -> None:
        async with jobd.AsyncClient(proxy.url, server.admin) as ac:
            assert (await ac.wait(j.id, timeout=30)).state == "succeeded"

    asyncio.run(main())
    assert any("?wait=" in r[2] for r in proxy.log)


def test_async_client_lifecycle(server: Server, queue: str) -> None:
    async def main() -> None:
        async with server.aclient() as c:
            ids = [(await c.submit("x", {"i": i}, queue=queue)).id for i in range(3)]
            assert (await c.get(ids[0])).args == {"i": 0}
            assert [j.id async for j in c.iterate(queue=queue, limit=1)] == list(reversed(ids))
            assert await c.count(queue=queue) == 3
            assert (await c.cancel(ids[0])).state == "canceled"
            assert [v.state async for v in c.stream(ids[0])] == ["canceled"]
            assert (await c.wait(ids[0], timeout=10)).state == "canceled"
            assert (await c.retry(ids[0])).state == "queued"
            with pytest.raises(TimeoutError):
                await c.wait(ids[1], timeout=0.3)
            with pytest.raises(jobd.NotFoundError):
                await c.get(str(uuid.uuid4()))

            wk = await c.create_worker("async-" + queue)
            async with jobd.AsyncClient(server.url, wk.api_key) as w:
                claimed = await w.claim([queue], max_jobs=3, wait=5)
                assert len(claimed) == 3 and all(x.lease_token for x in claimed)
                states: Dict[str, str] = {}
                for x in claimed:
                    assert await w.progress(x, 1, 1, "one") is False
                    await w.checkpoint(x, {"at": 1})
                    states[x.id] = await w.complete(x, {"ok": x.args})
                assert set(states.values()) == {"succeeded"}
                beat = await w.heartbeat("idle", [(claimed[0].id, claimed[0].lease_token)])
                assert [(b.held, b.cancel_requested) for b in beat] == [(False, False)]
                with pytest.raises(jobd.LeaseLostError):
                    await w.fail(claimed[0], "another outcome after the first")

    asyncio.run(main())


def test_sync_worker_protocol_methods(server: Server, queue: str) -> None:
    with server.client() as c, server.client(server.worker_key()) as w:
        a = c.submit("x", queue=queue, max_attempts=3)
        b = c.submit("x", queue=queue)
        d = c.submit("x", queue=queue)
        got = {j.id: j for j in w.claim([queue], max_jobs=3)}
        assert set(got) == {a.id, b.id, d.id}
        assert w.fail(got[a.id], "boom", retry_after=60) == "queued"
        ja = c.get(a.id)
        assert ja.run_at is not None and ja.finished_at is None and ja.error == "boom"
        assert w.fail(got[b.id], "for good", retryable=False) == "failed"
        assert w.release(got[d.id]) == "queued"
        assert c.get(d.id).attempt in (0, 1)
        assert "requeued" in [e.kind for e in c.events(d.id)]


def test_json_bodies_carry_their_content_type(server: Server) -> None:
    # The client always sends Content-Type: application/json with a body:
    # a server without credentials refuses a body without it (415).
    err = jobd.errors.error_from_answer(415, b'{"type":"%sunsupported-media-type","status":415}' % PROBLEM_BASE.encode())
    assert isinstance(err, jobd.UnsupportedMediaTypeError)
    head = jobd._http.Endpoint(server.url, None, None).head(jobd._http.Request("POST", "/x", body=b"{}"))
    assert b"Content-Type: application/json\r\n" in head
