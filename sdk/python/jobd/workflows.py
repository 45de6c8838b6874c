"""Workflows: jobs, their *tasks*, submitted together, some of which
depend on others (``/api/v1/workflows``; docs/workflows.md in the jobd
repository has the rules).

A task runs once its dependencies succeeded, with their results as its
inputs (:attr:`jobd.Task.inputs`); one whose dependency fails or is
canceled is canceled too, unless it runs on any end (``run_on="any"``).

Build a workflow with :class:`WorkflowBuilder` (or a list of
:class:`TaskSpec`) and submit it with :meth:`jobd.Client.submit_workflow`;
answers are :class:`Workflow` values, with their :class:`WorkflowTask`,
:class:`WorkflowEdge`, :class:`WorkflowEvent` and
:class:`WorkflowCounts`.
"""

from __future__ import annotations

import datetime as _dt
from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Sequence, Union

from .errors import JobdError
from .models import Input, JobSpec, parse_time

__all__ = [
    "WORKFLOW_FINAL_STATES",
    "RUN_ON_SUCCESS",
    "RUN_ON_ANY",
    "TaskSpec",
    "TaskRef",
    "WorkflowBuilder",
    "Workflow",
    "WorkflowTask",
    "WorkflowEdge",
    "WorkflowEvent",
    "WorkflowCounts",
    "WorkflowPage",
    "InputError",
    "input_result",
]

#: The states a workflow does not leave by itself (a retry makes it
#: ``running`` again).
WORKFLOW_FINAL_STATES = frozenset(("succeeded", "failed", "canceled"))

#: ``run_on`` values: the task runs once every dependency succeeded (the
#: default), or once every dependency is final, however it ended.
RUN_ON_SUCCESS = "success"
RUN_ON_ANY = "any"


