"""Headless Firefox for the browser tests, driven over WebDriver BiDi with no geckodriver.

Firefox (Debian's firefox-esr, >= 128) serves WebDriver BiDi itself when started with
`--remote-debugging-port`: a WebSocket at ws://127.0.0.1:PORT/session that takes the W3C BiDi
commands (session.new, browsingContext.navigate, script.callFunction, input.performActions) and
sends the events a test subscribes to (log.entryAdded: the console and script errors;
network.beforeRequestSent: every request of the page). geckodriver, which Selenium would need, is
not packaged by Debian; the WebSocket client is websocket-client (a dependency of the pinned
selenium, so already in the venv).

As in harness.py, every request leaves through a proxy at 127.0.0.1 that records the attempt and
refuses it (loopback included), and a fresh profile turns off Firefox's own background traffic.

`Firefox` offers the calls the tests use: open, reload, js, press, console_errors,
network_requests.
"""
import itertools
import json
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path

import websocket

from harness import RefusingProxy

# WebDriver's key values for the keys the labelling page reads.
KEYS = {"ArrowLeft": "\ue012", "ArrowRight": "\ue014"}


def firefox_binary():
    """Firefox's path, or None where it is not installed."""
    for name in ("firefox-esr", "firefox"):
        found = shutil.which(name)
        if found:
            return found
    return None


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _prefs(proxy_port):
    """user.js of the test profile: the refusing proxy for everything, no background traffic."""
    prefs = {
        "network.proxy.type": 1,
        "network.proxy.http": "127.0.0.1",
        "network.proxy.http_port": proxy_port,
        "network.proxy.ssl": "127.0.0.1",
        "network.proxy.ssl_port": proxy_port,
        "network.proxy.share_proxy_settings": True,
        "network.proxy.no_proxies_on": "",
        "network.proxy.allow_hijacking_localhost": True,
        "network.dns.disablePrefetch": True,
        "network.prefetch-next": False,
        "network.captive-portal-service.enabled": False,
        "network.connectivity-service.enabled": False,
        "app.update.enabled": False,
        "app.normandy.enabled": False,
        "browser.safebrowsing.malware.enabled": False,
        "browser.safebrowsing.phishing.enabled": False,
        "browser.safebrowsing.downloads.enabled": False,
        "browser.search.update": False,
        "browser.shell.checkDefaultBrowser": False,
        "browser.startup.homepage": "about:blank",
        "browser.startup.page": 0,
        "browser.newtabpage.enabled": False,
        "datareporting.policy.dataSubmissionEnabled": False,
        "datareporting.healthreport.uploadEnabled": False,
        "toolkit.telemetry.enabled": False,
        "extensions.update.enabled": False,
        "extensions.getAddons.cache.enabled": False,
        "services.settings.server": "http://127.0.0.1:9/",
    }
    return "".join(f"user_pref({json.dumps(k)}, {json.dumps(v)});\n" for k, v in prefs.items())


def _value(rv):
    """A BiDi remote value as Python (primitives, arrays, plain objects)."""
    t = rv.get("type")
    if t in ("undefined", "null"):
        return None
    if t in ("string", "boolean"):
        return rv["value"]
    if t == "number":
        v = rv["value"]
        return float(v) if isinstance(v, str) else v
    if t == "array":
        return [_value(x) for x in rv.get("value", [])]
    if t == "object":
        return {k if isinstance(k, str) else _value(k): _value(v) for k, v in rv.get("value", [])}
    return rv


