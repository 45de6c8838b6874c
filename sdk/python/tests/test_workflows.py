"""Workflows through the SDK against a real server, on both stores: the
transcoding diamond run by the Python Worker with its inputs, a failure
cancelling its dependents while a run_on="any" cleanup sees the error, a
retry resuming the workflow, listing with filters and the cursor, the 422
of a cycle, and the async client's calls."""

from __future__ import annotations

import asyncio
import threading
from collections import Counter
from typing import Any, Callable, Dict, List

import pytest

import jobd

from conftest import Server, WorkerThread


def _worker(server: Server, queue: str, handlers: jobd.Handlers) -> jobd.Worker:
    return jobd.Worker(server.url, server.worker_key(), queues=[{"queue": queue, "concurrency": 4}],
                       handlers=handlers, claim_wait=5.0)


def _transcode(queue: str, source: str, key: str = "") -> jobd.WorkflowBuilder:
    wf = jobd.WorkflowBuilder(queue, idempotency_key=key or None)
    download = wf.task("download", "download", {"url": source}, queue=queue)
    encodes = [wf.task("encode-" + r, "encode", {"rendition": r}, queue=queue, depends_on=[download])
               for r in ("720p", "1080p")]
    wf.task("publish", "publish", {"video": source}, queue=queue, depends_on=encodes)
    return wf


def _transcode_handlers(runs: "Counter[str]", lock: threading.Lock) -> jobd.Handlers:
    h = jobd.Handlers()

    def ran(task: Any) -> None:
        with lock:
            runs[task.job.ref] += 1

    @h.handler("download")
    async def download(task: jobd.Task) -> Dict[str, Any]:
        ran(task)
        assert task.inputs == {}
        return {"path": "/tmp/" + task.args["url"].rsplit("/", 1)[-1]}

    @h.handler("encode")
    async def encode(task: jobd.Task) -> Dict[str, Any]:
        ran(task)
        src = task.input("download")
        return {"rendition": task.args["rendition"], "from": src["path"]}

    @h.handler("publish")
    def publish(task: jobd.SyncTask) -> Dict[str, Any]:  # a blocking handler reads them too
        ran(task)
        renditions = sorted(task.input(ref, lambda r: str(r["rendition"])) for ref in task.inputs)
        seen = {ref: {"state": i.state, "result": i.result, "error": i.error} for ref, i in task.inputs.items()}
        return {"renditions": renditions, "inputs": seen}

    return h


def test_workflow_transcode_diamond(server: Server, queue: str, start_worker: Callable[..., WorkerThread]) -> None:
    runs: "Counter[str]" = Counter()
    lock = threading.Lock()
    with server.client() as c:
        w = c.submit_workflow(_transcode(queue, "https://cdn.example/v42.mov", key=queue + "-v42"))
        assert w.created is True and w.state == "running" and w.name == queue and w.task_count == 4
        assert [t.ref for t in w.tasks] == ["download", "encode-720p", "encode-1080p", "publish"]
        pub = w.task("publish")
        assert (pub.state, pub.pending, sorted(pub.depends_on)) == ("waiting", 2, ["encode-1080p", "encode-720p"])
        assert w.task("download").state == "queued"
        assert sorted((e.task, e.depends_on) for e in w.edges) == [
            ("encode-1080p", "download"), ("encode-720p", "download"),
            ("publish", "encode-1080p"), ("publish", "encode-720p"),
        ]
        assert w.counts is not None and (w.counts.queued, w.counts.waiting) == (1, 3)
        assert [e.kind for e in w.events] == ["submitted"]

        again = c.submit_workflow(_transcode(queue, "https://cdn.example/v42.mov", key=queue + "-v42"))
        assert again.created is False and again.id == w.id
        with pytest.raises(jobd.IdempotencyMismatchError) as ei:
            c.submit_workflow(_transcode(queue, "https://cdn.example/other.mov", key=queue + "-v42"))
        assert ei.value.field == "idempotency_key"

        dj = c.get(w.task("download").id)
        assert (dj.workflow_id, dj.ref) == (w.id, "download")
        plain = c.submit("download", {"url": "x"}, queue=queue + ".plain")
        assert (plain.workflow_id, plain.ref) == (None, "")
        c.cancel(plain.id)

        start_worker(_worker(server, queue, _transcode_handlers(runs, lock)))
        updates: List[Any] = []
        done = c.wait_workflow(w.id, timeout=60, on_update=lambda x: updates.append((x.state, [t.state for t in x.tasks])))
        assert done.state == "succeeded" and done.final and done.finished_at is not None
        assert (done.succeeded, done.failed, done.canceled) == (4, 0, 0)
        assert done.counts is not None and done.counts.succeeded == 4
        assert updates[-1] == ("succeeded", ["succeeded"] * 4)
        assert all(a != b for a, b in zip(updates, updates[1:])), "on_update is called on changes only"
        assert [e.kind for e in done.events] == ["submitted", "succeeded"]

        out = c.get(done.task("publish").id)
        assert (out.state, out.workflow_id, out.ref) == ("succeeded", w.id, "publish")
        assert out.result["renditions"] == ["1080p", "720p"]
        assert out.result["inputs"] == {
            "encode-720p": {"state": "succeeded", "result": {"rendition": "720p", "from": "/tmp/v42.mov"}, "error": ""},
            "encode-1080p": {"state": "succeeded", "result": {"rendition": "1080p", "from": "/tmp/v42.mov"}, "error": ""},
        }
        assert runs == Counter({"download": 1, "encode-720p": 1, "encode-1080p": 1, "publish": 1})
        with pytest.raises(jobd.WrongStateError):
            c.cancel_workflow(w.id)
        with pytest.raises(jobd.WrongStateError):
            c.retry_workflow(w.id)


