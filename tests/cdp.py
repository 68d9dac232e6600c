"""A headless Chromium the tests hold open and ask, through the DevTools protocol, what its page shows now.

``chromium --dump-dom`` loads a page anew each time; to see one page follow a job (what a user watching the
dashboard sees), the browser stays open (``--remote-debugging-port``) and the test evaluates JavaScript in
the page (``Runtime.evaluate``) and takes screenshots (``Page.captureScreenshot``) over the protocol's
WebSocket: a minimal RFC 6455 client (masked text frames out, plain frames in), the stdlib only.
"""

import base64
import json
import os
import socket
import subprocess
import time
import urllib.request
from pathlib import Path
from urllib.parse import urlsplit

from free_ports import free_port


class Browser:
    def __init__(self, chromium, profile, url, limit=60):
        self.port = free_port()
        self.proc = subprocess.Popen([chromium, "--headless", "--disable-gpu", "--no-sandbox", "--no-first-run",
                                      "--hide-scrollbars", "--window-size=1280,1500", f"--user-data-dir={profile}",
                                      f"--remote-debugging-port={self.port}", url],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        self.sock, self.next_id = None, 0
        deadline = time.monotonic() + limit
        while self.sock is None:
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise AssertionError(f"chromium gave no DevTools page: {self.proc.stderr.read()[-2000:]!r}"
                                     if self.proc.poll() is not None else "chromium gave no DevTools page in time")
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/json/list", timeout=5) as answer:
                    pages = [t for t in json.loads(answer.read()) if t.get("type") == "page"]
            except OSError:
                pages = []
            if pages:
                self._connect(pages[0]["webSocketDebuggerUrl"])
            else:
                time.sleep(0.2)

    def _connect(self, ws_url):
        parts = urlsplit(ws_url)
        self.sock = socket.create_connection((parts.hostname, parts.port), timeout=30)
        key = base64.b64encode(os.urandom(16)).decode()
        self.sock.sendall((f"GET {parts.path} HTTP/1.1\r\nHost: {parts.netloc}\r\nUpgrade: websocket\r\n"
                           f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n")
                          .encode())
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = self.sock.recv(1)
            if not chunk:
                raise AssertionError("the DevTools WebSocket closed during the handshake")
            head += chunk
        assert head.startswith(b"HTTP/1.1 101"), head

    def _exact(self, size):
        data = b""
        while len(data) < size:
            chunk = self.sock.recv(size - len(data))
            if not chunk:
                raise AssertionError("the DevTools WebSocket closed")
            data += chunk
        return data

    def _send(self, text):
        payload, mask = text.encode(), os.urandom(4)
        size = len(payload)
        head = bytes([0x81]) + (bytes([0x80 | size]) if size < 126 else bytes([0x80 | 126]) + size.to_bytes(2, "big")
                                if size < 1 << 16 else bytes([0x80 | 127]) + size.to_bytes(8, "big"))
        self.sock.sendall(head + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(payload)))

    def _receive(self):
        message = b""
        while True:
            first, second = self._exact(2)
            size = second & 0x7F
            if size == 126:
                size = int.from_bytes(self._exact(2), "big")
            elif size == 127:
                size = int.from_bytes(self._exact(8), "big")
            message += self._exact(size)
            if first & 0x80:  # FIN: the message is whole
                return message.decode()

    def call(self, method, **params):
        self.next_id += 1
        self._send(json.dumps({"id": self.next_id, "method": method, "params": params}))
        while True:
            answer = json.loads(self._receive())
            if answer.get("id") == self.next_id:
                assert "error" not in answer, answer
                return answer["result"]

    def evaluate(self, expression):
        return self.call("Runtime.evaluate", expression=expression, returnByValue=True)["result"].get("value")

    def screenshot(self, path):
        Path(path).write_bytes(base64.b64decode(self.call("Page.captureScreenshot", format="png")["data"]))

    def close(self):
        if self.sock is not None:
            self.sock.close()
        self.proc.kill()
        self.proc.wait(30)
