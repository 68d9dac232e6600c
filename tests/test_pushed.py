"""build/pushed.py's pure parts: a tag's repository, and the record of what ``image build --push`` stored.

The pushes themselves (podman's --digestfile) run against a real registry in tests/e2e/test_push.py.
"""

from __future__ import annotations

import json

import pytest

from nodeweave.build.pushed import RECORD, record_push, recorded_digest, repository_of

A, B = "sha256:" + "a" * 64, "sha256:" + "b" * 64


@pytest.mark.parametrize("tag, repository", [
    ("127.0.0.1:5000/team/job:cpu", "127.0.0.1:5000/team/job"),  # the registry's port keeps its colon
    ("registry.example/job:cuda12-0123abc", "registry.example/job"),
    ("localhost/job", "localhost/job"),
])
def test_the_repository_of_a_tag(tag, repository):
    assert repository_of(tag) == repository


def test_pushes_are_merged_per_repository_and_a_bad_record_pins_nothing(tmp_path):
    record_push(tmp_path, {"r.example/job:cpu": A})
    record_push(tmp_path, {"r.example/job:cpu-0123abc": B, "r.example/other:cpu": B})
    data = json.loads((tmp_path / RECORD).read_text())
    assert data["r.example/job"]["tags"] == {"cpu": A, "cpu-0123abc": B} and "r.example/other" in data
    assert recorded_digest(tmp_path, "r.example/job", "cpu") == A
    assert recorded_digest(tmp_path, "r.example/job", "cuda12") is None
    (tmp_path / RECORD).write_text(json.dumps({"r.example/job": {"tags": {"cpu": "sha256:short"}}}))
    assert recorded_digest(tmp_path, "r.example/job", "cpu") is None
    (tmp_path / RECORD).write_text("not json")
    assert recorded_digest(tmp_path, "r.example/job", "cpu") is None
