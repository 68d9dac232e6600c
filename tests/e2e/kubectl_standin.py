"""A stand-in for ``kubectl``/``oc`` that maps what nodeweave asks of a cluster onto podman.

No API server runs on this machine, so the Kubernetes path of the cluster
verbs is driven through this script, put on PATH as ``kubectl`` by the tests.
It is a test helper, not a cluster: it understands exactly the calls
nodeweave makes and answers them from podman, the way a cluster would for
the StatefulSet's pods.

Every call is ``kubectl [--context C] VERB ...`` with ``-n NS`` (default
``default``); what it records (StatefulSets, their pods and labels, claims)
lives under that context and namespace, so a call to another namespace or
context finds nothing, as on a cluster. A context must be one of
STANDIN_CONTEXTS (comma list; the first is the current one). Any flag, form
or verb it does not know is refused (exit 2), so a wrong command fails the
test instead of passing:

- ``apply -n NS -k DIR``: ``kubectl kustomize DIR`` with the *real* kubectl (its
  built-in kustomize); an object whose namespace is not NS is refused, as
  kubectl does; then the StatefulSet's pods under ``podman kube play``
  (tests/e2e/kube_play.py: fixed addresses on the test's network, hostAliases
  for the Service's DNS names); ``STANDIN_SKIP=i,j`` leaves pods out, as a
  scheduler that cannot place them would. Claims (PersistentVolumeClaims) are
  recorded with their labels (they are host folders here);
- ``delete -n NS -k DIR [--ignore-not-found]``: exactly the objects of that tree
  in NS: a StatefulSet's pods are removed, a claim the tree names is forgotten,
  one it leaves out is kept; ``delete -n NS pvc -l SELECTOR [--ignore-not-found]``:
  the claims whose labels match; ``delete -n NS secret -l SELECTOR [--ignore-not-found]``: the
  Secrets ``apply`` recorded whose labels match (their folders go); ``delete -n NS pod NAME``: what a
  person (or a node that fails) does to one pod: it is stopped as the kubelet stops it (SIGTERM, SIGKILL
  after its ``terminationGracePeriodSeconds``) and, as its StatefulSet's controller would, made again
  under the same name and address, with fresh ``emptyDir`` folders;
- a Secret ``apply`` carries (``nodeweave up``'s job token) becomes a host folder of its keys
  (mode 0440, uid 1000, as the kubelet with ``fsGroup: 0`` makes them), mounted where the pod
  template mounts the Secret; a volume naming a Secret the tree does not carry fails the apply;
- ``get -n NS statefulset NAME -o jsonpath={.spec.replicas}``: the replica count ``apply`` recorded;
- ``get -n NS pods -l SELECTOR -o json`` (and ``--field-selector=status.phase=Running -o
  jsonpath={.items[*].metadata.name}``): the pods whose labels match, with phase, readiness
  and container state from ``podman pod inspect`` / ``podman inspect``;
- ``exec [-i] [-t] -n NS -c CTR POD -- CMD``: ``podman exec`` in ``<pod>-<container>``, for a
  pod recorded in NS with that container;
- ``logs [-f] -n NS -c CTR POD``: ``podman logs`` of it;
- ``kustomize DIR``: the real kubectl's build of the tree (``up``'s plan names what it applies from it);
- ``scale -n NS statefulset/NAME --replicas N``: what a person types to make a StatefulSet dormant
  (or smaller): the pods from ordinal N on are removed and the recorded count becomes N; more
  pods than ``apply`` played cannot be made here, so growing past them is refused.

SELECTOR is ``key=value[,key=value]``. Configured by the test through
STANDIN_NETWORK, STANDIN_ADDRESSES (comma list), STANDIN_IMAGE,
STANDIN_WORKSPACE, STANDIN_STATE (a folder), STANDIN_REAL_KUBECTL and
STANDIN_CONTEXTS (default ``standin``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).parent))
from kube_play import POD_INDEX_LABEL as POD_INDEX, pods_from_statefulset  # noqa: E402


def fail(message: str, code: int = 1) -> None:
    print(f"kubectl (stand-in): {message}", file=sys.stderr)
    sys.exit(code)


def podman(*args: str, **kw) -> "subprocess.CompletedProcess[str]":
    return subprocess.run(["podman", *args], capture_output=True, text=True, **kw)


# verb -> (flags taking a value, switches): anything else on the command line is refused.
GRAMMAR = {
    "apply": ({"-n", "-k"}, set()),
    "delete": ({"-n", "-k", "-l"}, {"--ignore-not-found"}),
    "get": ({"-n", "-l", "-o"}, {"--field-selector=status.phase=Running", "--ignore-not-found"}),
    "exec": ({"-n", "-c"}, {"-i", "-t"}),
    "logs": ({"-n", "-c"}, {"-f"}),
    "scale": ({"-n", "--replicas"}, set()),
    "kustomize": (set(), set()),
}
REPLICAS = "jsonpath={.spec.replicas}"
RUNNING_NAMES = "jsonpath={.items[*].metadata.name}"


def refuse(argv, why: str) -> None:
    fail(f"not a call nodeweave makes ({why}): kubectl {' '.join(argv)}", 2)


def parse(argv):
    """(context, verb, flags, switches, positional, command after --); refuses what it does not know."""
    command = argv[argv.index("--") + 1:] if "--" in argv else []
    words = argv[:argv.index("--")] if "--" in argv else list(argv)
    contexts = os.environ.get("STANDIN_CONTEXTS", "standin").split(",")
    context = contexts[0]
    if words[:1] == ["--context"]:
        if len(words) < 2:
            refuse(argv, "--context without a value")
        context, words = words[1], words[2:]
        if context not in contexts:
            fail(f'error: context "{context}" does not exist')
    if not words or words[0] not in GRAMMAR:
        refuse(argv, f"verb {words[:1]}")
    verb, rest = words[0], words[1:]
    takes, alone = GRAMMAR[verb]
    flags, switches, positional = {}, set(), []
    i = 0
    while i < len(rest):
        arg = rest[i]
        if arg in takes and i + 1 < len(rest):
            if arg in flags:
                refuse(argv, f"{arg} given twice")
            flags[arg], i = rest[i + 1], i + 2
        elif arg in alone:
            switches.add(arg)
            i += 1
        elif arg.startswith("-"):
            refuse(argv, f"flag {arg} of {verb}")
        else:
            positional.append(arg)
            i += 1
    if verb in ("exec",) and not command:
        refuse(argv, "exec without -- COMMAND")
    if verb != "exec" and command:
        refuse(argv, f"{verb} with a command after --")
    return context, verb, flags, switches, positional, command


def selector_terms(selector: str) -> list:
    terms = selector.split(",")
    if not all(term.count("=") == 1 and term.split("=")[0] and "!" not in term and " " not in term for term in terms):
        fail(f"label selector {selector!r}: the stand-in knows key=value[,key=value] only", 2)
    return [term.split("=") for term in terms]


def selector_matches(selector: str, labels: dict) -> bool:
    return all(labels.get(key) == value for key, value in selector_terms(selector))


def load_state() -> dict:
    path = Path(os.environ["STANDIN_STATE"]) / "state.json"
    return json.loads(path.read_text()) if path.exists() else {}


def save_state(state: dict) -> None:
    (Path(os.environ["STANDIN_STATE"]) / "state.json").write_text(json.dumps(state, indent=1, sort_keys=True))


def build(directory: str, namespace: str) -> list:
    """The objects of a kustomize tree (the real kubectl builds it); all must be in ``namespace``."""
    built = subprocess.run([os.environ["STANDIN_REAL_KUBECTL"], "kustomize", directory], capture_output=True, text=True)
    if built.returncode != 0:
        fail(f"kustomize {directory}: {built.stderr.strip()}")
    objects = [doc for doc in yaml.safe_load_all(built.stdout) if doc]
    for obj in objects:
        theirs = obj["metadata"].get("namespace")
        if theirs is not None and theirs != namespace and obj["kind"] not in ("ClusterRole", "ClusterRoleBinding"):
            fail(f'error: the namespace from the provided object "{theirs}" does not match the namespace '
                 f'"{namespace}". You must pass \'--namespace={theirs}\' to perform this operation.')
    return objects


def apply(space: dict, directory: str, namespace: str) -> None:
    objects = build(directory, namespace)
    (sts,) = [doc for doc in objects if doc.get("kind") == "StatefulSet"]
    secret_folders(space, sts, [doc for doc in objects if doc.get("kind") == "Secret"])
    addresses = os.environ["STANDIN_ADDRESSES"].split(",")
    skip = {int(i) for i in os.environ.get("STANDIN_SKIP", "").split(",") if i}
    pods = pods_from_statefulset(yaml.safe_dump(sts), os.environ["STANDIN_IMAGE"], os.environ["STANDIN_WORKSPACE"],
                                 addresses, scratch=str(Path(os.environ["STANDIN_STATE"]) / "emptydir"))
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
    name = sts["metadata"]["name"]
    space.setdefault("statefulsets", {})[name] = {
        "replicas": len(pods), "annotations": sts["metadata"].get("annotations") or {}, "pods": {pod["metadata"]["name"]: {
            "labels": pod["metadata"]["labels"], "containers": [c["name"] for c in pod["spec"]["containers"]]}
            for pod in played}}
    for claim in (doc for doc in objects if doc["kind"] == "PersistentVolumeClaim"):
        space.setdefault("claims", {})[claim["metadata"]["name"]] = claim["metadata"].get("labels", {})
        space.setdefault("claim_annotations", {})[claim["metadata"]["name"]] = \
            claim["metadata"].get("annotations", {})
    print(f"statefulset.apps/{name} configured (stand-in: {len(played)} pod(s) played)")


def secret_folders(space: dict, sts: dict, secrets: list) -> None:
    """A Secret volume as the kubelet gives it: a read-only folder of its keys (here a host folder, uid 1000)."""
    import base64

    by_name = {secret["metadata"]["name"]: secret for secret in secrets}
    for volume in sts["spec"]["template"]["spec"].get("volumes", []):
        if "secret" not in volume:
            continue
        name = volume.pop("secret")["secretName"]
        if name not in by_name:
            fail(f'secret "{name}" not found (the stand-in has only the Secrets apply carries)')
        folder = Path(os.environ["STANDIN_STATE"]) / "secrets" / name
        folder.mkdir(parents=True, exist_ok=True)
        for key, value in by_name[name].get("data", {}).items():
            (folder / key).write_bytes(base64.b64decode(value))
            (folder / key).chmod(0o440)
            os.chown(folder / key, 1000, 0)
        volume["hostPath"] = {"path": str(folder), "type": "Directory"}
        space.setdefault("secrets", {})[name] = by_name[name]["metadata"].get("labels", {})


def delete_secrets(space: dict, selector: str) -> None:
    import shutil

    for name, labels in list(space.get("secrets", {}).items()):
        if selector_matches(selector, labels):
            shutil.rmtree(Path(os.environ["STANDIN_STATE"]) / "secrets" / name, ignore_errors=True)
            del space["secrets"][name]
            print(f'secret "{name}" deleted')


def remove_pods(sts: dict) -> None:
    for pod in sts["pods"]:
        podman("pod", "rm", "-f", "-t", "0", pod)


def delete(space: dict, flags: dict, switches: set, positional: list, namespace: str) -> None:
    missing_ok = "--ignore-not-found" in switches
    if "-k" in flags and not positional and "-l" not in flags:
        wanted = [(obj["kind"], obj["metadata"]["name"]) for obj in build(flags["-k"], namespace)
                  if obj["kind"] in ("StatefulSet", "PersistentVolumeClaim")]
    elif positional == ["secret"] and "-l" in flags and "-k" not in flags and selector_terms(flags["-l"]):
        return delete_secrets(space, flags["-l"])
    elif positional[:1] == ["pod"] and len(positional) == 2 and not ({"-k", "-l"} & set(flags)):
        return recreate_pod(space, positional[1], namespace)
    elif positional == ["pvc"] and "-l" in flags and "-k" not in flags and selector_terms(flags["-l"]):
        wanted = [("PersistentVolumeClaim", name) for name, labels in space.get("claims", {}).items()
                  if selector_matches(flags["-l"], labels)]
    else:
        fail("delete: the stand-in knows `delete -k DIR`, `delete pvc -l SELECTOR`, `delete secret -l SELECTOR` "
             "and `delete pod NAME` only", 2)
    for kind, name in wanted:
        table = space.get("statefulsets" if kind == "StatefulSet" else "claims", {})
        if name not in table:
            if not missing_ok:
                fail(f'Error from server (NotFound): {kind.lower()} "{name}" not found in namespace {namespace}')
            continue
        if kind == "StatefulSet":
            remove_pods(table[name])
        del table[name]
        print(f'{kind.lower()} "{name}" deleted')


def recreate_pod(space: dict, name: str, namespace: str) -> None:
    """The pod stopped and removed, then played again from what ``apply`` played: the StatefulSet's controller
    recreates ``<name>-<ordinal>``; the new pod's emptyDirs start empty, its claim is the same."""
    import shutil

    if not any(name in sts["pods"] for sts in space.get("statefulsets", {}).values()):
        fail(f'Error from server (NotFound): pods "{name}" not found in namespace {namespace}')
    state = Path(os.environ["STANDIN_STATE"])
    (pod,) = [doc for doc in yaml.safe_load_all((state / "pods.yaml").read_text()) if doc["metadata"]["name"] == name]
    grace = pod["spec"].get("terminationGracePeriodSeconds", 30)
    podman("pod", "rm", "-f", "-t", str(grace), name)
    print(f'pod "{name}" deleted')
    scratch = state / "emptydir" / name
    for volume in pod["spec"].get("volumes", []):
        folder = Path(volume.get("hostPath", {}).get("path", "/"))
        if scratch in folder.parents:
            shutil.rmtree(folder)
            folder.mkdir(parents=True)
            os.chown(folder, 1000, 0)
    one = state / f"pod-{name}.yaml"
    one.write_text(yaml.safe_dump(pod, sort_keys=False))
    address = os.environ["STANDIN_ADDRESSES"].split(",")[int(pod["metadata"]["labels"][POD_INDEX])]
    out = podman("kube", "play", "--network", os.environ["STANDIN_NETWORK"], "--ip", address, str(one))
    if out.returncode != 0:
        fail(f"podman kube play (the recreated pod {name}): {out.stderr.strip()}")


