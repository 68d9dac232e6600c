"""``nodeweave hosts probe``: what each host has, found by the entrypoint's own detection.

Hosts need not have nodeweave installed: the stdlib-only entrypoint package
is zipped in memory and sent on stdin to the host's ``python3``, over ssh or
an exec channel (the same transports as ``nodeweave sync``); a constant
bootstrap writes it to a temp file, imports it, calls
``nodeweave.entrypoint.detect`` and prints ``Node.to_dict()`` as JSON. So the
probe reads exactly what the entrypoint would read on that host (including
``NODEWEAVE_SYSROOT`` where a test sets it), never a copy of its logic.
"""

from __future__ import annotations

import io
import json
import subprocess
import zipfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import nodeweave
from nodeweave.entrypoint.nodelists import ranges
from nodeweave.errors import NodeweaveError, UsageError
from nodeweave.remote import Remote

# Runs on the host: stdin = the zipped package, argv[1] = master name or "".
BOOTSTRAP = r"""
import json, os, sys, tempfile
data = sys.stdin.buffer.read()
fd, path = tempfile.mkstemp(prefix="nodeweave-probe-", suffix=".zip")
try:
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    sys.path.insert(0, path)
    from nodeweave.entrypoint import SCHEMA, detect
    node = detect(sysroot=os.environ.get("NODEWEAVE_SYSROOT") or "/", master=sys.argv[1] or None)
    json.dump({"schema": SCHEMA, "node": node.to_dict()}, sys.stdout)
finally:
    os.unlink(path)
"""


def entrypoint_zip() -> bytes:
    """``nodeweave/__init__.py`` and every module under ``nodeweave/entrypoint/``, zipped (stdlib only)."""
    package = Path(nodeweave.__file__).parent
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.write(package / "__init__.py", "nodeweave/__init__.py")
        for source in sorted((package / "entrypoint").rglob("*.py")):
            zf.write(source, f"nodeweave/{source.relative_to(package).as_posix()}")
    return buf.getvalue()


def probe_argv(target: Remote, master: "str | None") -> "list[str]":
    return target.exec_argv(["python3", "-c", BOOTSTRAP, master or ""])


def zip_command() -> "tuple[str, ...]":
    """A local command that writes what a probe's stdin gets (:func:`entrypoint_zip`), for a dry run's line."""
    import sys

    return (sys.executable, "-c", "import sys; from nodeweave.hosts import entrypoint_zip; "
                                  "sys.stdout.buffer.write(entrypoint_zip())")


def probe_plan(targets: "list[Remote]", master: "str | None", hostfile: "Path | None"):
    """What ``hosts probe`` does, as ``--dry-run`` prints it: one probe per host at once, each line the real
    command (the bootstrap script inline, the zipped detection piped in from the command that makes it), so it
    can be pasted; then the hostfile written."""
    from nodeweave.plan import CommandsPhase, FilesPhase, Plan, PlannedFile
    from nodeweave.steps import Step

    steps = tuple(Step(f"probe {t.label}", tuple(probe_argv(t, master)), stdin="",
                       stdin_name="the entrypoint's detection, zipped", stdin_from=zip_command()) for t in targets)
    phases = (CommandsPhase("probe every host at once", steps=steps),)
    if hostfile is not None:  # an existing one is here only with --force: the forced plan says it replaces it
        what = "DeepSpeed hostfile of the hosts that answer" + (
            "; replaces the existing file (--force)" if hostfile.exists() else "")
        phases += (FilesPhase("write the hostfile", files=(PlannedFile(str(hostfile), what),)),)
    notes = (f"{len(targets)} host(s) probed at once with python3 over each one's exec channel (the bootstrap "
             "runs the entrypoint's detection from the zip on its stdin); nothing is changed on them",)
    return Plan("hosts probe", ranges(t.label for t in targets), phases, notes)


