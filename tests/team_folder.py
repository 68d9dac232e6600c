"""The walks' team folder: a two-node cpu spec and its script, in a folder of its own, the shell's variables that
would change what the verbs plan cleared. One copy for every walk test file that uses it."""

import os

SPEC = """\
name: team
image:
  variant: cpu
nodes: 2
gpus_per_node: 1
launcher:
  type: torchrun
  script: train.py
"""

# Variables a developer's shell may hold that would change every plan the tests read.
CLEARED = ("NODEWEAVE_RUNTIME", "NODEWEAVE_IMAGE", "NODEWEAVE_SPEC", "NODEWEAVE_TARGET", "KUBECONFIG")


def make_team(tmp_path, monkeypatch):
    (tmp_path / "train.py").write_text("print('hello')\n")
    (tmp_path / "nodeweave.yaml").write_text(SPEC)
    monkeypatch.chdir(tmp_path)
    for name in CLEARED:
        monkeypatch.delenv(name, raising=False)
    return tmp_path


JOB_SPEC = "name: proj\nimage: {variant: cpu}\nnodes: 2\nlauncher: {script: train.py}\n"


def make_job_folder(tmp_path, monkeypatch):
    """A plain job's folder with no NODEWEAVE_* variable of the shell's left set."""
    import os

    (tmp_path / "nodeweave.yaml").write_text(JOB_SPEC)
    (tmp_path / "train.py").write_text("print(1)\n")
    monkeypatch.chdir(tmp_path)
    for name in list(os.environ):
        if name.startswith("NODEWEAVE_"):
            monkeypatch.delenv(name)
    return tmp_path


def fake_engines(team, monkeypatch, answering: str):
    """docker and podman clients on PATH; only ``answering``'s daemon answers; both know no container."""
    bin_dir = team / "fakebin"
    bin_dir.mkdir(exist_ok=True)
    for engine in ("docker", "podman"):
        up = "0" if engine == answering else "1"
        (bin_dir / engine).write_text(f"""#!/bin/sh
case "$*" in
  "version --format {{{{.Server.Version}}}}") [ {up} = 0 ] || {{ echo "Cannot connect to the Docker daemon at \
unix:///var/run/docker.sock. Is the docker daemon running?" >&2; exit 1; }}; echo 27.0.3 ;;
  "compose version") echo 2.29 ;;
  inspect*) echo "Error: No such object" >&2; exit 1 ;;
  *) exit 0 ;;
esac
""")
        (bin_dir / engine).chmod(0o755)
    (bin_dir / "podman-compose").write_text("#!/bin/sh\nexit 0\n")
    (bin_dir / "podman-compose").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")


def made_by_up(team, spec_text: str) -> None:
    """What a real `up` of ``spec_text`` leaves in the team folder: its compose file and its record."""
    from nodeweave.cluster.backends.local import render_up_compose
    from nodeweave.cluster.identity import JobMark
    from nodeweave.cluster.options import ClusterOptions, record_made
    from nodeweave.spec import load_spec

    spec_path = team / "nodeweave.yaml"
    spec_path.write_text(spec_text)
    spec, mark = load_spec(spec_path), JobMark.of(team, "team")
    folder = team / ".nodeweave" / "team"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "compose.yaml").write_text(render_up_compose(spec, team.resolve(), mark))
    record_made(spec_path, "team", ClusterOptions(target="local", engine="podman"),
                {"job": "team", "folder": mark.folder, "owner": mark.owner, "spec": "nodeweave.yaml",
                 "target": "local", "where": "podman on this machine", "project": mark.project, "engine": "podman",
                 "spec_text": spec_text})


def proj_folder(tmp_path, monkeypatch):
    """A job folder ``proj`` below ``tmp_path`` (:func:`make_job_folder`), the walk tests' one stand-in project."""
    (tmp_path / "proj").mkdir()
    return make_job_folder(tmp_path / "proj", monkeypatch)


def flat(text: str) -> str:
    """``text`` with its line breaks and runs of spaces as single spaces: a message read whatever its wrapping."""
    return " ".join(text.split())
