"""walk18 rows fixed on main, each as its class."""

import json

import cli_run


def test_under_recovery_the_schedulers_count_is_judged_by_recovery_alone(tmp_path):
    """walk18b B5: an allocation one node too big under recovery (4 training + 1 spare on 6) showed recovery's
    refusal and, beside it, the plain "nnodes sources disagree ...: remove one, or pass --nnodes" whose fixes both
    fail; with the spares forgotten (fix20b's refusal) the same plain line came second. Only recovery's refusal,
    in --explain's Errors and in its text, whatever the platform's count."""
    (tmp_path / "train.py").write_text("print(1)\n")
    hosts = tmp_path / "hosts"
    hosts.write_text("".join(f"h{i}\n" for i in range(6)))
    base = {**cli_run.CLEAN, "NODEWEAVE_RECOVERY": "on", "NODEWEAVE_NNODES": "4", "NODEWEAVE_CHECKPOINT_DIR": "ck"}
    platforms = ({"SLURM_JOB_ID": "9", "SLURM_NNODES": "6", "SLURM_NODEID": "5", "SLURM_JOB_NODELIST": "h[0-5]",
                  "NODEWEAVE_HOSTNAME": "h5"},
                 {"NODEWEAVE_HOSTFILE": str(hosts), "NODEWEAVE_NODE_RANK": "5", "NODEWEAVE_HOSTNAME": "h5"},
                 {"PET_NNODES": "6", "NODE_RANK": "5", "MASTER_ADDR": "m"})
    for platform in platforms:
        for spares in ({"NODEWEAVE_SPARES": "1"}, {}):
            done = cli_run.entrypoint("--explain", "--json", "--", "train.py", cwd=str(tmp_path),
                                      env={**base, **platform, **spares})
            errors = [error["message"] for error in json.loads(done.stdout)["errors"]]
            assert done.returncode == 3 and len(errors) == 1, (platform, spares, errors)
            assert errors[0].startswith("node count sources disagree") and "remove one" not in errors[0], errors
            assert "more in the plan's Errors" not in done.stderr, done.stderr


def test_a_zipapp_of_another_build_is_said_as_another_build_not_as_an_edit(tmp_path):
    """A merge of two branches that each re-rendered the entrypoint's zipapp met fix21f's warning "edited since the
    last render ... a change belongs in the spec": nobody types a zipapp, and nothing in the spec makes it; it is
    another nodeweave's build, said as that, and still kept beside."""
    (tmp_path / "nodeweave.yaml").write_text("name: zipmerge\nimage: {variant: cpu}\nnodes: 2\n"
                                             "launcher: {script: train.py}\n")
    (tmp_path / "train.py").write_text("print(1)\n")
    env = {**cli_run.CLEAN, "HOME": cli_run.home_beside(tmp_path)}
    assert cli_run.nodeweave("render", "all", cwd=str(tmp_path), env=env).returncode == 0
    zipapp = tmp_path / "entrypoint" / "nodeweave-entrypoint.pyz"
    zipapp.write_bytes(zipapp.read_bytes() + b"\0")  # another build's bytes
    done = cli_run.nodeweave("render", "all", cwd=str(tmp_path), env=env)
    assert done.returncode == 0, done.stderr
    (said,) = [line for line in done.stderr.splitlines() if "warning:" in line]
    assert "is not the build the last render wrote" in said and "belongs in the spec" not in said, said
    assert (tmp_path / ".nodeweave" / "_edited" / "entrypoint" / "nodeweave-entrypoint.pyz").is_file()
