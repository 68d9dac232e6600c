"""``nodeweave image build``: build a variant's image with docker (BuildKit) or podman.

The engine's log streams as it runs (``--quiet`` keeps only the steps); the
summary says which steps the layer cache answered, so a code-only rebuild
shows that only the code layers ran again.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, List, Optional

import typer

from nodeweave.cli.habits.base import NodeweaveTyper, find_spec, spec_option
from nodeweave.cli.habits.clusteropts import show_plan
from nodeweave.cli.habits.output import complete_from, complete_variants, image_reference, json_option, output_option
from nodeweave.cli.variants import variants
from nodeweave.errors import UsageError

if TYPE_CHECKING:  # rich is imported where a table is drawn, not at start-up
    from nodeweave.tables import Table

image_app = NodeweaveTyper(help="Build and push the training images; list the variants.", no_args_is_help=True)
image_app.command("variants")(variants)


def _parse_build_args(values: List[str]) -> dict:
    parsed = {}
    for value in values:
        key, sep, rest = value.partition("=")
        if not sep or not key:
            raise UsageError(f"--build-arg {value!r}: expected KEY=VALUE")
        parsed[key] = rest
    return parsed


# build args an option of `image build` sets: the option, and what both set
OPTION_BUILD_ARGS = {"BASE_IMAGE": ("--base", "the base image"),
                     "PIP_NO_INDEX": ("--offline", "whether pip may use the index (--offline: the wheelhouse only)")}
_TRUE = ("1", "true", "yes", "on")
_FALSE = ("0", "false", "no", "off", "")


def _options_spelt_as_build_args(build_args: dict, base: Optional[str], offline: bool) -> "tuple[Optional[str], bool]":
    """(base, offline) with ``--build-arg BASE_IMAGE=...`` read as ``--base`` and ``--build-arg PIP_NO_INDEX=1`` as
    ``--offline``, the options that set them, so the by-hand spelling gets the option's checks and plan (the
    wheelhouse's contents checked for an offline build, the base named). Both spellings given: refused, whatever
    their values, as a repeated --build-arg or -e is even with the same value (walk10 A21: ``--base`` silently won
    over the build arg; replay11 A21: the same base twice, or PIP_NO_INDEX=1 with --offline, passed). Pops them
    from ``build_args``."""
    given_options = {"--base": None if base is None else f"--base {base}", "--offline": "--offline" if offline else None}
    for arg, (option, what) in OPTION_BUILD_ARGS.items():
        if arg in build_args and given_options[option]:
            value = build_args[arg]
            opposite = arg == "PIP_NO_INDEX" and value.strip().lower() in _FALSE
            said = "say opposite things" if opposite else f"both set {what}"
            raise UsageError(f"--build-arg {arg}={value} and {given_options[option]} {said}; accepted: one of them "
                             f"({option} is nodeweave's spelling)")
    if "BASE_IMAGE" in build_args:
        given = build_args.pop("BASE_IMAGE")
        if not given:
            raise UsageError("--build-arg BASE_IMAGE= is empty; accepted: --base IMAGE (or leave both out for the "
                             "variant's base, or the spec's image.base)")
        from nodeweave.cli.habits.output import check_image_reference

        base = check_image_reference(given, "--build-arg BASE_IMAGE")
    if "PIP_NO_INDEX" in build_args:
        given = build_args.pop("PIP_NO_INDEX").strip().lower()
        if given not in _TRUE + _FALSE:
            raise UsageError(f"--build-arg PIP_NO_INDEX={given!r} is not accepted: --offline (pip uses the wheelhouse "
                             "only), or leave it out (pip looks in the wheelhouse, then the index)")
        offline = given in _TRUE
    return base, offline


def _engine_for_dry_run(engine_name: Optional[str]):
    """(the engine a real build would use, or None when it does not answer; the kind the plan shows: the engine
    named, else the first installed, as the real build picks; what the real build would end with, or None)."""
    from nodeweave.build import detect_engine
    from nodeweave.engines import installed_engine
    from nodeweave.errors import EnvironmentProblem

    try:
        engine = detect_engine(engine_name)
        return engine, engine.kind, None
    except EnvironmentProblem as problem:
        return None, installed_engine(engine_name) or "podman", f"the real build would end with exit 3: {problem}"


def check_base_here(plan, base_option: Optional[str], kind: str, answered: bool, dry_run: bool) -> Optional[str]:
    """The base the build pulls (``plan``'s BASE_IMAGE: ``--base``, ``--build-arg BASE_IMAGE``, the spec's
    image.base or its build_args), when it names this machine's store (``localhost/...``, ``localhost:5000/...``:
    never pulled from elsewhere), must be in ``kind``'s store, checked at dry run too, as ``--network`` is: a tag
    missing there (a typo: ``bookwrom``) ended a real build in three pull retries from https://localhost/ and
    exit 1 (walk12 C9). Missing is said by the one rule ``up --image`` answers by (``pullable.absent_here``: exit
    3, naming the local images nearest it; walk18a A10); the dry run notes it. None when it is there (or the name
    is a registry's), else the note a dry run prints."""
    from nodeweave.build.plan import BASE_IMAGE_ARG
    from nodeweave.cluster.pullable import absent_here, machine_local

    ref = plan.build_args.get(BASE_IMAGE_ARG)
    if not ref or not machine_local(ref):
        return None
    given = ("--base" if ref == base_option else "the base (image.base, or BASE_IMAGE of image.build_args)")
    if not answered:
        return f"{given} {ref}: whether {kind}'s store has it could not be asked (the engine does not answer)"
    absent = absent_here(ref, kind, option="--base" if given == "--base" else "a base",
                         first=f"`{kind} load` or `{kind} build` it")
    if absent is None:
        return None
    said = f"{given}: {absent}"
    if dry_run:
        return f"the real build would end with exit 3: {said}"
    from nodeweave.errors import EnvironmentProblem

    raise EnvironmentProblem(said)


def _checked_tag(tag: Optional[str]) -> Optional[str]:
    """--tag as the spec's image.tag accepts it: refused here, not by the engine after a long build."""
    from nodeweave.spec.rules import IMAGE_TAG

    if tag is not None and not IMAGE_TAG.check(tag):
        raise UsageError(f"--tag {tag!r} is not accepted: {IMAGE_TAG.accepted}")
    return tag


@image_app.command("build")
def build(
    variant: Optional[str] = typer.Argument(None, autocompletion=complete_variants, help="images catalogue key (`nodeweave image variants`), e.g. cpu, "
                                            "cuda12, rocm70 (default: the spec's image.variant)"),
    spec_path: Optional[Path] = spec_option("The cluster spec"),
    context: Optional[Path] = typer.Option(None, "--context", help="build context (default: the spec's folder, "
                                           "where `nodeweave render` wrote entrypoint/; it must hold what the "
                                           "Dockerfile copies)"),
    base: Optional[str] = typer.Option(None, "--base", callback=image_reference, help="base image instead of the variant's (BASE_IMAGE build arg; "
                                       "overrides image.base)"),
    push: bool = typer.Option(False, "--push", help="push every tag after the build; the registry's digest is "
                              "recorded in .nodeweave/pushed.json (kubernetes `up` pins it)"),
    wheelhouse: Optional[Path] = typer.Option(None, "--wheelhouse", help="a directory of wheels to offer pip "
                                              "(linked into <context>/wheelhouse for the build and taken out "
                                              "after it, done or not)"),
    offline: bool = typer.Option(False, "--offline", help="no registry or index: pip uses the wheelhouse only "
                                 "(PIP_NO_INDEX=1); docker builds with BuildKit's built-in Dockerfile frontend"),
    network: Optional[str] = typer.Option(None, "--network", help="build-time network, e.g. host (apt reaches a mirror); a network's name, "
                                         "container:ID or ns:PATH must exist on this machine (checked at --dry-run too; "
                                         "docker's BuildKit takes default, host or none)"),
    tag: Optional[str] = typer.Option(None, "--tag", help="a fixed tag instead of <variant>-<git sha> (overrides image.tag)"),
    build_arg: List[str] = typer.Option([], "--build-arg", help="KEY=VALUE, repeatable; over image.build_args; "
                                          "BASE_IMAGE=... is read as --base and PIP_NO_INDEX=1 as --offline (beside "
                                          "them, even with the same value: refused); a KEY "
                                          "the Dockerfile declares no ARG for (the proxies aside), a secret-looking "
                                          "KEY (*TOKEN*, *PASSWORD*, ...) or a URL with user:password@ is refused: no "
                                          "step would see it, or ps would"),
    engine_name: Optional[str] = typer.Option(None, "--engine", autocompletion=complete_from("podman", "docker"),
                                              help="docker or podman (default: $NODEWEAVE_ENGINE, "
                                              "else the first that answers, podman before docker, as every verb; docker builds "
                                              "through buildx, or `docker build` with BuildKit where buildx is missing)"),
    no_cache: bool = typer.Option(False, "--no-cache", help="ignore the layer cache"),
    force: bool = typer.Option(False, "--force", help="replace the image at a tag that holds another folder's build "
                               "of a job of the same name (refused without it: that folder's next `up` would run "
                               "this folder's code)"),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="show the build's steps, not the engine's whole log"),
    dry_run: bool = typer.Option(False, "--dry-run", help="print the plan: the build's and pushes' commands, the "
                                 "ones a real build runs (-o json: as JSON); build nothing"),
    target: str = typer.Option("local", "--target", "-t", autocompletion=complete_from("local", "openshift"), help="local (this machine's engine) or openshift (apply "
                               "the spec's BuildConfig, upload what the Dockerfile reads: oc start-build "
                               "--from-dir --follow --wait; it builds from the spec, so --base, --tag, --build-arg, "
                               "--wheelhouse, --offline, --network, --engine, --no-cache, --force and --push (its build always lands "
                               "in the cluster's own registry) are refused there)"),
    output: str = output_option(), as_json: bool = json_option(),
) -> None:
    """Build one variant's image from the Dockerfile rendered for the spec, tag it <variant>-<sha> and <variant>.

    Exit 2 for bad input, 3 when the engine is missing, a localhost/ base is not in its store, or a registry (or
    pip's index) cannot be reached, 1 when the build itself fails (a step of the Dockerfile)."""
    from nodeweave.usertext import console as people_console

    from nodeweave.build import BUILDX, check_network_exists, detect_engine, prepare_build
    from nodeweave.build.plan import image_plan
    from nodeweave.cli.habits.output import data_format
    from nodeweave.spec import load_spec

    fmt = data_format(as_json, output)
    spec_path = find_spec(spec_path)
    spec = load_spec(spec_path)
    variant, tag = variant or spec.image.variant, _checked_tag(tag)
    from nodeweave.specpath import spec_folder

    context_dir = (context or spec_folder(spec_path))
    if not context_dir.is_dir():
        from nodeweave.entrypoint.bounded import not_a_folder

        raise UsageError(f"--context {context_dir} {not_a_folder(context_dir)}; accepted: the folder the build reads (default: the "
                         "spec's folder)")
    # the build writes <context>/wheelhouse/ and the Dockerfile it renders: --out's rule for a folder written into,
    # the default context (the spec's folder) judged as a given one is (walk10 A12: a read-only checkout was
    # refused as --context and planned as the default)
    from nodeweave.failures import writable_dir

    writable_dir(context_dir, "--context" if context is not None else "the build context (the spec's folder, "
                 "--context's default)", missing="that exists: the folder the build reads and writes its "
                 "wheelhouse/ into", system_ok=context is None)
    console = people_console(stderr=True, soft_wrap=True)
    if target != "local":
        refuse_local_build_flags(target, {"--base": base, "--tag": tag, "--build-arg": build_arg,
                                          "--wheelhouse": wheelhouse, "--offline": offline, "--network": network,
                                          "--engine": engine_name, "--no-cache": no_cache, "--push": push,
                                          "--force": force})
        _build_on_openshift(spec, spec_path, context_dir.resolve(), variant, target, dry_run, console, fmt)
        return
    build_args = _parse_build_args(build_arg)
    base, offline = _options_spelt_as_build_args(build_args, base, offline)
    options = dict(base=base, push=push, wheelhouse=wheelhouse, offline=offline, network=network, tag=tag,
                   build_args=build_args, spec_path=spec_path)
    scratch = spec_folder(spec_path) / _scratch(spec.name, variant)  # a Dockerfile rendered for the spec
    # Bad input is named before the machine is asked for an engine (whose kind the Dockerfile depends on).
    first = prepare_build(spec, variant, context_dir, scratch, dry_run=True, **options)
    if dry_run:
        engine, kind, would_fail = _engine_for_dry_run(engine_name)
    else:
        engine, would_fail = detect_engine(engine_name), None
        kind = engine.kind
    unasked = check_network_exists(network, kind, engine is not None)  # a dry run checks it too
    unasked = [note for note in (unasked, check_base_here(first.plan, base, kind, engine is not None, dry_run)) if note]
    if unasked:  # a dry run checks the base too (walk12 C9)
        would_fail = "; ".join([would_fail, *unasked] if would_fail else unasked)
    prepared = prepare_build(spec, variant, context_dir, scratch, dry_run=dry_run, engine_kind=kind,
                             write_dockerfile=False, **options)
    prepared.notes.extend(_mark_build(prepared.plan, spec, spec_path, context_dir, kind, force))
    plan = image_plan(prepared, _scratch(spec.name, variant), kind, engine.builder if engine else BUILDX, no_cache,
                      (would_fail,) if would_fail else ())
    if dry_run:
        show_plan(plan, fmt)  # its notes: what the build writes beside the Dockerfile, what would fail
        return
    try:  # the notes are the plan's: execute says them once (replay11 R5: the wheelhouse line came twice)
        result = _execute_build(plan, engine, prepared.plan, spec_path, quiet, console)
    finally:  # done, failed or interrupted: the wheels linked in for it leave the user's folder (walk10 C12)
        prepared.clean_up()
    _report(result, variant, prepared.plan, spec_path)


