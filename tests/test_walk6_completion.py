"""Walk 6, W67: shell completion of run ids.

``dashboard --run <TAB>`` completed nothing; ``runs show <TAB>`` offered any folder under runs/, a stray one that
is no run at all (and a name a terminal cannot show) among them. One completion reads runs/ as ``find_run`` does:
every verb taking a run offers ``last`` and the runs; ``dashboard --run`` (one run) no sweeps. Fails before the fix.
"""

from __future__ import annotations

import json
import os

import cli_run

SPEC = "name: team\nimage: {variant: cpu}\nnodes: 2\nlauncher: {script: train.py}\n"


def complete(folder, words):
    env = {**os.environ, "_NODEWEAVE_COMPLETE": "complete_bash", "COMP_WORDS": words,
           "COMP_CWORD": str(len(words.split()))}
    return cli_run.run([*cli_run.NODEWEAVE], env=env, cwd=folder, timeout=60).stdout.split()


def test_run_ids_complete_as_find_run_reads_them(tmp_path):
    (tmp_path / "nodeweave.yaml").write_text(SPEC)
    runs = tmp_path / "runs"
    run = runs / "20261129T100000Z-team"
    run.mkdir(parents=True)
    (run / "run.json").write_text(json.dumps({"id": run.name, "job": "team", "nodes": []}))
    sweep = runs / "20261129T130000Z-team-sweep"
    (sweep / "20261129T130000Z-team-00").mkdir(parents=True)
    (sweep / "sweep.json").write_text(json.dumps({"id": sweep.name}))
    (runs / "stray").mkdir()
    os.mkdir(os.fsencode(runs) + b"/bad\xffname")
    assert complete(tmp_path, "nodeweave dashboard --run ") == ["last", run.name]
    assert complete(tmp_path, "nodeweave runs show ") == ["last", run.name, sweep.name]
    assert complete(tmp_path, "nodeweave logs --run ") == ["last", run.name, sweep.name]