def _failing_handlers(seen: Dict[str, Any], runs: "Counter[str]", fail_once: bool, lock: threading.Lock) -> jobd.Handlers:
    h = jobd.Handlers()

    @h.handler("step")
    async def step(task: jobd.Task) -> Dict[str, Any]:
        with lock:
            runs[task.job.ref] += 1
            n = runs[task.job.ref]
        if task.args.get("fail") and (n == 1 or not fail_once):
            raise jobd.Permanent("encoder crashed on %s" % task.job.ref)
        return {"ref": task.job.ref, "inputs": sorted(task.inputs)}

    @h.handler("cleanup")
    async def cleanup(task: jobd.Task) -> Dict[str, Any]:
        with lock:
            runs[task.job.ref] += 1
        try:
            task.input("encode")
            seen["input_error"] = None
        except jobd.InputError as e:
            seen["input_error"] = (e.ref, e.state, e.error)
        try:
            task.input("missing")
        except jobd.InputError as e:
            seen["missing"] = (e.ref, e.state)
        return {ref: {"state": i.state, "error": i.error, "result": i.result} for ref, i in task.inputs.items()}

    return h


def _failing_workflow(queue: str) -> jobd.WorkflowBuilder:
    # download → encode (fails) → package → publish; download → thumbs;
    # encode, thumbs → cleanup (run_on any).
    wf = jobd.WorkflowBuilder(queue)
    download = wf.task("download", "step", {}, queue=queue)
    encode = wf.task("encode", "step", {"fail": True}, queue=queue, depends_on=[download], max_attempts=1)
    package = wf.task("package", "step", {}, queue=queue, depends_on=[encode])
    wf.task("publish", "step", {}, queue=queue, depends_on=[package])
    thumbs = wf.task("thumbs", "step", {}, queue=queue, depends_on=["download"])
    wf.task("cleanup", "cleanup", {}, queue=queue, depends_on=[encode, thumbs], run_on="any")
    return wf