def _mark_build(plan, spec, spec_path: Optional[Path], context: Path, engine_kind: Optional[str],
                force: bool = False) -> List[str]:
    """The image carries its folder's mark (its own keys: cluster/identity.py), and a tag that holds another
    folder's build of a job of the same name is refused, exit 2, its dry run too: this build would replace it for
    both, and that folder's next `up` would run this folder's code (walk16 A4; walk8 A3 only said it); --force
    replaces it, said. Here, not in build/: the mark and the engine's store are the cluster's (build/ stays below
    cluster/)."""
    from nodeweave.cluster.identity import JobMark
    from nodeweave.cluster.pullable import built_elsewhere
    from nodeweave.specpath import spec_folder

    mark = JobMark.of(spec_folder(spec_path) if spec_path is not None else context, spec.name)
    plan.labels.update(mark.image_labels())
    notes = []
    for tag in plan.tags:
        other = built_elsewhere(tag, engine_kind, mark.owner)
        if other and other.startswith("/") and not Path(other).is_dir():  # no next `up` there to run this code
            notes.append(f"{tag} held the image built from {other}, a folder no longer here: this build replaces it")
            continue
        if other and not force:
            raise UsageError(f"{tag} holds the image built from {other} (its spec is also named {spec.name}): this "
                             "build would replace it there too, and that folder's next `up` would run this folder's "
                             "code; give one of the specs another name (or image.registry or image.tag), or --tag; "
                             "--force to replace it")
        if other:
            notes.append(f"{tag} now holds the image built from {other} (its spec is also named {spec.name}): this "
                         f"build replaces it there too (--force), and that folder's next `up` refuses this folder's "
                         "image")
    return notes


