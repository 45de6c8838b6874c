"""Handlers of the worker processes the tests start with
``python -m jobd worker --module pyworker_handlers``."""

import asyncio
import os

import jobd

NAME = os.environ.get("PYTEST_WORKER_NAME", "")

handlers = jobd.Handlers()


@handlers.handler("hang")
async def hang(task: jobd.Task) -> None:
    """Says it started, then runs until it is cancelled."""
    await task.progress(1, 2, "started", items=[{"worker": NAME}])
    await asyncio.Event().wait()


@handlers.handler("hang-threaded")
def hang_threaded(task: jobd.SyncTask) -> None:
    """Says it started, then runs until it is told to stop."""
    task.progress(1, 2, "started", items=[{"worker": NAME}])
    task.stop_event.wait()
    task.raise_if_cancelled()


@handlers.handler("finish")
async def finish(task: jobd.Task) -> dict:
    return {"worker": NAME, "attempt": task.attempt}
