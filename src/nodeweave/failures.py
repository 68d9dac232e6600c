"""Where a missing tool, an unreachable cluster or an unwritable path becomes a NodeweaveError.

Why one place: every verb runs tools (podman, docker, kubectl, ssh, rsync) and writes where the
user points it. When that fails the user should read one line that says what is missing and what
to do, with a documented exit code (3: the machine lacks something; 2: a path the user gave cannot
be written), never a traceback and never a tool's internal log line (kubectl's ``memcache.go``)
as the only message. The verbs check up front with ``need_tool``/``writable_dir``; ``from_os_error``
is the CLI's safety net for whatever slips past.
"""

from __future__ import annotations

import os
import re
import shutil
from dataclasses import dataclass
from pathlib import Path

from nodeweave.entrypoint.errors import CWD_GONE, cwd_gone  # one rule for both programs (replay11 A30)
from nodeweave.errors import EnvironmentProblem, NodeweaveError, UsageError

# klog's prefix (kubectl, oc): "E1126 17:39:33.784620   22043 memcache.go:265] ..."
KLOG_LINE = re.compile(r"^[IWEF]\d{4} \d\d:\d\d:\d\d\.\d+\s+\d+ [\w.-]+:\d+\]\s*")
KLOG_ERR = re.compile(r'err="(.*?)"\s*$')
API_UNREACHABLE = re.compile(r"couldn't get current server API group list|connection to the server .* was refused|"
                             r"Unable to connect to the server|no configuration has been provided|"
                             r"failed to download openapi: Get \S+: dial tcp|"  # apply's validation
                             # a kubeconfig that names no such context, or does not parse: no cluster to ask either
                             # (walk7 A38: `--kube-context nope` was exit 1 with kubectl's words, unforetold)
                             r"context \"[^\"]*\" does not exist|context was not found for specified context|"
                             r"error loading config file|invalid configuration", re.I)
# What an engine's build or pull prints when the registry (or the index pip reads in a RUN step) cannot be reached:
# the network, not the image, so exit 3, as `up`'s pull of an image it cannot reach (walk18a A11: an offline `image
# build` was exit 1 with podman's "pinging container registry ... no such host").
REGISTRY_UNREACHABLE = re.compile(r"pinging container registry|dial tcp [^:]*:? ?lookup |no such host|"
                                  r"i/o timeout|TLS handshake timeout|network is unreachable|"
                                  r"Temporary failure in name resolution|Could not resolve host", re.I)
# How to get each program, and the other ways to reach the same nodes without it: the option that picks another
# tool, and for an address typed with its kind (init --host, hosts probe --node, sync --node) the other kind's
# spelling. One rule offers them (``install_hint``): an option only where the verb running has it, a spelling only
# for an address typed (replay11 R2: `init --host oc:x` was told to pass --kube-cli, which init has not, and
# `doctor --cluster` to use --target, which doctor has not).
INSTALL_HINTS = {
    "podman": ("install podman", "--engine docker", "docker:NAME"),
    "docker": ("install docker", "--engine podman", "podman:NAME"),
    "podman-compose": ("pip install 'nodeweave[local]' (or pip install podman-compose)", "--engine docker", None),
    "kubectl": ("install kubectl", "--kube-cli oc", "oc:NAME to reach the pod with oc"),
    "oc": ("install the OpenShift client", "--kube-cli kubectl", "pod:NAME to reach the pod with kubectl"),
    "ssh": ("install the OpenSSH client", None, None),
    "rsync": ("install rsync", "--method tar", None),
}


def verb_takes(option: str) -> bool:
    """Whether the command running now (click's) has ``option`` (``--kube-cli``); False outside a command: no verb,
    no option to offer."""
    from typer._click.globals import get_current_context  # typer's own click (>= 0.22): click is not a dependency

    ctx = get_current_context(silent=True)
    return ctx is not None and any(option in getattr(param, "opts", ()) for param in ctx.command.params)