def _scratch(job: str, variant: str) -> str:
    """Where a build writes the Dockerfile rendered for the spec, beside the spec (nodeweave's own folder)."""
    return f".nodeweave/{job}/build/{variant}"


def _execute_build(plan, engine, build, spec_path: Path, quiet: bool, console):
    """The plan's build phase through the one executor (NODEWEAVE_PLAN_RECORD records it); the build's result."""
    from nodeweave.build.sessions import LocalBuild
    from nodeweave.cluster.execute import Execution, execute

    session = LocalBuild(engine, build, console, quiet)
    from nodeweave.specpath import spec_folder

    execute(plan, Execution(spec_folder(spec_path), lambda line: console.print(line, markup=False),
                            builds=session))
    return session.results[0]


def _report(result, variant: str, plan, spec_path: Path) -> None:
    from nodeweave.usertext import console as people_console

    if result.digests:
        from nodeweave.build.pushed import record_push

        from nodeweave.specpath import spec_folder

        record_push(spec_folder(spec_path), result.digests)
    people_console().print(_summary(variant, plan, result))
    if result.digests:
        digest = result.digests[plan.tags[0]]
        typer.echo(f"pushed {plan.tags[0]} as {digest} (recorded in .nodeweave/pushed.json; `nodeweave up` on "
                   f"Kubernetes pins it); to pin it in the rendered files: image: {{digest: \"{digest}\"}}")