def find_pod(space: dict, name: str, container: str, namespace: str) -> None:
    for sts in space.get("statefulsets", {}).values():
        if name in sts["pods"]:
            if container not in sts["pods"][name]["containers"]:
                fail(f'error: container {container} is not valid for pod {name}')
            return
    fail(f'Error from server (NotFound): pods "{name}" not found in namespace {namespace}')


def get(space: dict, flags: dict, switches: set, positional: list, namespace: str = "default") -> None:
    if positional[:1] == ["statefulset"] and len(positional) == 2 and flags.get("-o") in (REPLICAS, "json") \
            and "-l" not in flags and switches <= {"--ignore-not-found"}:
        found = space.get("statefulsets", {}).get(positional[1])
        if found is None:
            if "--ignore-not-found" in switches:
                return  # kubectl prints nothing and exits 0
            fail(f'Error from server (NotFound): statefulsets.apps "{positional[1]}" not found')
        if flags["-o"] == "json":  # what nodeweave reads of it: name, namespace, annotations, replicas
            print(json.dumps({"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {
                "name": positional[1], "namespace": namespace, "annotations": found.get("annotations") or {}},
                "spec": {"replicas": found["replicas"]}}))
        else:
            print(found["replicas"], end="")
        return
    if positional == ["pvc"] and "-l" in flags and flags.get("-o") == "json" and not switches:
        selector_terms(flags["-l"])  # what nodeweave reads of a claim: its name, labels and annotations
        notes = space.get("claim_annotations", {})
        items = [{"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {
            "name": name, "namespace": namespace, "labels": labels, "annotations": notes.get(name) or {}}}
            for name, labels in sorted(space.get("claims", {}).items()) if selector_matches(flags["-l"], labels)]
        print(json.dumps({"kind": "List", "items": items}))
        return
    if "--ignore-not-found" in switches:
        fail("get: --ignore-not-found is known for `get statefulset NAME` only", 2)
    if positional != ["pods"] or "-l" not in flags or flags.get("-o") not in ("json", RUNNING_NAMES):
        fail("get: the stand-in knows `get statefulset NAME -o jsonpath={.spec.replicas}`, `get pvc -l SELECTOR "
             "-o json` and `get pods -l SELECTOR -o json|jsonpath={.items[*].metadata.name}` only", 2)
    selector_terms(flags["-l"])
    names = sorted(pod for sts in space.get("statefulsets", {}).values() for pod, info in sts["pods"].items()
                   if selector_matches(flags["-l"], info["labels"]))
    items = [item for item in map(pod_json, names) if item]
    if switches:  # --field-selector=status.phase=Running
        items = [item for item in items if item["status"]["phase"] == "Running"]
    if flags["-o"] == "json":
        print(json.dumps({"kind": "List", "items": items}))
    else:
        print(" ".join(item["metadata"]["name"] for item in items), end="")


