"""User-facing errors and the exit codes of the ``nodeweave`` command.

Every mistake a user can make is raised as a :class:`NodeweaveError` that
carries its own exit code; the CLI prints its message and exits, never a
traceback. The codes are documented in the README.
"""

EXIT_OK = 0
EXIT_FAILURE = 1  # an operation ran and failed (a sync target, a build, a check)
EXIT_USAGE = 2  # bad input: a flag, a spec field, a path
EXIT_ENVIRONMENT = 3  # something the machine lacks (engine, rsync, kubectl), an unreachable API, a cluster not up
EXIT_STALE = 4  # committed rendered files differ from what the spec renders
EXIT_UNHEALTHY = 5  # `nodeweave check` named a node or link (docs/check.md)
# Ctrl-C: any verb, a verb that runs until stopped (`logs -f`, `top`, `dashboard`) too, after its own clean-up, so a
# script tells "followed to the end" (0) from "interrupted" (walk9 A17); the entrypoint's EXIT_INTERRUPTED is the same
EXIT_INTERRUPTED = 130
# `exec --timeout`: the limit cut a node's command (ended there by nodeweave), as timeout(1) exits (walk10 C4)
EXIT_TIMED_OUT = 124


class NodeweaveError(Exception):
    """An error whose message is meant for the user, as is."""

    exit_code = EXIT_FAILURE

    def __init__(self, message: str, exit_code: "int | None" = None):
        super().__init__(message)
        if exit_code is not None:
            self.exit_code = exit_code


class UsageError(NodeweaveError):
    exit_code = EXIT_USAGE


def remove_the_record(path) -> str:
    """The remedy for a damaged record of nodeweave's own, naming the record itself: the same line may name a file
    of the user's (an entry's path), and "remove the file" alone was read as that one (replay6 N3)."""
    import shlex

    return f"remove the file {shlex.quote(str(path))}"


class EnvironmentProblem(NodeweaveError):
    exit_code = EXIT_ENVIRONMENT
