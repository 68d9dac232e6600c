"""What an image build plan's ``build`` and ``stage`` phases run with (``nodeweave.plan.Builds``): the engine.

Why here and not in ``cli/``: the phases run themselves (``nodeweave.plan.phases``) and ask the
verb's execution for the build by name; what answers is the build room's, beside the engine it
drives. The command line only opens one and hands it to the executor.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Callable, List

from nodeweave.usertext import styled


class LocalBuild:
    """``image build`` with this machine's engine: the build's steps, its log streamed (a step's name in colour,
    the rest dim unless ``quiet``); ``results``: the build's result."""

    def __init__(self, engine, build, console, quiet: bool):
        from nodeweave.build import BuildProgress

        self.engine, self.build_plan, self.console, self.quiet = engine, build, console, quiet
        self.progress = BuildProgress()
        self.results: List[object] = []

    def on_line(self, line: str) -> None:
        step = self.progress.feed(line)
        if step:
            self.console.print(step, style="bold cyan", highlight=False)
        elif not self.quiet:
            self.console.print(line, markup=False, highlight=False, style="dim")

    def build(self, phase) -> None:
        from nodeweave.build import run_build

        self.console.print(styled(("building", "bold"), f" {self.build_plan.image} with {self.engine}"), highlight=False)
        for step in phase.steps:
            self.console.print(f"{step.what}: {step.text()}", markup=False, highlight=False)
        self.results.append(run_build(self.engine, self.build_plan, on_line=self.on_line, steps=phase.steps))

    def stage(self, phase) -> None:
        raise ValueError("a local image build stages no upload")  # a plan's own bug, not input


class OpenShiftBuild:
    """``image build -t openshift``: the upload staged as planned (its file list), then apply and start-build with
    the build's log streamed."""

    def __init__(self, cluster, context_dir: Path, say: Callable[[str], None]):
        self.cluster, self.context_dir, self.say = cluster, context_dir, say

    def stage(self, phase) -> None:
        from nodeweave.build.openshift import stage_upload

        staged = stage_upload(self.context_dir, replace(self.cluster.upload, sources=tuple(phase.upload["files"])))
        self.say(f"staged {staged} file(s) in {phase.folder}")

    def build(self, phase) -> None:
        from nodeweave.build.openshift import run_build_steps

        for step in phase.steps:
            self.say(f"{step.what}: {step.text()}")
        run_build_steps(phase.steps, self.say)
