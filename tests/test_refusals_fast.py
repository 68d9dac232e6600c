"""The refusals that used to wait out the deadline (issue 28, item 3), each on real parts.

- the fingerprint's versions come from each distribution's METADATA, not its folder name;
- node 0 judges each claim the moment it arrives (another node count is known then);
- a node that refuses its own start still checks in with its reason, so node 0 stops every node at once;
- a loopback MASTER_ADDR in a container with its own network namespace is refused at once;
- a check-in port whose packets are dropped (timeouts, not refusals) is named as a likely firewall.
"""

import os
import socket
import subprocess
import sys
import time

from nodeweave.entrypoint.fingerprint import distributions
from nodeweave.entrypoint.sysfs import Root

from test_exchange_processes import ENTRY, SRC, finish, start_nodes


def site(tmp_path):
    path = tmp_path / "usr/lib/python3.11/site-packages"
    path.mkdir(parents=True)
    return path


def test_the_fingerprint_reads_the_version_a_distribution_reports_not_its_folder_name(tmp_path):
    packages = site(tmp_path)
    for folder, version in (("torch-2.4.0.dist-info", "2.5.1"), ("deepspeed-0.15.0.dist-info", "0.15.0"),
                            ("nvidia_nccl_cu12-2.21.5.dist-info", "2.26.2")):
        (packages / folder).mkdir()
        (packages / folder / "METADATA").write_text(f"Metadata-Version: 2.1\nName: x\nVersion: {version}\n\nbody\n")
    (packages / "accelerate-1.0.0.dist-info").mkdir()  # no METADATA: the folder name is all there is
    found = distributions(Root(str(tmp_path)))
    assert found["torch"] == "2.5.1" and found["nvidia_nccl_cu12"] == "2.26.2"
    assert found["deepspeed"] == "0.15.0" and found["accelerate"] == "1.0.0"
