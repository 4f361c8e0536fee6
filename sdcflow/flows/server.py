"""A temporary Prefect API server that the command line owns, and that dies with it.

Without ``PREFECT_API_URL``, Prefect starts an "ephemeral" API server the first time a flow
runs: a ``python -m uvicorn`` child process that it stops at exit. A process killed with
``SIGKILL`` never reaches its exit handlers, so that server lives on as an orphan. Here the
command line starts the same server itself (the command Prefect uses, see
``prefect.server.api.server.SubprocessASGIServer``) through a two-line launcher that asks the
kernel, with ``prctl(PR_SET_PDEATHSIG, SIGKILL)``, to kill it when the command line's process
ends, however it ends, and then ``exec``'s uvicorn (the setting survives ``execve``). The
launcher checks that its parent is still the command line after setting it (the parent may
have died in between). Prefect's client is pointed at the server with ``PREFECT_API_URL``
for the duration of the command.

On systems without ``prctl`` (not Linux) the server is still stopped on every exit Python
sees (errors, ``SIGINT``, ``SIGTERM``); only ``SIGKILL`` could orphan it there.

:func:`serve_flow` is ``sdcflow serve``: Prefect's ``Flow.serve`` with a runner that stops on
one ``SIGTERM``. Prefect 3.8's ``Runner.handle_sigterm`` calls the sync/async dispatching
``Runner.stop()`` from a signal handler while the runner's event loop runs, which returns the
``astop()`` coroutine unawaited ("coroutine 'Runner.astop' was never awaited") and then exits
with ``sys.exit`` in the middle of the loop, so the polling loop was never stopped the way
Prefect intends. Here the handler schedules ``astop()`` on the runner's loop instead: polling
stops, runs in flight are cancelled, the deployment's schedule is paused, and the process
exits 0.
"""

from __future__ import annotations

import contextlib
import os
import re
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator

__all__ = ["ServerError", "owned_prefect_api", "serve_flow"]

_LAUNCHER = (
    "import ctypes, os, signal, sys\n"
    "try:\n"
    "    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL, 0, 0, 0)\n"
    "except (OSError, AttributeError):\n"
    "    pass\n"
    "if os.getppid() != int(sys.argv[1]):\n"
    "    os._exit(1)\n"
    "os.execv(sys.executable, [sys.executable, *sys.argv[2:]])\n"
)


class ServerError(RuntimeError):
    """Prefect's API server did not start (the run could not complete: exit 3)."""


def _free_port() -> int:
    with contextlib.closing(socket.socket(socket.AF_INET, socket.SOCK_STREAM)) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _configured_url() -> str | None:
    from prefect.settings import get_current_settings

    return get_current_settings().api.url


@contextlib.contextmanager
def prefect_defaults() -> Iterator[None]:
    """Prefect's settings as sdcflow runs it, unless set otherwise (an environment variable,
    a Prefect profile): a temporary API server never phones home (the machine may have no
    internet), and it has 180 s to start on a small, busy machine (Prefect's default is 20 s).

    Through Prefect's settings context (``temporary_settings(set_defaults=...)``), for this
    block only: sdcflow never writes ``os.environ``. A server Prefect or sdcflow starts in
    the block gets them in its environment (``Settings.to_environment_variables``)."""
    from prefect.settings import (
        PREFECT_SERVER_ANALYTICS_ENABLED,
        PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS,
        temporary_settings,
    )

    defaults = {
        PREFECT_SERVER_ANALYTICS_ENABLED: False,
        PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS: 180,
    }
    with temporary_settings(set_defaults=defaults):
        yield


@contextlib.contextmanager
def owned_prefect_api(
    timeout: float | None = None, meanwhile: Callable[[], object] | None = None
) -> Iterator[str]:
    """Yield the Prefect API URL to run flows against.

    When ``PREFECT_API_URL`` is configured (a real server, or a test harness), that one is
    used and nothing is started. Otherwise a temporary server is started as a child that dies
    with this process (see the module docstring), and stopped when the block ends.
    ``meanwhile`` (e.g. importing the flow's modules) runs in this process while the server
    starts in its own, instead of after it; it runs once in either case.

    The block runs under :func:`prefect_defaults`; the temporary server's URL is Prefect's
    ``PREFECT_API_URL`` setting for the block, in this context and process-wide (Prefect's
    threads), never written to ``os.environ``.

    Raises
    ------
    ServerError
        The server did not answer ``/health`` within ``timeout`` seconds (default
        ``PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS``).
    """
    with prefect_defaults():
        yield from _owned_prefect_api(timeout, meanwhile)


