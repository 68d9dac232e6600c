"""fix14a: walk13a rows A13, A14, A15, A26 (issue 43). Each test fails on the code before its fix."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from cli_run import in_process as run_cli, one_line
from nodeweave.errors import EXIT_USAGE

REPO = Path(__file__).resolve().parents[1]
SPEC = "name: team\nnodes: 2\nlauncher:\n  type: torchrun\n  script: train.py\n"

# the variables the default cache folder comes from (NODEWEAVE_CACHE_DIR unset), each set to what the variable's own
# rule refuses in NODEWEAVE_CACHE_DIR: (variable, value, what the line says)
DEFAULT_CACHE_BASES = [
    ("XDG_CACHE_HOME", "cachedir", "is a relative path"),
    ("XDG_CACHE_HOME", "~/cache", "starts with a ~ no shell expanded"),
    ("HOME", "rel", "is a relative path"),
    ("HOME", "~user", "starts with a ~ no shell expanded"),
    ("HOME", "", "is set but empty"),
    ("HOME", "/nodeweave-walk13-a14-missing", "would be made directly in /"),
]


@pytest.mark.parametrize("name, value, said", DEFAULT_CACHE_BASES)
@pytest.mark.parametrize("argv", [["render", "all", "--dry-run"], ["render", "all", "--check"], ["validate"]])
def test_the_default_cache_folder_is_judged_by_the_cache_dir_rule(capsys, tmp_path, monkeypatch, name, value, said,
                                                                   argv):
    """A13, A14: a relative XDG_CACHE_HOME, or a HOME that is relative, empty or missing directly in / (a service
    account's /nonexistent), made the caches in the project or a folder in /, even from a dry run; refused now as
    NODEWEAVE_CACHE_DIR set so is, naming the variable, and nothing is made."""
    (tmp_path / "train.py").write_text("print(1)\n")
    (tmp_path / "nodeweave.yaml").write_text(SPEC)
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("NODEWEAVE_CACHE_DIR", raising=False)
    if name == "HOME":
        monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    monkeypatch.setenv(name, value)
    before = sorted(os.listdir(tmp_path))
    code, _, err = run_cli(capsys, *argv)
    line = one_line(err)
    assert code == EXIT_USAGE and line.startswith(f"nodeweave: error: {name}"), line
    assert said in line and "accepted:" in line and "NODEWEAVE_CACHE_DIR" in line, line
    assert sorted(os.listdir(tmp_path)) == before
    assert not os.path.exists("/nodeweave-walk13-a14-missing")


def test_an_absolute_cache_dir_still_serves_a_bad_home(capsys, tmp_path, monkeypatch):
    """A14: the way out the refusal names works: NODEWEAVE_CACHE_DIR set, HOME is not read for the caches."""
    (tmp_path / "train.py").write_text("print(1)\n")
    (tmp_path / "nodeweave.yaml").write_text(SPEC)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", "/nodeweave-walk13-a14-missing")
    monkeypatch.setenv("NODEWEAVE_CACHE_DIR", str(tmp_path.parent / f"{tmp_path.name}-cache"))
    code, out, err = run_cli(capsys, "--version")
    assert code == 0 and "nodeweave" in out, err


def test_every_default_cache_reader_uses_the_judged_base(tmp_path, monkeypatch):
    """A13, A14: sync's digests and residents lie under the same base the start-up rule judges."""
    from nodeweave.cachedir import cache_root, user_cache_base
    from nodeweave.sync.source import registry
    from nodeweave.sync.verify import local_cache_path

    monkeypatch.delenv("NODEWEAVE_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "x"))
    assert user_cache_base() == tmp_path / "x" and cache_root() == tmp_path / "x" / "nodeweave"
    assert local_cache_path(tmp_path).is_relative_to(tmp_path / "x" / "nodeweave")
    assert registry._path().is_relative_to(tmp_path / "x" / "nodeweave")


def _checkout_copy(tmp_path, script):
    """A checkout holding only ``script`` (the repository's own), so what the script makes in its checkout lands here."""
    copy = tmp_path / "checkout" / script
    copy.parent.mkdir(parents=True)
    copy.write_text((REPO / script).read_text())
    return copy


def _tools(tmp_path, *names):
    """A PATH of only ``names`` (no podman: demo.sh stops at render and explain)."""
    folder = tmp_path / "tools"
    folder.mkdir()
    for name in names:
        found = subprocess.run(["bash", "-c", f"command -v {name}"], capture_output=True, text=True).stdout.strip()
        (folder / name).symlink_to(found)
    return str(folder)


def _venv(folder):
    """A venv's bin/ whose nodeweave and nodeweave-entrypoint run this checkout's code."""
    bin_dir = folder / "bin"
    bin_dir.mkdir(parents=True)
    for name, module in (("nodeweave", "nodeweave"), ("nodeweave-entrypoint", "nodeweave.entrypoint")):
        (bin_dir / name).write_text(f'#!/bin/sh\nPYTHONPATH={REPO / "src"} exec {sys.executable} -m {module} "$@"\n')
        (bin_dir / name).chmod(0o755)
    return folder


@pytest.mark.parametrize("relative", ["SPEC", "NODEWEAVE_VENV"])
def test_demo_reads_a_relative_path_where_it_was_typed(tmp_path, relative):
    """A15: `examples/demo.sh ./nodeweave.yaml` moved to the checkout first and rendered (with podman: built, upped
    and ran) the checkout's job, not the spec typed; a relative NODEWEAVE_VENV was read there too."""
    demo = _checkout_copy(tmp_path, "examples/demo.sh")
    (demo.parents[1] / "nodeweave.yaml").write_text("the checkout's spec: never read here\n")
    (demo.parent / "train.py").write_text((REPO / "examples" / "train.py").read_text())  # the plan demo.sh explains
    work = tmp_path / "work"
    work.mkdir()
    (work / "nodeweave.yaml").write_text((REPO / "nodeweave.yaml").read_text().replace("name: llama-pretrain",
                                                                                     "name: typed-here", 1))
    venv = _venv(work / "venv")
    env = {"PATH": _tools(tmp_path, "bash", "dirname"), "HOME": str(tmp_path),
           "NODEWEAVE_VENV": "venv" if relative == "NODEWEAVE_VENV" else str(venv)}
    spec = "./nodeweave.yaml" if relative == "SPEC" else str(work / "nodeweave.yaml")
    done = subprocess.run(["bash", str(demo), spec], cwd=work, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    local = (demo.parents[1] / "build" / "demo" / "compose" / "local.yaml").read_text()
    assert "name: typed-here-local" in local


def test_wheelhouse_reads_relative_paths_where_they_were_typed(tmp_path):
    """A15's class: .ci/wheelhouse.sh moved to the checkout before reading DIR and PYTHON, so a relative one named a
    path in the checkout (PYTHON "missing", the wheels written into the checkout)."""
    script = _checkout_copy(tmp_path, ".ci/wheelhouse.sh")
    (script.parents[1] / "pyproject.toml").write_text((REPO / "pyproject.toml").read_text())
    work = tmp_path / "work"
    work.mkdir()
    (work / "py").write_text('#!/bin/sh\n[ "$1" = -c ] && echo "einops==0.8.1"\nexit 0\n')  # answers every call
    (work / "py").chmod(0o755)
    done = subprocess.run(["bash", str(script), "cpu", "wheels"], cwd=work, capture_output=True, text=True,
                          env={"PATH": os.environ["PATH"], "PYTHON": "./py"}, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    assert (work / "wheels").is_dir() and not (script.parents[1] / "wheels").exists()


def _pyproject_dependencies():
    import re
    import tomllib

    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    return [re.split(r"[<>=!~;\[ ]", req, maxsplit=1)[0] for req in project["dependencies"]]


def test_the_dependency_table_is_pyprojects():
    """A26: start.DEPENDENCY_MODULES names every distribution of pyproject's dependencies, each by its own module."""
    from importlib.metadata import packages_distributions

    from nodeweave.start import DEPENDENCY_MODULES

    def key(name):
        return name.lower().replace("_", "-")

    assert sorted(map(key, DEPENDENCY_MODULES.values())) == sorted(map(key, _pyproject_dependencies()))
    installed = packages_distributions()
    for module, dist in DEPENDENCY_MODULES.items():
        assert key(dist) in {key(d) for d in installed.get(module, [])}, (module, dist)


# a command that imports each dependency (or, python_on_whales, none that needs no engine: said by the verb's own
# import, met late) -> the argv that meets it missing
MEETS = {"typer": ["--help"], "yaml": ["validate"], "jinja2": ["render", "all", "--dry-run"],
         "rich": ["up", "--dry-run"], "shellingham": ["--help"], "python_on_whales": None}

BLOCK = """
import sys
blocked, argv = sys.argv[1], sys.argv[2:]
class Block:
    def find_spec(self, name, path=None, target=None):
        if name.split('.')[0] == blocked:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
sys.meta_path.insert(0, Block())
sys.argv = ["nodeweave", *argv]
import nodeweave.start as start
if argv == ["late"]:  # a verb that imports it after the command line loaded
    import nodeweave.cli as cli
    cli.main = lambda: __import__(blocked)
sys.exit(start.main())
"""


@pytest.mark.parametrize("module", sorted(MEETS))
def test_a_missing_dependency_is_one_line_and_exit_3(tmp_path, module):
    """A26: the wheel installed with --no-deps (an offline box): `nodeweave --help` printed ModuleNotFoundError's
    traceback for typer; now one line naming the distribution, this Python and the fix, exit 3, for every
    dependency, met while the command line loads or by a verb that imports it late."""
    (tmp_path / "nodeweave.yaml").write_text((REPO / "nodeweave.yaml").read_text())
    (tmp_path / "examples").mkdir()
    (tmp_path / "examples" / "train.py").write_text((REPO / "examples" / "train.py").read_text())
    argv = MEETS[module] or ["late"]
    done = subprocess.run([sys.executable, "-c", BLOCK, module, *argv], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(REPO / "src"), "HOME": str(tmp_path.parent)})
    assert "Traceback" not in done.stderr, done.stderr
    assert done.returncode == 3, done.stdout + done.stderr
    line = one_line(done.stderr)
    from nodeweave.start import DEPENDENCY_MODULES

    named = DEPENDENCY_MODULES.get(module, f"the module {module}")
    assert line.startswith(f"nodeweave: error: the command line needs {named}"), line
    assert sys.prefix in line and "without --no-deps" in line, line


def test_a_missing_module_of_nodeweaves_own_is_still_its_traceback():
    """A26: only a dependency is said as the machine's lack; a missing module of nodeweave itself is a bug."""
    from nodeweave.start import missing_dependency

    assert missing_dependency(ModuleNotFoundError("x", name="nodeweave.nothing")) is None
    assert missing_dependency(ModuleNotFoundError("x", name="torch"), loaded=True) is None
    assert "typer" in missing_dependency(ModuleNotFoundError("x", name="typer"))