def offered(*ways: str) -> "list[str]":
    """Of ``ways`` (``--engine docker``, ``--target hosts``), those whose option the running verb has."""
    return [way for way in ways if verb_takes(way.split()[0])]


def install_hint(program: str, address: bool = False) -> str:
    """How to get ``program``, and the other way to reach the nodes that this verb has: for an ``address`` typed
    with its kind, the other kind's spelling; else the option that picks another tool, where the verb has it."""
    install, option, spelling = INSTALL_HINTS.get(os.path.basename(program), (None, None, None))
    if install is None:
        return ""
    other = (f"write the address {spelling}" if spelling else None) if address else \
        (f"pass {option}" if option and offered(option) else None)
    return f"{install}, or {other}" if other else install


def address_kind(target) -> str:
    """The kind of an address as it is typed (``oc:``, ``pod:``, ``podman:``), whatever tool reaches it."""
    return "pod" if target.kind == "kubectl" else target.kind


def address_tool_missing(targets, verb: str) -> "str | None":
    """The line for the first tool ``targets`` (remote.Remote) need that is not on PATH, or None: the addresses
    named with their kind as typed (``oc:x``, not the ``pod:x`` a table shows) and another spelling to use."""
    for target in targets:
        if shutil.which(target.tool) is None:
            hint = install_hint(target.tool, address=True) or "install it"
            return (f"{target.tool} is not on PATH; {verb} reaches {address_kind(target)}:NAME addresses with it "
                    f"({hint}, or reach the hosts another way)")
    return None


def need_tool(program: str, why: str) -> str:
    """The path of ``program``, or exit 3 naming it, why it is needed and how to get it (``install_hint``)."""
    found = shutil.which(program)
    if found is None:
        hint = install_hint(program)
        raise EnvironmentProblem(f"{program} is not on PATH; {why}" + (f" ({hint})" if hint else ""))
    return found


def no_engine() -> EnvironmentProblem:
    """Exit 3 for the local target without an engine; the other targets offered only where the verb has --target
    (replay11 R2: `doctor --cluster` was told to use --target, which it has not)."""
    other = ", or use --target hosts or kubernetes" if offered("--target") else ""
    return EnvironmentProblem("no container engine: neither podman nor docker is on PATH; install one "
                              f"(podman is this project's engine){other}")


def tool_message(text: str, limit: int = 300) -> str:
    """The part of a tool's output a user can act on: klog lines reduced to their error, repeats dropped."""
    kept = []
    for line in text.strip().splitlines():
        line = line.strip()
        if KLOG_LINE.match(line):
            found = KLOG_ERR.search(line)
            line = found.group(1).replace('\\"', '"') if found else KLOG_LINE.sub("", line)
        if line and line not in kept:
            kept.append(line)
    plain = [line for line in kept if not KLOG_LINE.match(line)]
    message = " | ".join(plain[-2:]) if plain else ""
    return message if len(message) <= limit else message[:limit - 3] + "..."


def tool_failure(tool: str, what: str, code: int, text: str, switch: str = "pass --kube-context") -> NodeweaveError:
    """A tool's failure as one line; an unreachable Kubernetes API is an environment problem (exit 3), whose hint
    ends with ``switch``: how this verb picks another context."""
    message = tool_message(text) or f"exit {code}, no output"
    if API_UNREACHABLE.search(text):
        return EnvironmentProblem(f"{tool} cannot reach a Kubernetes cluster ({what}): {message}; check "
                                  f"`{tool} config current-context`, or {switch} (`{tool} config get-contexts` "
                                  "lists the contexts of the kubeconfig, which KUBECONFIG names)")
    return NodeweaveError(f"{tool} {what} failed (exit {code}): {message}")


@dataclass(frozen=True)
class EngineStep:
    """A step that drives a container engine or compose (``up``'s start, ``down``'s removal): its failure is said as
    nodeweave's one line, exit 3 (note18: podman-compose's own ``podman start x | Error: no container`` was the
    whole message, and the real cause, an earlier line, was lost). ``node``: the node the step is for, where it is
    one; ``containers``: the prefix of the job's container names (``<job>-``), which names the node otherwise;
    ``remedy``: what to do."""

    engine: str
    remedy: str
    node: str = ""
    containers: str = ""


