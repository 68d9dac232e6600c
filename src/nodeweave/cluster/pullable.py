"""Whether the nodes of a remote target can pull the image ``up`` gives them (walk2 W3).

An image named ``localhost/...`` (the spec's default ``image.registry``, podman's prefix for this
machine's own images) or ``localhost:5000/...`` lives on this machine: a Kubernetes or OpenShift
node, a Slurm compute node's pyxis/enroot, or a bare host's engine looks for it in its own store or
registry and fails with ImagePullBackOff / "manifest unknown" / "no such image" after the nodes
were started. ``up`` (and its dry run) says so first, naming the remedy: a registry they reach and
``image build --push``, or (bare hosts) the image loaded on every host.

On the local target the same name is this machine's store, and it may simply not be there yet (the build step
skipped, or --image tagged otherwise): podman-compose would fail on its pull of ``localhost/...``. ``up`` asks
the store once (``image inspect``: only the store's own "no such image" counts, never a daemon that does not answer,
walk8 A5) and refuses with exit 3 before it starts (``image build --base`` too: one rule, :func:`absent_here`)
anything; its dry run says the real up would (walk7 A35).
"""

from __future__ import annotations

from typing import Optional

MACHINE_LOCAL = ("localhost", "127.0.0.1", "[::1]")
WHO_PULLS = {"kubernetes": "the cluster's nodes pull it",
             "slurm": "pyxis/enroot on the compute nodes pull it",
             "hosts": "each host's engine looks for it in its own store"}


def machine_local(ref: str) -> bool:
    """``localhost/x``, ``localhost:5000/x``, ``127.0.0.1:5000/x``: a name only this machine resolves."""
    first, slash, _ = ref.partition("/")
    return bool(slash) and first.split(":")[0] in MACHINE_LOCAL or first.startswith("[::1]")


def unpullable_note(ref: Optional[str], target: str) -> Optional[str]:
    """One sentence when ``target``'s nodes cannot pull ``ref`` from where it is; None where they can (or it runs
    here: the local target)."""
    if not ref or target not in WHO_PULLS or not machine_local(ref):
        return None
    host = ref.partition("/")[0]
    remedy = "set image.registry in the spec to a registry they reach and `nodeweave image build --push`"
    if target == "kubernetes":
        from nodeweave.targets.openshift_build import CLUSTER_REGISTRY

        remedy += (f" (OpenShift: set image.registry: {CLUSTER_REGISTRY}/<namespace>, then `nodeweave image build "
                   "-t openshift` builds into the cluster's own registry, where the pods pull it)")
    if target == "hosts":
        remedy += (", give --image REGISTRY/NAME:TAG, or load the image on every host first (podman save | ssh "
                   "HOST podman load)")
    return (f"image {ref} names {host}/, this machine's own store, and {WHO_PULLS[target]}: the nodes would "
            f"fail to pull it; {remedy}")


# What an engine says on stderr when the store was asked and has no such image; anything else (a daemon that does not
# answer, a store that cannot be read) is no verdict (walk8 A5: "not built here" said for a docker that never answered).
ABSENT_WORDS = ("no such image", "image not known", "no such object")


