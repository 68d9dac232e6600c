"""Render one variant's Dockerfile from the catalogue row and the spec.

The template (``templates/Dockerfile.j2``) holds the layout; this module
decides every value that reaches it and quotes each one here, so the
template never sees a raw spec string. Jinja runs with ``StrictUndefined``:
a value the template asks for but nobody passed is an error, not a blank.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, Mapping, Optional, Tuple

import jinja2

import nodeweave
from nodeweave.catalogue import ACCELERATE, BUILD_TOOLS, DEEPSPEED, EXTRAS
from nodeweave.targets.images.jinja_cache import QuietBytecodeCache
from nodeweave.targets.images.quoting import dockerfile_word, exec_form, is_single_line, run_lines
from nodeweave.resolve import Resolved
from nodeweave.spec.rules import looks_secret  # one rule: the renderers, the build plan, validate's note



@dataclass(frozen=True)
class BuildArg:
    name: str
    default: Optional[str]  # already quoted; None when the value cannot sit on one line
    secret: bool = False  # left undeclared: no build step, and so no image history, sees it


_ENV = jinja2.Environment(
    loader=jinja2.PackageLoader("nodeweave.targets.images", "templates"),
    undefined=jinja2.StrictUndefined,
    trim_blocks=True,
    lstrip_blocks=True,
    keep_trailing_newline=True,
    autoescape=False,
    bytecode_cache=QuietBytecodeCache(),  # compiled once per template text, not once per call
)


def _user_build_args(build_args: Mapping[str, str], template_args: Mapping[str, str]) -> Tuple[BuildArg, ...]:
    """Spec build args the template does not declare itself, sorted for stable output."""
    declared = []
    for name in sorted(build_args):
        if name in template_args:
            continue
        value = build_args[name]
        if looks_secret(name):
            declared.append(BuildArg(name, None, secret=True))
        elif not is_single_line(value):
            declared.append(BuildArg(name, None))
        else:
            declared.append(BuildArg(name, dockerfile_word(value, f"image.build_args.{name}")))
    return tuple(declared)


def _template_args(r: Resolved) -> Dict[str, str]:
    """``ARG`` line per name the template declares; a spec build arg of that name sets its default."""
    variant, spec = r.variant, r.spec
    defaults: Dict[str, Optional[str]] = {
        "BASE_IMAGE": r.base_image,
        "DEBIAN_FRONTEND": "noninteractive",
        "PIP_FIND_LINKS": "/wheelhouse",
        # 0: pip may use its index; 1 (--offline) = wheelhouse only. A default, as every other ARG has: only
        # offline builds pass it, and podman warned on every online build to set it (walk17 A19)
        "PIP_NO_INDEX": "0",
        "DS_BUILD_OPS": "0",
        "DS_ACCELERATOR": variant.ds_accelerator,
        "WORKSPACE_DIR": spec.workspace.path,
        "CACHE_DIR": spec.cache.path,
        "VERSION": nodeweave.__version__,
        "REVISION": "unknown",
        "SOURCE": "unknown",
    }
    if variant.accelerator_arch_arg is not None:
        name, default = variant.accelerator_arch_arg
        defaults[name] = default
    lines = {}
    for name, default in defaults.items():
        field, value = name, default
        if name in spec.image.build_args:
            field, value = f"image.build_args.{name}", spec.image.build_args[name]
            if not is_single_line(value):
                value = None  # declared without a default: pass it with --build-arg
        lines[name] = f"ARG {name}" if value is None else f"ARG {name}={dockerfile_word(value, field)}"
    return lines


REQUIREMENTS_COPY = "/tmp/nodeweave-requirements/requirements.txt"


def _extras(r: Resolved) -> list:
    """The spec's catalogue extras that apply to this variant, each step ready for the template."""
    out = []
    for key in r.spec.image.extras:
        extra = EXTRAS[key]
        if not extra.applies_to(r.variant):
            continue
        steps = [(instruction, run_lines(text) if instruction == "RUN" else text) for instruction, text in extra.steps]
        env = [f"{name}={dockerfile_word(value, f'image.extras {key}').replace(chr(92) + '$', '$')}"
               for name, value in extra.env]  # the catalogue's own ${...} expand on purpose
        out.append({"key": key, "summary": extra.summary, "steps": steps, "env": env})
    return out


def _contents(r: Resolved) -> dict:
    """What the spec adds to the image: apt and pip packages, a requirements file, project code, extras."""
    image = r.spec.image
    project = image.project
    return {
        "apt": image.apt,
        "pip": [dockerfile_word(req, "image.pip") for req in image.pip],
        "requirements": image.requirements,
        "requirements_copy": REQUIREMENTS_COPY,
        "project": project and {
            "source": project.source,
            "path": project.path.rstrip("/") or "/",
            "run": run_lines(" && ".join(project.run)) if project.run else None,
        },
        "extras": _extras(r),
    }


def dockerfile_context(r: Resolved) -> dict:
    """Every value the template uses, quoted for a Dockerfile."""
    variant, spec = r.variant, r.spec
    args = _template_args(r)
    cache = spec.cache.path.rstrip("/")
    return {
        **_contents(r),
        "variant": variant,
        "args": args,
        "arch_arg": variant.accelerator_arch_arg[0] if variant.accelerator_arch_arg else None,
        "build_args": _user_build_args(spec.image.build_args, args),
        "build_tools": BUILD_TOOLS,
        "deepspeed": DEEPSPEED,
        "accelerate": ACCELERATE,
        "hf_home": dockerfile_word(f"{cache}/huggingface", "cache.path"),
        "torch_home": dockerfile_word(f"{cache}/torch", "cache.path"),
        "triton_cache_dir": dockerfile_word(f"{cache}/triton", "cache.path"),
        "title": dockerfile_word(spec.name, "name"),
        "description": dockerfile_word(f"{spec.name}: nodeweave training image, {variant.summary}", "name"),
        "master_port": int(spec.launcher.master_port),
        "cmd": exec_form([spec.launcher.script, *spec.launcher.args]),
    }


def render_dockerfile(r: Resolved) -> str:
    """The Dockerfile text for the spec seen through one variant; byte-stable."""
    return _ENV.get_template("Dockerfile.j2").render(dockerfile_context(r))