def scale(space: dict, flags: dict, positional: list) -> None:
    kind, _, name = positional[0].partition("/") if len(positional) == 1 else ("", "", "")
    if kind != "statefulset" or not name or not flags.get("--replicas", "").isdigit():
        fail("scale: the stand-in knows `scale statefulset/NAME --replicas N` only", 2)
    if name not in space.get("statefulsets", {}):
        fail(f'Error from server (NotFound): statefulsets.apps "{name}" not found')
    sts, count = space["statefulsets"][name], int(flags["--replicas"])
    if count > sts["replicas"] and count > len(sts["pods"]):
        fail(f"scale: the stand-in cannot make pods `apply` did not play ({count} > {len(sts['pods'])})", 2)
    gone = {pod: info for pod, info in sts["pods"].items() if int(pod.rsplit("-", 1)[1]) >= count}
    remove_pods({"pods": gone})
    sts["pods"] = {pod: info for pod, info in sts["pods"].items() if pod not in gone}
    sts["replicas"] = count
    print(f"statefulset.apps/{name} scaled")


def pod_json(name: str) -> "dict | None":
    pod = podman("pod", "inspect", name)
    if pod.returncode != 0:
        return None
    containers = [c for c in json.loads(pod.stdout).get("Containers", []) if not c["Name"].endswith("-infra")]
    statuses, phase = [], "Running"
    for container in containers:
        state = json.loads(podman("inspect", container["Name"]).stdout)[0]["State"]
        if state["Status"] in ("running", "stopping"):  # the kubelet says running until the process ended
            statuses.append({"name": container["Name"], "ready": True, "state": {"running": {}}})
        elif state["Status"] in ("exited", "stopped"):  # podman: stopped until its cleanup ran, the code known
            phase = "Succeeded" if state["ExitCode"] == 0 else "Failed"
            statuses.append({"name": container["Name"], "ready": False,
                             "state": {"terminated": {"exitCode": state["ExitCode"]}}})
        else:  # created, configured, initialized: not started yet
            phase = "Pending" if phase == "Running" else phase
            statuses.append({"name": container["Name"], "ready": False,
                             "state": {"waiting": {"reason": "ContainerCreating"}}})
    ready = "True" if phase == "Running" and statuses else "False"
    return {"metadata": {"name": name}, "status": {"phase": phase, "containerStatuses": statuses,
                                                   "conditions": [{"type": "Ready", "status": ready}]}}