@dataclass
class HostReport:
    """One host's answer; ``status`` is ok, no-gpu, unreachable or error."""

    target: Remote
    status: str = "pending"
    node: "dict | None" = None
    error: "str | None" = None
    seconds: float = 0.0

    @property
    def host(self) -> str:
        """The name a hostfile uses: the host without ``user@``, or the pod/container name."""
        return self.target.host

    @property
    def gpu_count(self) -> int:
        return int(((self.node or {}).get("gpus") or {}).get("count") or 0)

    @property
    def vendor(self) -> str:
        return str(((self.node or {}).get("gpus") or {}).get("vendor") or "none")


def _failure(target: Remote, code: int, stderr: str) -> HostReport:
    from nodeweave.failures import KLOG_LINE, tool_message

    if any(KLOG_LINE.match(line.strip()) for line in stderr.splitlines()):  # kubectl's klog frames: their error
        text = tool_message(stderr, 400)
    else:
        text = " | ".join(ln for ln in stderr.strip().splitlines()[-3:] if ln.strip())[:400]
    unreachable = target.unreachable(code, text)
    if code == 127 or "python3: not found" in text or "executable file not found" in text:
        return HostReport(target, "error", error=f"no python3 on the host (exit {code}): {text}")
    return HostReport(target, "unreachable" if unreachable else "error",
                      error=f"exit {code}: {text}" if text else f"exit {code}")


def probe_host(target: Remote, payload: bytes, master: "str | None", timeout: float = 120) -> HostReport:
    """Run the detection on one host; never raises."""
    import time

    started = time.monotonic()
    try:
        out = subprocess.run(probe_argv(target, master), input=payload, capture_output=True,
                             timeout=timeout)
    except subprocess.TimeoutExpired:
        return HostReport(target, "unreachable", error=f"no answer within {timeout:.0f}s")
    except FileNotFoundError as err:
        return HostReport(target, "error", error=f"{err.filename} is not installed here")
    if out.returncode != 0:
        report = _failure(target, out.returncode, out.stderr.decode(errors="replace"))
    else:
        try:
            answer = json.loads(out.stdout)
            node = answer["node"]
        except (ValueError, KeyError, TypeError):
            report = HostReport(target, "error", error="the host's answer is not the entrypoint's JSON: "
                                + out.stdout.decode(errors="replace")[:200])
        else:
            report = HostReport(target, "ok", node=node)
            if report.gpu_count == 0:
                report.status = "no-gpu"
    report.seconds = time.monotonic() - started
    return report


def unanswered(reports: "list", detail: bool = False) -> "Exception | None":
    """The one answer of every verb that probes hosts (``hosts probe``, ``init --host``) when some did not answer:
    the Kubernetes API cut off for every pod is said as such, exit 3, with how to pick another context (walk9 A8;
    walk10 A28: init said "pod:x: exit 1: couldn't get current server API group list", as if the pod were down);
    hosts ssh never reached are said as every verb on bare hosts says them (``failures.ssh_cut_off``), exit 3;
    else ``N of M host(s) did not answer``, exit 1, with each host's error where ``detail`` (none printed them
    before). None: every host answered."""
    from nodeweave.errors import NodeweaveError
    from nodeweave.failures import KUBE_CONTEXT_HINT, api_cut_off

    bad = [r for r in reports if r.status in ("unreachable", "error")]
    cut_off = api_cut_off([(r.target.label, r.error or "") for r in bad], "no host answered:", KUBE_CONTEXT_HINT)
    if cut_off is not None and len(bad) == len(reports):
        return cut_off
    if not bad:
        return None
    from nodeweave.failures import ssh_cut_off

    unreached = ssh_cut_off([(r.target.host, r.error or "") for r in bad], "nothing probed on",
                            getattr(bad[0].target.options, "ssh_options", ())) \
        if all(r.target.kind.startswith("ssh") for r in bad) else None
    if unreached is not None:  # as sync, status, run ... say it: exit 3, one line (walk17a A24)
        return unreached
    named = "; ".join(f"{r.target.label}: {r.error}" for r in bad) if detail else ranges(r.target.label for r in bad)
    return NodeweaveError(f"{len(bad)} of {len(reports)} host(s) did not answer: {named}")