def test_workflow_failure_cancels_dependents_and_run_on_any(
    server: Server, queue: str, start_worker: Callable[..., WorkerThread]
) -> None:
    seen: Dict[str, Any] = {}
    runs: "Counter[str]" = Counter()
    with server.client() as c:
        w = c.submit_workflow(_failing_workflow(queue))
        assert w.task("cleanup").run_on == "any"
        start_worker(_worker(server, queue, _failing_handlers(seen, runs, False, threading.Lock())))
        done = c.wait_workflow(w.id, timeout=60)
        assert done.state == "failed" and (done.succeeded, done.failed, done.canceled) == (3, 1, 2)
        states = {t.ref: (t.state, t.canceled_by) for t in done.tasks}
        assert states == {
            "download": ("succeeded", ""), "encode": ("failed", ""), "package": ("canceled", "encode"),
            "publish": ("canceled", "package"), "thumbs": ("succeeded", ""), "cleanup": ("succeeded", ""),
        }
        assert 'dependency "encode"' in done.task("package").error
        assert "package" not in runs and "publish" not in runs, "a canceled dependent never runs"

        cleanup = c.get(done.task("cleanup").id).result
        assert cleanup["encode"]["state"] == "failed" and "encoder crashed on encode" in cleanup["encode"]["error"]
        assert cleanup["encode"]["result"] is None
        assert cleanup["thumbs"] == {"state": "succeeded", "error": "", "result": {"ref": "thumbs", "inputs": ["download"]}}
        assert seen["input_error"][:2] == ("encode", "failed") and "encoder crashed" in seen["input_error"][2]
        assert seen["missing"] == ("missing", "")


def test_workflow_retry_resumes(server: Server, queue: str, start_worker: Callable[..., WorkerThread]) -> None:
    seen: Dict[str, Any] = {}
    runs: "Counter[str]" = Counter()
    with server.client() as c:
        w = c.submit_workflow(_failing_workflow(queue))
        start_worker(_worker(server, queue, _failing_handlers(seen, runs, True, threading.Lock())))
        failed = c.wait_workflow(w.id, timeout=60)
        assert failed.state == "failed"
        before = dict(runs)

        again = c.retry_workflow(w.id)
        assert again.id == w.id and again.state == "running" and again.tasks == [], "a retry answers the row"
        done = c.wait_workflow(w.id, timeout=60)
        assert done.state == "succeeded" and done.succeeded == 6
        assert {t.ref: t.state for t in done.tasks} == {r: "succeeded" for r in
                                                        ("download", "encode", "package", "publish", "thumbs", "cleanup")}
        assert [e.kind for e in done.events] == ["submitted", "failed", "retried", "succeeded"]
        # Tasks that succeeded (the cleanup too) did not run again; the
        # failed one and the dependents it had canceled ran.
        assert before == {"download": 1, "encode": 1, "thumbs": 1, "cleanup": 1}
        assert runs == Counter({"download": 1, "thumbs": 1, "encode": 2, "package": 1, "publish": 1,
                                "cleanup": 1})
        pub = c.get(done.task("publish").id).result
        assert pub == {"ref": "publish", "inputs": ["package"]}


def test_workflow_list_filters_and_cursor(server: Server, queue: str) -> None:
    name = queue
    with server.client() as c:
        ids = [c.submit_workflow(name, [jobd.TaskSpec(kind="k", queue=queue, ref="only")]).id for _ in range(3)]
        other = c.submit_workflow(name + "-other", [{"kind": "k", "queue": queue, "ref": "a"}])
        canceled = c.cancel_workflow(ids[0])
        assert canceled.state == "canceled" and canceled.canceled == 1

        page = c.list_workflows_page(name=name, limit=2)
        assert page.total == 3 and len(page.workflows) == 2 and page.next_cursor
        assert [x.id for x in page.workflows] == [ids[2], ids[1]], "newest first"
        rest = c.list_workflows_page(name=name, limit=2, cursor=page.next_cursor)
        assert [x.id for x in rest.workflows] == [ids[0]] and rest.next_cursor is None

        assert [x.id for x in c.list_workflows(name=name, limit=1)] == ids[::-1]
        assert [x.id for x in c.list_workflows(name=name, state="canceled")] == [ids[0]]
        assert [x.id for x in c.list_workflows(name=name, state=["running"], limit=1)] == [ids[2], ids[1]]
        assert [x.id for x in c.list_workflows(name=name, state=["running", "canceled"])] == ids[::-1]
        row = next(iter(c.list_workflows(name=name + "-other")))
        assert (row.id, row.name, row.state, row.task_count, row.counts, row.tasks) == (other.id, name + "-other", "running", 1, None, [])
        for i in (ids[1], ids[2], other.id):
            c.cancel_workflow(i)
        with pytest.raises(jobd.ValidationError) as ei:
            c.list_workflows_page(limit=500)
        assert ei.value.field == "limit"


