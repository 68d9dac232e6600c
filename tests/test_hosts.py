"""``nodeweave hosts probe``: the shipped entrypoint, the table, the DeepSpeed hostfile.

The engine test runs the probe through ``podman exec`` in containers that
have python3 but no nodeweave; two mount the entrypoint's captured sysroots
(``tests/fixtures/synthetic``) with ``NODEWEAVE_SYSROOT`` set, so they report
an HGX H100 and an MI300X node; one reports no GPU; one is stopped.
"""

from __future__ import annotations

import ast
import io
import json
import subprocess
import sys
import uuid
import zipfile
from pathlib import Path

import cli_run
import pytest

from nodeweave.errors import NodeweaveError, UsageError
from nodeweave.hosts import (BOOTSTRAP, HostReport, deepspeed_hostfile, describe_nics,
                             entrypoint_zip, probe_argv, write_hostfile)
from nodeweave.remote import make_target

REPO = Path(__file__).resolve().parents[1]
SYSROOTS = REPO / "tests" / "fixtures" / "synthetic"
BASE_IMAGE = "localhost/nodeweave-base:bookworm"


def test_the_shipped_zip_is_the_entrypoint_package_and_stdlib_only():
    with zipfile.ZipFile(io.BytesIO(entrypoint_zip())) as zf:
        names = set(zf.namelist())
        assert "nodeweave/__init__.py" in names and "nodeweave/entrypoint/__init__.py" in names
        assert all(n == "nodeweave/__init__.py" or n.startswith("nodeweave/entrypoint/") for n in names)
        for name in names:
            for node in ast.walk(ast.parse(zf.read(name))):
                if isinstance(node, ast.Import):
                    mods = [a.name for a in node.names]
                elif isinstance(node, ast.ImportFrom) and node.level == 0:
                    mods = [node.module]
                else:
                    continue
                # the ranks' hook folder goes on the ranks' PYTHONPATH as it is: its modules import each other
                folder = name.rsplit("/", 1)[0] + "/"
                siblings = {n[len(folder):-3] for n in names if n.startswith(folder) and n.endswith(".py")
                            and "/" not in n[len(folder):]} if "/rankhook/" in name else set()
                for mod in mods:
                    top = mod.split(".")[0]
                    assert (top in sys.stdlib_module_names
                            or mod.startswith("nodeweave.entrypoint")
                            or mod in siblings), (name, mod)


def test_the_zip_runs_under_a_bare_python_and_reports_a_fixture_node(tmp_path):
    """The bootstrap, run by a python that cannot import the installed nodeweave."""
    out = subprocess.run([sys.executable, "-I", "-S", "-c", BOOTSTRAP, ""], input=entrypoint_zip(),
                         capture_output=True, env={"NODEWEAVE_SYSROOT": str(SYSROOTS / "hgx-h100")},
                         cwd=tmp_path)
    assert out.returncode == 0, out.stderr.decode()
    answer = json.loads(out.stdout)
    assert answer["schema"].startswith("nodeweave.entrypoint/")
    assert answer["node"]["gpus"]["count"] == 8 and answer["node"]["hostname"] == "hgx-a01"
    assert list(tmp_path.iterdir()) == []


def test_probe_argv_keeps_the_master_as_an_argument():
    argv = probe_argv(make_target("ssh", "me@gpu01"), "gpu00")
    assert argv[0] == "ssh" and argv[-3:-1] == ["me@gpu01", "--"]
    argv = probe_argv(make_target("podman", "nw-0"), None)
    assert argv[:4] == ["podman", "exec", "-i", "nw-0"] and argv[4:6] == ["python3", "-c"]
    assert argv[-1] == "" and argv[-2] == BOOTSTRAP


def _report(name, status, count=0, vendor="nvidia"):
    node = {"gpus": {"count": count, "vendor": vendor if count else "none"}} if status in ("ok", "no-gpu") else None
    return HostReport(make_target("ssh", name), status, node=node)