# The lines an engine or compose prints around its reason: podman-compose's banner, the commands it echoes, its
# "exit code: N"; docker compose's progress lines. None is a reason.
_ENGINE_NOISE = re.compile(r"^(exit code: -?\d+|podman-compose version|using podman version|\[.*\]$|"
                           r"(podman|docker)( \S+)*$|(Container|Network|Volume) \S+ +(Creat|Start|Stop|Remov|Recreat)\w*$|"
                           r"#\d+ )", re.I)
_ERROR_LINE = re.compile(r"^(Error|error|ERROR)\b|Error response from daemon|\b(failed|denied|no such|not found)\b",
                         re.I)
# What follows from an earlier failure (a start of a container never made): never the reason when another is said.
_CONSEQUENCE = re.compile(r"no container with name or ID|No such container|no such object|no pod with name", re.I)


def engine_reason(text: str, limit: int = 300) -> str:
    """The engine's own reason in what it printed: its first error line that is not a consequence of an earlier
    one, else its last meaningful line (never compose's banner or the commands it echoes); ``Error:`` dropped."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    meaningful = [line for line in lines if not _ENGINE_NOISE.match(line)]
    errors = [line for line in meaningful if _ERROR_LINE.search(line)]
    causes = [line for line in errors if not _CONSEQUENCE.search(line)]
    reason = (causes or errors or meaningful or [""])[0 if causes or errors else -1]
    reason = re.sub(r"^(Error|error|ERROR)(: |:)\s*", "", reason)
    return reason if len(reason) <= limit else reason[:limit - 3] + "..."


def engine_failure(step_what: str, failed: EngineStep, code: int, text: str) -> EnvironmentProblem:
    """One line, exit 3: the node, what failed, the engine's reason, what to do."""
    reason = engine_reason(text)
    node = failed.node
    if not node and failed.containers:
        named = re.findall(re.escape(failed.containers) + r"(\d+)\b", reason) or \
            re.findall(re.escape(failed.containers) + r"(\d+)\b", text)
        node = f"node-{named[0]}" if named else ""
    said = f"{failed.engine} says: {reason}" if reason else f"{failed.engine} said nothing (exit {code})"
    return EnvironmentProblem(f"{node + ': ' if node else ''}{step_what} failed ({said}); {failed.remedy}")


KUBE_CONTEXT_HINT = ("check the kubeconfig context (`kubectl config current-context`, or pass --kube-context) and that "
                     "the cluster answers (`kubectl get pods`)")
NO_CONTEXT_FLAG_HINT = ("check the kubeconfig context (`kubectl config current-context`; KUBECONFIG names the "
                        "kubeconfig) and that the cluster answers (`kubectl get pods`)")


def api_cut_off(failed: "list[tuple[str, str]]", undone: str, hint: str = KUBE_CONTEXT_HINT) -> "EnvironmentProblem | None":
    """One line, exit 3, when every target of a verb that reaches pods failed because the Kubernetes API cannot be
    reached (``failed``: each target's label and what its kubectl said); else None. The same words on every verb
    (sync, hosts probe, doctor --cluster: walk9 A8, where the probe printed kubectl's klog lines per pod and exit
    1, and doctor told to "check the target runs a nodeweave image"); ``undone``: what did not happen, said before
    the targets; ``hint``: how this verb picks another context."""
    from nodeweave.entrypoint.nodelists import ranges

    if not failed or not all(API_UNREACHABLE.search(text or "") for _, text in failed):
        return None
    said = tool_message(failed[0][1]) or failed[0][1]
    said = next((part for part in said.split(" | ") if API_UNREACHABLE.search(part)), said)
    return EnvironmentProblem(f"the Kubernetes API cannot be reached ({said.strip()[:200]}): {undone} "
                              f"{ranges(label for label, _ in failed)}; {hint}")


