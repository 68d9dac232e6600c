"""``nodeweave sync``: push a workspace to every pod, container or host at once. See docs/sync.md.

Three rooms and a few leaves, imports pointing down this list:

- ``display.py``: what the user sees of a sync (the top; the CLI calls it);
- ``source/``: what runs here: the run over every target, groups, delivery,
  the head's tunnel link, the registry of resident agents;
- ``outcome.py``: one target's result;
- ``transport/``: the session with a target's agent and how a payload
  travels (tar payload, relay, rsync, plain tar);
- ``request.py``, ``filters.py``, ``verify.py``: what was asked, what is sent,
  how content is checked (leaves);
- ``node/``: the agent program that runs on the node (stdlib only, Python 3.6,
  shipped as source over one exec).
"""
