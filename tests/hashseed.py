"""Render specs in fresh interpreters with different PYTHONHASHSEED values: set order may not leak into files.

In one process every render shares one hash seed, so iterating a set or a
dict built from one gives the same order each time and a determinism check
there cannot fail. Here each seed is its own subprocess; each returns the
sha256 of every file each renderer made, and ``hash("nodeweave")`` to prove
the seeds differed.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Dict, List, Sequence

SEEDS = ("0", "1", "4242")
CODE = r"""
import hashlib, importlib, json, sys
from nodeweave.spec import load_spec, parse_spec
job = json.load(sys.stdin)
out = {"hash": hash("nodeweave"), "files": {}}
for item in job["specs"]:
    spec = load_spec(item["path"]) if "path" in item else parse_spec(item["text"], item["name"])
    for module in job["modules"]:
        try:
            files = importlib.import_module(module).render_files(spec)
        except Exception as err:  # a renderer may refuse a spec: the refusal must not depend on the seed either
            files = {"refused": f"{type(err).__name__}: {err}"}
        for rel, text in files.items():
            out["files"][f"{item['name']} {module} {rel}"] = hashlib.sha256(text.encode()).hexdigest()
json.dump(out, sys.stdout, sort_keys=True)
"""


def renders_by_seed(specs: List[dict], modules: Sequence[str], seeds: Sequence[str] = SEEDS) -> Dict[str, dict]:
    """{seed: {"hash": ..., "files": {"NAME MODULE FILE": sha256}}}; ``specs`` items have name and path or text."""
    results = {}
    for seed in seeds:
        out = subprocess.run([sys.executable, "-c", CODE], input=json.dumps({"specs": specs, "modules": list(modules)}),
                             capture_output=True, text=True, timeout=600, env={**os.environ, "PYTHONHASHSEED": seed})
        assert out.returncode == 0, f"PYTHONHASHSEED={seed}: {out.stderr[-3000:]}"
        results[seed] = json.loads(out.stdout)
    return results


def assert_same_under_every_seed(specs: List[dict], modules: Sequence[str]) -> None:
    results = renders_by_seed(specs, modules)
    hashes = {seed: result["hash"] for seed, result in results.items()}
    assert len(set(hashes.values())) == len(hashes), f"the hash seeds did not differ: {hashes}"
    first_seed, first = next(iter(results.items()))
    assert first["files"], "nothing was rendered"
    for seed, result in results.items():
        differ = sorted(k for k in set(first["files"]) | set(result["files"])
                        if first["files"].get(k) != result["files"].get(k))
        assert not differ, f"PYTHONHASHSEED={first_seed} and {seed} render differently: {differ[:10]}"