# ssh's own words when it never reached the host (exit 255), and what each means (walk7 A39): the host was not
# asked at all, so nothing about the job there is known, and `up` cannot help. Its refusal to log in is only ssh's
# own "Permission denied (publickey,...)" or "Permission denied, please try again": a file a command could not
# write ("[Errno 13] Permission denied: '/ws/x'", rsync's "Permission denied (13)") reached the host (walk15a A21).
SSH_UNREACHED = ((re.compile(r"Could not resolve hostname", re.I), "name not resolved"),
                 (re.compile(r"Connection refused", re.I), "connection refused"),
                 (re.compile(r"Permission denied(?: \([a-z][a-z,-]*\)|, please try again)", re.I),
                  "permission denied"),
                 (re.compile(r"No route to host", re.I), "no route to host"),
                 (re.compile(r"Connection timed out|Operation timed out", re.I), "timed out"))


def ssh_unreached(text: str) -> "str | None":
    """Why ssh never reached a host, from its message ("name not resolved", ...), or None (it reached it)."""
    for pattern, why in SSH_UNREACHED:
        if pattern.search(text or ""):
            return why
    return None


def ssh_cut_off(failed: "list[tuple[str, str]]", undone: str,
                ssh_options: "tuple[str, ...]" = ()) -> "EnvironmentProblem | None":
    """One line, exit 3, when ssh reached none of a verb's failed targets (``failed``: each host and what ssh said),
    in the words every verb on bare hosts gives (:func:`unreached_hosts_line`); else None. The ssh side of
    :func:`api_cut_off` (replay10 A35: sync to unreachable hosts printed a table of failed rows, ssh's own words per
    host and exit 1, where status, run, logs ... exit 3 in one line)."""
    whys = [(host, ssh_unreached(text)) for host, text in failed]
    if not failed or not all(why for _, why in whys):
        return None
    from nodeweave.entrypoint.nodelists import ranges

    return EnvironmentProblem(f"{undone} {ranges(host for host, _ in failed)}: "
                              f"{unreached_hosts_line(whys, ssh_options)}")


def unreached_hosts_line(hosts_why: "list[tuple[str, str]]", ssh_options: "tuple[str, ...]" = ()) -> str:
    """One line for hosts ssh never reached: their names, grouped by why, and the command that shows it, with the
    ``--ssh-option``s nodeweave's own ssh was given (``ssh_options``): a bare ``ssh HOST true`` asked port 22 where
    ``--ssh-option Port=2`` was given (walk12 C11)."""
    import shlex

    by_why: "dict[str, list[str]]" = {}
    for host, why in hosts_why:
        by_why.setdefault(why, []).append(host)
    said = "; ".join(f"{', '.join(hosts)} ({why})" for why, hosts in by_why.items())
    first = hosts_why[0][0]
    argv = ["ssh", *(word for option in ssh_options for word in ("-o", option)), first, "true"]
    return (f"ssh cannot reach {said}: check the names, the network and your keys (`{shlex.join(argv)}` shows "
            "ssh's own words), then run this again")


def unreachable_cluster(argv, what: str, switch: str = "pass --kube-context"):
    """Run ``argv`` (a kubectl/oc read that changes nothing); the EnvironmentProblem (exit 3, the context hint) when
    it cannot reach the cluster at all, else None (it answered, even with an error, or could not be run)."""
    import subprocess

    try:
        out = subprocess.run(list(argv), capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired):
        return None
    said = out.stderr or out.stdout
    if out.returncode != 0 and API_UNREACHABLE.search(said):
        return tool_failure(os.path.basename(argv[0]), what, out.returncode, said, switch)
    return None


CREATED = "created if missing"  # what a folder option that makes its folder says of a missing one