def _owned_prefect_api(
    timeout: float | None, meanwhile: Callable[[], object] | None
) -> Iterator[str]:
    configured = _configured_url()
    if configured:
        if meanwhile is not None:
            meanwhile()
        from sdcflow.warehouse.warehouse import env_seconds

        _answers(configured, env_seconds(API_WAIT_ENV, DEFAULT_API_WAIT))
        yield configured
        return
    import httpx
    import prefect
    from prefect.settings import (
        PREFECT_API_URL,
        PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS,
        get_current_settings,
        temporary_settings,
    )

    wait = float(timeout or PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS.value())
    port = _free_port()
    url = f"http://127.0.0.1:{port}/api"
    env = {
        **os.environ,
        **get_current_settings().to_environment_variables(exclude_unset=True),
        "PREFECT_UI_ENABLED": "0",
        "PREFECT__SERVER_EPHEMERAL": "1",
        "PREFECT__SERVER_FINAL": "1",
    }
    env.pop("PREFECT_API_URL", None)
    args = [
        "-m",
        "uvicorn",
        "--app-dir",
        str(prefect.__module_path__.parent),
        "--factory",
        "prefect.server.api.server:create_app",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--log-level",
        "error",
        "--lifespan",
        "on",
    ]
    with tempfile.TemporaryFile() as log:
        process = subprocess.Popen(
            [sys.executable, "-c", _LAUNCHER, str(os.getpid()), *args],
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=log,
        )
        try:
            if meanwhile is not None:
                meanwhile()  # the slow imports, while the server's process boots
            _wait_healthy(process, url, wait, log, httpx)
            with contextlib.ExitStack() as stack:
                stack.enter_context(temporary_settings(updates={PREFECT_API_URL: url}))
                _global_settings(stack)
                try:
                    yield url
                finally:
                    _drain_workers()
        finally:
            _stop(process)


def _global_settings(stack: contextlib.ExitStack) -> None:
    """Also make the settings process-global, for Prefect's background threads (its log and
    events workers) and threads whose context was copied before, as Prefect's own test
    harness does (``prefect.testing.utilities.prefect_test_harness``; a private helper of
    Prefect 3, used when present)."""
    import prefect.context

    helper = getattr(prefect.context, "_temporary_global_settings_context", None)
    if helper is not None:
        stack.enter_context(helper(prefect.context.get_settings_context()))


def _drain_workers() -> None:
    """Send the logs and events still queued before the server stops (else Prefect's workers
    retry against a closed port at exit)."""
    import inspect

    from prefect.events.worker import EventsWorker
    from prefect.logging.handlers import APILogWorker
    from prefect.utilities.asyncutils import run_coro_as_sync

    async def drain() -> None:
        try:
            result = APILogWorker.instance().drain()
            if inspect.isawaitable(result):
                await result
        except RuntimeError:
            pass  # never started
        result = EventsWorker.drain_all()
        if inspect.isawaitable(result):
            await result

    try:
        run_coro_as_sync(drain())
    except Exception:  # a failing drain must not turn a finished run into an error
        pass


#: Seconds a configured API (``PREFECT_API_URL``) has to answer before the run starts.
API_WAIT_ENV, DEFAULT_API_WAIT = "SDCFLOW_API_WAIT", 30.0


def _answers(url: str, wait: float) -> None:
    """Raise :class:`ServerError` unless the API at ``url`` answers an HTTP request (any
    status: a server with its own paths or authentication still answers) within ``wait``
    seconds. A server that accepts connections and never answers held a release, and the
    warehouse's writer lock, for as long as anyone let it run."""
    import httpx

    shown = _redacted(url)
    try:
        with httpx.Client(timeout=httpx.Timeout(wait, connect=min(wait, 5.0))) as client:
            client.get(f"{url.rstrip('/')}/health")
    except httpx.TimeoutException:
        raise ServerError(
            f"Prefect's API at {shown} did not answer within {wait:.0f} s; check that server, "
            "or unset PREFECT_API_URL to run on a temporary one"
        ) from None
    except httpx.HTTPError as e:
        raise ServerError(
            f"Prefect's API at {shown} could not be reached ({type(e).__name__}); start that "
            "server, or unset PREFECT_API_URL to run on a temporary one"
        ) from None


def _wait_healthy(process: subprocess.Popen, url: str, wait: float, log, httpx) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + wait
    with httpx.Client(timeout=5) as client:
        while True:
            if process.poll() is not None:
                log.seek(0)
                raise ServerError(_startup_failure(process.returncode, log.read()[-20000:]))
            try:
                if client.get(f"{url}/health").status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            if time.monotonic() >= deadline:
                raise ServerError(
                    f"Prefect's API server did not start within {wait:.0f} s (raise "
                    "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS, or set PREFECT_API_URL "
                    "to a running server)"
                )
            time.sleep(0.2)


_EXCEPTION_LINE = re.compile(r"^[A-Za-z_][\w.]*(?:Error|Exception): .+$")
# a URL's password (scheme://user:password@host) and password-like query values
_URL_PASSWORD = re.compile(r"(\b[A-Za-z][\w+.-]*://[^\s:/@]*:)\S*@")  # up to the last @
_SECRET_VALUE = re.compile(r"(?i)((?:password|passwd|pwd|secret|token|api_?key)=)[^\s&'\"]+")


def _redacted(text: str) -> str:
    """``text`` with the passwords of URLs and of ``password=`` values replaced by ``***``:
    a server's exception line can quote its database URL."""
    return _SECRET_VALUE.sub(r"\1***", _URL_PASSWORD.sub(r"\1***@", text))


