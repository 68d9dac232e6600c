"""How many targets one round of ``nodeweave sync`` takes (``sync/source/runner.py``).

``--jobs`` bounds the exec clients a round starts. Through the head one exec
reaches every target whose resident agent is on record, so such a round takes
all of them and the payload leaves the source once (at 64 targets in rounds
of 8 it left 8 times: docs/benchmarks.md). The record is the real registry
file under a temporary ``XDG_CACHE_HOME``.
"""

from dataclasses import replace
from pathlib import Path

import pytest

from nodeweave.remote import make_target
from nodeweave.sync.request import SyncOptions, SyncRequest
from nodeweave.sync.source import registry
from nodeweave.sync.source.runner import _round_size
from nodeweave.sync.transport.session import PROGRAM_ID

TARGETS = [make_target("ssh", f"node{i}") for i in range(20)]


def request(**options):
    return SyncRequest(src=Path("/tmp"), dest="/workspace", targets=tuple(TARGETS), fileset=None, filt=None,
                       options=replace(SyncOptions(), **options))  # the round size reads the options only


def resident(i, program=PROGRAM_ID):
    return {"port": 40000 + i, "addrs": [f"10.0.0.{i + 1}"], "key": "k" * 64, "program": program}


@pytest.fixture(autouse=True)
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))


def test_every_resident_on_record_makes_one_round_of_all():
    registry.update({t: resident(i) for i, t in enumerate(TARGETS)}, [])
    assert _round_size(request(relay="on"), TARGETS, "on") == 20


@pytest.mark.parametrize("why", ["one missing", "another program", "shared address", "relay off", "dry run"])
def test_otherwise_rounds_of_jobs(why):
    records = {t: resident(i) for i, t in enumerate(TARGETS)}
    if why == "one missing":
        records.pop(TARGETS[7])
    if why == "another program":
        records[TARGETS[3]] = resident(3, program="older")
    if why == "shared address":
        records[TARGETS[4]] = dict(resident(4), addrs=["10.0.0.6"])  # node5's too: reaches neither for sure
    registry.update(records, [])
    mode = "off" if why == "relay off" else "on"
    assert _round_size(request(relay=mode, dry_run=why == "dry run", jobs=6), TARGETS, mode) == 6


def test_ssh_targets_relay_only_when_asked():
    registry.update({t: resident(i) for i, t in enumerate(TARGETS)}, [])
    assert _round_size(request(relay="auto"), TARGETS, "auto") == 8  # ssh: relay off by default