def writable_dir(path: Path, flag: str, system_ok: bool = False, missing: str = CREATED,
                 runs_ok: bool = False, judge_access: bool = True) -> Path:
    """``path`` if it is, or can be made, a directory this process may write nodeweave's files into; else exit 2
    naming why. Never ``/``, a system folder (``/etc``, ``/usr``, ...), a kernel file system (``/proc``) or
    nodeweave's own state folder (``.nodeweave``), whether it exists or not: the dry run refuses them as the
    real write would (or, as root, would not, and litter the system). ``missing``: what the option does with a
    folder not there, said in every refusal's accepted clause (``--wheelhouse`` makes none: walk6 M4). ``runs_ok``:
    the option names the run folders' own store (``--runs-dir``). ``judge_access`` False: this call writes nothing
    there (``render --check``), so only what the folder is is judged, not whether it can be written."""
    here = Path(os.path.abspath(path))
    problem = own_folder_problem(here, system_ok, runs_ok)
    if problem is not None:
        raise UsageError(f"{flag} {path}: {problem}; accepted: a folder of your own ({missing})")
    problem = unwritable(here) if judge_access else None
    if problem:
        raise UsageError(f"{flag} {path}: {problem}; choose a directory you can write")
    return here


def unwritable(folder: Path) -> "str | None":
    """Why nothing can be written into ``folder`` (or, missing, the nearest folder above it that would hold it), or
    None: the one test of every write a dry run judges as its real run would. A read-only file system (a read-only
    NFS export, a snapshot, a read-only bind mount) is said as such, root included (walk8 A10), and a full one too
    (``MIN_FREE_BYTES``, walk10 C7: it was said as stdout's, after a half-written run folder)."""
    probe = Path(os.path.abspath(folder))
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    if os.access(probe, os.W_OK | os.X_OK):
        return _full(probe)
    try:
        read_only = bool(os.statvfs(probe).f_flag & os.ST_RDONLY)
    except OSError:
        read_only = False
    return f"{probe} is on a read-only file system" if read_only else f"{probe} is not writable by this user"


# Below this much free space a folder is full for nodeweave's writes (a run folder's records and node logs, the
# job's state): every one of them would fail part-way, with "No space left on device" and no file named (walk10 C7).
MIN_FREE_BYTES = 1 << 20


def _full(probe: Path) -> "str | None":
    """Why ``probe``'s file system takes no more writes (under ``MIN_FREE_BYTES`` free to this user), or None."""
    try:
        seen = os.statvfs(probe)
    except OSError:
        return None
    free = seen.f_bavail * seen.f_frsize
    if free >= MIN_FREE_BYTES or seen.f_blocks == 0:  # f_blocks 0: a file system that reports no size (proc, fuse)
        return None
    return f"{probe} is on a full file system (no space left on device: {free // 1024} KiB free)"


def own_folder_problem(path: Path, system_ok: bool = False, runs_ok: bool = False) -> "str | None":
    """Why the absolute ``path`` is no folder for nodeweave to write into, or None: the one rule of every option
    and variable naming such a folder (``--out``, ``--runs-dir``, ``--wheelhouse``, ``doctor --capture``,
    ``image build --context``, NODEWEAVE_CACHE_DIR): not through a file, not a kernel file system, ``/`` or a system
    folder, nor a home itself (``systemdirs.a_home``: replay11 A3), as written and where links lead; nor inside
    ``.nodeweave/``, nor (but for the runs store's own ``runs_ok`` option) inside
    ``runs/`` beside a spec, the run folders' store, where ``runs ls`` would meet the files as stray run folders
    and ``sync`` would hold them back as state (walk7 A36)."""
    from nodeweave.jobstate import STATE_DIR
    from nodeweave.systemdirs import a_home
    from nodeweave.systemdirs import SYSTEM_TREES, made_in_system_folder, system_folder, system_tree

    probe = path
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    if not probe.is_dir():
        return f"{probe} is not a directory"
    real = path.resolve()
    if _pseudo_fs(real):
        return f"{real} is a kernel file system; no file of nodeweave's can go there"
    if system_folder(str(real)) and not system_ok:
        return f"{real} is / or a system folder"
    for seen in (path, real):  # as written, and where links lead (/var/run is /run; /bin is /usr/bin)
        tree = system_tree(str(seen))
        if tree is not None and not system_ok:
            return f"{seen} is inside {tree} ({SYSTEM_TREES[tree]})"
    made = None if system_ok else made_in_system_folder(str(path))  # the system's trees said first, as the more exact
    if made:
        return made
    for seen in dict.fromkeys((str(path), str(real))):  # as written, and where links lead
        home = "" if system_ok else a_home(seen)
        if home:  # replay11 A3: `render all --out ~` wrote compose/, images/, .nodeweave/ ... among the home's own
            return (f"{seen} is {home}, where nodeweave's files would lie among the home's own (its keys, tokens "
                    "and dotfiles): name a folder in it (~/proj)")
    if STATE_DIR in real.parts or STATE_DIR in path.parts:
        return f"it is inside {STATE_DIR}/, nodeweave's own state folder"
    for seen in dict.fromkeys((path, real)):  # runs_ok: the store itself may be named, never a folder inside it
        store = runs_store(seen)
        if store is not None and not (runs_ok and seen == store):
            return f"it is {in_runs_store(seen, store)}"
    return None


