"""The values of jobd's HTTP API as Python objects.

Answers are decoded into dataclasses (:class:`Job`, :class:`ClaimedJob`,
:class:`JobPage`…) whose members are those of ``/openapi.json``; each keeps
the whole JSON object it was read from in ``raw``, so that a member a newer
server adds is not lost. Times are timezone-aware :class:`datetime.datetime`
values, durations are seconds (``float``): the server writes durations as
Go strings (``"1m30s"``) today and as numbers of seconds later; both are
read.
"""

from __future__ import annotations

import datetime as _dt
import re
import sys
from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Sequence, Union

__all__ = [
    "Duration",
    "FINAL_STATES",
    "Progress",
    "Job",
    "ClaimedJob",
    "JobPage",
    "Event",
    "JobSpec",
    "SubmitResult",
    "LeaseState",
    "WorkerCreated",
    "Input",
    "parse_duration",
    "format_duration",
    "parse_time",
    "format_time",
]

#: A duration given to the SDK: seconds, or a :class:`datetime.timedelta`.
Duration = Union[float, int, _dt.timedelta]

#: The states a job does not leave by itself.
FINAL_STATES = frozenset(("succeeded", "failed", "canceled"))

_UNITS = {"ns": 1e-9, "us": 1e-6, "\u00b5s": 1e-6, "\u03bcs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}
_DURATION_PART = re.compile(r"([0-9]*\.?[0-9]+)(ns|us|\u00b5s|\u03bcs|ms|s|m|h)")


def parse_duration(v: Any) -> Optional[float]:
    """Reads a duration of an answer as seconds: a number of seconds, or a
    Go duration string (``"1h2m3.5s"``, ``"250ms"``). ``None`` stays
    ``None``; anything else raises :class:`ValueError`."""
    if v is None:
        return None
    if isinstance(v, bool):
        raise ValueError("duration: %r" % (v,))
    if isinstance(v, (int, float)):
        return float(v)
    if not isinstance(v, str):
        raise ValueError("duration: %r" % (v,))
    s = v.strip()
    sign = 1.0
    if s[:1] in "+-" and s:
        sign = -1.0 if s[0] == "-" else 1.0
        s = s[1:]
    if s == "0":
        return 0.0
    pos, total = 0, 0.0
    while pos < len(s):
        m = _DURATION_PART.match(s, pos)
        if not m:
            raise ValueError("duration: %r" % (v,))
        total += float(m.group(1)) * _UNITS[m.group(2)]
        pos = m.end()
    if pos == 0:
        raise ValueError("duration: %r" % (v,))
    return sign * total


def seconds(d: Duration) -> float:
    """Returns a duration given to the SDK as seconds."""
    if isinstance(d, _dt.timedelta):
        return d.total_seconds()
    return float(d)


def format_duration(d: Duration) -> str:
    """Writes a duration as the Go duration string every jobd server reads
    (``"1.5s"``, ``"90s"``); whole milliseconds below a second are written
    ``"250ms"``."""
    s = seconds(d)
    if s != s or s in (float("inf"), float("-inf")):
        raise ValueError("duration: %r" % (d,))
    ms = round(s * 1000)
    if ms % 1000 == 0:
        return "%ds" % (ms // 1000)
    if abs(ms) < 1000:
        return "%dms" % ms
    return ("%.3f" % (ms / 1000.0)).rstrip("0").rstrip(".") + "s"


_TIME = re.compile(
    r"^(\d{4})-(\d\d)-(\d\d)[Tt ](\d\d):(\d\d):(\d\d)(?:\.(\d+))?(Z|z|[+-]\d\d:\d\d)$"
)


_FAST_ISO = sys.version_info >= (3, 11)


def parse_time(v: Any) -> Optional[_dt.datetime]:
    """Reads an RFC 3339 time (any number of fractional digits, ``Z`` or an
    offset) as an aware datetime; ``None`` and ``""`` give ``None``."""
    if v is None or v == "":
        return None
    if _FAST_ISO and isinstance(v, str):
        # Python 3.11+ reads RFC 3339 in C, several times faster.
        try:
            t = _dt.datetime.fromisoformat(v)
        except ValueError:
            t = None
        if t is not None and t.tzinfo is not None:
            return t
    m = _TIME.match(str(v))
    if not m:
        raise ValueError("time: %r" % (v,))
    frac = (m.group(7) or "")[:6].ljust(6, "0")
    zone = m.group(8)
    if zone in ("Z", "z"):
        tz = _dt.timezone.utc
    else:
        sign = -1 if zone[0] == "-" else 1
        tz = _dt.timezone(sign * _dt.timedelta(hours=int(zone[1:3]), minutes=int(zone[4:6])))
    return _dt.datetime(
        int(m.group(1)), int(m.group(2)), int(m.group(3)),
        int(m.group(4)), int(m.group(5)), int(m.group(6)), int(frac), tzinfo=tz,
    )


def format_time(t: _dt.datetime) -> str:
    """Writes a datetime as RFC 3339 (a naive one is taken as UTC)."""
    if t.tzinfo is None:
        t = t.replace(tzinfo=_dt.timezone.utc)
    return t.isoformat()


def _int(v: Any) -> int:
    return int(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else 0


def _str(v: Any) -> str:
    return v if isinstance(v, str) else ""


def _strs(v: Any) -> List[str]:
    return [x for x in v if isinstance(x, str)] if isinstance(v, list) else []


@dataclass
class Progress:
    """A job's progress: ``done`` of ``total`` in ``phase``, with optional
    per-item detail (``items``, any JSON)."""

    phase: str = ""
    done: int = 0
    total: int = 0
    items: Any = None

    @classmethod
    def from_json(cls, d: Any) -> "Progress":
        if not isinstance(d, dict):
            return cls()
        return cls(phase=_str(d.get("phase")), done=_int(d.get("done")), total=_int(d.get("total")), items=d.get("items"))


@dataclass
class Job:
    """A job as the server shows it (``components.schemas.Job``).

    ``lease_ttl`` and ``timeout`` are seconds. ``error`` is the error of a
    job that failed; ``last_error``, from servers that send it, the last
    failed attempt's error of a job that went on. ``created`` is set by
    ``submit`` only: ``True`` when the call created the job, ``False`` when
    the server answered with an existing one (its idempotency key, or with
    ``unique="active"`` an active duplicate, matched); a key without the
    ``read`` scope is then told only ``id`` and ``state``. ``workflow_id``
    and ``ref`` name the workflow a task belongs to and its ref in it
    (``None`` and ``""`` outside workflows).
    """

    id: str
    state: str
    queue: str = ""
    kind: str = ""
    args: Any = None
    priority: int = 0
    attempt: int = 0
    max_attempts: int = 0
    lease_ttl: Optional[float] = None
    run_at: Optional[_dt.datetime] = None
    lock_key: str = ""
    partition_key: str = ""
    idempotency_key: str = ""
    requires: List[str] = field(default_factory=list)
    prefers: List[str] = field(default_factory=list)
    progress: Progress = field(default_factory=Progress)
    checkpoint: Any = None
    result: Any = None
    error: str = ""
    last_error: str = ""
    cancel_requested: bool = False
    lease_owner: str = ""
    lease_expires_at: Optional[_dt.datetime] = None
    heartbeat_at: Optional[_dt.datetime] = None
    created_at: Optional[_dt.datetime] = None
    started_at: Optional[_dt.datetime] = None
    finished_at: Optional[_dt.datetime] = None
    updated_at: Optional[_dt.datetime] = None
    schedule: str = ""
    scheduled_for: Optional[_dt.datetime] = None
    timeout: Optional[float] = None
    deadline: Optional[_dt.datetime] = None
    rerun: int = 0
    previous_result: Any = None
    workflow_id: Optional[str] = None
    ref: str = ""
    created: Optional[bool] = None
    raw: Dict[str, Any] = field(default_factory=dict, repr=False)

    @property
    def final(self) -> bool:
        """Whether the job is succeeded, failed or canceled."""
        return self.state in FINAL_STATES

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> "Job":
        """Decodes a job of an answer."""
        return cls(**_job_fields(d))


def _dur(d: Mapping[str, Any], name: str) -> Any:
    """A duration member of an answer: its ``_seconds`` sibling when the
    server sends one, else the member (a Go duration string)."""
    v = d.get(name + "_seconds")
    return d.get(name) if v is None else v


def _job_fields(d: Mapping[str, Any]) -> Dict[str, Any]:
    return dict(
        id=_str(d.get("id")),
        state=_str(d.get("state")),
        queue=_str(d.get("queue")),
        kind=_str(d.get("kind")),
        args=d.get("args"),
        priority=_int(d.get("priority")),
        attempt=_int(d.get("attempt")),
        max_attempts=_int(d.get("max_attempts")),
        lease_ttl=parse_duration(_dur(d, "lease_ttl")),
        run_at=parse_time(d.get("run_at")),
        lock_key=_str(d.get("lock_key")),
        partition_key=_str(d.get("partition_key")),
        idempotency_key=_str(d.get("idempotency_key")),
        requires=_strs(d.get("requires")),
        prefers=_strs(d.get("prefers")),
        progress=Progress.from_json(d.get("progress")),
        checkpoint=d.get("checkpoint"),
        result=d.get("result"),
        error=_str(d.get("error")),
        last_error=_str(d.get("last_error")),
        cancel_requested=bool(d.get("cancel_requested")),
        lease_owner=_str(d.get("lease_owner")),
        lease_expires_at=parse_time(d.get("lease_expires_at")),
        heartbeat_at=parse_time(d.get("heartbeat_at")),
        created_at=parse_time(d.get("created_at")),
        started_at=parse_time(d.get("started_at")),
        finished_at=parse_time(d.get("finished_at")),
        updated_at=parse_time(d.get("updated_at")),
        schedule=_str(d.get("schedule")),
        scheduled_for=parse_time(d.get("scheduled_for")),
        timeout=parse_duration(_dur(d, "timeout")),
        deadline=parse_time(d.get("deadline")),
        rerun=_int(d.get("rerun")),
        previous_result=d.get("previous_result"),
        workflow_id=_str(d.get("workflow_id")) or None,
        ref=_str(d.get("ref")),
        raw=dict(d),
    )


@dataclass
class Input:
    """How one dependency of a claimed workflow task ended
    (``components.schemas.Input``): its ``state``, its ``result`` (any
    JSON; ``None`` for none) and its last ``error`` (``""`` for a
    success). A task that runs on success sees only succeeded
    dependencies; one that runs on ``any`` sees failed and canceled ones
    too."""

    state: str
    result: Any = None
    error: str = ""

    @property
    def succeeded(self) -> bool:
        """Whether the dependency succeeded."""
        return self.state == "succeeded"

    @classmethod
    def from_json(cls, d: Any) -> "Input":
        """Decodes one input of a claimed job's ``inputs``."""
        if not isinstance(d, dict):
            return cls(state="")
        return cls(state=_str(d.get("state")), result=d.get("result"), error=_str(d.get("error")))


@dataclass
class ClaimedJob(Job):
    """A job claimed by a worker: a :class:`Job` with the claim's
    ``lease_token``, which every later write of the worker presents, and,
    from servers that advise one, ``heartbeat_interval`` (seconds): how
    often to renew the lease, which the worker follows. A workflow task
    with dependencies has their ends in ``inputs``, by ref (empty for a
    job without dependencies)."""

    lease_token: str = ""
    heartbeat_interval: Optional[float] = None
    inputs: Dict[str, Input] = field(default_factory=dict)
    #: What a durable job resumes from (docs/steps-and-children.md): its
    #: completed steps (name → result), its children (key → {id, state,
    #: result, error}) and the signal of its last signal wait ({name,
    #: payload, timed_out}); empty, and ``None``, for a job that recorded
    #: no step, spawned no child and never waited.
    steps: Dict[str, Any] = field(default_factory=dict)
    children: Dict[str, Any] = field(default_factory=dict)
    signal: Optional[Dict[str, Any]] = None

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> "ClaimedJob":
        """Decodes a claimed job of a claim's answer."""
        f = _job_fields(d)
        hb = _dur(d, "heartbeat_interval")
        raw_in = d.get("inputs")
        inputs = {str(k): Input.from_json(v) for k, v in raw_in.items()} if isinstance(raw_in, dict) else {}
        steps = d.get("steps")
        children = d.get("children")
        signal = d.get("signal")
        return cls(lease_token=_str(d.get("lease_token")), heartbeat_interval=parse_duration(hb), inputs=inputs,
                   steps=dict(steps) if isinstance(steps, Mapping) else {},
                   children=dict(children) if isinstance(children, Mapping) else {},
                   signal=dict(signal) if isinstance(signal, Mapping) else None, **f)


@dataclass
class JobPage:
    """One page of ``GET /api/v1/jobs``: its jobs, the cursor of the next
    page (``None`` on the last), the feed's ``resume_cursor`` and the number
    of matches (``total``)."""

    jobs: List[Job]
    total: int
    next_cursor: Optional[str] = None
    resume_cursor: Optional[str] = None


@dataclass
class Event:
    """An entry of a job's journal; ``id`` is its position (1, 2, 3…)."""

    id: int
    job_id: str
    at: Optional[_dt.datetime]
    kind: str
    attempt: int
    detail: str = ""

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> "Event":
        return cls(
            id=_int(d.get("id")), job_id=_str(d.get("job_id")), at=parse_time(d.get("at")),
            kind=_str(d.get("kind")), attempt=_int(d.get("attempt")), detail=_str(d.get("detail")),
        )


@dataclass
class JobSpec:
    """A job to submit (``components.schemas.SubmitRequest``). Members left
    ``None`` take the server's defaults; ``lease_ttl`` and ``timeout`` are
    seconds or timedeltas."""

    kind: str
    args: Optional[Mapping[str, Any]] = None
    queue: Optional[str] = None
    priority: Optional[int] = None
    run_at: Optional[_dt.datetime] = None
    max_attempts: Optional[int] = None
    lease_ttl: Optional[Duration] = None
    lock_key: Optional[str] = None
    partition_key: Optional[str] = None
    idempotency_key: Optional[str] = None
    requires: Optional[Sequence[str]] = None
    prefers: Optional[Sequence[str]] = None
    unique: Optional[str] = None
    timeout: Optional[Duration] = None
    callback_url: Optional[str] = None

    def to_json(self) -> Dict[str, Any]:
        """The request body of this job."""
        out: Dict[str, Any] = {"kind": self.kind}
        if self.args is not None:
            out["args"] = dict(self.args)
        for name in ("queue", "priority", "max_attempts", "lock_key", "partition_key",
                     "idempotency_key", "unique", "callback_url"):
            v = getattr(self, name)
            if v is not None:
                out[name] = v
        for name in ("requires", "prefers"):
            v = getattr(self, name)
            if v is not None:
                out[name] = list(v)
        if self.run_at is not None:
            out["run_at"] = format_time(self.run_at)
        if self.lease_ttl is not None:
            out["lease_ttl"] = format_duration(self.lease_ttl)
        if self.timeout is not None:
            out["timeout"] = format_duration(self.timeout)
        return out


@dataclass
class Child:
    """A child for :meth:`jobd.Task.spawn`: its ``key``, unique per parent
    (spawning is idempotent per key), and its submission. A child has no
    ``idempotency_key`` nor ``unique`` rule of its own: its key is both."""

    key: str
    spec: JobSpec

    def to_json(self) -> Dict[str, Any]:
        """The child as the spawn's request carries it."""
        out: Dict[str, Any] = {"key": self.key}
        out.update(self.spec.to_json())
        return out


@dataclass
class SpawnedChild:
    """A spawn's answer for one child, in the order of the request: its
    key, id and state; ``created`` is ``False`` when the parent had a child
    of that key already (spawned by an earlier attempt), which it is."""

    key: str
    id: str
    state: str
    created: bool

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> "SpawnedChild":
        return cls(key=_str(d.get("key")), id=_str(d.get("id")), state=_str(d.get("state")), created=bool(d.get("created")))


@dataclass
class SignalResult:
    """The answer of a signal: ``delivered`` when the job was waiting for
    it (it is queued again), ``False`` when it is kept for the job's next
    wait of that name; and the job as it is now."""

    delivered: bool
    job: Job


@dataclass
class SubmitResult:
    """The answer for one job of a batch submit: the job (``job.created``
    says whether it is new) or the error that refused it."""

    job: Optional[Job] = None
    error: Optional[Exception] = None

    @property
    def ok(self) -> bool:
        return self.error is None


@dataclass
class LeaseState:
    """A heartbeat's answer for one lease: whether the worker still holds
    it, and whether the job's cancel was requested."""

    id: str
    held: bool
    cancel_requested: bool


@dataclass
class WorkerCreated:
    """A registered remote worker: its id, its key (scope ``worker``, shown
    only this once) and the worker as the server shows it."""

    worker_id: str
    api_key: str
    worker: Dict[str, Any]
