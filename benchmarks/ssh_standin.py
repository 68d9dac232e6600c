#!/usr/bin/env python3
"""An ``ssh`` stand-in for benchmarks/verbs_scale.py: every "host" is a folder of this machine.

``ssh [-o X]... [-t] [-n] HOST -- CMD`` runs CMD here with ``sh -c``, as that
host: in ``$NWSCALE_ROOT/HOST``, with its own HOME and TMPDIR (where the
entrypoint records its runs), and with ``/nwscale-remote`` (the benchmark's
``--remote-dir``) meaning that host's own ``remote/`` folder. So nodeweave's
hosts backend, its verbs and the entrypoint run unchanged; only the network
hop is missing (and every host shares this machine's 2 cores).
"""
import os
import sys

args, i = sys.argv[1:], 0
while i < len(args) and args[i].startswith("-"):
    i += 2 if args[i] in ("-o", "-p", "-i", "-F", "-l", "-J", "-S", "-E") else 1
host, rest = args[i].rpartition("@")[2], args[i + 1:]
rest = rest[1:] if rest[:1] == ["--"] else rest
root = os.path.join(os.environ["NWSCALE_ROOT"], host)
os.makedirs(os.path.join(root, "tmp"), exist_ok=True)
os.makedirs(os.path.join(root, "remote"), exist_ok=True)
os.chdir(root)
env = dict(os.environ, HOME=root, TMPDIR=os.path.join(root, "tmp"))
command = " ".join(rest).replace("/nwscale-remote", os.path.join(root, "remote"))  # each host's own disk
os.execvpe("sh", ["sh", "-c", command] if rest else ["sh"], env)
