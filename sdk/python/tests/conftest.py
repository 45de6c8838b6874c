"""Fixtures: a real ``jobd serve`` built from this checkout, on SQLite and on
PostgreSQL, with authentication on.

jobd is built once per session (``go build``; ``JOBD_BIN`` names a binary
to use instead). The PostgreSQL server is a throwaway cluster started from
``/usr/lib/postgresql/*/bin`` (as the ``postgres`` user when the tests run
as root), unless ``JOBD_TEST_DATABASE_URL`` names one; the tests fail,
never skip, without it. Every test that takes ``server`` runs on both
stores; tests keep apart by queue names of their own.
"""

from __future__ import annotations

import asyncio
import glob
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
import uuid
from typing import Any, Callable, Dict, Iterator, List, Optional, TypeVar

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
SDK = os.path.dirname(HERE)
REPO = os.path.dirname(os.path.dirname(SDK))
sys.path.insert(0, SDK)

import jobd  # noqa: E402

ADMIN = "pytest-admin-secret-0123456789"

T = TypeVar("T")


def poll(fn: Callable[[], Optional[T]], what: str, timeout: float = 30.0, every: float = 0.02) -> T:
    """Calls fn until it returns something truthy, or fails the test after
    timeout seconds (a bound, not a synchronisation)."""
    deadline = time.monotonic() + timeout
    while True:
        v = fn()
        if v:
            return v
        if time.monotonic() > deadline:
            pytest.fail("timed out after %ss waiting for %s" % (timeout, what))
        time.sleep(every)


@pytest.fixture(scope="session")
def jobd_bin(tmp_path_factory: pytest.TempPathFactory) -> str:
    if os.environ.get("JOBD_BIN"):
        return os.environ["JOBD_BIN"]
    out = str(tmp_path_factory.mktemp("bin") / "jobd")
    env = dict(os.environ)
    env["PATH"] = "/usr/local/go/bin:" + env.get("PATH", "")
    subprocess.run(["go", "build", "-o", out, "./cmd/jobd"], cwd=REPO, check=True, env=env)
    return out


class _Cluster:
    """A throwaway PostgreSQL cluster."""

    def __init__(self) -> None:
        dirs = sorted(glob.glob("/usr/lib/postgresql/*/bin"), key=lambda d: int(d.split("/")[-2]), reverse=True)
        bins = [d for d in dirs if os.path.exists(os.path.join(d, "initdb"))]
        if not bins:
            raise RuntimeError("no initdb in /usr/lib/postgresql/*/bin (Debian's postgresql package)")
        self.bin = bins[0]
        self.dir = tempfile.mkdtemp(prefix="jobd-pytest-%d-" % os.getpid())
        self.as_user: List[str] = []
        if os.geteuid() == 0:
            import pwd

            pw = pwd.getpwnam("postgres")
            os.chown(self.dir, pw.pw_uid, pw.pw_gid)
            self.as_user = ["runuser", "-u", "postgres", "--"]
        self.port = _free_port()
        data = os.path.join(self.dir, "data")
        self._run("initdb", "-D", data, "-U", "postgres", "-A", "trust", "--no-sync", "-E", "UTF8")
        opts = "-p %d -h 127.0.0.1 -k %s -c max_connections=300 -c fsync=off -c synchronous_commit=off -c full_page_writes=off" % (self.port, self.dir)
        self._run("pg_ctl", "-D", data, "-l", os.path.join(self.dir, "log"), "-o", opts, "-w", "-t", "60", "start")
        self.url = "postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable" % self.port

    def _run(self, tool: str, *args: str) -> None:
        subprocess.run(self.as_user + [os.path.join(self.bin, tool), *args], cwd=self.dir, check=True, capture_output=True)

    def stop(self) -> None:
        try:
            self._run("pg_ctl", "-D", os.path.join(self.dir, "data"), "-m", "immediate", "-w", "stop")
        finally:
            shutil.rmtree(self.dir, ignore_errors=True)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _psql(admin_url: str, sql: str) -> None:
    dirs = sorted(glob.glob("/usr/lib/postgresql/*/bin/psql"), reverse=True)
    psql = shutil.which("psql") or (dirs[0] if dirs else "psql")
    subprocess.run([psql, admin_url, "-v", "ON_ERROR_STOP=1", "-q", "-c", sql], check=True, capture_output=True)


@pytest.fixture(scope="session")
def pg_admin_url() -> Iterator[str]:
    if os.environ.get("JOBD_TEST_DATABASE_URL"):
        yield os.environ["JOBD_TEST_DATABASE_URL"]
        return
    c = _Cluster()
    try:
        yield c.url
    finally:
        c.stop()


