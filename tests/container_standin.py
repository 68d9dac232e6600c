#!/usr/bin/env python3
"""Stand-ins for pyxis and Apptainer on the local Slurm, which has neither (Debian 12 packages neither).

They check what nodeweave asks of them against each tool's own grammar, then run the command on the host in a
private mount namespace with the asked mounts bound and the asked folder as the working one: the image is NOT
used (the host's venv runs), which is what these stand-ins cannot prove.

- ``srun`` (pyxis): takes the ``--container-*``/``--no-container-*`` words out of srun's argv and checks each
  against pyxis's option table (NVIDIA/pyxis args.c: the names, which take a value, the forms of image, mounts
  ``SRC:DST[:FLAGS]`` with ``+``-joined flags, workdir, name ``NAME[:auto|create|exec|no_exec]``, env names).
  Everything else goes unchanged to the real srun (``STANDIN_REAL_SRUN``), whose own parser reads it; the
  task's command is run behind ``enter`` with the mounts and workdir. ``srun --help`` gets pyxis's option
  lines appended, as with the plugin loaded. Each pyxis step is appended to ``$STANDIN_LOG`` (JSON lines).
- ``apptainer``: only ``exec [--nv|--rocm] [--bind SPEC]... [--pwd DIR] [--no-home] [--cleanenv] IMAGE CMD...``
  (Apptainer's ``exec`` flags by those names); any other verb or option, a bad bind or image exits 255 as
  apptainer does on bad usage.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

HERE = os.path.abspath(__file__)
PYXIS_VALUED = ("container-image", "container-mounts", "container-workdir", "container-name", "container-save",
                "container-env", "container-unshare")
PYXIS_FLAGS = ("container-mount-home", "no-container-mount-home", "container-remap-root", "no-container-remap-root",
               "container-entrypoint", "no-container-entrypoint", "container-entrypoint-log", "container-writable",
               "container-readonly")
SRUN_FLAGS = ("--label", "--overlap", "--quiet", "--pty", "--exclusive", "-l")
PYXIS_HELP = ("      --container-image=[USER@][REGISTRY#]IMAGE[:TAG]|PATH\n"
              "                              [pyxis] the image to use for the container\n")
IMAGE = re.compile(r"^([A-Za-z0-9._-]+@)?([A-Za-z0-9.-]+(:\d+)?#)?[a-z0-9]+([._/-][a-z0-9]+)*(:[A-Za-z0-9_.-]+)?$")
DOCKER_REF = re.compile(r"^docker://([A-Za-z0-9.-]+(:\d+)?/)?[a-z0-9]+([._/-][a-z0-9]+)*(:[A-Za-z0-9_.-]+)?$")
ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def refuse(tool: str, text: str, code: int) -> "None":
    sys.stderr.write(f"{tool}: error: {text}\n")
    sys.exit(code)


def pyxis_image(value: str) -> None:
    """enroot's URI: a registry host needs ``#`` (``nvcr.io#nvidia/pytorch``), else it is read as Docker Hub's."""
    if value.startswith("/"):
        return
    first = value.split("#", 1)[-1].split("/", 1)
    if "#" not in value and len(first) == 2 and ("." in first[0] or ":" in first[0] or first[0] == "localhost"):
        refuse("srun", f"pyxis: --container-image {value}: a registry host needs '#' (enroot's REGISTRY#IMAGE)", 1)
    if not IMAGE.match(value):
        refuse("srun", f"pyxis: --container-image {value}: not [USER@][REGISTRY#]IMAGE[:TAG] or a path", 1)


def pyxis_mounts(value: str) -> "list[tuple[str, str, bool]]":
    mounts = []
    for entry in value.split(","):
        parts = entry.split(":", 2)
        if not parts[0] or (len(parts) > 1 and not parts[1]):
            refuse("srun", f"pyxis: --container-mounts: invalid format: {entry}", 1)
        src, dst = parts[0], parts[1] if len(parts) > 1 else parts[0]
        flags = parts[2].split("+") if len(parts) > 2 and parts[2] else []
        if not (src.startswith("/") or src in ("tmpfs", "umount")) or not dst.startswith("/"):
            refuse("srun", f"pyxis: --container-mounts {entry}: this stand-in takes absolute SRC and DST", 1)
        if any(f not in ("ro", "rw", "rprivate", "private", "rbind", "bind", "nosuid", "nodev", "noexec")
               for f in flags):
            refuse("srun", f"pyxis: --container-mounts {entry}: unknown flag in {flags} (flags join with '+')", 1)
        mounts.append((src, dst, "ro" in flags))
    return mounts


def pyxis_option(word: str, seen: dict) -> None:
    name, eq, value = word[2:].partition("=")
    if name in PYXIS_FLAGS:
        if eq:
            refuse("srun", f"option '--{name}' doesn't allow an argument", 1)
    elif name not in PYXIS_VALUED or not value:
        refuse("srun", f"unrecognized option '{word}' (pyxis's are {PYXIS_VALUED + PYXIS_FLAGS})", 1)
    if name in seen and seen[name] != value:
        refuse("srun", f"pyxis: --{name} specified multiple times", 1)
    seen[name] = value
    if name == "container-image":
        pyxis_image(value)
    elif name == "container-mounts":
        pyxis_mounts(value)
    elif name == "container-workdir" and not value.startswith("/"):
        refuse("srun", f"pyxis: --container-workdir {value}: not an absolute path", 1)
    elif name == "container-name" and value.partition(":")[2] not in ("", "auto", "create", "exec", "no_exec"):
        refuse("srun", 'pyxis: --container-name: flag must be "auto", "create", "exec" or "no_exec"', 1)
    elif name == "container-env" and not all(ENV_NAME.match(n) for n in value.split(",")):
        refuse("srun", f"pyxis: --container-env {value}: NAME[,NAME...]", 1)


def srun(argv: "list[str]") -> None:
    real = os.environ["STANDIN_REAL_SRUN"]
    if argv == ["--help"]:
        helped = subprocess.run([real, "--help"], capture_output=True, text=True)
        sys.stdout.write(helped.stdout + PYXIS_HELP)
        sys.exit(helped.returncode)
    options, seen = [], {}
    for i, word in enumerate(argv):
        if word.startswith(("--container-", "--no-container-")):
            pyxis_option(word, seen)
        elif word.startswith("-"):
            if "=" not in word and word not in SRUN_FLAGS:
                refuse("srun-standin", f"cannot tell whether {word} takes a value: nodeweave passes --opt=value", 2)
            options.append(word)
        else:
            command = argv[i:]
            break
    else:
        command = []
    if not seen:
        os.execv(real, [real, *argv])
    if "container-image" not in seen:
        refuse("srun", "pyxis: this stand-in runs steps that name their image (--container-image)", 1)
    mounts = pyxis_mounts(seen.get("container-mounts", "")) if seen.get("container-mounts") else []
    with open(os.environ["STANDIN_LOG"], "a") as log:
        log.write(json.dumps({"pyxis": seen, "command": command}) + "\n")
    workdir = seen.get("container-workdir", "/")
    os.execv(real, [real, *options, sys.executable, HERE, "enter", json.dumps([mounts, workdir]), *command])


def apptainer(argv: "list[str]") -> None:
    if not argv or argv[0] != "exec":
        refuse("apptainer", f"this stand-in knows only `apptainer exec`, not {argv[:1]}", 255)
    mounts, workdir, i = [], None, 1
    while i < len(argv) and argv[i].startswith("-"):
        word = argv[i]
        name, eq, value = word.partition("=")
        if name in ("--nv", "--rocm", "--no-home", "--cleanenv", "-e") and not eq:
            i += 1
            continue
        if name not in ("--bind", "-B", "--pwd"):
            refuse("apptainer", f"unknown flag: {word}", 255)
        if not eq:
            if i + 1 >= len(argv):
                refuse("apptainer", f"flag needs an argument: {word}", 255)
            value, i = argv[i + 1], i + 1
        i += 1
        if name == "--pwd":
            workdir = value
            continue
        for spec in value.split(","):
            parts = spec.split(":")
            if len(parts) > 3 or not parts[0].startswith("/") or (len(parts) > 1 and not parts[1].startswith("/")) \
                    or (len(parts) == 3 and parts[2] not in ("ro", "rw")):
                refuse("apptainer", f"invalid bind path spec {spec}: src[:dest[:opts]], opts ro or rw", 255)
            mounts.append((parts[0], parts[1] if len(parts) > 1 else parts[0], len(parts) == 3 and parts[2] == "ro"))
    image, command = (argv[i], argv[i + 1:]) if i < len(argv) else ("", [])
    if not (DOCKER_REF.match(image) or image.endswith(".sif") and os.path.isfile(image) or os.path.isdir(image)):
        refuse("apptainer", f"could not open image {image!r}: not docker://REF, an existing .sif or a sandbox", 255)
    if not command:
        refuse("apptainer", "exec needs a command after the image", 255)
    os.execv(sys.executable, [sys.executable, HERE, "enter", json.dumps([mounts, workdir or os.getcwd()]), *command])


def enter(setting: str, command: "list[str]") -> None:
    """The "container": a private mount namespace with the binds made, the folder entered, the command exec'd."""
    if os.environ.get("STANDIN_INSIDE") != "1":
        os.environ["STANDIN_INSIDE"] = "1"
        os.execvp("unshare", ["unshare", "--mount", "--propagation", "private", sys.executable, HERE, "enter",
                              setting, *command])
    mounts, workdir = json.loads(setting)
    for src, dst, read_only in mounts:
        if src != dst:
            os.makedirs(dst, exist_ok=True)
            subprocess.run(["mount", "--bind", src, dst], check=True)
            if read_only:
                subprocess.run(["mount", "-o", "remount,bind,ro", dst], check=True)
    os.chdir(workdir)
    os.environ.pop("STANDIN_INSIDE")
    os.execvp(command[0], command)


def install(folder: str, tool: str) -> str:
    """``folder/tool``: a script that runs this stand-in as ``tool`` (srun or apptainer)."""
    path = os.path.join(folder, tool)
    with open(path, "w") as out:
        out.write(f'#!/bin/sh\nexec "{sys.executable}" "{HERE}" --as {tool} "$@"\n')
    os.chmod(path, 0o755)
    return path


if __name__ == "__main__":
    if sys.argv[1:2] == ["enter"]:
        enter(sys.argv[2], sys.argv[3:])
    elif sys.argv[1:3] == ["--as", "apptainer"]:
        apptainer(sys.argv[3:])
    elif sys.argv[1:3] == ["--as", "srun"]:
        srun(sys.argv[3:])
    else:
        refuse("container_standin", "run as --as srun|apptainer (see install())", 2)
