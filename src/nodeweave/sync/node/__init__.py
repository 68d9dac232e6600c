"""The program that runs on the node: sent over one exec as ``python3 -I -S -c PROGRAM``.

``source/session.py`` concatenates ``digest.py``, ``untar.py``, ``peer.py``,
``resident.py``, ``tunnel.py`` and ``agent.py`` (in that order) into
``AGENT_PROGRAM``; each module's ``try: NAME / except NameError:`` import block
is what lets it run both as one program and as modules here. So every module
in this room is stdlib only, Python 3.6-compatible, and imports nothing of
nodeweave but the modules of this room (tests/test_sync_argv.py holds the
program's size and its 3.6 syntax). This file is not part of the program.
"""