def in_runs_store(seen: Path, store: Path) -> str:
    """"inside ``store``, ..." for a path in the run folders' store beside a spec, naming the folder of it that
    holds ``seen`` as what it is (a run folder, a sweep's, or a folder that holds neither): one rule and one wording
    for every option that names a path there (walk16a A30: ``--runs-dir runs/sub`` was taken, and its runs never
    listed, while ``bench --json-out runs/sub/x.json`` called runs/sub "a run folder")."""
    if seen == store:
        return f"{store}, the run folders' store beside the spec (`nodeweave runs ls` reads every folder there as a run)"
    top = store / seen.relative_to(store).parts[0]
    kind = ("the run folder" if (top / "run.json").is_file() else "the sweep folder" if (top / "sweep.json").is_file()
            else "the folder")
    holds = "" if seen == top else f", which holds {seen}"
    return (f"inside {store}, the run folders' store beside the spec: in {kind} {top.name}{holds} (`nodeweave runs ls` "
            "reads each folder there as one run, and lists no run below it)")


def own_file_problem(path: Path, spec: bool = False) -> "str | None":
    """Why the file ``path`` may not be written by an option naming a file (``bench --json-out``, ``--plot``,
    ``init --out``, ``hosts probe --write-hostfile``, ``runs compare --chart``), or None: never inside
    ``.nodeweave/`` (up's cluster record, the render record, the pushed digests) nor inside a run folder under
    ``runs/`` (its run.json, its logs), as written or where links lead; a tab-completed path there replaced
    ``up``'s record with bench's numbers, and ``down`` lost what ``up`` started (walk8 A11). A file directly in
    ``runs/`` is fine (bench's own default is ``runs/<UTC time>-bench.json``), but not a ``spec``: its folder would
    be the workspace, the run folders' store itself (walk8 A12); nor one in a ``runs/`` that is a symbolic link,
    never written through (walk9 A23), the refusal naming the path where the link leads."""
    from nodeweave.jobstate import STATE_DIR

    folder = Path(os.path.abspath(path)).parent
    real = folder.resolve()
    if STATE_DIR in real.parts or STATE_DIR in folder.parts:
        return f"it is inside {STATE_DIR}/, nodeweave's own state folder (up's cluster record, the render record)"
    for seen in (folder, real):
        store = runs_store(seen)
        if store is not None and store.is_symlink() and not spec:  # never written through a link, as `run` judges runs/ (walk9
            # A23: bench's default wrote through it)
            return (f"it is in {store}, the run folders' store beside the spec, which is a symbolic link (to "
                    f"{os.readlink(store)}), and nodeweave never writes through a link; write it as "
                    f"{store.resolve() / os.path.relpath(os.path.abspath(path), store)} to keep it there")
        if store is not None and seen != store:
            return f"it is {in_runs_store(seen, store)}"
        if store is not None and spec:
            return (f"it is inside {store}, the run folders' store beside the spec, whose records nodeweave "
                    "writes and `nodeweave runs ls` reads")
    return None


