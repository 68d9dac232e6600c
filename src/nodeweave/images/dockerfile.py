"""Render one variant's Dockerfile from the catalogue row and the spec.

The template (``templates/Dockerfile.j2``) holds the layout; this module
decides every value that reaches it and quotes each one here, so the
template never sees a raw spec string. Jinja runs with ``StrictUndefined``:
a value the template asks for but nobody passed is an error, not a blank.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Optional, Tuple

import jinja2

import nodeweave
from nodeweave.images.catalogue import ACCELERATE, BUILD_TOOLS, DEEPSPEED, Variant
from nodeweave.images.quoting import dockerfile_word, exec_form, is_single_line

# ARGs the Dockerfile declares itself; a spec build arg of the same name sets its default.
BUILTIN_ARGS = ("BASE_IMAGE", "DS_BUILD_OPS", "TORCH_CUDA_ARCH_LIST", "PYTORCH_ROCM_ARCH", "VERSION")


@dataclass(frozen=True)
class BuildArg:
    name: str
    default: Optional[str]  # already quoted; None when the value cannot sit on one line


_ENV = jinja2.Environment(
    loader=jinja2.PackageLoader("nodeweave.images", "templates"),
    undefined=jinja2.StrictUndefined,
    trim_blocks=True,
    lstrip_blocks=True,
    keep_trailing_newline=True,
    autoescape=False,
)


def _user_build_args(build_args: Mapping[str, str]) -> Tuple[BuildArg, ...]:
    """Spec build args not already declared by the template, sorted for stable output."""
    declared = []
    for name in sorted(build_args):
        if name in BUILTIN_ARGS:
            continue
        value = build_args[name]
        quoted = dockerfile_word(value, f"image.build_args.{name}") if is_single_line(value) else None
        declared.append(BuildArg(name, quoted))
    return tuple(declared)


def _builtin_default(build_args: Mapping[str, str], name: str, default: str) -> str:
    value = build_args.get(name, default)
    return dockerfile_word(value, f"image.build_args.{name}")


def dockerfile_context(variant: Variant, spec: Any, base_image: Optional[str] = None) -> dict:
    """Every value the template uses, quoted for a Dockerfile."""
    build_args = dict(spec.image.build_args)
    base = base_image or variant.base_image
    cache = spec.cache.path.rstrip("/")
    arch = None
    if variant.accelerator_arch_arg is not None:
        name, default = variant.accelerator_arch_arg
        arch = {"name": name, "default": _builtin_default(build_args, name, default)}
    return {
        "variant": variant,
        "base_image": _builtin_default(build_args, "BASE_IMAGE", base),
        "build_args": _user_build_args(build_args),
        "build_tools": BUILD_TOOLS,
        "deepspeed": DEEPSPEED,
        "accelerate": ACCELERATE,
        "ds_build_ops": _builtin_default(build_args, "DS_BUILD_OPS", "0"),
        "arch_arg": arch,
        "version": _builtin_default(build_args, "VERSION", nodeweave.__version__),
        "workspace_dir": dockerfile_word(spec.workspace.path, "workspace.path"),
        "cache_dir": dockerfile_word(spec.cache.path, "cache.path"),
        "hf_home": dockerfile_word(f"{cache}/huggingface", "cache.path"),
        "torch_home": dockerfile_word(f"{cache}/torch", "cache.path"),
        "triton_cache_dir": dockerfile_word(f"{cache}/triton", "cache.path"),
        "title": dockerfile_word(spec.name, "name"),
        "description": dockerfile_word(f"{spec.name}: nodeweave training image, {variant.summary}", "name"),
        "master_port": int(spec.launcher.master_port),
        "cmd": exec_form([spec.launcher.script, *spec.launcher.args]),
    }


def render_dockerfile(variant: Variant, spec: Any, base_image: Optional[str] = None) -> str:
    """The Dockerfile text for ``variant``, customised by ``spec``; byte-stable."""
    return _ENV.get_template("Dockerfile.j2").render(dockerfile_context(variant, spec, base_image))