def stored_labels(ref: str, engine: str) -> "Optional[dict]":
    """The labels of ``ref`` in ``engine``'s store: a dict (maybe empty) when it is there, ``ABSENT`` when the store
    answered that it lacks it, None when the store could not be asked."""
    import json
    import subprocess

    ask = [engine, "image", "inspect", "--format", "{{json .Config.Labels}}", ref]
    try:
        answer = subprocess.run(ask, capture_output=True, text=True, timeout=30, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if answer.returncode != 0:
        return ABSENT if any(w in answer.stderr.lower() for w in ABSENT_WORDS) else None
    try:
        labels = json.loads(answer.stdout) if answer.stdout.strip() else {}
    except ValueError:
        return {}
    return labels if isinstance(labels, dict) else {}


ABSENT = {"": "absent"}  # a sentinel no image carries (a label's name is never empty)


def absent_here(ref: Optional[str], engine: Optional[str], build: str = "nodeweave image build",
                option: str = "--image", first: Optional[str] = None) -> Optional[str]:
    """One sentence when ``ref`` names this machine's store and ``engine``'s store lacks it; None where it is
    there, is pulled from elsewhere, or the store could not be asked (the engine missing, or its daemon silent, is
    said on its own)."""
    if not ref or not engine or not machine_local(ref):
        return None
    if stored_labels(ref, engine) is not ABSENT:
        return None
    return (f"image {ref} is not built here ({engine}'s store lacks it, and {ref.partition('/')[0]}/ is pulled "
            f"from nowhere else): {first or f'`{build}`'} first, or give {option} with a tag this store holds "
            f"({nearest_local(ref, engine)})")


def nearest_local(ref: str, engine: str) -> str:
    """The local images of ``engine``'s store nearest ``ref`` and how to list them all: what every refusal of a
    ``localhost/`` image the store lacks names (walk18a A10: `up --image ...:cpx` named none, the build's --base
    did). The one check of such an image is :func:`absent_here`; ``image build --base`` says it with its own
    option's name."""
    import subprocess
    from difflib import get_close_matches

    try:
        listed = subprocess.run([engine, "images", "--format", "{{.Repository}}:{{.Tag}}"], capture_output=True,
                                text=True, timeout=60, stdin=subprocess.DEVNULL).stdout.split()
    except (OSError, subprocess.TimeoutExpired):
        listed = []
    local = sorted({name for name in listed if machine_local(name) and "<none>" not in name})
    near = get_close_matches(ref, local, n=3, cutoff=0.8)
    listing = f"`{engine} images` lists {'the ' + str(len(local)) if local else 'them: none here'}"
    return f"nearest: {', '.join(near)}; {listing}" if near else listing


def built_elsewhere(ref: Optional[str], engine: Optional[str], owner: str) -> Optional[str]:
    """The folder (as its label shows it) whose build ``ref`` in ``engine``'s store is, when that is not the folder
    whose mark is ``owner``; None when it is this folder's, carries no mark (an older build, a pulled image), or the
    store could not be asked. Two folders with one job name share one tag (walk8 A3)."""
    from nodeweave.cluster.identity import IMAGE_FOLDER_LABEL, IMAGE_OWNER_LABEL

    if not ref or not engine:
        return None
    labels = stored_labels(ref, engine)
    if not labels or labels is ABSENT or not labels.get(IMAGE_OWNER_LABEL) or labels[IMAGE_OWNER_LABEL] == owner:
        return None
    return labels.get(IMAGE_FOLDER_LABEL) or f"another folder (mark {labels[IMAGE_OWNER_LABEL]})"


def to_pull(ref: Optional[str], engine: Optional[str]) -> Optional[str]:
    """``ref`` when ``engine``'s store answered that it lacks it and it comes from a registry (not this machine's
    own: :func:`absent_here` says that one): ``up`` pulls it before it removes or recreates any node (walk17a
    A18: a typo of the image took both running nodes down, then failed as "no container")."""
    if not ref or not engine or machine_local(ref):
        return None
    return ref if stored_labels(ref, engine) is ABSENT else None


def pull_note(ref: str, engine: str) -> str:
    """What the dry run of an ``up`` that must pull ``ref`` says of it."""
    return (f"image {ref} is not in {engine}'s store: the real up pulls it before any node is removed or "
            f"recreated, and stops there (exit 3, nothing taken down) if it cannot")


def pull(ref: str, engine: str) -> Optional[str]:
    """Pull ``ref`` into ``engine``'s store; one sentence naming the image and the engine's last line when that
    fails (a typo, a registry not reached), None once it is there."""
    import subprocess

    try:
        answer = subprocess.run([engine, "pull", ref], capture_output=True, text=True, stdin=subprocess.DEVNULL)
    except OSError as e:
        last = str(e)
    else:
        if answer.returncode == 0:
            return None
        lines = [line.strip() for line in (answer.stderr or answer.stdout or "").splitlines() if line.strip()]
        last = lines[-1] if lines else f"exit {answer.returncode}"
    return (f"image {ref} could not be found or pulled (`{engine} pull {ref}`: {last}): give --image with a tag "
            f"`{engine} images` lists, or one a registry you reach has")
