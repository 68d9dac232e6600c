"""What a verb does to the world, as steps that print as the exact commands or run.

``--dry-run`` prints the steps; a real run executes the same objects, so the
two cannot drift apart. The cluster verbs (``nodeweave.cluster``) and the
OpenShift image build (``nodeweave.build.openshift``) both make them, so they
live below both. A step is one local argv (``podman-compose ...``,
``ssh host -- ...``, ``kubectl apply -k ...``) with the variables it adds for
the local process and, optionally, text for its stdin (a compose file sent
over ssh).
"""

from __future__ import annotations

import os
import shlex
import subprocess
from dataclasses import dataclass, field
from typing import List, Optional, Sequence, Tuple

from nodeweave.errors import NodeweaveError
from nodeweave.failures import API_UNREACHABLE, EngineStep, engine_failure, need_tool, tool_failure, tool_message


@dataclass(frozen=True)
class Step:
    what: str
    argv: Tuple[str, ...]
    env: Tuple[Tuple[str, str], ...] = ()  # added to this process's environment for the command
    stdin: Optional[str] = None
    stdin_name: str = ""  # what the stdin text is, for the printout
    timeout: float = 600
    # A local command that writes what the stdin gets (bytes known only as they are made, as `hosts probe`'s
    # zip): the printout pipes it in, `FROM | ARGV`, so the line can be pasted as it stands.
    stdin_from: Tuple[str, ...] = ()
    # A step that drives a container engine or compose: its failure is nodeweave's one line, exit 3 (node, what
    # failed, the engine's reason, what to do), never compose's raw output (failures.engine_failure).
    engine: Optional[EngineStep] = field(default=None, compare=False)

    def text(self) -> str:
        """The step as a shell line a person could paste."""
        prefix = " ".join(f"{k}={shlex.quote(v)}" for k, v in self.env)
        line = (prefix + " " if prefix else "") + shlex.join(self.argv)
        if self.stdin_from:
            return f"{shlex.join(self.stdin_from)} | {line}"
        return line + (f" < {self.stdin_name}" if self.stdin is not None else "")


def printed(text: str) -> "Tuple[str, ...]":
    """A ``stdin_from`` for text a plan knows (a rendered file, a mark): ``printf %s TEXT``, so the printed line
    pipes in exactly what the run sends (never for a secret: that stays a ``stdin_name``)."""
    return ("printf", "%s", text)


def execute(step: Step) -> "subprocess.CompletedProcess[str]":
    """Run ``step``; a non-zero exit is a NodeweaveError naming the step and the end of its output."""
    need_tool(step.argv[0], f"it is needed to {step.what}")
    env = {**os.environ, **dict(step.env)} if step.env else None
    try:
        out = subprocess.run(list(step.argv), input=step.stdin, capture_output=True, text=True, env=env,
                             timeout=step.timeout, stdin=None if step.stdin is not None else subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        raise NodeweaveError(f"{step.what}: no answer after {step.timeout:.0f} s ({step.text()})") from None
    if out.returncode != 0:
        said = out.stderr or out.stdout
        if API_UNREACHABLE.search(said):  # the cluster went away after the verb's reach check: exit 3 and the hint
            raise tool_failure(os.path.basename(step.argv[0]), step.what, out.returncode, said)
        if step.engine is not None:
            raise engine_failure(step.what, step.engine, out.returncode, said)
        tail = tool_message(said)
        raise NodeweaveError(f"{step.what} failed (exit {out.returncode}): {tail or 'no output'}")
    return out


def execute_all(steps: Sequence[Step], jobs: int = 16) -> List["subprocess.CompletedProcess[str]"]:
    """Run independent steps at once; every failure is named in one error."""
    if not steps:
        return []
    from concurrent.futures import ThreadPoolExecutor  # here: it imports logging, which no plan or dry run needs

    from nodeweave import nodeprogress

    def marked(step: Step) -> "subprocess.CompletedProcess[str]":  # where each step stood, for a Ctrl-C's line
        nodeprogress.mark(step.what, nodeprogress.PARTIAL)
        try:
            done = execute(step)
        except KeyboardInterrupt:  # cut part-way
            raise
        except BaseException:
            nodeprogress.mark(step.what, nodeprogress.FAILED)
            raise
        nodeprogress.mark(step.what, nodeprogress.DONE)
        return done

    results, errors = [], []
    with ThreadPoolExecutor(max_workers=min(jobs, len(steps))) as pool:
        futures = [pool.submit(marked, step) for step in steps]
        try:
            for future in futures:
                try:
                    results.append(future.result())
                except NodeweaveError as err:
                    errors.append(err)
        except KeyboardInterrupt:  # the steps not begun stay so (the pool would start them all before it ends)
            for future in futures:
                future.cancel()
            raise
    if errors:
        raise NodeweaveError("; ".join(str(e) for e in errors), errors[0].exit_code)
    return results


def fan_out(function, items, jobs: int = 16) -> list:
    """``function(item)`` for every item at once, results in item order."""
    items = list(items)
    if not items:
        return []
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=min(jobs, len(items))) as pool:
        return list(pool.map(function, items))
