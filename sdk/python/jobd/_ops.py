"""The operations of the HTTP API, written once for both clients.

Each function returns an :class:`Op`: the request to send and how to read
a successful answer. :class:`jobd.Client` sends it with ``http.client``,
:class:`jobd.AsyncClient` on asyncio streams; both retry a 503 the same way
(:func:`retry_delay`) and raise the same errors.
"""

from __future__ import annotations

import datetime as _dt
import json
import urllib.parse
from typing import Any, Callable, Dict, Generic, Iterable, List, Mapping, Optional, Sequence, Tuple, TypeVar, Union

from ._http import Request, Response
from .errors import error_from_answer
from .models import (
    ClaimedJob,
    Duration,
    Event,
    Job,
    JobPage,
    JobSpec,
    LeaseState,
    SignalResult,
    SpawnedChild,
    SubmitResult,
    WorkerCreated,
    format_duration,
    format_time,
)

T = TypeVar("T")

#: Delays between the retries of a request answered 503 without a
#: Retry-After: doubling from RETRY_MIN up to RETRY_MAX seconds. A
#: Retry-After is obeyed up to MAX_RETRY_AFTER.
RETRY_MIN = 0.25
RETRY_MAX = 5.0
MAX_RETRY_AFTER = 60.0

#: Margin added to a long-poll's wait for the request's own timeout.
POLL_MARGIN = 10.0


class Op(Generic[T]):
    """A request and the reader of its successful answer."""

    __slots__ = ("req", "decode")

    def __init__(self, req: Request, decode: Callable[[Response], T]) -> None:
        self.req = req
        self.decode = decode


def retry_delay(delay: float, retry_after: Optional[float]) -> float:
    """How long to wait before sending again a request answered 503."""
    if retry_after is not None and retry_after > 0:
        return min(retry_after, MAX_RETRY_AFTER)
    return delay


def next_delay(delay: float) -> float:
    return min(2 * delay, RETRY_MAX)