# What the cluster's BuildConfig uses in place of each flag of this machine's build, and where that is set: the spec's
# field where one exists (image.base, image.tag, image.build_args), else what there is (walk9 A34: "set that in the
# spec" was said for --network, --engine, --offline and --no-cache, which no spec field sets; --push was taken and
# did nothing, the BuildConfig always pushing to the cluster's own registry).
ON_THE_CLUSTER = {
    "--base": "builds on the spec's image.base: set it there",
    "--tag": "tags with the spec's image.tag: set it there",
    "--build-arg": "takes the spec's image.build_args: set them there",
    "--wheelhouse": "uploads the context's wheelhouse/ folder with its sources: put the wheels there",
    "--offline": "uses the cluster's own network, which nodeweave does not set",
    "--network": "uses the cluster's own network, which nodeweave does not set",
    "--engine": "runs on the cluster's builder, not an engine of this machine",
    "--no-cache": "uses the cluster's own layer cache, which nodeweave does not set",
    "--push": "always pushes, to an ImageStreamTag of the cluster's own registry",
    "--force": "writes to the cluster's own ImageStreamTag, no image of this machine's store",
}


def refuse_local_build_flags(target: str, given: dict) -> None:
    """A build flag of this machine's engine given with ``-t openshift`` is refused, exit 2, naming what the cluster
    builds from instead (and where that is set, only where something is): the BuildConfig never saw them, and the
    plan was the same with or without (walk7 A18, walk9 A34)."""
    said = [flag for flag, value in given.items() if value not in (None, False, [], ())]
    if said:
        why = "; ".join(f"{flag}: its BuildConfig {ON_THE_CLUSTER[flag]}" for flag in said)
        raise UsageError(f"{', '.join(said)} {'does' if len(said) == 1 else 'do'} nothing for -t {target} ({why}); "
                         f"leave {'it' if len(said) == 1 else 'them'} out (for -t local, this machine's engine)")


