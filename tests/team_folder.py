"""The walks' team folder: a two-node cpu spec and its script, in a folder of its own, the shell's variables that
would change what the verbs plan cleared. One copy for every walk test file that uses it."""

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
