"""Exit codes of ``nodeweave-entrypoint`` and the error that carries them.

A user mistake prints one line, ``nodeweave-entrypoint: error: <message>``,
and exits with its code; never a traceback. Any other code is the launcher's
own (a plain command is exec'd and *is* the process), or 128+N when a
supervised launcher (torchrun, deepspeed, accelerate) ended after signal N.
"""

EXIT_OK = 0            # --explain printed the plan
EXIT_FAILURE = 1       # a file the launch needs (the DeepSpeed hostfile) could not be written
EXIT_USAGE = 2         # bad input: a malformed flag or variable value, a missing training script
EXIT_TOPOLOGY = 3      # the node cannot tell who it is, or values contradict each other or the machine
EXIT_UNREACHABLE = 4   # the master's address did not resolve or its port did not open before the deadline
EXIT_PEER_FAILED = 5   # another node of the job failed (or vanished): this node stopped its launcher
EXIT_BUSY = 6          # another `nodeweave run` (a recorded --run-id) is still in progress on this node
EXIT_STALLED = 7       # the job stalled (a rank did not enter the collective the others waited in) for stall_timeout
EXIT_GAVE_UP = 8       # recovery gave up: its restart budget is spent, or too few nodes are left to go on
EXIT_NO_PROGRESS = 9   # recovery stopped: recovery.no_progress_restarts generations without a newer checkpoint
EXIT_NOT_EXECUTABLE = 126  # the launcher exists but cannot be executed
EXIT_NOT_FOUND = 127   # the launcher (torchrun, deepspeed, accelerate, the command) is not on PATH

EXIT_CODES = {
    EXIT_OK: "--explain printed the plan (or --help)",
    EXIT_FAILURE: "a file the launch needs (the DeepSpeed hostfile under $TMPDIR or /tmp) could not be written",
    EXIT_USAGE: "bad input: a flag or variable value; the message names it and what is accepted",
    EXIT_TOPOLOGY: "topology unknown or contradictory: no rank source, values that contradict each other or the "
                   "machine, the Kubernetes API refused, or node 0's check-in refused the job (a table names each "
                   "differing field per node)",
    EXIT_UNREACHABLE: "the master (node 0's check-in exchange) did not resolve or accept connections before the "
                      "deadline (names host and port), or gave no verdict",
    EXIT_PEER_FAILED: "another node failed or vanished during the job; this node stopped its launcher (the message "
                      "names the node, how it ended and its last output)",
    EXIT_BUSY: "another nodeweave run is still in progress on this node (the message names it)",
    EXIT_STALLED: "the job stalled: ranks waited in a collective one rank did not enter for launcher.stall_timeout "
                  "seconds; every node stopped its launcher (the report names the rank and every rank's stack)",
    EXIT_GAVE_UP: "recovery gave up: recovery.max_restarts restarts are spent, or a node was left out and no spare "
                  "or elastic minimum lets the job go on (the one-line verdict names the node and why)",
    EXIT_NO_PROGRESS: "recovery stopped: recovery.no_progress_restarts generations in a row found no newer complete "
                      "checkpoint (\"3 restarts since step 4200, no newer checkpoint\"); do not requeue as is",
    EXIT_NOT_EXECUTABLE: "the launcher was found but is not executable",
    EXIT_NOT_FOUND: "the launcher is not installed / not on PATH",
}


class EntrypointError(Exception):
    """An error whose message is for the user, as is, with its exit code."""

    def __init__(self, message, exit_code=EXIT_USAGE):
        super().__init__(message)
        self.exit_code = exit_code


class UsageError(EntrypointError):
    def __init__(self, message):
        super().__init__(message, EXIT_USAGE)


class TopologyError(EntrypointError):
    def __init__(self, message):
        super().__init__(message, EXIT_TOPOLOGY)