def _database() -> tuple[str, bool]:
    """The server's database, its password hidden, and whether it is the Prefect home's
    default (``prefect.db`` there) rather than one configured by URL or driver settings."""
    from prefect.settings import get_current_settings

    settings = get_current_settings()
    home = str(settings.home)
    default = f"sqlite+aiosqlite:///{home}/prefect.db"
    url = settings.server.database.connection_url
    value = url.get_secret_value() if url is not None else default
    if value == default:
        return home, True
    try:
        from sqlalchemy.engine import make_url

        return make_url(value).render_as_string(hide_password=True), False
    except Exception:  # an unparsable URL: named with its password hidden as we can
        return _redacted(value), False


def _startup_failure(code: int, log: bytes) -> str:
    """What to tell the user when the server's process ended while starting: the cause
    from its log (the last exception line, not uvicorn's closing "Application startup
    failed"), and the fix for the case we know -- a database upgraded by a newer Prefect.
    Passwords in the log's line (a database URL) are hidden."""
    lines = log.decode(errors="replace").splitlines()
    causes = [line.strip() for line in lines if _EXCEPTION_LINE.match(line.strip())]
    if any("Can't locate revision" in line for line in causes):
        import prefect

        database, in_home = _database()
        if in_home:
            return (
                f"Prefect's API server could not start: its database (in PREFECT_HOME="
                f"{database}) was upgraded by a newer Prefect than the "
                f"{prefect.__version__} installed here, which cannot read it. Give sdcflow a "
                "Prefect home of its own (e.g. PREFECT_HOME=~/.prefect-sdcflow), or set "
                "PREFECT_API_URL to a server of the newer Prefect"
            )
        return (
            f"Prefect's API server could not start: its database ({database}, set by "
            "PREFECT_SERVER_DATABASE_* settings) was upgraded by a newer Prefect than the "
            f"{prefect.__version__} installed here, which cannot read it. Point "
            "PREFECT_SERVER_DATABASE_CONNECTION_URL at a database of this Prefect (or unset "
            "the database settings to use PREFECT_HOME's), or set PREFECT_API_URL to a "
            "server of the newer Prefect"
        )
    if any("unable to open database file" in line for line in causes):
        database, in_home = _database()
        if in_home:  # a read-only or full HOME, without PREFECT_HOME: say which folder
            return (
                f"Prefect's API server could not start: it cannot write its database in the "
                f"Prefect home {database} (read-only, full or not there); set PREFECT_HOME to "
                "a folder it can write (e.g. PREFECT_HOME=/tmp/prefect-sdcflow), or "
                "PREFECT_API_URL to a running server"
            )
    last = causes[-1] if causes else (lines[-1].strip() if lines else "")
    return f"Prefect's API server exited with code {code} while starting" + (
        f": {_redacted(last)[:300]}" if last else ""
    )


def _stop(process: subprocess.Popen) -> None:  # type: ignore[type-arg]
    if process.poll() is not None:
        return
    process.terminate()
    try:
        process.wait(timeout=5)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def serve_flow(
    flow,  # type: ignore[no-untyped-def]
    *,
    name: str,
    cron: str | None,
    parameters: dict,  # type: ignore[type-arg]
) -> str:
    """Register ``flow`` as the deployment ``name`` and run its scheduled and triggered runs
    in this process until ``SIGTERM`` or ``SIGINT``; then pause its schedule and return.

    Parameters
    ----------
    flow : the Prefect flow to serve (``sdcflow.flows.release.release``).
    name : deployment name.
    cron : cron schedule, or None for runs started by hand (``prefect deployment run``).
    parameters : the flow's parameters for every run of the deployment.

    Returns
    -------
    str
        The id of the deployment, which stays registered (paused) after the return.
    """
    import asyncio

    from prefect.runner import Runner

    class _Runner(Runner):
        def handle_sigterm(self, *args: object, **kwargs: object) -> None:
            # Runs in the main thread, between two steps of the runner's own event loop:
            # schedule the stop on that loop rather than calling it from here.
            self._logger.info("SIGTERM received, stopping: no new runs, the schedule paused")
            if self._loop is None or not self.started:
                raise KeyboardInterrupt
            self._loop.call_soon_threadsafe(self._begin_stop)

        def _begin_stop(self) -> None:
            if self.started:
                self._stopping_task = asyncio.ensure_future(self.astop())

    with prefect_defaults():
        return _serve(_Runner(name=name, pause_on_shutdown=True), flow, name, cron, parameters)


def _serve(runner, flow, name: str, cron: str | None, parameters: dict) -> str:  # type: ignore[no-untyped-def,type-arg]
    import asyncio

    deployment_id = runner.add_flow(flow, name=name, cron=cron, parameters=parameters)
    print(
        f"serving {flow.name}/{name} (deployment {deployment_id}); start a run with "
        f"`prefect deployment run '{flow.name}/{name}'`; stop with SIGTERM or Ctrl-C",
        flush=True,
    )
    try:
        asyncio.run(runner.start())
    except KeyboardInterrupt:
        pass  # Ctrl-C: asyncio cancelled the runner, whose exit paused the schedule
    return str(deployment_id)