def leads_out_of(folder: Path, inside: str) -> "Path | None":
    """Where ``folder``/``inside`` leads when a symbolic link on the way takes it out of ``folder`` (the workspace
    the nodes mount, the build context an image is built from), else None: the nodes, or the build, see only
    that folder, where such a link dangles (walk9 A7: a script linked in from another project read as present)."""
    path = folder / inside
    if not os.path.lexists(path):
        return None
    real, root = Path(os.path.realpath(path)), Path(os.path.realpath(folder))
    return None if real == root or root in real.parents else real


def runs_store(path: Path) -> "Path | None":
    """The ``runs/`` beside a spec (its folder holds ``nodeweave.yaml`` or ``.nodeweave/``) that ``path`` is or lies
    in; None: none."""
    from nodeweave.jobstate import STATE_DIR
    from nodeweave.entrypoint.ownfolders import RUNS

    for folder in (path, *path.parents):
        if folder.name == RUNS and ((folder.parent / "nodeweave.yaml").is_file()
                                    or (folder.parent / STATE_DIR).is_dir()):
            return folder
    return None


def _pseudo_fs(path: Path) -> bool:
    text = str(path.resolve())
    return any(text == root or text.startswith(root + "/") for root in ("/proc", "/sys", "/dev"))


def path_problem(err: OSError, what: str) -> UsageError:
    """An OSError met while writing what the user asked for, as one line (exit 2)."""
    where = err.filename or "?"
    return UsageError(f"{what}: cannot write {where}: {err.strerror or err}")


def from_os_error(err: OSError) -> NodeweaveError:
    """The CLI's last resort: a program that could not start is a missing tool (3), else a path problem (2)."""
    if _raised_by_exec(err):
        program = str(err.filename or "a program")
        if isinstance(err, FileNotFoundError):
            hint = install_hint(program)
            return EnvironmentProblem(f"{program} is not on PATH" + (f"; {hint}" if hint else ""))
        return EnvironmentProblem(f"cannot run {program}: {err.strerror or err}")
    if cwd_gone(err):
        return UsageError(CWD_GONE)
    where = f" {err.filename}" if err.filename else ""
    return UsageError(f"cannot use{where}: {err.strerror or err}")


def _raised_by_exec(err: BaseException) -> bool:
    tb = err.__traceback__
    last = None
    while tb is not None:
        last, tb = tb, tb.tb_next
    return last is not None and last.tb_frame.f_code.co_name in ("_execute_child", "execvpe", "_fork_exec")


# -t is --target on nodeweave's commands; docker build's and podman build's users type it for the image's NAME:TAG
# (walk12 A12: `image build cpu -t myimg:v1` was told only "not accepted: local or openshift"). A --target value
# that looks like an image reference (a ':', '/' or '@' no target name has): the refusal names what names an image
# on that command, the first of these it has.
IMAGE_MEANT: "tuple[tuple[str, str], ...]" = (
    ("--tag", "the image's tag is --tag {tag} (its name is the spec's image.registry and name)"),
    ("--image", "the image the nodes run is --image {value}"),
)


def target_meant(value) -> str:
    """"; -t is --target here ...: the image's tag is --tag v1 ..." for a --target value that looks like an image
    reference, said by every refusal of a --target value; else "" (the running command's options pick the hint)."""
    text = str(value or "")
    if not any(mark in text for mark in ":/@"):
        return ""
    tag = text.rpartition("@")[0] if "@" in text else text
    tag = tag.rpartition(":")[2] if ":" in tag.rpartition("/")[2] else "TAG"
    for ours, said in IMAGE_MEANT:
        if verb_takes(ours):
            return (f"; -t is --target here (docker build -t names the image), and {said.format(tag=tag, value=text)}")
    return ("; -t is --target here (docker build -t names the image); the image is the spec's image.registry, "
            "name and image.tag")
