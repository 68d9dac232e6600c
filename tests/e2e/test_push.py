"""``nodeweave image build --push`` against a real registry on loopback.

No public registry is reachable here, so the test starts Debian's
``docker-registry`` (the CNCF distribution registry, installed by
.ci/setup-engine.sh) on 127.0.0.1 with its own storage, tells podman it
speaks plain HTTP (CONTAINERS_REGISTRIES_CONF), pushes both tags through the
real CLI, and reads them back from the registry's own API.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
import urllib.request

import pytest
from free_ports import free_port as _free_port

from e2e_harness import REPO, prepare_workdir

pytestmark = pytest.mark.engine

SPEC = """name: pushed
image: {{variant: cpu, registry: "{registry}/team"}}
nodes: 2
gpus_per_node: 2
launcher: {{script: allreduce.py}}
"""


@pytest.fixture()
def registry(tmp_path, monkeypatch):
    binary = shutil.which("docker-registry")
    if binary is None:
        pytest.skip("docker-registry is not installed (bash .ci/setup-engine.sh installs it)")
    port = _free_port()
    config = tmp_path / "registry.yml"
    config.write_text(f"version: 0.1\nstorage:\n  filesystem:\n    rootdirectory: {tmp_path / 'store'}\n"
                      f"http:\n  addr: 127.0.0.1:{port}\n")
    conf = tmp_path / "registries.conf"
    conf.write_text(f'[[registry]]\nlocation = "127.0.0.1:{port}"\ninsecure = true\n')
    monkeypatch.setenv("CONTAINERS_REGISTRIES_CONF", str(conf))
    proc = subprocess.Popen([binary, "serve", str(config)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    address = f"127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while True:
        try:
            urllib.request.urlopen(f"http://{address}/v2/", timeout=2).close()
            break
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                proc.kill()
                pytest.fail(f"docker-registry did not start: {proc.stderr.read().decode()[-2000:]}")
            time.sleep(0.2)
    yield address
    proc.terminate()
    proc.wait(timeout=30)


def test_push_sends_both_tags_to_the_registry(engine, base_image, wheelhouse, registry, tmp_path):
    spec_path = prepare_workdir(tmp_path, SPEC.format(registry=registry))
    argv = [sys.executable, "-c", "import sys; from nodeweave.cli import main; sys.exit(main(sys.argv[1:]))",
            "image", "build", "cpu", "--spec", str(spec_path), "--context", str(REPO), "--base", base_image,
            "--offline", "--network", "host", "--quiet", "--engine", engine.kind, "--push"]
    out = subprocess.run(argv, capture_output=True, text=True, timeout=1500, cwd=REPO, env=dict(os.environ))
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    with urllib.request.urlopen(f"http://{registry}/v2/team/pushed/tags/list", timeout=10) as answer:
        tags = json.load(answer)["tags"]
    sha = subprocess.run(["git", "rev-parse", "--short=12", "HEAD"], capture_output=True, text=True,
                         cwd=REPO).stdout.strip()
    assert "cpu" in tags, tags
    assert any(tag.startswith("cpu-") and sha[:7] in tag for tag in tags), (tags, sha)
    # The digest the engine reported is the one the registry serves for each tag, recorded beside the spec.
    record = json.loads((spec_path.parent / ".nodeweave" / "pushed.json").read_text())
    recorded = record[f"{registry}/team/pushed"]["tags"]
    assert set(recorded) == set(tags), (recorded, tags)
    for tag, digest in recorded.items():
        head = urllib.request.Request(f"http://{registry}/v2/team/pushed/manifests/{tag}", method="HEAD", headers={
            "Accept": "application/vnd.oci.image.manifest.v1+json, "
                      "application/vnd.docker.distribution.manifest.v2+json"})
        with urllib.request.urlopen(head, timeout=10) as answer:
            assert answer.headers["Docker-Content-Digest"] == digest, (tag, digest)
    assert f"digest: \"{recorded['cpu']}\"" in out.stdout, out.stdout[-2000:]