def _enc(v: Any) -> bytes:
    return json.dumps(v, separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode("utf-8")


def _json(resp: Response) -> Any:
    if not resp.body:
        return None
    return json.loads(resp.body)


def _seg(s: str) -> str:
    return urllib.parse.quote(str(s), safe="")


def _job(resp: Response) -> Job:
    return Job.from_json(_json(resp))


def _none(resp: Response) -> None:
    return None


# --- callers --------------------------------------------------------------


def submit(spec: JobSpec, traceparent: Optional[str] = None) -> Op[Job]:
    def decode(resp: Response) -> Job:
        j = Job.from_json(_json(resp))
        j.created = resp.status == 201
        return j

    hdr = {"traceparent": traceparent} if traceparent else {}
    req = Request("POST", "/api/v1/jobs", body=_enc(spec.to_json()), headers=hdr, idempotent=bool(spec.idempotency_key))
    return Op(req, decode)


#: The most jobs, and about the most bytes, one batch submit carries (the
#: server's limits: 1 000 jobs; its body limit, 1 MiB by default).
BATCH_JOBS = 1000
BATCH_BYTES = 900 * 1024


def batches(specs: Sequence[JobSpec]) -> List[List[bytes]]:
    """The encoded jobs of specs in chunks of at most BATCH_JOBS jobs and
    about BATCH_BYTES bytes."""
    out: List[List[bytes]] = []
    cur: List[bytes] = []
    size = 0
    for spec in specs:
        b = _enc(spec.to_json())
        if cur and (len(cur) >= BATCH_JOBS or size + len(b) > BATCH_BYTES):
            out.append(cur)
            cur, size = [], 0
        cur.append(b)
        size += len(b) + 1
    if cur:
        out.append(cur)
    return out


def submit_batch(encoded: Sequence[bytes], traceparent: Optional[str] = None) -> Op[List[SubmitResult]]:
    """POST /api/v1/jobs/batch: the jobs in one transaction, all or
    nothing; one answer each."""

    def decode(resp: Response) -> List[SubmitResult]:
        out = []
        for a in (_json(resp) or {}).get("jobs") or []:
            status = int(a.get("status") or 0)
            if status in (200, 201):
                j = Job.from_json(a)
                j.created = status == 201
                out.append(SubmitResult(job=j))
            else:
                out.append(SubmitResult(error=error_from_answer(status, _enc(a.get("problem") or {"status": status}))))
        return out

    hdr = {"traceparent": traceparent} if traceparent else {}
    body = b'{"jobs":[' + b",".join(encoded) + b"]}"
    return Op(Request("POST", "/api/v1/jobs/batch", body=body, headers=hdr), decode)


def get(job_id: str, wait: Optional[Duration] = None) -> Op[Job]:
    q: List[Tuple[str, str]] = []
    timeout = None
    if wait is not None:
        q.append(("wait", format_duration(wait)))
        timeout = _secs(wait) + POLL_MARGIN
    return Op(Request("GET", "/api/v1/jobs/" + _seg(job_id), q, timeout=timeout), _job)


def _secs(d: Duration) -> float:
    return d.total_seconds() if isinstance(d, _dt.timedelta) else float(d)


def action(job_id: str, name: str, body: Optional[Mapping[str, Any]] = None) -> Op[Job]:
    return Op(Request("POST", "/api/v1/jobs/%s/%s" % (_seg(job_id), name), body=_enc(body) if body is not None else None), _job)


def events(job_id: str) -> Op[List[Event]]:
    def decode(resp: Response) -> List[Event]:
        return [Event.from_json(e) for e in (_json(resp) or {}).get("events") or []]

    return Op(Request("GET", "/api/v1/jobs/%s/events" % _seg(job_id)), decode)


States = Union[str, Iterable[str], None]


def list_query(
    queue: Optional[str] = None,
    kind: Optional[str] = None,
    state: States = None,
    lock_key: Optional[str] = None,
    partition_key: Optional[str] = None,
    updated_since: Optional[_dt.datetime] = None,
    cursor: Optional[str] = None,
    limit: Optional[int] = None,
) -> List[Tuple[str, str]]:
    q: List[Tuple[str, str]] = []
    for k, v in (("queue", queue), ("kind", kind), ("lock_key", lock_key), ("partition_key", partition_key)):
        if v:
            q.append((k, v))
    if isinstance(state, str):
        q.append(("state", state))
    elif state is not None:
        q.extend(("state", s) for s in state)
    if updated_since is not None:
        q.append(("updated_since", format_time(updated_since)))
    if cursor:
        q.append(("cursor", cursor))
    if limit is not None:
        q.append(("limit", str(limit)))
    return q


def list_jobs(query: Sequence[Tuple[str, str]]) -> Op[JobPage]:
    def decode(resp: Response) -> JobPage:
        d = _json(resp) or {}
        return JobPage(
            jobs=[Job.from_json(j) for j in d.get("jobs") or []],
            total=int(d.get("total") or 0),
            next_cursor=d.get("next_cursor") or None,
            resume_cursor=d.get("resume_cursor") or None,
        )

    return Op(Request("GET", "/api/v1/jobs", list(query)), decode)


def count(query: Sequence[Tuple[str, str]]) -> Op[int]:
    q = [(k, v) for k, v in query if k not in ("cursor", "limit")] + [("limit", "0")]

    def decode(resp: Response) -> int:
        return int(resp.headers.get("x-total-count", "0"))

    return Op(Request("GET", "/api/v1/jobs", q), decode)


def stream_request(job_id: str, last_event_id: Optional[str]) -> Request:
    hdr = {"Accept": "text/event-stream"}
    if last_event_id:
        hdr["Last-Event-ID"] = last_event_id
    return Request("GET", "/api/v1/jobs/%s/stream" % _seg(job_id), headers=hdr)


def queue_action(name: str, action_name: str) -> Op[Dict[str, Any]]:
    return Op(Request("POST", "/api/v1/queues/%s/%s" % (_seg(name), action_name)), lambda r: dict(_json(r) or {}))


# --- administration -----------------------------------------------------


def create_worker(
    name: str,
    capabilities: Optional[Sequence[str]] = None,
    queues: Optional[Sequence[str]] = None,
    metadata: Optional[Mapping[str, Any]] = None,
) -> Op[WorkerCreated]:
    body: Dict[str, Any] = {"name": name}
    if capabilities is not None:
        body["capabilities"] = list(capabilities)
    if queues is not None:
        body["queues"] = list(queues)
    if metadata is not None:
        body["metadata"] = dict(metadata)

    def decode(resp: Response) -> WorkerCreated:
        d = _json(resp) or {}
        return WorkerCreated(worker_id=str(d.get("worker_id", "")), api_key=str(d.get("api_key", "")), worker=dict(d.get("worker") or {}))

    return Op(Request("POST", "/api/v1/workers", body=_enc(body)), decode)


def list_workers() -> Op[List[Dict[str, Any]]]:
    return Op(Request("GET", "/api/v1/workers"), lambda r: list((_json(r) or {}).get("workers") or []))


def worker_action(worker_id: str, name: str) -> Op[Dict[str, Any]]:
    return Op(Request("POST", "/api/v1/workers/%s/%s" % (_seg(worker_id), name)), lambda r: dict(_json(r) or {}))


def delete_worker(worker_id: str) -> Op[None]:
    return Op(Request("DELETE", "/api/v1/workers/" + _seg(worker_id)), _none)


def create_key(name: str, scopes: Sequence[str], queues: Optional[Sequence[str]] = None) -> Op[Dict[str, Any]]:
    body: Dict[str, Any] = {"name": name, "scopes": list(scopes)}
    if queues is not None:
        body["queues"] = list(queues)
    return Op(Request("POST", "/api/v1/keys", body=_enc(body)), lambda r: dict(_json(r) or {}))


# --- the worker protocol --------------------------------------------------


def heartbeat(status: str, leases: Sequence[Tuple[str, str]]) -> Op[List[LeaseState]]:
    body = {"status": status, "leases": [{"id": i, "lease_token": t} for i, t in leases]}

    def decode(resp: Response) -> List[LeaseState]:
        out = []
        for s in (_json(resp) or {}).get("leases") or []:
            out.append(LeaseState(id=str(s.get("id", "")), held=bool(s.get("held")), cancel_requested=bool(s.get("cancel_requested"))))
        return out

    return Op(Request("POST", "/api/v1/worker/heartbeat", body=_enc(body), idempotent=True), decode)


def claim(queues: Sequence[str], max_jobs: int, wait: Optional[Duration]) -> Op[List[ClaimedJob]]:
    body: Dict[str, Any] = {"queues": list(queues), "max": max_jobs}
    timeout = None
    if wait is not None and _secs(wait) > 0:
        body["wait"] = format_duration(wait)
        timeout = _secs(wait) + POLL_MARGIN

    def decode(resp: Response) -> List[ClaimedJob]:
        return [ClaimedJob.from_json(j) for j in (_json(resp) or {}).get("jobs") or []]

    return Op(Request("POST", "/api/v1/worker/claim", body=_enc(body), timeout=timeout), decode)


def _wpath(job_id: str, name: str) -> str:
    return "/api/v1/worker/jobs/%s/%s" % (_seg(job_id), name)


def storable(s: str) -> str:
    """The text with its NUL characters, which the server refuses in a
    worker's text, replaced by U+FFFD; lone surrogates too."""
    s = s.replace("\x00", "\ufffd")
    try:
        s.encode("utf-8")
    except UnicodeEncodeError:
        s = s.encode("utf-8", "replace").decode("utf-8")
    return s


def progress(job_id: str, token: str, done: int, total: int, phase: str, items: Any = None) -> Op[bool]:
    body: Dict[str, Any] = {"lease_token": token, "done": done, "total": total, "phase": storable(phase)}
    if items is not None:
        body["items"] = items
    return Op(Request("POST", _wpath(job_id, "progress"), body=_enc(body), idempotent=True), lambda r: bool((_json(r) or {}).get("cancel_requested")))


def checkpoint(job_id: str, token: str, value: Any) -> Op[bool]:
    return Op(
        Request("POST", _wpath(job_id, "checkpoint"), body=_enc({"lease_token": token, "checkpoint": value}), idempotent=True),
        lambda r: bool((_json(r) or {}).get("cancel_requested")) if r.body else False,
    )


def step(job_id: str, token: str, name: str, result: Any, started_at: str = "") -> Op[Any]:
    """Records a completed step (POST /api/v1/worker/jobs/{id}/steps) and
    decodes the step's result as the job keeps it: the one recorded first
    under that name."""
    body: Dict[str, Any] = {"lease_token": token, "name": name, "result": result}
    if started_at:
        body["started_at"] = started_at
    return Op(
        Request("POST", _wpath(job_id, "steps"), body=_enc(body), idempotent=True),
        lambda r: ((_json(r) or {}).get("step") or {}).get("result"),
    )


def spawn(job_id: str, token: str, children: Sequence[Mapping[str, Any]]) -> Op[List[SpawnedChild]]:
    """Spawns children of a claimed job (POST
    /api/v1/worker/jobs/{id}/children), each ``{"key", …a submission}``:
    all or none, idempotent per key (so the transport may send it again)."""
    body = {"lease_token": token, "children": list(children)}

    def decode(resp: Response) -> List[SpawnedChild]:
        return [SpawnedChild.from_json(c) for c in (_json(resp) or {}).get("children") or []]

    return Op(Request("POST", _wpath(job_id, "children"), body=_enc(body), idempotent=True), decode)


def signal(job_id: str, name: str, payload: Any = None) -> Op[SignalResult]:
    """Sends the signal ``name`` to a job (POST /api/v1/jobs/{id}/signal).
    Not replayed by the transport: a signal sent twice may be kept for a
    later wait."""
    body: Dict[str, Any] = {"name": name}
    if payload is not None:
        body["payload"] = payload

    def decode(resp: Response) -> SignalResult:
        d = _json(resp) or {}
        return SignalResult(delivered=bool(d.get("delivered")), job=Job.from_json(d.get("job") or {}))

    return Op(Request("POST", "/api/v1/jobs/%s/signal" % _seg(job_id), body=_enc(body), idempotent=False), decode)


def _state(resp: Response) -> str:
    return str((_json(resp) or {}).get("state", ""))


def outcome_body(token: str, outcome: Mapping[str, Any]) -> Dict[str, Any]:
    body = {"lease_token": token}
    body.update(outcome)
    return body


def complete_body(result: Any) -> Dict[str, Any]:
    return {"result": result}


def fail_body(error: str, retryable: bool = True, retry_after: Optional[Duration] = None, throttle: Optional[Duration] = None) -> Dict[str, Any]:
    body: Dict[str, Any] = {"error": storable(error), "retryable": retryable}
    if retry_after is not None:
        body["retry_after"] = format_duration(max(_secs(retry_after), 0.0))
    if throttle is not None:
        body["throttle"] = format_duration(throttle)
    return body


def finish(job_id: str, token: str, action_name: str, outcome: Mapping[str, Any]) -> Op[str]:
    """complete, fail or release a claimed job; the answer is its state."""
    # Not replayed by the transport: the worker's outcome sender sends an
    # outcome again itself when its answer is lost, and counts it.
    req = Request("POST", _wpath(job_id, action_name), body=_enc(outcome_body(token, outcome)), idempotent=False)
    return Op(req, _state)
