"""Push the tags and learn the digest the registry stored, so deployments can name the image by it.

A tag moves; a digest (``sha256:...`` of the pushed manifest) does not. Each
engine says it its own way: podman writes it to ``--digestfile``; docker
lists it in the image's ``RepoDigests`` once the push is done. The digest is
recorded in ``.nodeweave/pushed.json`` beside the spec (git-ignored, one
entry per repository), where ``nodeweave up --target kubernetes`` pins it
(kustomize ``images: digest``) unless the spec sets ``image.digest`` itself,
and the build's summary prints the line that pins it in the spec.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Dict, Optional, Sequence

from nodeweave.entrypoint import bounded
from nodeweave.errors import NodeweaveError
from nodeweave.steps import Step

RECORD = ".nodeweave/pushed.json"
DIGEST = re.compile(r"sha256:[a-f0-9]{64}")


def repository_of(tag: str) -> str:
    """``registry/name:tag`` -> ``registry/name`` (a registry's ``host:port`` keeps its colon)."""
    slash = tag.rfind("/")
    colon = tag.rfind(":")
    return tag[:colon] if colon > slash else tag


DIGEST_FILE = "DIGEST_FILE"  # where podman writes the digest: a fresh temporary file, named when the push runs


def push_step(engine_kind: str, tag: str) -> Step:
    """The push of one tag as a plan's step: podman writes the digest to ``--digestfile``; docker's is read from
    the image's RepoDigests after it (``DIGEST_FILE`` stands for the temporary file the push names)."""
    digest = ["--digestfile", DIGEST_FILE] if engine_kind == "podman" else []
    return Step(f"push {tag}", (engine_kind, "push", "--quiet", *digest, tag), timeout=3600)


def run_push(engine, step: Step) -> str:
    """Run a planned push; the digest the registry stored for its tag."""
    tag = step.argv[-1]
    with tempfile.TemporaryDirectory(prefix="nodeweave-push-") as scratch:
        digest_file = os.path.join(scratch, "digest")
        argv = [digest_file if word == DIGEST_FILE else word for word in step.argv]
        out = subprocess.run(argv, capture_output=True, text=True, timeout=step.timeout, stdin=subprocess.DEVNULL)
        if out.returncode != 0:
            reason = (out.stderr or "").strip().splitlines()[-1:] or ["no message"]
            raise NodeweaveError(f"{engine.kind} push {tag} failed: {reason[0]}")
        if DIGEST_FILE in step.argv:
            return Path(digest_file).read_text(encoding="ascii").strip()
    return _repo_digest(engine, tag)


def _repo_digest(engine, tag: str) -> str:
    """docker: the digest of ``tag``'s repository in the image's RepoDigests, once the push is done."""
    from python_on_whales.exceptions import DockerException

    try:
        repo_digests = engine.client.image.inspect(tag).repo_digests or []
    except DockerException as err:
        reason = (err.stderr or "").strip().splitlines()[-1:] or ["no message"]
        raise NodeweaveError(f"docker push {tag}: cannot read the image's digests: {reason[0]}") from None
    repository = repository_of(tag)
    for entry in repo_digests:
        name, _, digest = entry.partition("@")
        if name == repository:
            return digest
    raise NodeweaveError(f"docker push {tag}: the image lists no digest for {repository} after the push "
                         f"(RepoDigests: {', '.join(repo_digests) or 'none'})")


def push_steps(engine, steps: Sequence[Step]) -> Dict[str, str]:
    """Run every planned push; {tag: the digest the registry stored}. A refusal names the tag and the reason."""
    digests = {}
    for step in steps:
        tag, digest = step.argv[-1], run_push(engine, step)
        if not DIGEST.fullmatch(digest):
            raise NodeweaveError(f"{engine.kind} push {tag} reported {digest!r}, not a sha256 digest")
        digests[tag] = digest
    return digests


def push_tags(engine, tags: Sequence[str]) -> Dict[str, str]:
    """Push every tag (the steps a plan would hold); {tag: digest}."""
    return push_steps(engine, [push_step(engine.kind, tag) for tag in tags])


def record_push(spec_dir: Path, digests: Dict[str, str]) -> Path:
    """Add this push to ``.nodeweave/pushed.json`` beside the spec: per repository, its tags and digest."""
    path = spec_dir / RECORD
    data = read_record(spec_dir)
    for tag, digest in digests.items():
        entry = data.get(repository_of(tag))
        if not isinstance(entry, dict) or not isinstance(entry.get("tags"), dict):  # absent, or hand-edited away
            entry = data[repository_of(tag)] = {"tags": {}}
        entry["tags"][tag[len(repository_of(tag)) + 1:]] = digest
        entry["pushed_at"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    path.parent.mkdir(parents=True, exist_ok=True)
    scratch = path.with_name(f".{path.name}.{os.getpid()}")
    scratch.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    os.replace(scratch, path)
    return path


def read_record(spec_dir: Path) -> dict:
    try:
        data = json.loads(bounded.read_own(spec_dir / RECORD, bounded.RECORD_CAP, "a push record"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def recorded_digest(spec_dir: Path, repository: str, tag: str) -> Optional[str]:
    """The digest the last ``image build --push`` stored for ``repository:tag``; None when none was recorded."""
    entry = read_record(spec_dir).get(repository)
    tags = entry.get("tags") if isinstance(entry, dict) else None  # a hand edit of another shape: nothing recorded
    digest = tags.get(tag) if isinstance(tags, dict) else None
    return digest if isinstance(digest, str) and DIGEST.fullmatch(digest) else None
