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