def _int(v: Any) -> int:
    return int(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else 0


def _str(v: Any) -> str:
    return v if isinstance(v, str) else ""


def _strs(v: Any) -> List[str]:
    return [x for x in v if isinstance(x, str)] if isinstance(v, list) else []


# --- what is submitted -------------------------------------------------------


@dataclass
class TaskSpec(JobSpec):
    """One task of a workflow to submit
    (``components.schemas.WorkflowTaskRequest``): a job submission (every
    member of :class:`jobd.JobSpec`; the server refuses ``idempotency_key``
    and ``unique`` on a task, the workflow's key covers its tasks) with its
    ``ref``, unique in the workflow, the refs it ``depends_on`` and
    ``run_on`` (``"success"``, the server's default, or ``"any"``)."""

    ref: str = ""
    depends_on: Optional[Sequence[str]] = None
    run_on: Optional[str] = None

    def to_json(self) -> Dict[str, Any]:
        """The request body of this task."""
        out = super().to_json()
        out["ref"] = self.ref
        if self.depends_on:
            out["depends_on"] = list(self.depends_on)
        if self.run_on is not None:
            out["run_on"] = self.run_on
        return out


def task_spec(t: Union[TaskSpec, Mapping[str, Any]]) -> TaskSpec:
    """Returns the :class:`TaskSpec` of a task given as one or as a dict
    of its members."""
    return t if isinstance(t, TaskSpec) else TaskSpec(**dict(t))


@dataclass(frozen=True)
class TaskRef:
    """A task of a :class:`WorkflowBuilder`: what a later task names as a
    dependency (``depends_on=[download]``)."""

    ref: str
    builder: "WorkflowBuilder" = field(repr=False, compare=False)


class WorkflowBuilder:
    """Builds a workflow to submit, as the Go SDK's ``client.NewWorkflow``
    does::

        wf = jobd.WorkflowBuilder("transcode", idempotency_key="video-42")
        download = wf.task("download", "download", {"url": url}, queue="media")
        encodes = [wf.task("encode-" + r, "encode", {"rendition": r}, queue="media",
                           depends_on=[download]) for r in ("720p", "1080p")]
        wf.task("publish", "publish", queue="media", depends_on=encodes)
        w = client.submit_workflow(wf)

    A ref used twice, or a dependency that is a task of another builder,
    raises :class:`ValueError` at once; the server checks the rest (an
    unknown ref, a cycle: a :class:`jobd.ValidationError` naming
    ``tasks[i].depends_on``).
    """

    def __init__(self, name: str, *, idempotency_key: Optional[str] = None) -> None:
        #: The workflow's name: the kind of work it does.
        self.name = name
        #: Makes the submission idempotent (see :meth:`jobd.Client.submit_workflow`).
        self.idempotency_key = idempotency_key
        #: The tasks added so far, in order.
        self.tasks: List[TaskSpec] = []
        self._refs: Dict[str, TaskRef] = {}

    def task(
        self,
        ref: str,
        kind: str,
        args: Optional[Mapping[str, Any]] = None,
        *,
        depends_on: Sequence[Union[TaskRef, str]] = (),
        run_on: Optional[str] = None,
        **options: Any,
    ) -> TaskRef:
        """Adds a task named ``ref`` that runs a job of ``kind`` with
        ``args``, after the tasks of ``depends_on`` (:class:`TaskRef` values
        of this builder, or refs); ``run_on="any"`` runs it whatever they
        ended as. ``options`` are the members of :class:`jobd.JobSpec`
        (queue, priority, run_at, max_attempts, lease_ttl, lock_key,
        partition_key, requires, prefers, timeout, callback_url). Returns
        the task, to name as a dependency of later ones."""
        if ref in self._refs:
            raise ValueError("jobd: workflow %r has two tasks %r" % (self.name, ref))
        deps: List[str] = []
        for d in depends_on:
            if isinstance(d, TaskRef):
                if d.builder is not self:
                    raise ValueError("jobd: task %r depends on %r, a task of another workflow" % (ref, d.ref))
                deps.append(d.ref)
            else:
                deps.append(str(d))
        spec = TaskSpec(kind=kind, args=args, ref=ref, depends_on=deps or None, run_on=run_on, **options)
        self.tasks.append(spec)
        t = TaskRef(ref, self)
        self._refs[ref] = t
        return t

    def to_json(self) -> Dict[str, Any]:
        """The request body of ``POST /api/v1/workflows``."""
        return request_body(self.name, self.tasks, self.idempotency_key)


def request_body(name: str, tasks: Sequence[Union[TaskSpec, Mapping[str, Any]]], idempotency_key: Optional[str]) -> Dict[str, Any]:
    """The request body of ``POST /api/v1/workflows``."""
    out: Dict[str, Any] = {"name": name}
    if idempotency_key:
        out["idempotency_key"] = idempotency_key
    out["tasks"] = [task_spec(t).to_json() for t in tasks]
    return out


# --- what the server answers -------------------------------------------------


@dataclass
class WorkflowCounts:
    """A workflow's tasks by state (its detail's ``counts``)."""

    waiting: int = 0
    queued: int = 0
    running: int = 0
    succeeded: int = 0
    failed: int = 0
    canceled: int = 0
    raw: Dict[str, int] = field(default_factory=dict, repr=False)

    @classmethod
    def from_json(cls, d: Any) -> "WorkflowCounts":
        """Decodes a workflow's ``counts``."""
        if not isinstance(d, dict):
            return cls()
        raw = {str(k): _int(v) for k, v in d.items()}
        return cls(
            waiting=raw.get("waiting", 0), queued=raw.get("queued", 0), running=raw.get("running", 0),
            succeeded=raw.get("succeeded", 0), failed=raw.get("failed", 0), canceled=raw.get("canceled", 0),
            raw=raw,
        )


@dataclass
class WorkflowTask:
    """A task of a workflow's detail (``components.schemas.WorkflowTask``);
    :meth:`jobd.Client.get` of its ``id`` shows the whole job.
    ``canceled_by`` is the ref of the dependency whose failure or cancel
    canceled it (``""`` otherwise); ``pending`` counts its dependencies not
    final yet, while it waits."""

    id: str
    ref: str
    state: str
    queue: str = ""
    kind: str = ""
    run_on: str = RUN_ON_SUCCESS
    depends_on: List[str] = field(default_factory=list)
    pending: int = 0
    attempt: int = 0
    error: str = ""
    canceled_by: str = ""
    created_at: Optional[_dt.datetime] = None
    started_at: Optional[_dt.datetime] = None
    finished_at: Optional[_dt.datetime] = None

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> "WorkflowTask":
        """Decodes a task of a workflow's detail."""
        return cls(
            id=_str(d.get("id")), ref=_str(d.get("ref")), state=_str(d.get("state")),
            queue=_str(d.get("queue")), kind=_str(d.get("kind")), run_on=_str(d.get("run_on")) or RUN_ON_SUCCESS,
            depends_on=_strs(d.get("depends_on")), pending=_int(d.get("pending")), attempt=_int(d.get("attempt")),
            error=_str(d.get("error")), canceled_by=_str(d.get("canceled_by")),
            created_at=parse_time(d.get("created_at")), started_at=parse_time(d.get("started_at")),
            finished_at=parse_time(d.get("finished_at")),
        )


@dataclass
class WorkflowEdge:
    """A dependency of a workflow: ``task`` depends on ``depends_on``
    (refs)."""

    task: str
    depends_on: str

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> "WorkflowEdge":
        """Decodes an edge of a workflow's detail."""
        return cls(task=_str(d.get("task")), depends_on=_str(d.get("depends_on")))


@dataclass
class WorkflowEvent:
    """An entry of a workflow's journal: ``submitted``,
    ``cancel-requested``, ``retried``, ``succeeded``, ``failed`` or
    ``canceled``; ``id`` is its position (1, 2, 3…)."""

    id: int
    at: Optional[_dt.datetime]
    kind: str
    detail: str = ""

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> "WorkflowEvent":
        """Decodes an event of a workflow's journal."""
        return cls(id=_int(d.get("id")), at=parse_time(d.get("at")), kind=_str(d.get("kind")), detail=_str(d.get("detail")))


@dataclass
class Workflow:
    """A workflow as the server shows it (``components.schemas.Workflow``).

    ``state`` is ``running`` until every task is final, then ``failed`` (a
    task failed), ``canceled`` (one was canceled, none failed) or
    ``succeeded``. ``succeeded``, ``failed`` and ``canceled`` count its
    final tasks. Its detail (:meth:`jobd.Client.get_workflow`,
    :meth:`jobd.Client.submit_workflow`) adds ``counts``, ``tasks`` (each
    after its dependencies), ``edges`` and ``events``; a list, a cancel
    and a retry show the row only (``counts`` ``None``, the lists empty).
    ``created`` is set by ``submit_workflow`` only: ``False`` when its
    idempotency key matched a workflow submitted before (a key without the
    ``read`` scope is then told only ``id`` and ``state``).
    """

    id: str
    state: str
    name: str = ""
    idempotency_key: str = ""
    task_count: int = 0
    succeeded: int = 0
    failed: int = 0
    canceled: int = 0
    counts: Optional[WorkflowCounts] = None
    created_at: Optional[_dt.datetime] = None
    updated_at: Optional[_dt.datetime] = None
    finished_at: Optional[_dt.datetime] = None
    tasks: List[WorkflowTask] = field(default_factory=list)
    edges: List[WorkflowEdge] = field(default_factory=list)
    events: List[WorkflowEvent] = field(default_factory=list)
    created: Optional[bool] = None
    raw: Dict[str, Any] = field(default_factory=dict, repr=False)

    @property
    def final(self) -> bool:
        """Whether the workflow is succeeded, failed or canceled."""
        return self.state in WORKFLOW_FINAL_STATES

    def task(self, ref: str) -> WorkflowTask:
        """Returns the task ``ref`` of the workflow's detail; raises
        :class:`KeyError` when it has none."""
        for t in self.tasks:
            if t.ref == ref:
                return t
        raise KeyError(ref)

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> "Workflow":
        """Decodes a workflow of an answer."""
        return cls(
            id=_str(d.get("id")), state=_str(d.get("state")), name=_str(d.get("name")),
            idempotency_key=_str(d.get("idempotency_key")), task_count=_int(d.get("task_count")),
            succeeded=_int(d.get("succeeded")), failed=_int(d.get("failed")), canceled=_int(d.get("canceled")),
            counts=WorkflowCounts.from_json(d["counts"]) if isinstance(d.get("counts"), dict) else None,
            created_at=parse_time(d.get("created_at")), updated_at=parse_time(d.get("updated_at")),
            finished_at=parse_time(d.get("finished_at")),
            tasks=[WorkflowTask.from_json(t) for t in d.get("tasks") or [] if isinstance(t, dict)],
            edges=[WorkflowEdge.from_json(e) for e in d.get("edges") or [] if isinstance(e, dict)],
            events=[WorkflowEvent.from_json(e) for e in d.get("events") or [] if isinstance(e, dict)],
            raw=dict(d),
        )


@dataclass
class WorkflowPage:
    """One page of ``GET /api/v1/workflows``: its workflows (rows), the
    cursor of the next page (``None`` on the last) and the number of
    matches (``total``; -1 for a key limited to queues)."""

    workflows: List[Workflow]
    total: int
    next_cursor: Optional[str] = None


def changed(a: Optional[Workflow], b: Workflow) -> bool:
    """Whether a workflow's state, or a task's, differs between two
    reads (``a`` ``None``: the first read)."""
    if a is None or a.state != b.state or len(a.tasks) != len(b.tasks):
        return True
    if any(x.state != y.state for x, y in zip(a.tasks, b.tasks)):
        return True
    return a.counts != b.counts


# --- a task's inputs ---------------------------------------------------------


class InputError(JobdError):
    """A claimed task's input could not be read: the task has no
    dependency ``ref``, or that dependency did not succeed (``state`` and
    ``error`` say how it ended)."""

    def __init__(self, msg: str, ref: str, state: str = "", error: str = "") -> None:
        super().__init__(msg)
        self.ref = ref
        self.state = state
        self.error = error


def input_result(job_id: str, inputs: Mapping[str, Input], ref: str) -> Any:
    """The result of the dependency ``ref`` among a claimed job's inputs;
    raises :class:`InputError` when there is none or it did not
    succeed."""
    inp = inputs.get(ref)
    if inp is None:
        raise InputError("jobd: job %s has no input %r" % (job_id, ref), ref)
    if not inp.succeeded:
        msg = "jobd: input %r is %s" % (ref, inp.state)
        if inp.error:
            msg += ": " + inp.error
        raise InputError(msg, ref, inp.state, inp.error)
    return inp.result
