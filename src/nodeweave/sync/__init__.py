"""``nodeweave sync``: push a workspace to every pod, container or host at once.

``filters`` decides what is sent, ``targets`` names where, ``transport``
builds the argv for each kind (pure), ``transfer`` moves files to one target
with rsync or tar, ``verify`` checks content and commit, ``runner`` fans out
with retries. See docs/sync.md.
"""
