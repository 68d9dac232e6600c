"""The fifth walk's image rows (issue 43), one test per class: each walks the members from the registry that owns
the rule (the catalogue's variants and pins, the launchers' option tables, the host folders, the spec's mounts),
so a new member is covered without a new test.

W22 the offline pip line names each variant's torch index; W23 a requirement contradicting the variant's pins or
naming a path of this machine; W24 a password in any URL the image keeps; W51 a push to localhost/ refused before
the build; W52 --wheelhouse names the folder given; W61 the launchers' own rendezvous switches; W77 secret-looking
build args kept off the command line; W78 image.project's source and path; W79 host paths that hand over the host.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cli_run import in_process as run_cli, one_line
from nodeweave.catalogue import VARIANTS
from nodeweave.entrypoint.planning import launcher_options
from nodeweave.errors import EXIT_USAGE, UsageError
from nodeweave.spec import parse_spec

SPEC = "name: team\nimage: {variant: cpu}\nnodes: 2\nlauncher: {script: train.py}\n"
REPO = Path(__file__).resolve().parents[1]


def refusal(text: str, base_dir=None) -> str:
    with pytest.raises(UsageError) as caught:
        parse_spec(text, "s.yaml", base_dir=base_dir)
    return one_line(str(caught.value))


@pytest.fixture
def team(tmp_path, monkeypatch):
    (tmp_path / "nodeweave.yaml").write_text(SPEC)
    (tmp_path / "train.py").write_text("print(1)\n")
    (tmp_path / "entrypoint").mkdir()
    (tmp_path / "entrypoint" / "nodeweave-entrypoint.pyz").write_bytes(b"PK")  # the build copies it
    monkeypatch.chdir(tmp_path)
    return tmp_path


def with_image(team: Path, image: str, extra: str = "") -> None:
    (team / "nodeweave.yaml").write_text(SPEC.replace("{variant: cpu}", image) + extra)


# -- W79: a host path that hands the node the host ---------------------------------------------------------------

HOST_FIELDS = {"workspace.host_path": "workspace: {{host_path: '{}'}}\n",
               "cache.host_path": "cache: {{host_path: '{}'}}\n",
               "volumes[0].host_path": "volumes: [{{name: v, path: /data, host_path: '{}', read_only: true}}]\n"}


@pytest.mark.parametrize("field", sorted(HOST_FIELDS))
def test_every_host_path_that_hands_over_the_host_is_refused_in_every_field(field):
    from nodeweave.spec.fields import HOST_ONLY

    above = {folder.rsplit("/", 1)[0] or "/" for folder in HOST_ONLY}  # /var holds /var/run, / holds them all
    for path in sorted({"/", "//", *HOST_ONLY, *(f + "/x" for f in HOST_ONLY), "/var/run/docker.sock",
                        "/run/containerd/containerd.sock", *above}):
        message = refusal(SPEC + HOST_FIELDS[field].format(path))
        assert f"{field}: {path!r} would hand every node" in message and "read-only or not" in message, message
    parse_spec(SPEC + HOST_FIELDS[field].format("/data/datasets"), "s.yaml")  # a folder of the job's own


# -- W61: the launchers' own single-node and rendezvous switches ---------------------------------------------------


def test_every_switch_that_replaces_nodeweaves_rendezvous_is_refused_by_the_spec_and_the_entrypoint():
    assert "--standalone" in launcher_options.NEVER["torchrun"]
    for launcher, options in launcher_options.NEVER.items():
        for option in options:
            spellings = next((group for group in launcher_options.ALIASES.get(launcher, ()) if option in group),
                             (option,))
            for spelling in spellings:
                message = refusal(SPEC.replace("{script: train.py}", f"{{type: {launcher}, script: train.py, "
                                                                     f"options: ['{spelling}']}}"))
                assert "which nodeweave passes itself" in message, message
                with pytest.raises(Exception, match="which nodeweave passes"):
                    launcher_options.check(launcher, [spelling], [], "NODEWEAVE_LAUNCHER_OPTIONS")


# -- W78: image.project ------------------------------------------------------------------------------------------


def test_a_project_source_must_be_a_folder_and_its_path_no_mounts_place(tmp_path):
    (tmp_path / "code").mkdir()
    (tmp_path / "afile").write_text("")
    project = "image: {{variant: cpu, project: {{source: {}, path: {}}}}}\n"
    spec = SPEC.replace("image: {variant: cpu}\n", "")
    for source, why in (("missing", "does not exist"), ("afile", "is not a directory")):
        message = refusal(spec + project.format(source, "/opt/p"), tmp_path)
        assert f"image.project.source: {source!r} {why}" in message, message
    mounts = "workspace: {path: /work}\ncache: {path: /scratch}\nvolumes: [{name: d, path: /data, host_path: /srv/d}]\n"
    for field, mount in (("workspace.path", "/work"), ("cache.path", "/scratch"), ("volumes[0].path", "/data"),
                         ("nodeweave", "/dev/shm")):
        for path in (mount, mount + "/code"):
            message = refusal(spec + mounts + project.format("code", path), tmp_path)
            assert "image.project.path: " + path in message and "would be hidden on every node" in message, message
            if field != "nodeweave":
                assert field in message
    parse_spec(spec + mounts + project.format("code", "/opt/code"), "s.yaml", base_dir=tmp_path)


# -- W51, W52, W22: what image build refuses before the build ----------------------------------------------------


def test_a_push_to_localhost_is_refused_before_the_build_and_a_registry_is_taken(capsys, team):
    code, out, err = run_cli(capsys, "image", "build", "--push", "--dry-run")
    assert code == EXIT_USAGE and "--push would send localhost/nodeweave/team:cpu to localhost/" in one_line(err)
    assert "podman buildx build" not in out
    with_image(team, "{variant: cpu, registry: 'localhost:5000/me'}")
    code, out, err = run_cli(capsys, "image", "build", "--push", "--dry-run")
    assert code == 0 and "push localhost:5000/me/team:cpu" in out, err


def test_the_wheelhouse_given_is_the_one_named_missing_a_file_or_empty(capsys, team):
    (team / "given").mkdir()
    (team / "afile").write_text("")
    for flag, said in (("nowh", "does not exist; accepted: a directory of wheels (`python -m pip download -d "),
                       ("afile", "is not a directory; accepted: a directory of wheels")):
        code, _, err = run_cli(capsys, "image", "build", "--dry-run", "--wheelhouse", flag)
        assert code == EXIT_USAGE and f"--wheelhouse {team / flag} {said}" in one_line(err), err
    for flag, said in (("nowh", "does not exist"), ("afile", "is not a directory")):  # --context: the same words
        code, _, err = run_cli(capsys, "image", "build", "--dry-run", "--context", flag)
        assert code == EXIT_USAGE and f"--context {flag} {said}" in one_line(err), err
    code, _, err = run_cli(capsys, "image", "build", "--dry-run", "--offline", "--wheelhouse", "given")
    line = one_line(err)
    assert code == EXIT_USAGE and f"--wheelhouse {team / 'given'} holds none" in line, line
    assert "`python -m pip download -d given " in line and "pass --wheelhouse" not in line


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_the_offline_pip_line_downloads_each_variants_own_torch(capsys, team, variant):
    row = VARIANTS[variant]
    code, _, err = run_cli(capsys, "image", "build", variant, "--offline", "--dry-run")
    line = one_line(err)
    assert code == EXIT_USAGE and f"--extra-index-url {row.torch_index_url} " in line, line
    assert row.torch_requirement in line


def test_the_documented_offline_line_is_what_the_cpu_hint_prints(capsys, team):
    (team / "requirements.txt").write_text("numpy==1.26.4\n")
    with_image(team, "{variant: cpu, requirements: requirements.txt}")
    code, _, err = run_cli(capsys, "image", "build", "--offline", "--dry-run")
    printed = one_line(err).split("fill it: `", 1)[1].split("`", 1)[0]
    assert printed in (REPO / "docs" / "images.md").read_text()


# -- W23, W24: what image.requirements and image.pip may say -------------------------------------------------------

def pinned_names():
    """(variant, name, version) of every pin of every variant: what a requirement may not contradict."""
    for key, row in sorted(VARIANTS.items()):
        for pinned in row.pinned_stack:
            name, version = pinned.split("==")
            yield key, name, version


@pytest.mark.parametrize("variant, name, version", list(pinned_names()))
def test_a_pin_contradicting_the_variants_is_refused_in_the_file_and_in_image_pip(tmp_path, variant, name, version):
    other = version + ".1"
    spec = SPEC.replace("{variant: cpu}", f"{{variant: {variant}, requirements: r.txt}}")
    for line in (f"{name}=={other}", f"{name.upper()}=={other}", f"{name} @ https://example.com/{name}.whl"):
        (tmp_path / "r.txt").write_text(f"numpy==1.26.4\n{line}\n")
        message = refusal(spec, tmp_path)
        assert f"image.requirements: r.txt:2: {line!r}" in message and f"image variant {variant} installs " \
            f"{name}=={version}" in message, message
    pip = SPEC.replace("{variant: cpu}", f"{{variant: {variant}, pip: ['{name}=={other}']}}")
    assert f"image.pip[0]: '{name}=={other}' pins" in refusal(pip)
    (tmp_path / "r.txt").write_text(f"{name}=={version}\n")  # the variant's own pin is fine
    parse_spec(spec, "s.yaml", base_dir=tmp_path)


def test_a_pin_is_weighed_against_the_variant_built_too(capsys, team):
    (team / "requirements.txt").write_text("torch==2.13.0\n")
    with_image(team, "{variant: cpu, requirements: requirements.txt}")
    assert run_cli(capsys, "validate")[0] == 0
    other = next(key for key, row in VARIANTS.items() if row.torch_version != "2.13.0")
    code, _, err = run_cli(capsys, "image", "build", other, "--dry-run")
    assert code == EXIT_USAGE and f"but image variant {other} installs torch==" in one_line(err), err


@pytest.mark.parametrize("line", ["foo @ file:///home/me/foo.whl", "foo @ file:/home/me/foo.whl",
                                  "-f /home/me/wheels", "--find-links=./wheels", "--index-url file:///srv/simple"])
def test_a_path_of_this_machine_is_refused(tmp_path, line):
    (tmp_path / "r.txt").write_text(line + "\n")
    message = refusal(SPEC.replace("{variant: cpu}", "{variant: cpu, requirements: r.txt}"), tmp_path)
    assert f"r.txt:1: {line!r}" in message and "wheelhouse/" in message, message


SECRET = "s3cretPassw0rd"
TOKEN = "ghp_" + "a1" * 18


@pytest.mark.parametrize("url", [f"https://user:{SECRET}@pypi.example.com/simple", f"https://{TOKEN}@pypi.example.com/simple"])
def test_a_password_in_any_url_the_image_keeps_is_refused_and_never_printed(tmp_path, url):
    lines = [f"{option} {url}" for option in ("--index-url", "-i", "--extra-index-url", "--find-links", "-f")]
    lines += [f"--index-url={url}", f"foo @ {url}/foo-1.0-py3-none-any.whl"]
    spec = SPEC.replace("{variant: cpu}", "{variant: cpu, requirements: r.txt}")
    places = []
    for line in lines:
        (tmp_path / "r.txt").write_text("numpy==1.26.4\n" + line + "\n")
        places.append(refusal(spec, tmp_path))
    image = "{{variant: cpu, {}}}"
    places.append(refusal(SPEC.replace("{variant: cpu}", image.format(f"pip: ['foo @ {url}/foo.whl']"))))
    places.append(refusal(SPEC.replace("{variant: cpu}", image.format(f"build_args: {{PIP_INDEX_URL: '{url}'}}"))))
    places.append(refusal(SPEC.replace("{variant: cpu}", image.format(
        f"project: {{run: ['git clone {url.replace('/simple', '/x.git')} .']}}"))))
    places.append(refusal(SPEC + f"kubernetes: {{openshift: true, build: {{source: git, git: '{url}/x.git'}}}}\n"))
    for message in places:
        assert "carries a password in its URL" in message and "***@pypi.example.com" in message, message
        assert SECRET not in message and TOKEN not in message
    (tmp_path / "r.txt").write_text("--index-url https://__token__:${PIP_TOKEN}@pypi.example.com/simple\n")
    parse_spec(spec, "s.yaml", base_dir=tmp_path)  # a variable pip expands: no secret in the file


# -- W77: secret-looking build args ----------------------------------------------------------------------------

SECRET_NAMES = ("HF_TOKEN", "MY_SECRET", "DB_PASSWORD", "DB_PASSWD", "AWS_CREDENTIALS", "OPENAI_API_KEY", "APIKEY",
                "SSH_PRIVATE_KEY", "AWS_ACCESS_KEY")


def test_a_secret_looking_build_arg_is_noted_kept_off_the_command_line_and_refused_as_a_flag(capsys, team):
    args = ", ".join(f"{name}: value-of-{name}" for name in SECRET_NAMES)
    with_image(team, f"{{variant: cpu, build_args: {{{args}, PLAIN: kept}}}}")
    code, out, err = run_cli(capsys, "validate", "-o", "json")
    notes = json.loads(out)["notes"]
    assert code == 0 and all(any(f"image.build_args.{name} looks like a secret" in note for note in notes)
                             for name in SECRET_NAMES), notes
    code, out, err = run_cli(capsys, "image", "build", "--dry-run")
    assert code == 0 and "--build-arg PLAIN=kept" in out, err
    assert "value-of-" not in out and "value-of-" not in err
    for name in SECRET_NAMES:
        code, out, err = run_cli(capsys, "image", "build", "--dry-run", "--build-arg", f"{name}=x1")
        assert code == EXIT_USAGE and f"--build-arg {name} looks like a secret" in one_line(err), err


def test_init_leaves_out_a_requirements_file_the_variant_contradicts_and_says_which_line(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "train.py").write_text("print(1)\n")
    (tmp_path / "requirements.txt").write_text("numpy==1.26.4\ntorch==2.5.0\n")
    code, out, err = run_cli(capsys, "init", "--dry-run")
    assert code == 0 and "requirements: requirements.txt" not in out, out
    assert "requirements.txt:2: 'torch==2.5.0' pins torch 2.5.0" in one_line(err) and "change that line" in err
