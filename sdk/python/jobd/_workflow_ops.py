"""The workflow operations of the HTTP API (``/api/v1/workflows…``),
written once for both clients, as :mod:`jobd._ops` writes the others."""

from __future__ import annotations

from typing import Any, List, Mapping, Optional, Sequence, Tuple, Union

from ._http import Request, Response
from ._ops import Op, States, _enc, _json, _seg
from .workflows import TaskSpec, Workflow, WorkflowBuilder, WorkflowPage, request_body

#: How often wait_workflow reads a workflow, in seconds (the Go SDK's
#: DefaultWorkflowPoll).
WORKFLOW_POLL = 0.5

Tasks = Optional[Sequence[Union[TaskSpec, Mapping[str, Any]]]]


def _workflow(resp: Response) -> Workflow:
    return Workflow.from_json(_json(resp) or {})


def submit_body(name: Union[str, WorkflowBuilder], tasks: Tasks, idempotency_key: Optional[str]) -> Any:
    """The body of POST /api/v1/workflows from a builder, or a name and
    tasks."""
    if isinstance(name, WorkflowBuilder):
        if tasks is not None:
            raise TypeError("jobd: submit_workflow of a WorkflowBuilder takes no tasks")
        return request_body(name.name, name.tasks, idempotency_key or name.idempotency_key)
    if tasks is None:
        raise TypeError("jobd: submit_workflow needs tasks")
    return request_body(name, tasks, idempotency_key)


def submit(body: Any, traceparent: Optional[str] = None) -> Op[Workflow]:
    def decode(resp: Response) -> Workflow:
        w = _workflow(resp)
        w.created = resp.status == 201
        return w

    hdr = {"traceparent": traceparent} if traceparent else {}
    req = Request("POST", "/api/v1/workflows", body=_enc(body), headers=hdr, idempotent=bool(body.get("idempotency_key")))
    return Op(req, decode)


def get(workflow_id: str) -> Op[Workflow]:
    return Op(Request("GET", "/api/v1/workflows/" + _seg(workflow_id)), _workflow)


def action(workflow_id: str, name: str) -> Op[Workflow]:
    """cancel or retry."""
    return Op(Request("POST", "/api/v1/workflows/%s/%s" % (_seg(workflow_id), name)), _workflow)


def list_query(name: Optional[str] = None, state: States = None, cursor: Optional[str] = None, limit: Optional[int] = None) -> List[Tuple[str, str]]:
    q: List[Tuple[str, str]] = []
    if name:
        q.append(("name", name))
    if isinstance(state, str):
        q.append(("state", state))
    elif state is not None:
        q.extend(("state", s) for s in state)
    if cursor:
        q.append(("cursor", cursor))
    if limit is not None:
        q.append(("limit", str(limit)))
    return q


def list_page(query: Sequence[Tuple[str, str]]) -> Op[WorkflowPage]:
    def decode(resp: Response) -> WorkflowPage:
        d = _json(resp) or {}
        return WorkflowPage(
            workflows=[Workflow.from_json(w) for w in d.get("workflows") or [] if isinstance(w, dict)],
            total=int(d.get("total") or 0),
            next_cursor=d.get("next_cursor") or None,
        )

    return Op(Request("GET", "/api/v1/workflows", list(query)), decode)
