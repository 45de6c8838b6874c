"""task.step against a real server, on both stores: a five-step job that
fails at its fourth step resumes there on its retry, the first three run
once each, in async and blocking handlers."""

from __future__ import annotations

from typing import Any, Callable, Dict, List

import jobd

from conftest import Server, WorkerThread, job_state, poll


def test_step_resumes_at_failed_step(server: Server, queue: str, start_worker: Callable[..., WorkerThread]) -> None:
    h = jobd.Handlers()
    runs: Dict[str, List[int]] = {"async": [0] * 5, "sync": [0] * 5}

    def work(kind: str, i: int) -> Callable[[], Any]:
        def fn() -> Any:
            runs[kind][i] += 1
            if i == 3 and runs[kind][i] == 1:
                raise RuntimeError("step four fails once")
            return {"n": i + 1}
        return fn

    @h.handler("five")
    async def five(task: jobd.Task) -> int:
        total = 0
        for i in range(5):
            total += (await task.step("s%d" % (i + 1), work("async", i)))["n"]
        return total

    @h.handler("five-sync")
    def five_sync(task: jobd.SyncTask) -> int:
        return sum(task.step("s%d" % (i + 1), work("sync", i))["n"] for i in range(5))

    with server.client() as c:
        a = c.submit("five", {}, queue=queue, max_attempts=3).id
        b = c.submit("five-sync", {}, queue=queue, max_attempts=3).id
        w = jobd.Worker(server.url, server.worker_key(), queues=[queue], handlers=h, claim_wait=5.0)
        wt = start_worker(w)
        fa = poll(job_state(c, a, "succeeded", "failed"), "five")
        fb = poll(job_state(c, b, "succeeded", "failed"), "five-sync")
        wt.stop()
        for f in (fa, fb):
            assert (f.state, f.result, f.attempt) == ("succeeded", 15, 2)
        assert runs == {"async": [1, 1, 1, 2, 1], "sync": [1, 1, 1, 2, 1]}
        steps = c.get(a).raw.get("steps") or []
        assert [s["name"] for s in steps] == ["s1", "s2", "s3", "s4", "s5"]
        assert [s["attempt"] for s in steps] == [1, 1, 1, 2, 2]
