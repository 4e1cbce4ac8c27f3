"""Headless Chromium for the browser tests of scorekit's HTML pages.

- Chromium runs headless through chromedriver (Debian's, scripts/browser/setup.sh) with every
  request sent to a proxy at 127.0.0.1 that records the attempt and refuses it (loopback
  included), so a page that reaches for the network gets nothing and the test sees that it
  tried;
- the browser's console and the DevTools Network events are logged (goog:loggingPrefs), so a
  test can assert no console error and no request other than the page itself (file:): the
  DevTools events see every request of the page, the proxy every connection of the browser
  (`RefusingProxy.page_requests` leaves out Chromium's own background traffic to Google).

Helpers: `Browser` (a context manager), `scorekit()` (the binary: $SCOREKIT or
target/debug/scorekit), `run_scorekit(...)`.
"""
import json
import os
import shutil
import socket
import subprocess
import threading
import time
from pathlib import Path

from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

REPO = Path(__file__).resolve().parents[2]


def scorekit():
    """The scorekit binary the tests run: $SCOREKIT, else target/debug/scorekit."""
    path = Path(os.environ.get("SCOREKIT") or REPO / "target/debug/scorekit")
    if not path.is_file():
        raise RuntimeError(f"no scorekit binary at {path}: `cargo build` first, or set SCOREKIT")
    return str(path.resolve())


def run_scorekit(*args, cwd=None, check=True, env=None):
    """Run scorekit; returns the CompletedProcess (stdout and stderr as text)."""
    full_env = dict(os.environ)
    full_env.update(env or {})
    p = subprocess.run([scorekit(), *map(str, args)], cwd=cwd, capture_output=True, text=True,
                       env=full_env)
    if check and p.returncode != 0:
        raise AssertionError(f"scorekit {' '.join(map(str, args))} exited {p.returncode}:\n{p.stderr}")
    return p


class RefusingProxy:
    """A TCP listener on 127.0.0.1 that counts connections and closes each at once."""

    def __init__(self):
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.port = self.sock.getsockname()[1]
        self.attempts = 0
        # The first line of each request (`CONNECT host:443 HTTP/1.1`, `GET http://...`).
        self.requests = []
        self._stop = False
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self):
        self.sock.settimeout(0.2)
        while not self._stop:
            try:
                conn, _ = self.sock.accept()
            except (socket.timeout, OSError):
                continue
            conn.settimeout(1)
            try:
                first = conn.recv(4096).split(b"\r\n", 1)[0].decode("latin-1")
            except OSError:
                first = ""
            self.requests.append(first)
            self.attempts += 1
            conn.close()

    def page_requests(self):
        """Requests that are not Chromium's own background traffic (its clock, component
        updates and sign-in at Google's hosts, which it sends whatever page is open)."""
        own = (".google.com", ".googleapis.com", ".gstatic.com")
        out = []
        for line in self.requests:
            parts = line.split()
            target = parts[1] if len(parts) > 1 else line
            host = target.split("://", 1)[-1].split("/", 1)[0].rsplit(":", 1)[0]
            if not host.endswith(own):
                out.append(line)
        return out

    def close(self):
        self._stop = True
        self.thread.join(timeout=2)
        self.sock.close()


def _chromium_binary():
    for name in ("chromium", "chromium-browser", "google-chrome"):
        found = shutil.which(name)
        if found:
            return found
    raise RuntimeError("no chromium: run scripts/browser/setup.sh")


class Browser:
    """Headless Chromium with the network refused and observed; use as a context manager."""

    def __init__(self, width=1400, height=1000):
        self.proxy = RefusingProxy()
        opts = webdriver.ChromeOptions()
        opts.binary_location = _chromium_binary()
        for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                    f"--window-size={width},{height}", "--hide-scrollbars",
                    f"--proxy-server=http://127.0.0.1:{self.proxy.port}",
                    # Loopback through the proxy too (Chromium bypasses it by default).
                    "--proxy-bypass-list=<-loopback>",
                    "--no-first-run", "--no-default-browser-check", "--disable-background-networking",
                    "--disable-component-update", "--disable-sync", "--disable-extensions",
                    "--disable-default-apps", "--metrics-recording-only"):
            opts.add_argument(arg)
        opts.set_capability("goog:loggingPrefs", {"browser": "ALL", "performance": "ALL"})
        service = Service(shutil.which("chromedriver") or "/usr/bin/chromedriver")
        self.driver = webdriver.Chrome(service=service, options=opts)
        self.driver.execute_cdp_cmd("Network.enable", {})
        self._console = []
        self._requests = []

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def close(self):
        try:
            self.driver.quit()
        finally:
            self.proxy.close()

    def open(self, path, ready="window.scorekitReady === true", timeout=60):
        """Load a local file and wait until `ready` (JavaScript) is true; returns seconds taken."""
        self.drain()
        start = time.monotonic()
        self.driver.get(Path(path).resolve().as_uri())
        WebDriverWait(self.driver, timeout).until(lambda d: d.execute_script(f"return {ready};"))
        return time.monotonic() - start

    def drain(self):
        """Collect the console and network logs so far."""
        self._console += self.driver.get_log("browser")
        for entry in self.driver.get_log("performance"):
            msg = json.loads(entry["message"])["message"]
            if msg.get("method") == "Network.requestWillBeSent":
                self._requests.append(msg["params"]["request"]["url"])

    def console_errors(self):
        """Console messages of level SEVERE (errors, refused resources, CSP violations)."""
        self.drain()
        return [m for m in self._console if m.get("level") == "SEVERE"]

    def network_requests(self):
        """Every URL the page asked for other than file: itself and data: URLs."""
        self.drain()
        return [u for u in self._requests if not u.startswith(("file:", "data:"))]

    def js(self, script, *args):
        """Run JavaScript in the page and return its value."""
        return self.driver.execute_script(script, *args)

    def find(self, css, within=None):
        """Elements matching a CSS selector."""
        return (within or self.driver).find_elements(By.CSS_SELECTOR, css)

    def one(self, css, within=None):
        """The one element matching a CSS selector."""
        found = self.find(css, within)
        if len(found) != 1:
            raise AssertionError(f"{len(found)} elements match {css!r}")
        return found[0]

    def screenshot(self, path, css=None):
        """A PNG of the window, or of one element."""
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        if css:
            self.one(css).screenshot(str(path))
        else:
            self.driver.save_screenshot(str(path))
