"""A headless Chromium for tests, driven over the DevTools protocol.

Debian's ``chromium`` runs with a dead proxy (``127.0.0.1:9``) and no DNS, so no request can
leave the machine, and with the Network domain on, so every request the page makes is
recorded anyway (a test asserts on the list). :func:`chromium_or_skip` skips a test, with
the reason, when the browser is not installed (``.ci/run`` installs it).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--proxy-server=http://127.0.0.1:9",
    "--proxy-bypass-list=<-loopback>",
    "--host-resolver-rules=MAP * ~NOTFOUND",
    "--window-size=1400,1000",
    "--remote-debugging-port=0",
]


def chromium_or_skip() -> str:
    path = shutil.which("chromium") or shutil.which("chromium-browser")
    if path is None:
        pytest.skip(
            "Debian's chromium is not installed (apt-get install -y chromium; .ci/run does)"
        )
    return path


@dataclass
class Visit:
    """What loading one page did: every request, the failures, and the page's own figures."""

    requests: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)


class Chromium:
    """One browser process and its first tab; use as a context manager."""

    def __init__(self, profile: Path) -> None:
        from websockets.sync.client import connect

        profile.mkdir(parents=True, exist_ok=True)
        self.process = subprocess.Popen(
            [chromium_or_skip(), *FLAGS, f"--user-data-dir={profile}", "about:blank"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        port_file = profile / "DevToolsActivePort"
        deadline = time.monotonic() + 60
        while not port_file.is_file() or not port_file.read_text().strip():
            if time.monotonic() > deadline or self.process.poll() is not None:
                self.close()
                raise RuntimeError("chromium did not open its DevTools port")
            time.sleep(0.1)
        port = int(port_file.read_text().split()[0])
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=30) as r:
            pages = [t for t in json.load(r) if t["type"] == "page"]
        self.ws = connect(pages[0]["webSocketDebuggerUrl"], max_size=None, open_timeout=30)
        self._id = 0
        self.events: list[dict[str, Any]] = []
        for domain in ("Network", "Page", "Runtime"):
            self.call(f"{domain}.enable")

    def __enter__(self) -> Chromium:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        ws = getattr(self, "ws", None)
        if ws is not None:
            ws.close()
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.process.kill()

    def call(self, method: str, timeout: float = 60, **params: Any) -> dict[str, Any]:
        """Send one command and return its result (events that arrive meanwhile are kept)."""
        self._id += 1
        self.ws.send(json.dumps({"id": self._id, "method": method, "params": params}))
        deadline = time.monotonic() + timeout
        while True:
            message = json.loads(self.ws.recv(timeout=max(0.1, deadline - time.monotonic())))
            if message.get("id") == self._id:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                return message.get("result", {})
            self.events.append(message)

    def _wait_for(self, event: str, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while not any(e.get("method") == event for e in self.events):
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError(f"no {event} within {timeout} s")
            try:
                self.events.append(json.loads(self.ws.recv(timeout=remaining)))
            except TimeoutError:
                raise TimeoutError(f"no {event} within {timeout} s") from None

    def visit(self, url: str, timeout: float = 60) -> Visit:
        """Load ``url``, wait for its load event and a moment of quiet, return its requests."""
        self.events.clear()
        self.call("Page.navigate", url=url)
        self._wait_for("Page.loadEventFired", timeout)
        self.evaluate("new Promise(r => setTimeout(r, 300))")  # scripts that run on load
        visit = Visit()
        for e in self.events:
            if e.get("method") == "Network.requestWillBeSent":
                visit.requests.append(e["params"]["request"]["url"])
            elif e.get("method") == "Network.loadingFailed":
                visit.failed.append(e["params"].get("errorText", "failed"))
        return visit

    def evaluate(self, expression: str) -> Any:
        result = self.call(
            "Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True
        )
        if "exceptionDetails" in result:
            raise RuntimeError(f"page script failed: {result['exceptionDetails']}")
        return result["result"].get("value")

    def screenshot(self, path: Path) -> Path:
        import base64

        data = self.call("Page.captureScreenshot", format="png", captureBeyondViewport=True)
        path.write_bytes(base64.b64decode(data["data"]))
        return path


# Every element's src/href, for a check that the page references nothing outside itself.
REFERENCES = (
    "Array.from(document.querySelectorAll('[src],[href]'))"
    ".map(e => [e.tagName, e.getAttribute('src') || e.getAttribute('href')])"
)
# Every image: loaded and not empty.
IMAGES = "Array.from(document.images).map(i => [i.alt, i.complete, i.naturalWidth])"
