"""Throughput of Python SDK workers: a backlog of no-op jobs worked by N
``python -m jobd worker`` processes over HTTP on loopback, auth on.

    python3 sdk/python/bench/throughput.py --jobd /tmp/jobd --jobs 20000 \
        --processes 2 --concurrency 64 --runs 3 [--database postgres://ADMIN-URL]

Each run starts a fresh ``jobd serve`` (on a new SQLite file, or a new
database on the PostgreSQL server of the given URL), inserts the backlog,
then starts the workers and times the backlog from its first claim to its
last success (the jobs' started_at and finished_at). It also gives the CPU
time the server process and the worker processes spent a job (PostgreSQL's
own processes are not counted). ``--profile DIR`` runs the
first worker under cProfile and writes its profile there.
"""

from __future__ import annotations

import argparse
import glob
import shutil
import urllib.parse
import asyncio
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from typing import List

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

import jobd  # noqa: E402

ADMIN = "bench-admin-secret-0123456789"


def start_server(binary: str, database: str, log: str) -> "tuple[subprocess.Popen[bytes], str]":
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    f = open(log, "wb")
    p = subprocess.Popen([binary, "serve", "--database", database, "--listen", "127.0.0.1:%d" % port, "--admin-secret", ADMIN,
                          "--workers", "[]", "--log-level", "warn"], stdout=f, stderr=subprocess.STDOUT)
    url = "http://127.0.0.1:%d" % port
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(url + "/health", timeout=1):
                return p, url
        except OSError:
            time.sleep(0.05)
    raise SystemExit("jobd serve did not start: see " + log)


def fresh_database(admin_url: str, name: str) -> str:
    """Creates database name on the server of admin_url; returns its URL."""
    psql = shutil.which("psql") or sorted(glob.glob("/usr/lib/postgresql/*/bin/psql"))[-1]
    subprocess.run([psql, admin_url, "-q", "-c", "CREATE DATABASE " + name], check=True)
    u = urllib.parse.urlsplit(admin_url)
    return urllib.parse.urlunsplit((u.scheme, u.netloc, "/" + name, u.query, u.fragment))


async def insert(url: str, queue: str, n: int) -> None:
    async with jobd.AsyncClient(url, ADMIN) as c:
        for i in range(0, n, 1000):
            res = await c.submit_many([{"kind": "noop", "queue": queue} for _ in range(min(1000, n - i))])
            bad = [r.error for r in res if r.error]
            if bad:
                raise SystemExit("insert: %s" % bad[0])


def cpu_seconds(pid: int) -> float:
    """The user + system CPU time a process has used (Linux /proc)."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def run_once(args: argparse.Namespace, run: int, tmp: str) -> "tuple[float, float, float]":
    """Returns jobs/s and the server's and the workers' CPU milliseconds a
    job."""
    database = args.database or "sqlite:" + os.path.join(tmp, "bench-%d.db" % run)
    if database.startswith("postgres"):
        database = fresh_database(database, "jobd_bench_%d_%d" % (os.getpid(), run))
    server, url = start_server(args.jobd, database, os.path.join(tmp, "serve-%d.log" % run))
    queue = "bench-%d-%d" % (os.getpid(), run)
    workers: List["subprocess.Popen[bytes]"] = []
    try:
        t0 = time.monotonic()
        asyncio.run(insert(url, queue, args.jobs))
        print("  inserted %d jobs in %.1fs" % (args.jobs, time.monotonic() - t0), flush=True)
        c = jobd.Client(url, ADMIN)
        env = dict(os.environ, PYTHONPATH=os.pathsep.join([os.path.dirname(HERE), HERE]))
        keys = [c.create_worker("bench-%d-%d" % (run, i)).api_key for i in range(args.processes)]
        for i in range(args.processes):
            env["JOBD_WORKER_KEY"] = keys[i]
            cmd = [sys.executable]
            if args.profile and i == 0:
                os.makedirs(args.profile, exist_ok=True)
                cmd += ["-m", "cProfile", "-o", os.path.join(args.profile, "worker-run%d.prof" % run)]
            cmd += ["-m", "jobd", "worker", "--server", url, "--module", "noop_handlers", "--queue", queue,
                    "--concurrency", str(args.concurrency), "--log-level", "warning"]
            workers.append(subprocess.Popen(cmd, env=dict(env)))
            if i == 0:
                server_cpu = cpu_seconds(server.pid)
        # Polled every 0.5 s: a count of 20 000 rows is itself work for the
        # server, and a tighter poll slows it measurably on SQLite.
        while c.count(queue=queue, state="succeeded") < args.jobs:
            time.sleep(0.5)
        server_ms = (cpu_seconds(server.pid) - server_cpu) * 1000 / args.jobs
        worker_ms = sum(cpu_seconds(w.pid) for w in workers) * 1000 / args.jobs
        # The window is the server's: from the first claim (the earliest
        # started_at) to the last success (the latest finished_at).
        first = last = None
        for j in c.iterate(queue=queue, limit=200):
            if j.started_at is not None and (first is None or j.started_at < first):
                first = j.started_at
            if j.finished_at is not None and (last is None or j.finished_at > last):
                last = j.finished_at
        assert first is not None and last is not None
        c.close()
        return args.jobs / (last - first).total_seconds(), server_ms, worker_ms
    finally:
        for w in workers:
            w.terminate()
        for w in workers:
            w.wait(60)
        server.terminate()
        server.wait(60)


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--jobd", required=True)
    p.add_argument("--database", default="")
    p.add_argument("--jobs", type=int, default=20000)
    p.add_argument("--processes", type=int, default=2)
    p.add_argument("--concurrency", type=int, default=64)
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--profile", default="")
    args = p.parse_args()
    rates = []
    with tempfile.TemporaryDirectory(prefix="jobd-pybench-") as tmp:
        for run in range(args.runs):
            load = os.getloadavg()
            r, server_ms, worker_ms = run_once(args, run, tmp)
            rates.append(r)
            print("run %d: %.0f jobs/s; CPU a job: server %.2f ms, workers %.2f ms (load before %.1f %.1f %.1f)" % (
                run + 1, r, server_ms, worker_ms, *load), flush=True)
    print("%d × %d, %d jobs: min %.0f, median %.0f, max %.0f jobs/s" % (
        args.processes, args.concurrency, args.jobs, min(rates), statistics.median(rates), max(rates)))


if __name__ == "__main__":
    main()
