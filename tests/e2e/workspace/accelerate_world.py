"""What accelerate itself sees: the training script of the multi-node CPU accelerate test.

Each process builds an ``Accelerator`` (no arguments, as a user's script
does), sums rank + 1 over the world with ``accelerator.reduce`` and prints
one ``NODEWEAVE-E2E`` line with accelerate's own distributed type, world size
and process index. A process that trains alone reports type NO, world 1 and
its own number as the sum.
"""

import json
import os
import socket

import torch
from accelerate import Accelerator


def main() -> int:
    accelerator = Accelerator()
    total = accelerator.reduce(torch.tensor([float(accelerator.process_index + 1)]), reduction="sum").item()
    record = {
        "rank": accelerator.process_index, "world": accelerator.num_processes, "sum": total,
        "type": str(accelerator.distributed_type).rsplit(".", 1)[-1], "host": socket.gethostname(),
        "local_rank": accelerator.local_process_index,
    }
    os.write(1, ("NODEWEAVE-E2E " + json.dumps(record, sort_keys=True) + "\n").encode())
    accelerator.wait_for_everyone()
    # leave together: gloo aborts a rank whose peer tore its connections down first (as examples/train.py does)
    torch.distributed.barrier()
    torch.distributed.destroy_process_group()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
