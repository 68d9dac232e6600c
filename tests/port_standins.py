"""What answers at a port, as the entrypoint's --status meets it: node 0's check-in exchange, its /metrics, or a
program that accepts and says nothing. One copy for the tests that ask what answers where."""

import socket
import threading


class PortStandIn:
    """127.0.0.1:``port`` answering as ``kind``: node 0's exchange of job ``job`` (a JSON challenge), node 0's
    metrics port (HTTP), or any other ``kind`` (``silent``, ``store``: accepts and says nothing, as a stopped node
    0's exchange or torchrun's store does)."""

    def __init__(self, port, kind, job="je"):
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", port))
        self.sock.listen(8)
        self.kind, self.job, self.held = kind, job, []
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self):
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.held.append(conn)
            try:
                if self.kind == "exchange":
                    conn.sendall(b'{"t": "challenge", "job": "%s", "nonce": "00"}\n' % self.job.encode())
                elif self.kind == "metrics":
                    conn.settimeout(2)
                    conn.recv(4096)
                    conn.sendall(b"HTTP/1.0 200 OK\r\n\r\nnodeweave: /metrics (Prometheus), /status.json\n")
                    conn.close()
            except OSError:
                pass

    def close(self):
        for conn in self.held:
            conn.close()
        self.sock.close()