def main(argv) -> None:
    context, verb, flags, switches, positional, command = parse(argv)
    if verb == "kustomize" and len(positional) == 1 and not flags:  # offline: the real one builds it
        sys.exit(subprocess.call([os.environ["STANDIN_REAL_KUBECTL"], "kustomize", positional[0]]))
    namespace = flags.get("-n", "default")
    state = load_state()
    space = state.setdefault(f"{context}/{namespace}", {})
    if verb == "apply" and "-k" in flags and not positional:
        apply(space, flags["-k"], namespace)
    elif verb == "delete":
        delete(space, flags, switches, positional, namespace)
    elif verb == "get":
        get(space, flags, switches, positional, namespace)
    elif verb == "scale":
        scale(space, flags, positional)
    elif verb in ("exec", "logs") and len(positional) == 1 and "-c" in flags:
        find_pod(space, positional[0], flags["-c"], namespace)
        target = f"{positional[0]}-{flags['-c']}"
        if verb == "exec":
            sys.exit(subprocess.call(["podman", "exec", *sorted(switches), target, *command]))
        sys.exit(subprocess.call(["podman", "logs", *sorted(switches), target]))
    else:
        refuse(argv, f"{verb} {' '.join(positional)}")
    save_state(state)


if __name__ == "__main__":
    main(sys.argv[1:])