class Server:
    """A running ``jobd serve``."""

    def __init__(self, binary: str, database: str, store: str, workdir: str) -> None:
        self.store = store
        self.admin = ADMIN
        self.log_path = os.path.join(workdir, "serve-%s.log" % store)
        self._log = open(self.log_path, "wb")
        self.proc = subprocess.Popen(
            [
                binary, "serve", "--database", database, "--listen", "127.0.0.1:0",
                "--admin-secret", ADMIN, "--workers", "[]",
                "--reaper-interval", "200ms", "--stream-max-age", "1s", "--poll-interval", "50ms",
            ],
            stdout=self._log, stderr=subprocess.STDOUT,
        )
        addr = poll(self._addr, "jobd serve to listen (%s)" % self.log_path, timeout=60)
        self.url = "http://" + addr
        self._seq = 0

    def _addr(self) -> Optional[str]:
        if self.proc.poll() is not None:
            pytest.fail("jobd serve exited: %s" % open(self.log_path).read()[-4000:])
        with open(self.log_path, "rb") as f:
            m = re.search(rb'msg="jobd serving" addr=(\S+)', f.read())
        return m.group(1).decode() if m else None

    def client(self, key: Optional[str] = None, **kw: Any) -> jobd.Client:
        """A client with the admin secret, or with key."""
        return jobd.Client(self.url, self.admin if key is None else key, **kw)

    def aclient(self, key: Optional[str] = None) -> jobd.AsyncClient:
        return jobd.AsyncClient(self.url, self.admin if key is None else key)

    def worker_key(self, name: str = "pytest") -> str:
        """Registers a remote worker and returns its key."""
        with self.client() as c:
            return c.create_worker(name + "-" + uuid.uuid4().hex[:8]).api_key

    def stop(self) -> None:
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self._log.close()


@pytest.fixture(scope="session", params=["sqlite", "postgres"])
def server(request: pytest.FixtureRequest, jobd_bin: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    workdir = str(tmp_path_factory.mktemp("jobd-" + request.param))
    if request.param == "sqlite":
        database = "sqlite:" + os.path.join(workdir, "jobd.db")
    else:
        admin_url = request.getfixturevalue("pg_admin_url")
        name = "jobd_pytest_%d_%s" % (os.getpid(), uuid.uuid4().hex[:8])
        _psql(admin_url, "CREATE DATABASE " + name)
        u = urllib.parse.urlsplit(admin_url)
        database = urllib.parse.urlunsplit((u.scheme, u.netloc, "/" + name, u.query, u.fragment))
    s = Server(jobd_bin, database, request.param, workdir)
    yield s
    s.stop()


@pytest.fixture
def queue(request: pytest.FixtureRequest) -> str:
    """A queue name of the test's own."""
    base = re.sub(r"[^a-z0-9]+", "-", request.node.name.lower()).strip("-")[:40]
    return "py-%s-%s" % (base, uuid.uuid4().hex[:6])


class WorkerThread:
    """A Worker running on an event loop of its own, in a thread."""

    def __init__(self, worker: jobd.Worker) -> None:
        self.worker = worker
        self.error: Optional[BaseException] = None
        self.thread = threading.Thread(target=self._main, daemon=True)
        self.thread.start()
        if not worker.wait_started(30):
            pytest.fail("the worker did not start")

    def _main(self) -> None:
        try:
            asyncio.run(self.worker.run())
        except BaseException as e:  # noqa: BLE001 - reported by stop()
            self.error = e

    def stop(self, timeout: float = 60) -> None:
        self.worker.stop()
        self.thread.join(timeout)
        assert not self.thread.is_alive(), "the worker did not stop"
        if self.error is not None:
            raise self.error


@pytest.fixture
def start_worker() -> Iterator[Callable[..., WorkerThread]]:
    started: List[WorkerThread] = []

    def start(worker: jobd.Worker) -> WorkerThread:
        wt = WorkerThread(worker)
        started.append(wt)
        return wt

    yield start
    for wt in started:
        if wt.thread.is_alive():
            wt.stop()


@pytest.fixture
def make_proxy() -> Iterator[Callable[..., Any]]:
    """Starts test proxies (tests/proxy.py), closed at the test's end: list
    this fixture before start_worker, so that the workers stop first."""
    from proxy import Proxy

    made: List[Any] = []

    def make(upstream: str, rule: Callable[[str, str], object]) -> Any:
        p = Proxy(upstream, rule)
        made.append(p)
        return p

    yield make
    for p in made:
        p.close()


def job_state(c: jobd.Client, job_id: str, *states: str) -> Callable[[], Optional[jobd.Job]]:
    """A poll function: the job once it is in one of states."""

    def check() -> Optional[jobd.Job]:
        j = c.get(job_id)
        return j if j.state in states else None

    return check


def worker_env() -> Dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([SDK, HERE] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    return env
