"""``python -m jobd worker``: runs a worker whose handlers a module
registers.

::

    python -m jobd worker --server http://jobd:8080 --key "$JOBD_WORKER_KEY" \\
        --queues '[{"queue":"load.cbr","concurrency":2}]' --module etl.handlers

The module (``pkg.mod``, or ``pkg.mod:name`` to name the object) is
imported; its handlers are the :class:`~jobd.Handlers` (or the
:class:`~jobd.Worker`, whose handlers are taken) named, else the module's
one ``Handlers`` object, else those registered with :func:`jobd.handler`.
The server and key may come from ``JOBD_SERVER`` and ``JOBD_WORKER_KEY``.
SIGTERM or SIGINT stops it gracefully; a second one skips the wait.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import os
import sys
from typing import List, Optional

from .handlers import Handlers, default_handlers
from .worker import Worker

__all__ = ["main", "load_handlers"]


def load_handlers(spec: str) -> Handlers:
    """Imports ``pkg.mod`` or ``pkg.mod:name`` and returns its handlers."""
    mod_name, _, attr = spec.partition(":")
    mod = importlib.import_module(mod_name)
    if attr:
        obj = getattr(mod, attr)
        if isinstance(obj, Worker):
            return obj.handlers
        if isinstance(obj, Handlers):
            return obj
        raise SystemExit("jobd worker: %s is neither jobd.Handlers nor jobd.Worker" % spec)
    found = [v for v in vars(mod).values() if isinstance(v, Handlers) and v is not default_handlers]
    found += [v.handlers for v in vars(mod).values() if isinstance(v, Worker)]
    if len(found) > 1:
        raise SystemExit("jobd worker: %s holds several handler sets; name one as %s:NAME" % (mod_name, mod_name))
    if found:
        return found[0]
    if not default_handlers.kinds():
        raise SystemExit("jobd worker: %s registers no handler" % mod_name)
    return default_handlers


def main(argv: Optional[List[str]] = None) -> int:
    p = argparse.ArgumentParser(prog="python -m jobd")
    sub = p.add_subparsers(dest="command", required=True)
    w = sub.add_parser("worker", help="run a remote worker")
    w.add_argument("--server", default=os.environ.get("JOBD_SERVER", "http://127.0.0.1:8080"), help="the server's URL (env JOBD_SERVER)")
    w.add_argument("--key", default=os.environ.get("JOBD_WORKER_KEY"), help="the worker's key (env JOBD_WORKER_KEY)")
    w.add_argument("--module", required=True, help="the module that registers the handlers: pkg.mod or pkg.mod:name")
    w.add_argument("--queues", help='queues and their concurrency as JSON: [{"queue":"load.cbr","concurrency":2}]')
    w.add_argument("--queue", action="append", default=[], help="a queue (repeatable), each with --concurrency")
    w.add_argument("--concurrency", type=int, default=1, help="concurrency of each --queue (default 1)")
    w.add_argument("--threads", type=int, default=None, help="threads of blocking handlers (default: the total concurrency)")
    w.add_argument("--claim-wait", type=float, default=30.0, help="seconds a claim long-polls (default 30)")
    w.add_argument("--heartbeat-interval", type=float, default=10.0, help="seconds between heartbeats (default 10)")
    w.add_argument("--shutdown-timeout", type=float, default=20.0, help="seconds running jobs get on SIGTERM (default 20)")
    w.add_argument("--log-level", default="info", help="debug, info, warning or error")
    a = p.parse_args(argv)
    logging.basicConfig(level=a.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    if a.queues and a.queue:
        p.error("give --queues or --queue, not both")
    if not a.queues and not a.queue:
        p.error("give --queues or --queue")
    sys.path.insert(0, os.getcwd())
    handlers = load_handlers(a.module)
    worker = Worker(
        a.server, a.key, queues=a.queues or a.queue, concurrency=a.concurrency, handlers=handlers,
        threads=a.threads, claim_wait=a.claim_wait, heartbeat_interval=a.heartbeat_interval,
        shutdown_timeout=a.shutdown_timeout,
    )
    logging.getLogger("jobd.worker").info(
        "jobd worker: %s on %s; kinds %s", ", ".join("%s×%d" % (q.queue, q.concurrency) for q in worker.queues),
        a.server, ", ".join(handlers.kinds()),
    )
    worker.run_forever()
    if worker.stats.abandoned:
        # A thread of a handler that ignored its cancel would hold the
        # interpreter's exit: its job is released already.
        logging.shutdown()
        os._exit(0)
    return 0
