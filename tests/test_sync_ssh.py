"""The ssh transport for real: sync and hosts probe against sshd in a container.

The sshd image is the offline base plus Debian's openssh-server (built once
with the host network, which reaches Debian's mirror); the container runs on
a podman network this test creates, and the client authenticates with a key
made for the test. Skipped with the reason when the image cannot be built.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

pytestmark = [pytest.mark.engine, pytest.mark.slow, pytest.mark.usefixtures("own_digest_cache")]

BASE_IMAGE = "localhost/nodeweave-base:bookworm"
SSHD_IMAGE = "localhost/nodeweave-base:bookworm-sshd"
NODEWEAVE = [sys.executable, "-c", "import sys; from nodeweave.cli import main; sys.exit(main())"]
CONTAINERFILE = f"""FROM {BASE_IMAGE}
RUN apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \\
    openssh-server >/dev/null && rm -rf /var/lib/apt/lists/* && mkdir -p /run/sshd
"""


def podman(*args: str, check: bool = True, **kw) -> "subprocess.CompletedProcess[str]":
    return subprocess.run(["podman", *args], capture_output=True, text=True, check=check,
                          timeout=600, **kw)


@pytest.fixture(scope="module")
def sshd(tmp_path_factory):
    if podman("image", "exists", BASE_IMAGE, check=False).returncode != 0:
        pytest.skip(f"{BASE_IMAGE} is missing (bash .ci/make-base-image.sh makes it)")
    if podman("image", "exists", SSHD_IMAGE, check=False).returncode != 0:
        built = podman("build", "-q", "--network=host", "-t", SSHD_IMAGE, "-f", "-",
                       str(Path(__file__).parent), input=CONTAINERFILE, check=False)
        if built.returncode != 0:
            pytest.skip(f"cannot build {SSHD_IMAGE} (needs Debian's mirror): {built.stderr[-300:]}")
    keys = tmp_path_factory.mktemp("ssh")
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(keys / "id")], check=True)
    tag = uuid.uuid4().hex[:6]
    network, name = f"nwsync-net-{tag}", f"nwsync-sshd-{tag}"
    podman("network", "create", network)
    try:
        podman("run", "-d", "--name", name, "--network", network,
               "-v", f"{keys / 'id.pub'}:/root/.ssh/authorized_keys:ro", SSHD_IMAGE,
               "/usr/sbin/sshd", "-D", "-e")
        address = podman("inspect", "--format", "{{range .NetworkSettings.Networks}}{{.IPAddress}}{{end}}",
                         name).stdout.strip()
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection((address, 22), timeout=2).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    pytest.fail(f"sshd in {name} did not listen on {address}:22: "
                                + podman("logs", name, check=False).stderr[-500:])
                time.sleep(0.3)
        options = [f"--ssh-option=IdentityFile={keys / 'id'}", "--ssh-option=StrictHostKeyChecking=no",
                   "--ssh-option=UserKnownHostsFile=/dev/null", "--ssh-option=LogLevel=ERROR"]
        yield {"name": name, "address": address, "options": options}
    finally:
        podman("rm", "-f", "-t", "0", name, check=False)
        podman("network", "rm", "-f", network, check=False)


def test_sync_over_ssh(sshd, tmp_path):
    src = tmp_path / "proj"
    (src / "pkg").mkdir(parents=True)
    (src / "train.py").write_text("print('ssh')\n")
    (src / "pkg" / "model.py").write_text("x = 1\n")
    (src / ".env").write_text("SECRET=1\n")
    dest = f"/workspace/ssh-{uuid.uuid4().hex[:6]}"
    out = subprocess.run([*NODEWEAVE, "sync", "--json", str(src), dest, f"--to=ssh:root@{sshd['address']}",
                          *sshd["options"]], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    (result,) = json.loads(out.stdout)["targets"]
    assert result["method"] == "stream" and result["status"] == "ok" and result["files"] == 2
    assert podman("exec", sshd["name"], "cat", f"{dest}/pkg/model.py").stdout == "x = 1\n"
    assert podman("exec", sshd["name"], "test", "-e", f"{dest}/.env", check=False).returncode != 0

    (src / "train.py").write_text("print('ssh again')\n")
    out = subprocess.run([*NODEWEAVE, "sync", "--json", str(src), dest, f"--to=ssh:root@{sshd['address']}",
                          "--tar", *sshd["options"]], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    (result,) = json.loads(out.stdout)["targets"]
    assert result["method"] == "tar" and result["files"] == 1
    assert podman("exec", sshd["name"], "cat", f"{dest}/train.py").stdout == "print('ssh again')\n"


def test_a_home_relative_dest_lands_under_the_hosts_home_by_every_method(sshd, tmp_path):
    """``nodeweave sync SRC ~/proj`` to ssh hosts (what `up --remote-dir ~/proj` remembers): the stream, tar and
    rsync all write under the host's home, and no folder named '~' appears anywhere."""
    src = tmp_path / "proj"
    src.mkdir()
    folder = f"proj-{uuid.uuid4().hex[:6]}"
    for method in ("stream", "tar", "rsync"):
        (src / "train.py").write_text(f"print('{method}')\n")
        out = subprocess.run([*NODEWEAVE, "sync", "--json", str(src), f"~/{folder}", f"--to=ssh:root@{sshd['address']}",
                              "--method", method, *sshd["options"]], capture_output=True, text=True, timeout=300)
        assert out.returncode == 0, out.stderr
        (result,) = json.loads(out.stdout)["targets"]
        assert result["method"] == method and result["status"] == "ok", result
        assert podman("exec", sshd["name"], "cat", f"/root/{folder}/train.py").stdout == f"print('{method}')\n"
    found = podman("exec", sshd["name"], "find", "/", "-xdev", "-name", "~", check=False).stdout
    assert not found.strip(), found


def test_hosts_probe_over_ssh(sshd, tmp_path):
    out = subprocess.run([*NODEWEAVE, "hosts", "probe", "--json", f"root@{sshd['address']}", *sshd["options"],
                          "--write-hostfile", str(tmp_path / "hostfile")], capture_output=True, text=True, timeout=300)
    assert out.returncode == 1, out.stderr  # no GPU anywhere: no hostfile, rather than an empty one
    assert "no host with a GPU answered" in out.stderr
    (report,) = json.loads(out.stdout)
    assert report["status"] == "no-gpu" and report["node"]["interface"] == "eth0"
    assert not (tmp_path / "hostfile").exists()


def test_an_unreachable_ssh_host_is_retried_then_named(sshd, tmp_path):
    (tmp_path / "a.py").write_text("a\n")
    target = f"ssh:root@{sshd['address']}"
    out = subprocess.run([*NODEWEAVE, "sync", "--json", str(tmp_path), "/workspace/x", f"--to={target}",
                          "--ssh-option=Port=1", "--ssh-option=ConnectTimeout=3", "--retries=1",
                          *sshd["options"]], capture_output=True, text=True, timeout=300)
    # none reached: the one line and exit 3 every verb on bare hosts gives (replay10 A35), the JSON still whole
    assert out.returncode == 3, out.stderr
    (result,) = json.loads(out.stdout)["targets"]
    assert result["status"] == "failed" and result["attempts"] == 2  # ssh's 255 is transient: retried once
    assert f"nothing synced to {sshd['address']}" in out.stderr and "ssh cannot reach" in out.stderr, out.stderr


# A stand-in for the host's engine: `docker exec [-i] [-t] NAME CMD...` runs CMD right there,
# which is what reaching "NAME" on the host comes to; it checks the shape of every call.
DOCKER_STAND_IN = """#!/bin/sh
[ "$1" = exec ] || { echo "stand-in: not an exec: $*" >&2; exit 99; }
shift
while [ "${1#-}" != "$1" ]; do shift; done
[ "$1" = trainer ] || { echo "stand-in: no container $1" >&2; exit 125; }
shift
exec "$@"
"""


def test_a_container_on_a_host_over_ssh_takes_the_stream_and_rsync(sshd, tmp_path):
    """ssh+docker:HOST/NAME: ssh, then the host's docker exec, with real ssh and real rsync."""
    podman("exec", "-i", sshd["name"], "sh", "-c", "cat > /usr/local/bin/docker && chmod +x /usr/local/bin/docker",
           input=DOCKER_STAND_IN)
    src = tmp_path / "proj"
    (src / "pkg").mkdir(parents=True)
    (src / "train.py").write_text("print('nested')\n")
    (src / "pkg" / "name with space.py").write_text("x = 1\n")
    dest = f"/workspace/nested-{uuid.uuid4().hex[:6]}"
    target = f"--to=ssh+docker:root@{sshd['address']}/trainer"
    for extra, method in (([], "stream"), (["--method", "rsync"], "rsync")):
        (src / "train.py").write_text(f"print('nested {method}')\n")
        out = subprocess.run([*NODEWEAVE, "sync", "--json", str(src), dest, target, *extra, *sshd["options"]],
                             capture_output=True, text=True, timeout=300)
        assert out.returncode == 0, out.stderr
        (result,) = json.loads(out.stdout)["targets"]
        assert result["method"] == method and result["status"] == "ok", result
        assert podman("exec", sshd["name"], "cat", f"{dest}/train.py").stdout == f"print('nested {method}')\n"
    assert podman("exec", sshd["name"], "cat", f"{dest}/pkg/name with space.py").stdout == "x = 1\n"
    out = subprocess.run([*NODEWEAVE, "sync", "--json", str(src), dest, f"--to=ssh+docker:root@{sshd['address']}/other",
                          *sshd["options"]], capture_output=True, text=True, timeout=300)
    assert out.returncode == 1 and "no container other" in out.stderr