def probe_hosts(targets: "list[Remote]", *, master: "str | None" = None,
                jobs: int = 16) -> "list[HostReport]":
    """Probe every host in parallel; reports in the given order (master first).

    ``master`` defaults to the first host, so each report names the interface
    that routes to it, as NCCL's socket interface would.
    """
    payload = entrypoint_zip()
    master = master if master is not None else targets[0].host
    with ThreadPoolExecutor(max_workers=max(1, min(jobs, len(targets)))) as pool:
        return list(pool.map(lambda t: probe_host(t, payload, master), targets))


GPU_VENDORS = ("nvidia", "amd")


@dataclass
class Hostfile:
    text: str
    skipped: "list[tuple[HostReport, str]]" = field(default_factory=list)  # (host, why it is left out)
    vendor: "str | None" = None


def deepspeed_hostfile(reports: "list[HostReport]", vendor: "str | None" = None) -> Hostfile:
    """``host slots=N`` per host with GPUs of one vendor, in order; the rest are returned as skipped.

    One DeepSpeed job runs one collective library (NCCL or RCCL), so a file
    mixing NVIDIA and AMD hosts would start a job that cannot work: without
    ``vendor`` such a mix is refused, naming the hosts of each vendor.
    """
    if vendor is not None and vendor not in GPU_VENDORS:
        raise UsageError(f"--vendor {vendor!r} is not accepted: {' or '.join(GPU_VENDORS)}")
    with_gpus = [r for r in reports if r.status == "ok" and r.gpu_count > 0]
    by_vendor: "dict[str, list[str]]" = {}
    for r in with_gpus:
        by_vendor.setdefault(r.vendor, []).append(r.host)
    if vendor is None and len(by_vendor) > 1:
        raise UsageError("the hosts mix GPU vendors, and one DeepSpeed job cannot span NCCL and RCCL: "
                         + "; ".join(f"{v}: {ranges(hosts)}" for v, hosts in by_vendor.items())
                         + "; write one hostfile per vendor with --vendor "
                         + " or --vendor ".join(GPU_VENDORS))
    lines, skipped = [], []
    for r in reports:
        if r not in with_gpus:
            skipped.append((r, "no GPU found" if r.status == "no-gpu" else r.status))
        elif vendor is not None and r.vendor != vendor:
            skipped.append((r, f"{r.vendor} GPUs, not {vendor} (--vendor {vendor})"))
        else:
            lines.append(f"{r.host} slots={r.gpu_count}")
    return Hostfile("".join(line + "\n" for line in lines), skipped, vendor)


def write_hostfile(path: Path, hostfile: Hostfile, force: bool, replace_if=None) -> None:
    """``--write-hostfile``, made exclusively (newfile.write_new): a file that appeared after the start-up check is
    kept without --force, and judged again with it (``replace_if``: cli.habits.replace.may_replace; walk12 A23)."""
    from nodeweave.newfile import write_new

    if not hostfile.text:
        which = f" ({hostfile.vendor})" if hostfile.vendor else ""
        raise NodeweaveError(f"no host with a GPU{which} answered, so {path} was not written")
    if path.exists() and not force:
        raise UsageError(f"{path} exists; pass --force to replace it, or choose another --write-hostfile path")
    if path.is_dir():
        raise UsageError(f"--write-hostfile {path} is a directory; give a file path")
    if force and replace_if is None:  # called without the verb's judge: --force replaces what is there
        replace_if = lambda _path: None  # noqa: E731
    write_new(path, hostfile.text.encode("utf-8"), "--write-hostfile", replace_if)


def describe_nics(node: dict) -> str:
    """``8x 400G IB, 2x 200G RoCE`` over active RDMA ports."""
    groups: "dict[tuple[int, str], int]" = {}
    for nic in node.get("nics") or []:
        if nic.get("state") != "ACTIVE":
            continue
        kind = "IB" if nic.get("link_layer") == "InfiniBand" else "RoCE"
        key = (int(nic.get("rate_gbps") or 0), kind)
        groups[key] = groups.get(key, 0) + 1
    if not groups:
        return "-"
    return ", ".join(f"{n}x {rate}G {kind}" for (rate, kind), n in sorted(groups.items(), reverse=True))
