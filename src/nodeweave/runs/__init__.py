"""Run history: the run folders ``nodeweave run`` leaves, listed, shown and compared.

Why a package of its own: ``nodeweave.cluster`` writes the folders while a job runs; reading
them afterwards (``nodeweave runs ls|show|compare``, like ``sky queue``) needs no cluster,
no engine and no spec, and should stay quick. ``history`` finds and loads the folders,
``metrics`` reads a number per run, point and node from the logs, ``chart`` draws it in the
terminal (or as PNG/SVG when the optional ``plot`` extra, matplotlib, is installed).
"""