def test_hostfile_keeps_order_uses_host_names_and_skips_the_rest(tmp_path):
    made = deepspeed_hostfile([_report("me@gpu-a", "ok", 8), _report("cpu-b", "no-gpu"),
                               _report("gpu-c", "unreachable"), _report("gpu-d", "ok", 4)])
    assert made.text == "gpu-a slots=8\ngpu-d slots=4\n"
    assert [(r.host, why) for r, why in made.skipped] == [("cpu-b", "no GPU found"), ("gpu-c", "unreachable")]
    path = tmp_path / "hostfile"
    write_hostfile(path, made, force=False)
    assert path.read_text() == made.text
    path.write_text("mine\n")
    with pytest.raises(UsageError, match="exists; pass --force"):
        write_hostfile(path, made, force=False)
    assert path.read_text() == "mine\n"
    write_hostfile(path, made, force=True)
    assert path.read_text() == made.text
    with pytest.raises(NodeweaveError, match="no host with a GPU") as err:
        write_hostfile(tmp_path / "other", deepspeed_hostfile([_report("cpu-b", "no-gpu")]), force=True)
    assert err.value.exit_code == 1 and not (tmp_path / "other").exists()


def test_a_hostfile_mixing_nvidia_and_amd_is_refused_naming_each_vendors_hosts():
    """Issue 9: one DeepSpeed job cannot span NCCL and RCCL; the file used to hold both without a word."""
    reports = [_report("gpu-a", "ok", 8), _report("mi-b", "ok", 8, "amd"), _report("gpu-c", "ok", 4),
               _report("cpu-d", "no-gpu")]
    with pytest.raises(UsageError) as err:
        deepspeed_hostfile(reports)
    assert str(err.value) == ("the hosts mix GPU vendors, and one DeepSpeed job cannot span NCCL and RCCL: "
                              "nvidia: gpu-a, gpu-c; amd: mi-b; write one hostfile per vendor with "
                              "--vendor nvidia or --vendor amd")
    made = deepspeed_hostfile(reports, vendor="nvidia")
    assert made.text == "gpu-a slots=8\ngpu-c slots=4\n"
    assert [(r.host, why) for r, why in made.skipped] == [
        ("mi-b", "amd GPUs, not nvidia (--vendor nvidia)"), ("cpu-d", "no GPU found")]
    assert deepspeed_hostfile(reports, vendor="amd").text == "mi-b slots=8\n"
    with pytest.raises(UsageError, match="--vendor 'intel' is not accepted: nvidia or amd"):
        deepspeed_hostfile(reports, vendor="intel")


def test_describe_nics_groups_active_ports():
    node = {"nics": [{"state": "ACTIVE", "link_layer": "InfiniBand", "rate_gbps": 400}] * 2
            + [{"state": "DOWN", "link_layer": "InfiniBand", "rate_gbps": 400},
               {"state": "ACTIVE", "link_layer": "Ethernet", "rate_gbps": 200}]}
    assert describe_nics(node) == "2x 400G IB, 1x 200G RoCE"
    assert describe_nics({"nics": []}) == "-"


def test_cli_refuses_bad_input_with_exit_2(tmp_path):
    existing = tmp_path / "hostfile"
    existing.write_text("gpu-z slots=8\n")  # an earlier hostfile: --force replaces it (any other file: never)
    for args, message in ((["--node", "telnet:a"], "'telnet' is not accepted"),
                          (["--node", "a;reboot"], "host 'a;reboot'"),
                          (["--node", "0"], "hosts probe has no cluster to count in"),
                          (["--write-hostfile", str(existing), "--node", "gpu-a"], "pass --force to replace"),
                          (["--hostfile", str(existing), "--node", "gpu-a"], "pass --force to replace"),
                          (["--hostfile", "a", "--write-hostfile", "b", "--node", "gpu-a"], "give only --write-hostfile"),
                          (["--vendor", "intel", "--write-hostfile", "x", "--node", "gpu-a"], "--vendor 'intel'"),
                          (["--vendor", "amd", "--node", "gpu-a"], "give --write-hostfile too"),
                          ([], "no hosts")):
        out = cli_run.run([*cli_run.NODEWEAVE, "hosts", "probe", *args])
        assert out.returncode == 2, (args, out.stderr)
        assert message in out.stderr and "Traceback" not in out.stderr
    assert existing.read_text() == "gpu-z slots=8\n"


def test_the_old_hostfile_spelling_still_works_with_a_note(tmp_path):
    """--hostfile was the output's name; it reads like the input list, so --write-hostfile replaces it."""
    out = cli_run.run([*cli_run.NODEWEAVE, "hosts", "probe", "--hostfile", str(tmp_path / "hf"), "--via", "ssh", "a;b"])
    assert "`hosts probe --hostfile " in out.stderr and "is now `hosts probe --write-hostfile " in out.stderr
    assert out.returncode == 2 and "host 'a;b'" in out.stderr and out.stdout == ""