def test_workflow_refused(server: Server, queue: str) -> None:
    with server.client() as c:
        cycle = [
            {"kind": "k", "queue": queue, "ref": "a", "depends_on": ["c"]},
            {"kind": "k", "queue": queue, "ref": "b", "depends_on": ["a"]},
            {"kind": "k", "queue": queue, "ref": "c", "depends_on": ["b"]},
        ]
        with pytest.raises(jobd.ValidationError) as ei:
            c.submit_workflow(queue, cycle)
        assert (ei.value.status, ei.value.field) == (422, "tasks[0].depends_on")
        assert "cycle" in ei.value.detail

        unknown = [jobd.TaskSpec(kind="k", queue=queue, ref="a"), jobd.TaskSpec(kind="k", queue=queue, ref="b", depends_on=["nope"])]
        with pytest.raises(jobd.ValidationError) as ei:
            c.submit_workflow(queue, unknown)
        assert ei.value.field == "tasks[1].depends_on"
        with pytest.raises(jobd.ValidationError) as ei:
            c.submit_workflow(queue, [{"kind": "k", "queue": queue, "ref": "a"}, {"kind": "k", "queue": queue, "ref": "a"}])
        assert ei.value.field == "tasks[1].ref"
        with pytest.raises(jobd.ValidationError) as ei:
            c.submit_workflow(queue, [{"kind": "k", "queue": queue, "ref": "a", "idempotency_key": "x"}])
        assert ei.value.field == "tasks[0].idempotency_key"
        assert list(c.list_workflows(name=queue)) == [], "a refused workflow writes nothing"
        assert c.count(queue=queue) == 0

        wf = jobd.WorkflowBuilder(queue)
        a = wf.task("a", "k", queue=queue)
        with pytest.raises(ValueError):
            wf.task("a", "k", queue=queue)
        with pytest.raises(ValueError):
            jobd.WorkflowBuilder("other").task("b", "k", depends_on=[a])
        with pytest.raises(jobd.NotFoundError):
            c.get_workflow("0192f0c8-0000-7000-8000-000000000000")


def test_async_client_workflows(server: Server, queue: str) -> None:
    async def main() -> None:
        async with server.aclient() as c:
            w = await c.submit_workflow(queue, [
                {"kind": "k", "queue": queue, "ref": "first"},
                jobd.TaskSpec(kind="k", queue=queue, ref="second", depends_on=["first"]),
            ], idempotency_key=queue)
            assert w.created is True and [t.ref for t in w.tasks] == ["first", "second"]
            again = await c.submit_workflow(queue, [
                jobd.TaskSpec(kind="k", queue=queue, ref="second", depends_on=["first"]),
                {"kind": "k", "queue": queue, "ref": "first"},
            ], idempotency_key=queue)
            assert (again.created, again.id) == (False, w.id), "the same tasks in another order are the same request"

            got = await c.get_workflow(w.id)
            assert got.task("second").state == "waiting" and got.task("second").pending == 1
            with pytest.raises(TimeoutError):
                await c.wait_workflow(w.id, timeout=0.2, poll=0.05)  # nothing claims its queue

            listed = [x.id async for x in c.list_workflows(name=queue, state="running", limit=1)]
            assert listed == [w.id]
            page = await c.list_workflows_page(name=queue)
            assert page.total == 1

            canceled = await c.cancel_workflow(w.id)
            assert canceled.state == "canceled" and canceled.canceled == 2
            with pytest.raises(jobd.WrongStateError):
                await c.cancel_workflow(w.id)
            final = await c.wait_workflow(w.id, timeout=30)
            assert final.state == "canceled" and {t.ref: t.state for t in final.tasks} == {"first": "canceled", "second": "canceled"}

            retried = await c.retry_workflow(w.id)
            assert retried.state == "running"
            back = await c.get_workflow(w.id)
            assert {t.ref: t.state for t in back.tasks} == {"first": "queued", "second": "waiting"}
            assert [e.kind for e in back.events] == ["submitted", "cancel-requested", "canceled", "retried"]
            await c.cancel_workflow(w.id)

            with pytest.raises(jobd.ValidationError) as ei:
                await c.submit_workflow(queue + "-x", [{"kind": "k", "queue": queue, "ref": "a", "depends_on": ["a"]}])
            assert ei.value.field == "tasks[0].depends_on"

    asyncio.run(main())
