"""A stand-in for ``kubectl``/``oc`` that maps what nodeweave asks of a cluster onto podman.

No API server runs on this machine, so the Kubernetes path of the cluster
verbs is driven through this script, put on PATH as ``kubectl`` by the tests.
It is a test helper, not a cluster: it understands exactly the calls
nodeweave makes and answers them from podman, the way a cluster would for
the StatefulSet's pods.

- ``apply -k DIR``: ``kubectl kustomize DIR`` with the *real* kubectl (its
  built-in kustomize), then the StatefulSet's pods under ``podman kube play``
  (tests/e2e/kube_play.py: fixed addresses on the test's network, hostAliases
  for the Service's DNS names); ``STANDIN_SKIP=i,j`` leaves pods out, as a
  scheduler that cannot place them would;
- ``delete -k DIR``, ``delete pvc ...``: the StatefulSet's pods removed (claims are
  host folders here: nothing to delete);
- ``get statefulset NAME -o jsonpath={.spec.replicas}``: the replica count ``apply`` recorded;
- ``get pods -l app.kubernetes.io/instance=NAME -o json``: each pod's phase, readiness and
  container state from ``podman pod inspect`` / ``podman inspect``;
- ``exec [-i] [-t] [-n NS] [-c CTR] POD -- CMD``: ``podman exec`` in ``<pod>-<container>``;
- ``logs [-f] [-n NS] [-c CTR] POD``: ``podman logs`` of it.

Configured by the test through STANDIN_NETWORK, STANDIN_ADDRESSES (comma
list), STANDIN_IMAGE, STANDIN_WORKSPACE, STANDIN_STATE (a folder) and
STANDIN_REAL_KUBECTL.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).parent))
from kube_play import pods_from_statefulset  # noqa: E402


def fail(message: str, code: int = 1) -> None:
    print(f"kubectl (stand-in): {message}", file=sys.stderr)
    sys.exit(code)


def podman(*args: str, **kw) -> "subprocess.CompletedProcess[str]":
    return subprocess.run(["podman", *args], capture_output=True, text=True, **kw)


def options(argv):
    """(verb, flags {-n, -c, -l, -o, -k}, switches {-i, -t, -f}, positional, command after --)."""
    command = argv[argv.index("--") + 1:] if "--" in argv else []
    argv = argv[:argv.index("--")] if "--" in argv else argv
    flags, switches, positional = {}, set(), []
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg in ("-n", "-c", "-l", "-o", "-k", "--context", "--namespace", "--container"):
            flags[arg], i = argv[i + 1], i + 2
        elif arg.startswith("-o") and len(arg) > 2:
            flags["-o"], i = arg[2:], i + 1
        elif arg.startswith("-"):
            switches.add(arg)
            i += 1
        else:
            positional.append(arg)
            i += 1
    verb = positional.pop(0) if positional else ""
    return verb, flags, switches, positional, command


def state_file() -> Path:
    return Path(os.environ["STANDIN_STATE"]) / "statefulsets.json"


def apply(directory: str) -> None:
    built = subprocess.run([os.environ["STANDIN_REAL_KUBECTL"], "kustomize", directory], capture_output=True, text=True)
    if built.returncode != 0:
        fail(f"kustomize {directory}: {built.stderr.strip()}")
    (sts,) = [doc for doc in yaml.safe_load_all(built.stdout) if doc and doc.get("kind") == "StatefulSet"]
    addresses = os.environ["STANDIN_ADDRESSES"].split(",")
    skip = {int(i) for i in os.environ.get("STANDIN_SKIP", "").split(",") if i}
    pods = pods_from_statefulset(yaml.safe_dump(sts), os.environ["STANDIN_IMAGE"], os.environ["STANDIN_WORKSPACE"],
                                 addresses)
    played = [pod for i, pod in enumerate(pods) if i not in skip]
    file = Path(os.environ["STANDIN_STATE"]) / "pods.yaml"
    file.write_text(yaml.safe_dump_all(played, sort_keys=False))
    argv = ["kube", "play", "--network", os.environ["STANDIN_NETWORK"]]
    for i, _ in enumerate(pods):
        if i not in skip:
            argv += ["--ip", addresses[i]]
    out = podman(*argv, str(file))
    if out.returncode != 0:
        fail(f"podman kube play: {out.stderr.strip()}")
    state_file().write_text(json.dumps({sts["metadata"]["name"]: len(pods)}))
    print(f"statefulset.apps/{sts['metadata']['name']} configured (stand-in: {len(played)} pod(s) played)")


def delete(name_counts: dict) -> None:
    for name, count in name_counts.items():
        for i in range(count):
            podman("pod", "rm", "-f", "-t", "0", f"{name}-{i}")
    print("deleted (stand-in)")


def pod_json(name: str) -> "dict | None":
    pod = podman("pod", "inspect", name)
    if pod.returncode != 0:
        return None
    containers = [c for c in json.loads(pod.stdout).get("Containers", []) if not c["Name"].endswith("-infra")]
    statuses, phase = [], "Running"
    for container in containers:
        state = json.loads(podman("inspect", container["Name"]).stdout)[0]["State"]
        if state["Status"] == "running":
            statuses.append({"name": container["Name"], "ready": True, "state": {"running": {}}})
        else:
            phase = "Succeeded" if state["ExitCode"] == 0 else "Failed"
            statuses.append({"name": container["Name"], "ready": False,
                             "state": {"terminated": {"exitCode": state["ExitCode"]}}})
    ready = "True" if phase == "Running" and statuses else "False"
    return {"metadata": {"name": name}, "status": {"phase": phase, "containerStatuses": statuses,
                                                   "conditions": [{"type": "Ready", "status": ready}]}}


def main(argv) -> None:
    verb, flags, switches, positional, command = options(argv)
    counts = json.loads(state_file().read_text()) if state_file().exists() else {}
    container = flags.get("-c", "trainer")
    if verb == "apply" and "-k" in flags:
        apply(flags["-k"])
    elif verb == "delete":
        delete(counts)
    elif verb == "get" and positional[:1] == ["statefulset"]:
        if positional[1] not in counts:
            fail(f'Error from server (NotFound): statefulsets.apps "{positional[1]}" not found')
        print(counts[positional[1]], end="")
    elif verb == "get" and positional[:1] == ["pods"]:
        name = flags["-l"].split("=", 1)[1]
        items = [pod_json(f"{name}-{i}") for i in range(counts.get(name, 0))]
        print(json.dumps({"kind": "List", "items": [item for item in items if item]}))
    elif verb == "exec":
        sys.exit(subprocess.call(["podman", "exec", *sorted(switches & {"-i", "-t"}),
                                  f"{positional[0]}-{container}", *command]))
    elif verb == "logs":
        sys.exit(subprocess.call(["podman", "logs", *(["-f"] if "-f" in switches else []),
                                  f"{positional[0]}-{container}"]))
    else:
        fail(f"not a call nodeweave makes: {' '.join(argv)}", 2)


if __name__ == "__main__":
    main(sys.argv[1:])
