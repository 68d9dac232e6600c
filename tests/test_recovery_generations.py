"""Each generation's plan under recovery: a fixed-size job of its members, whatever the spec's node count says."""

from nodeweave.entrypoint.planning.settings import parse
from nodeweave.entrypoint.recovery.book import Book
from nodeweave.entrypoint.recovery.generations import Generations

from one_machine import one_machine_env

ARGV = ["--node-rank", "3", "--nproc-per-node", "1", "--master-addr", "127.0.0.1", "--master-port", "29500", "--",
        "train.py"]


def generation_plan(tmp_path, nnodes, members):
    env = one_machine_env({"PATH": "/usr/bin:/bin", "TMPDIR": str(tmp_path), "NODEWEAVE_NNODES": nnodes,
                           "NODEWEAVE_RECOVERY": "on", "NODEWEAVE_LAUNCHER": "torchrun"})
    from nodeweave.entrypoint.core import build_plan

    gens = Generations(parse(ARGV, env), lambda line: None)
    own = ["0" if i == 1 else word for i, word in enumerate(ARGV)]  # a rank the count holds: only its processes count
    gens.plan = build_plan(parse(own, env))  # the node's own plan, as its start made it (its own process count)
    gens.identity = 3  # the node's container rank; it trains at its position among the members
    book = Book(generation=1, members=tuple(members))
    plan, settings = gens._generation_plan(book, {"procs": [1] * len(members)})
    return plan, plan.environ(settings.env)


def test_an_elastic_specs_generation_is_planned_and_exported_as_a_fixed_job_of_its_members(tmp_path):
    plan, environ = generation_plan(tmp_path, "3:4", [0, 1, 3])
    assert not [w for w in plan.warnings if "nnodes" in w], plan.warnings  # was: flag --nnodes (3) overrides ...
    argv = plan.launch.argv
    assert argv[argv.index("--nnodes") + 1] == "3" and argv[argv.index("--node-rank") + 1] == "2", argv
    assert not any(a.startswith("--rdzv") for a in argv), argv  # the static rendezvous: membership is decided
    assert (environ["NODEWEAVE_NNODES"], environ["NNODES"], environ["PET_NNODES"]) == ("3", "3", "3")


def test_a_fixed_specs_generation_keeps_its_count(tmp_path):
    plan, environ = generation_plan(tmp_path, "2", [0, 3])
    assert not [w for w in plan.warnings if "nnodes" in w], plan.warnings
    assert (environ["NODEWEAVE_NNODES"], environ["NNODES"]) == ("2", "2")
