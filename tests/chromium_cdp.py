"""A minimal Chrome DevTools Protocol client over `--remote-debugging-pipe`, for opening the HTML
report in headless Chromium from a test: no websocket library and no port, just the two pipes
(fd 3: commands in, fd 4: replies and events out, NUL-separated JSON) that Chromium offers.

It records what the page did: console messages and exceptions, log entries (CSP violations
arrive there) and every network request, so a test can assert that the report loads cleanly
and fetches nothing.
"""

from __future__ import annotations

import base64
import json
import os
import select
import shlex
import shutil
import subprocess
import tempfile
import time

CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync",
                  "--disable-extensions", "--disable-default-apps", "--mute-audio",
                  "--hide-scrollbars"]


def find_chromium() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        path = shutil.which(name)
        if path:
            return path
    return None


class CDPError(RuntimeError):
    pass


class Browser:
    """`with Browser() as b: page = b.open(url)` — one page, attached in flat session mode."""

    def __init__(self, binary: str | None = None, timeout: float = 30.0):
        self.binary = binary or find_chromium()
        if self.binary is None:
            raise CDPError("no chromium binary on PATH")
        self.timeout = timeout
        self._next = 0
        self._buffer = b""
        self.events: list[dict] = []

    def __enter__(self) -> "Browser":
        self._profile = tempfile.mkdtemp(prefix="dialeval-chromium-")
        to_chrome_r, self._to_chrome = os.pipe()
        self._from_chrome, from_chrome_w = os.pipe()
        cmd = " ".join([shlex.quote(self.binary), *CHROMIUM_FLAGS,
                        shlex.quote(f"--user-data-dir={self._profile}"),
                        "--remote-debugging-pipe", "about:blank",
                        f"3<&{to_chrome_r}", f"4>&{from_chrome_w}"])
        self._proc = subprocess.Popen(["bash", "-c", "exec " + cmd], pass_fds=(to_chrome_r, from_chrome_w),
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        os.close(to_chrome_r)
        os.close(from_chrome_w)
        return self

    def __exit__(self, *exc) -> None:
        try:
            self.send("Browser.close")
        except Exception:
            pass
        try:
            self._proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait()
        for fd in (self._to_chrome, self._from_chrome):
            try:
                os.close(fd)
            except OSError:
                pass
        shutil.rmtree(self._profile, ignore_errors=True)

    # -- protocol -------------------------------------------------------------------------
    def _read_message(self, deadline: float) -> dict:
        while b"\0" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0:
                raise CDPError("timed out waiting for chromium")
            ready, _, _ = select.select([self._from_chrome], [], [], left)
            if ready:
                chunk = os.read(self._from_chrome, 1 << 16)
                if not chunk:
                    raise CDPError("chromium closed the pipe")
                self._buffer += chunk
        raw, self._buffer = self._buffer.split(b"\0", 1)
        return json.loads(raw)

    def send(self, method: str, params: dict | None = None, session: str | None = None) -> dict:
        self._next += 1
        message = {"id": self._next, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        os.write(self._to_chrome, json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + self.timeout
        while True:
            reply = self._read_message(deadline)
            if reply.get("id") == self._next:
                if "error" in reply:
                    raise CDPError(f"{method}: {reply['error']}")
                return reply.get("result", {})
            if "method" in reply:
                self.events.append(reply)

    def wait_event(self, method: str, session: str | None = None) -> dict:
        deadline = time.monotonic() + self.timeout
        for event in self.events:
            if event["method"] == method and event.get("sessionId") == session:
                return event
        while True:
            event = self._read_message(deadline)
            if "method" in event:
                self.events.append(event)
                if event["method"] == method and event.get("sessionId") == session:
                    return event

    # -- a page ----------------------------------------------------------------------------
    def open(self, url: str, width: int = 1280, height: int = 1600) -> "Page":
        target = self.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = self.send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        for domain in ("Page", "Runtime", "Log", "Network"):
            self.send(f"{domain}.enable", session=session)
        self.send("Emulation.setDeviceMetricsOverride",
                  {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False},
                  session=session)
        start = len(self.events)
        started = time.monotonic()
        self.send("Page.navigate", {"url": url}, session=session)
        self.wait_event("Page.loadEventFired", session)
        wall = time.monotonic() - started
        return Page(self, session, url, start, wall)


class Page:
    def __init__(self, browser: Browser, session: str, url: str, first_event: int, load_wall: float):
        self.browser = browser
        self.session = session
        self.url = url
        self.first_event = first_event
        self.load_wall_s = load_wall   # navigate command to load event, as the test process saw it

    def evaluate(self, expression: str):
        result = self.browser.send("Runtime.evaluate", {"expression": expression, "returnByValue": True,
                                                        "awaitPromise": True}, session=self.session)
        if "exceptionDetails" in result:
            raise CDPError(f"page script failed: {result['exceptionDetails']}")
        return result["result"].get("value")

    def screenshot(self, full_page: bool = False) -> bytes:
        params: dict = {"format": "png"}
        if full_page:
            params["captureBeyondViewport"] = True
            size = self.evaluate("[document.documentElement.scrollWidth, document.documentElement.scrollHeight]")
            params["clip"] = {"x": 0, "y": 0, "width": size[0], "height": size[1], "scale": 1}
        data = self.browser.send("Page.captureScreenshot", params, session=self.session)["data"]
        return base64.b64decode(data)

    def _events(self) -> list[dict]:
        return [e for e in self.browser.events[self.first_event:] if e.get("sessionId") == self.session]

    def console_errors(self) -> list[str]:
        """Console errors/warnings, uncaught exceptions and error log entries (CSP violations)."""
        out = []
        for e in self._events():
            p = e.get("params", {})
            if e["method"] == "Runtime.consoleAPICalled" and p.get("type") in ("error", "warning", "assert"):
                out.append("console: " + " ".join(str(a.get("value", a.get("description", ""))) for a in p.get("args", [])))
            elif e["method"] == "Runtime.exceptionThrown":
                out.append("exception: " + json.dumps(p.get("exceptionDetails", {}))[:500])
            elif e["method"] == "Log.entryAdded" and p.get("entry", {}).get("level") in ("error", "warning"):
                out.append("log: " + p["entry"].get("text", ""))
        return out

    def requests(self) -> list[str]:
        """URLs of every network request the page made (the page's own document included)."""
        return [e["params"]["request"]["url"] for e in self._events()
                if e["method"] == "Network.requestWillBeSent"]
