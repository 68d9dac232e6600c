"""Load ``nodeweave.yaml`` into a :class:`Spec`, refusing anything a renderer could not use.

The loader is the only place that sees raw YAML. It reads the composed node
tree (for line numbers), hands each part of the file to its section
(``nodeweave.spec.sections``), and checks the few constraints that span
sections (elastic ranges need torchrun, a hosts list fixes the node count,
mount paths are not used twice), so renderers can trust every value they
receive.
"""

from __future__ import annotations

import posixpath
from pathlib import Path
from typing import Optional

import yaml
from yaml.nodes import Node

from nodeweave.entrypoint.planning.contract import HOSTFILE_PATH
from nodeweave.errors import UsageError
from nodeweave.spec import rules
from nodeweave.spec.fields import rule_string
from nodeweave.spec.model import NodeRange, Spec
from nodeweave.spec.nodes import Fields, Reader
from nodeweave.spec.sections import (image, job, kubernetes, metrics, network, recovery, resources, security,
                                     volumes)

TOP_KEYS = ("name", "image", "nodes", "gpus_per_node", "launcher", "workspace", "cache", "network", "env",
            "kubernetes", "resources", "volumes", "security", "hosts", "slurm", "recovery", "metrics")
# A spec is a page or two of YAML (the largest example is ~5 KB); past this, --spec names the wrong file
# (a data set, a log) and reading it would take minutes, so it is refused at once.
MAX_SPEC_BYTES = 1024 * 1024
# Where nodeweave mounts things of its own: a spec volume there would hide them.
HOSTFILE_DIR = posixpath.dirname(HOSTFILE_PATH)


def load_spec(path: "str | Path") -> Spec:
    """Read and validate a spec file; every problem is a UsageError naming file and line."""
    path = Path(path)
    try:
        size = path.stat().st_size if path.is_file() else 0
        if size > MAX_SPEC_BYTES:
            raise UsageError(_too_large(path, size))
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise UsageError(f"{path}: spec file not found; pass an existing file with --spec (default nodeweave.yaml)")
    except IsADirectoryError:
        raise UsageError(f"{path}: is a directory; pass the spec file itself (e.g. {path / 'nodeweave.yaml'})")
    except UnicodeDecodeError as err:
        raise UsageError(f"{path}: not UTF-8 text ({err.reason} at byte {err.start}); save the spec as UTF-8")
    except OSError as err:
        raise UsageError(f"{path}: cannot read the spec file: {err.strerror}")
    return parse_spec(text, str(path), base_dir=path.parent)


def parse_spec(text: str, source_name: str = "nodeweave.yaml", base_dir: Optional[Path] = None) -> Spec:
    """Validate spec text; ``source_name`` is the file name errors show.

    ``base_dir`` is the spec's directory, where files it names (``image.requirements``)
    are read and checked; without it they are taken on trust.
    """
    if len(text) > MAX_SPEC_BYTES:
        raise UsageError(_too_large(source_name, len(text)))
    try:
        return _parse(text, source_name, base_dir)
    except RecursionError:  # thousands of nested [ or {: Python's reader and ours recurse per level
        raise UsageError(f"{source_name}: nested too deeply to read (lists or mappings inside each other thousands "
                         "of levels down); accepted: a spec nests a few levels, as nodeweave.yaml does") from None


def _too_large(source, size: int) -> str:
    return (f"{source}: {size / 1024 / 1024:.1f} MiB is too large for a spec (at most {MAX_SPEC_BYTES // 1024} KiB); "
            "--spec names the cluster spec, a page of YAML such as nodeweave.yaml")


def _parse(text: str, source_name: str, base_dir: Optional[Path]) -> Spec:
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        where = f":{mark.line + 1}:{mark.column + 1}" if mark is not None else ""
        problem = getattr(err, "problem", None) or str(err)
        raise UsageError(f"{source_name}{where}: not valid YAML: {problem}")
    except ValueError as err:  # e.g. a NUL character, which the YAML reader refuses outright
        raise UsageError(f"{source_name}: not valid YAML: {err}")
    reader = Reader(source_name)
    if reader.is_null(root):
        raise UsageError(
            f"{source_name}: the spec is empty; accepted: a mapping with at least 'name', "
            "'image: {variant: ...}' and 'launcher: {script: ...}' (see nodeweave.yaml in the repository)"
        )
    return _spec(reader, root, base_dir)


def _spec(r: Reader, root: Node, base_dir: Optional[Path]) -> Spec:
    top = r.fields(root, "", TOP_KEYS)
    name = rule_string(r, top.require("name", rules.JOB_NAME.accepted), "name", rules.JOB_NAME)
    launcher = job.launcher(r, top)
    hosts = job.hosts(r, top.get("hosts"))
    nodes = _nodes(r, top, hosts, recovery.listed_spares(r, top) if hosts else 0)
    if nodes.elastic and launcher.type != "torchrun":
        raise r.fail(
            top.get("nodes"),
            "nodes",
            f"the elastic range {nodes} needs launcher.type torchrun (got {launcher.type})",
            "a fixed node count with " + launcher.type,
        )
    spec_image, gpus = image.image(r, top, base_dir), job.gpus(r, top.get("gpus_per_node"))
    workspace, cache, net = job.workspace(r, top), job.cache(r, top), network.network(r, top)
    env, k8s = job.env(r, top.get("env")), kubernetes.kubernetes(r, top, name)
    extra = resources.resources(r, top, net.rdma_resources)
    return Spec(
        name=name,
        image=spec_image,
        nodes=nodes,
        gpus_per_node=gpus,
        launcher=launcher,
        workspace=workspace,
        cache=cache,
        network=net,
        env=env,
        kubernetes=k8s,
        resources=extra,
        volumes=volumes.volumes(r, top.get("volumes"), _taken_paths(workspace.path, cache.path, extra, hosts)),
        security=security.security(r, top),
        hosts=hosts,
        slurm=security.slurm(r, top.get("slurm")),
        nodes_given=top.get("nodes") is not None,
        recovery=recovery.recovery(r, top, nodes),
        metrics=metrics.metrics(r, top),
    )


def _nodes(r: Reader, top: Fields, hosts: tuple, spares: int) -> NodeRange:
    """``nodes``; with a hosts list it defaults to the list's length, less recovery's spares (the list's last
    hosts), and must equal that."""
    node = top.get("nodes")
    if not hosts:
        return job.nodes(r, node)
    training = len(hosts) - spares
    after = f", less recovery.spares {spares} (the last hosts)" if spares else ""
    if training < 1:
        raise r.fail(top.get("hosts"), "hosts", f"{len(hosts)} host(s) leave no training node beside "
                     f"recovery.spares {spares}", f"more than {spares} hosts: the training nodes, then the spares")
    if node is None:
        return NodeRange(training, training)
    nodes = job.nodes(r, node)
    if nodes.elastic or nodes.min != training:
        raise r.fail(node, "nodes", f"{nodes} does not match the {len(hosts)} hosts listed in hosts{after} (each "
                     "host is one node, in order)", f"{training}, or leave nodes out with a hosts list")
    return nodes


def _taken_paths(workspace: str, cache: str, extra, hosts: tuple) -> "dict[str, str]":
    taken = {workspace: "workspace.path", cache: "cache.path", "/dev/shm": "nodeweave's shared memory"}
    for _, _, path in extra.hugepage_mounts:
        taken[path] = "resources.hugepages"
    if hosts:
        taken[HOSTFILE_DIR] = "the hosts list (compose mounts it there)"
    return taken