class Firefox:
    """Headless Firefox with the network refused and observed; use as a context manager."""

    def __init__(self, width=1400, height=1000, start_timeout=60):
        binary = firefox_binary()
        if binary is None:
            raise RuntimeError("no firefox: run scripts/browser/setup.sh")
        self.proxy = RefusingProxy()
        self.profile = Path(tempfile.mkdtemp(prefix="scorekit-firefox-"))
        (self.profile / "user.js").write_text(_prefs(self.proxy.port))
        port = _free_port()
        self.process = subprocess.Popen(
            [binary, "--headless", "--no-remote", "--profile", str(self.profile),
             f"--remote-debugging-port={port}", f"--width={width}", f"--height={height}",
             "about:blank"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self._ids = itertools.count(1)
        self._events = []
        deadline = time.monotonic() + start_timeout
        while True:
            try:
                self.ws = websocket.create_connection(f"ws://127.0.0.1:{port}/session",
                                                      suppress_origin=True, timeout=120)
                break
            except OSError:
                if time.monotonic() > deadline or self.process.poll() is not None:
                    self.close()
                    raise RuntimeError("Firefox's WebDriver BiDi did not start")
                time.sleep(0.2)
        self.call("session.new", {"capabilities": {}})
        self.call("session.subscribe", {"events": ["log.entryAdded", "network.beforeRequestSent"]})
        self.context = self.call("browsingContext.getTree", {})["contexts"][0]["context"]

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def close(self):
        try:
            if getattr(self, "ws", None):
                try:
                    self.call("browser.close", {})
                except Exception:  # noqa: BLE001  (the browser may be gone already)
                    pass
                self.ws.close()
        finally:
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.process.kill()
            self.proxy.close()
            shutil.rmtree(self.profile, ignore_errors=True)

    def call(self, method, params):
        """Send a command and return its result; events read meanwhile are kept."""
        i = next(self._ids)
        self.ws.send(json.dumps({"id": i, "method": method, "params": params}))
        while True:
            m = json.loads(self.ws.recv())
            if m.get("type") == "event":
                self._events.append(m)
            elif m.get("id") == i:
                if m.get("type") == "error":
                    raise RuntimeError(f"{method}: {m.get('error')}: {m.get('message')}")
                return m["result"]

    def open(self, path, ready="window.scorekitReady === true", timeout=60):
        """Load a local file and wait until `ready` (JavaScript) is true; returns seconds taken."""
        start = time.monotonic()
        self.call("browsingContext.navigate",
                  {"context": self.context, "url": Path(path).resolve().as_uri(), "wait": "complete"})
        self.wait(ready, timeout)
        return time.monotonic() - start

    def reload(self, ready="true", timeout=60):
        """Reload the page and wait until `ready`."""
        self.call("browsingContext.reload", {"context": self.context, "wait": "complete"})
        self.wait(ready, timeout)

    def wait(self, ready, timeout=60):
        deadline = time.monotonic() + timeout
        while not self.js(f"return {ready};"):
            if time.monotonic() > deadline:
                raise AssertionError(f"not ready after {timeout} s: {ready}")
            time.sleep(0.05)

    def js(self, script, *args):
        """Run `script` (a function body, `return` for a value) in the page with `args`."""
        r = self.call("script.callFunction", {
            "functionDeclaration": f"function() {{ {script} }}",
            "arguments": [self._arg(a) for a in args],
            "target": {"context": self.context},
            "awaitPromise": True,
            "resultOwnership": "none",
        })
        if r.get("type") == "exception":
            raise AssertionError(f"script failed: {r['exceptionDetails'].get('text')}")
        return _value(r["result"])

    @staticmethod
    def _arg(a):
        if a is None:
            return {"type": "null"}
        if isinstance(a, bool):
            return {"type": "boolean", "value": a}
        if isinstance(a, (int, float)):
            return {"type": "number", "value": a}
        return {"type": "string", "value": str(a)}

    def press(self, key):
        """One key pressed and released, as a user does (`f`, `ArrowLeft`, ...)."""
        value = KEYS.get(key, key)
        self.call("input.performActions", {"context": self.context, "actions": [{
            "type": "key", "id": "keyboard",
            "actions": [{"type": "keyDown", "value": value}, {"type": "keyUp", "value": value}]}]})
        self.call("input.releaseActions", {"context": self.context})

    def _drain(self):
        # A command's answer comes after every event sent before it.
        self.call("session.status", {})

    def console_errors(self):
        """Console messages and script errors of level error (CSP violations included)."""
        self._drain()
        return [e["params"] for e in self._events
                if e["method"] == "log.entryAdded" and e["params"].get("level") == "error"]

    def network_requests(self):
        """Every URL the page asked for other than file: itself and data: URLs."""
        self._drain()
        urls = [e["params"]["request"]["url"] for e in self._events
                if e["method"] == "network.beforeRequestSent"]
        return [u for u in urls if not u.startswith(("file:", "data:"))]

    def forget(self):
        """Drop the events so far (the next checks see only what follows)."""
        self._drain()
        self._events.clear()