def _podman(*args, check=True):
    return subprocess.run(["podman", *args], capture_output=True, text=True, check=check, timeout=300)


@pytest.mark.engine
@pytest.mark.slow
def test_probe_real_containers_via_podman_exec(tmp_path):
    if _podman("image", "exists", BASE_IMAGE, check=False).returncode != 0:
        pytest.skip(f"{BASE_IMAGE} is missing (bash .ci/make-base-image.sh makes it)")
    prefix = f"nwsync-hosts-{uuid.uuid4().hex[:6]}"
    names = {k: f"{prefix}-{k}" for k in ("h100", "mi300x", "cpu", "off")}
    made = []
    try:
        for key, fixture in (("h100", "hgx-h100"), ("mi300x", "mi300x")):
            _podman("run", "-d", "--name", names[key], "-v", f"{SYSROOTS / fixture}:/sysroot:ro",
                    "-e", "NODEWEAVE_SYSROOT=/sysroot", BASE_IMAGE, "sleep", "infinity")
            made.append(names[key])
        _podman("run", "-d", "--name", names["cpu"], BASE_IMAGE, "sleep", "infinity")
        made.append(names["cpu"])
        _podman("create", "--name", names["off"], BASE_IMAGE, "sleep", "infinity")
        made.append(names["off"])
        assert _podman("exec", names["cpu"], "python3", "-c", "import nodeweave", check=False).returncode != 0

        hostfile = tmp_path / "hostfile"
        order = [names["h100"], names["cpu"], names["mi300x"], names["off"]]
        probe = [*cli_run.NODEWEAVE, "hosts", "probe", "--node", ",".join(f"podman:{n}" for n in order), "--write-hostfile",
                 str(hostfile), "--json"]
        out = cli_run.run(probe, timeout=300)
        assert out.returncode == 2, out.stderr  # NVIDIA and AMD in one hostfile: refused, naming both
        assert (f"mix GPU vendors, and one DeepSpeed job cannot span NCCL and RCCL: nvidia: {names['h100']}; "
                f"amd: {names['mi300x']}; write one hostfile per vendor") in out.stderr
        assert not hostfile.exists() and len(json.loads(out.stdout)) == 4  # the probe's JSON still printed
        out = cli_run.run([*probe, "--vendor", "nvidia"], timeout=300)
        assert out.returncode == 1, out.stderr  # the stopped container did not answer
        reports = {r["host"]: r for r in json.loads(out.stdout)}
        h100, mi = reports[f"podman:{names['h100']}"], reports[f"podman:{names['mi300x']}"]
        assert h100["status"] == "ok" and h100["node"]["gpus"]["model"] == "NVIDIA H100 80GB HBM3"
        assert h100["node"]["hostname"] == "hgx-a01" and len(h100["node"]["nics"]) == 10
        assert mi["status"] == "ok" and mi["node"]["gpus"]["vendor"] == "amd"
        assert reports[f"podman:{names['cpu']}"]["status"] == "no-gpu"
        assert reports[f"podman:{names['off']}"]["status"] == "unreachable"
        assert f"unreachable: podman:{names['off']}" in out.stderr
        assert f"warning: podman:{names['cpu']} left out of {hostfile}: no GPU found" in out.stderr
        assert f"warning: podman:{names['mi300x']} left out of {hostfile}: amd GPUs, not nvidia" in out.stderr
        assert hostfile.read_text() == f"{names['h100']} slots=8\n"
        out = cli_run.run([*probe, "--vendor", "amd", "--force"], timeout=300)
        assert hostfile.read_text() == f"{names['mi300x']} slots=8\n"

        table = cli_run.run([*cli_run.NODEWEAVE, "hosts", "probe", "--node", f"podman:{names['h100']}",
                                "--node", f"podman:{names['cpu']}"],
                               timeout=300, env={"COLUMNS": "200", "PATH": "/usr/bin:/bin"})
        assert table.returncode == 0, table.stderr
        assert "8 x NVIDIA H100 80GB HBM3" in table.stdout and "8x 400G IB, 2x 200G RoCE" in table.stdout
        assert "no-gpu" in table.stdout
    finally:
        if made:
            _podman("rm", "-f", "-t", "0", *made, check=False)