def _build_on_openshift(spec, spec_path: Path, context_dir: Path, variant: str, target: str, dry_run: bool,
                        console, fmt: str) -> None:
    from nodeweave.build.openshift import build_steps
    from nodeweave.build.plan import cluster_image_plan
    from nodeweave.build.sessions import OpenShiftBuild
    from nodeweave.cluster.execute import Execution, execute

    if target != "openshift":
        from nodeweave.failures import target_meant

        raise UsageError(f"--target {target!r} is not accepted: local or openshift{target_meant(target)}")
    cluster = build_steps(spec, spec_path, context_dir, variant)
    plan = cluster_image_plan(cluster, variant)
    refused = cluster.refusal()  # no oc, or a cluster it cannot reach: before anything is written, as its dry run says
    if dry_run:
        if refused is not None:
            from dataclasses import replace

            plan = replace(plan, notes=(*plan.notes, f"the real build would end with exit 3: {refused}"))
        show_plan(plan, fmt)
        return
    if refused is not None:
        raise refused

    def say(line: str) -> None:
        console.print(line, highlight=False, markup=False)

    from nodeweave.specpath import spec_folder

    execute(plan, Execution(spec_folder(spec_path), lambda line: console.print(line, markup=False),
                            builds=OpenShiftBuild(cluster, context_dir, say)))


def _summary(variant: str, plan, result) -> Table:
    from nodeweave.tables import Table

    table = Table(title=f"{variant} image", show_header=False)
    table.add_row("image", plan.image)
    for extra in plan.tags[1:]:
        table.add_row("also tagged", extra)
    table.add_row("id", result.image_id[:19])
    table.add_row("size", f"{result.size_bytes / 2**20:,.0f} MiB")
    table.add_row("time", f"{result.seconds:.1f} s")
    table.add_row("steps", f"{result.steps} ({result.cached_steps} from cache)")
    if result.rebuilt_steps and result.cached_steps:
        table.add_row("ran", "\n".join(step[:70] for step in result.rebuilt_steps))
    table.add_row("pushed", "yes" if plan.push else "no")
    if result.digests:
        table.add_row("digest", result.digests[plan.tags[0]])
    return table


def register(app: typer.Typer) -> None:
    app.add_typer(image_app, name="image")
