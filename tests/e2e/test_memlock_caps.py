"""What the entrypoint reads of RLIMIT_MEMLOCK and CAP_IPC_LOCK in a real container, as podman runs it.

The memlock check (docs/kubernetes.md, RDMA and Pod Security) must tell an
effective CAP_IPC_LOCK from one that only sits in the bounding set, so it is
run here in containers whose user is 1000 (the images' user) and root, with
and without ``--cap-add IPC_LOCK``, through the entrypoint's own detection
code (stdlib-only: the source tree is mounted, nothing is installed).
"""

from __future__ import annotations

import json
import subprocess

import pytest

from e2e_harness import BASE_IMAGE, REPO

pytestmark = pytest.mark.engine

PROBE = ("import json; from nodeweave.entrypoint.detection.host import ipc_lock, memlock; "
         "from nodeweave.entrypoint.detection.sysfs import Root; "
         "print(json.dumps({'ipc_lock': ipc_lock(Root('/')), 'memlock': memlock(Root('/'))}))")


def probe(engine, user: str, caps: "list[str]") -> dict:
    if not engine.client.image.exists(BASE_IMAGE):
        pytest.skip(f"{BASE_IMAGE} is not built (tests/e2e/conftest.py's base_image makes it)")
    argv = ["podman", "run", "--rm", "--name", f"nw-memlock-{user}-{len(caps)}", "--user", user,
            "-v", f"{REPO / 'src'}:/src:ro", *caps, BASE_IMAGE, "python3", "-I", "-c",
            PROBE.replace("import json;", "import sys; sys.path.insert(0, '/src'); import json;")]
    out = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    return json.loads(out.stdout)


def test_the_entrypoint_sees_whether_ipc_lock_reaches_the_process(engine):
    if engine.kind != "podman":
        pytest.skip("the e2e engine is podman")
    plain = probe(engine, "1000", [])
    assert plain["ipc_lock"] is False and isinstance(plain["memlock"], int)  # the runtime's finite default
    # podman hands a non-root user its added capabilities as ambient ones: effective (containerd/CRI-O do not)
    assert probe(engine, "1000", ["--cap-add", "IPC_LOCK"])["ipc_lock"] is True
    assert probe(engine, "0", ["--cap-add", "IPC_LOCK"])["ipc_lock"] is True
    assert probe(engine, "0", [])["ipc_lock"] is False  # podman's default set lacks IPC_LOCK
