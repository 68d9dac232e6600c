"""Which files a sync sends: one rule list, used three ways.

The same ordered rules become rsync ``--filter`` arguments, drive the local
walk that feeds the tar fallback, and define the file set the consistency
check digests, so the three can never disagree. Rules follow rsync's
semantics (first match wins, ``*`` stops at ``/``, ``**`` does not, a
trailing ``/`` matches directories only, a leading ``/`` anchors at the
source root); ``.nodeweaveignore`` and ``--exclude`` are written in
gitignore syntax (last match wins, ``!`` re-includes) and translated. In a
git checkout, what git itself ignores (every .gitignore, info/exclude) is
left out too, asked of ``git ls-files`` rather than re-implemented.

nodeweave's own state is never workspace: every ``.nodeweave/`` folder (cluster.json, the render
record, each job's check-in token) and the run folders (``runs/`` beside the spec) are left out
with or without git (issue 43, W10: outside git they went to every node, token included), and
listed as held back; ``--exclude '!runs/'`` (or a ``!`` line in .nodeweaveignore) is the explicit
way to send them anyway. The job token is also a credential: it stays back unless
``--include-secrets`` too.
"""

from __future__ import annotations

import os
import re
import stat
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from nodeweave.entrypoint import bounded
from nodeweave.entrypoint.quoting import as_typed
from nodeweave.errors import UsageError

IGNORE_FILE = ".nodeweaveignore"
STAMP_FILE = ".nodeweave-sync.json"
CACHE_FILE = ".nodeweave-sync.cache"  # digest cache on each target

# Large or machine-local artefacts nobody wants copied to every node.
DEFAULT_EXCLUDES = (
    "__pycache__/", "*.pyc", ".venv/", "venv/", ".mypy_cache/", ".pytest_cache/",
    ".ruff_cache/", ".ipynb_checkpoints/", ".tox/", "node_modules/", ".git/",
    "*.ckpt", "*.pt", "*.pth", "*.safetensors", "*.gguf", "checkpoints/",
    "wandb/", "mlruns/", "lightning_logs/", "outputs/", "multirun/", ".DS_Store",
)

# Files that look like credentials; held back unless --include-secrets.
SECRET_EXCLUDES = (
    ".env", ".env.*", ".envrc", ".ssh/", "*.pem", "*.key", "*.p12", "*.pfx", "*.jks",
    "id_rsa*", "id_dsa*", "id_ecdsa*", "id_ed25519*", ".netrc", ".git-credentials",
    ".pypirc", ".aws/", ".kube/", "kubeconfig", "*.kubeconfig", ".docker/",
    "credentials.json", "service-account*.json", ".htpasswd", ".nodeweave/*/job-token",
    # the ML and cloud tools' own token stores (walk6 W69): a home's caches and configs, wherever they sit
    ".gnupg/", ".password-store/", ".azure/", ".config/gcloud/", ".config/gh/hosts.yml", "huggingface/token",
    "huggingface/stored_tokens", ".npmrc", ".vault-token", ".wandb_netrc", ".kaggle/", ".databrickscfg",
    ".s3cfg", ".boto",
    # what else people keep keys in (walk15a A32: `secrets.env` was sent): compose's `env_file:` names (`prod.env`),
    # PostgreSQL's and MySQL's password files, Google's OAuth client secrets, Streamlit's secrets
    "*.env", ".pgpass", ".my.cnf", "client_secret*.json", ".streamlit/secrets.toml",
)
# nodeweave's own state, wherever it sits under SRC (the run folders come from build_filter's ``state``).
STATE_EXCLUDES = (".nodeweave/",)
# The rules that hold back what is not workspace (nodeweave's state, the job's saves) but yield to a ``!`` pattern.
HELD_ORIGINS = ("state", "checkpoints")
# Committed templates that the ".env.*" and "*.env" rules would otherwise hold back.
SECRET_TEMPLATES = (".env.example", ".env.sample", ".env.template", ".env.dist", "example.env", "sample.env",
                    "template.env")


@dataclass(frozen=True)
class Rule:
    """One rsync-style filter rule and where it came from (for messages)."""

    action: str  # "+" include, "-" exclude
    pattern: str  # rsync pattern: leading "/" anchors, trailing "/" = directories only
    origin: str  # "default", "secret", "stamp", ".nodeweaveignore:12", "--exclude"
    given: str = ""  # the user's own spelling (a --exclude or .nodeweaveignore line), for messages

    def rsync_arg(self) -> str:
        return f"--filter={self.action} {self.pattern}"


@dataclass(frozen=True)
class _Compiled:
    rule: Rule
    regex: "re.Pattern[str]"
    dir_only: bool
    basename_only: bool


def _wildmatch_regex(pattern: str) -> str:
    """Translate an rsync wildcard pattern (no anchor, no trailing slash) to a regex."""
    out, i, n = [], 0, len(pattern)
    while i < n:
        ch = pattern[i]
        if ch == "\\" and i + 1 < n:
            out.append(re.escape(pattern[i + 1]))
            i += 2
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif ch == "*":
            out.append("[^/]*")
            i += 1
        elif ch == "?":
            out.append("[^/]")
            i += 1
        elif ch == "[":
            end = pattern.find("]", i + 2 if pattern[i + 1:i + 2] in ("!", "^", "]") else i + 1)
            if end < 0:
                out.append(re.escape(ch))
                i += 1
                continue
            body = pattern[i + 1:end]
            if body[:1] in ("!", "^"):
                body = "^" + body[1:]
            out.append("[" + body.replace("\\", "\\\\") + "]")
            i = end + 1
        else:
            out.append(re.escape(ch))
            i += 1
    return "".join(out)


def _compile(rule: Rule) -> _Compiled:
    pattern = rule.pattern
    dir_only = pattern.endswith("/")
    pattern = pattern.rstrip("/") if dir_only else pattern
    anchored = pattern.startswith("/")
    pattern = pattern.lstrip("/")
    basename_only = not anchored and "/" not in pattern and "**" not in pattern
    body = _wildmatch_regex(pattern)
    if anchored or basename_only:
        regex = re.compile(f"^{body}$", re.S)
    else:  # rsync: an unanchored pattern with a slash matches the end of the path
        regex = re.compile(f"(?:^|/){body}$", re.S)
    return _Compiled(rule, regex, dir_only, basename_only)


@dataclass
class FileSet:
    """What a sync sends: relative paths, their kinds, and what was held back."""

    root: Path
    files: "dict[str, str]" = field(default_factory=dict)  # relpath -> "f" (file) | "l" (symlink)
    dirs: "list[str]" = field(default_factory=list)
    total_bytes: int = 0
    held_back_secrets: "list[str]" = field(default_factory=list)
    held_back_state: "list[str]" = field(default_factory=list)  # nodeweave's own: .nodeweave/, run folders
    held_back_checkpoints: "list[str]" = field(default_factory=list)  # the job's saves: recovery.checkpoint_dir
    # nodeweave's state or the job's saves that a broad ``!`` pattern (``-x '!*'``) sends without naming them
    # (walk8 A15): sent as asked, and said; ``-x '!runs/'`` names the folder, and is taken without a word.
    swept_in: "list[tuple[str, str]]" = field(default_factory=list)  # (path/, the pattern as typed and where)
    # a credential a person's ``!`` pattern names, held back all the same: only --include-secrets sends one (walk9
    # A16: `-x '!.env'` did nothing, and nothing said so); and the ``!`` patterns that did send a file
    secrets_asked: "list[tuple[str, Rule]]" = field(default_factory=list)
    reincluded: "set[Rule]" = field(default_factory=set)
    # what no method can send, a fifo, a socket or a device, left out as rsync skips a "non-regular file", and said
    # once (walk12 C4: a fifo in SRC was left out without a word)
    specials: "list[tuple[str, str]]" = field(default_factory=list)  # (path, "a fifo" | "a socket" | "a device")


class Filter:
    """An ordered rule list with rsync's first-match-wins semantics."""

    def __init__(self, rules: "list[Rule]"):
        self.rules = list(rules)
        self._compiled = [_compile(rule) for rule in self.rules]
        # One alternation per kind answers "does any rule match?" in a single pass:
        # most paths match none, and the ordered loop runs only for the rest.
        self._any_name = self._union(c for c in self._compiled if c.basename_only)
        self._any_path = self._union(c for c in self._compiled if not c.basename_only)

    @staticmethod
    def _union(comps) -> "re.Pattern[str] | None":
        patterns = [c.regex.pattern for c in comps]
        return re.compile("|".join(f"(?:{p})" for p in patterns), re.S) if patterns else None

    def match(self, relpath: str, is_dir: bool) -> "Rule | None":
        """The first rule that matches ``relpath`` (posix, relative to the source root)."""
        name = relpath.rsplit("/", 1)[-1]
        if not ((self._any_name and self._any_name.search(name))
                or (self._any_path and self._any_path.search(relpath))):
            return None
        for comp in self._compiled:
            if comp.dir_only and not is_dir:
                continue
            if comp.regex.search(name if comp.basename_only else relpath):
                return comp.rule
        return None

    def held_back_by(self, relpath: str, is_dir: bool) -> "Rule | None":
        """The first state or checkpoint rule matching ``relpath``: what would hold it back but for an earlier
        ``!`` pattern."""
        name = relpath.rsplit("/", 1)[-1]
        for comp in self._compiled:
            if comp.rule.origin not in HELD_ORIGINS or (comp.dir_only and not is_dir):
                continue
            if comp.regex.search(name if comp.basename_only else relpath):
                return comp.rule
        return None

    def users_reinclude(self, relpath: str, is_dir: bool) -> "Rule | None":
        """The first ``!`` pattern a person wrote (--exclude, .nodeweaveignore) matching ``relpath``, wherever it
        sits in the list: what asks for a path some earlier rule holds back."""
        name = relpath.rsplit("/", 1)[-1]
        for comp in self._compiled:
            if comp.rule.action != "+" or not comp.rule.given or (comp.dir_only and not is_dir):
                continue
            if comp.regex.search(name if comp.basename_only else relpath):
                return comp.rule
        return None

    def excluded(self, relpath: str, is_dir: bool) -> bool:
        rule = self.match(relpath, is_dir)
        return rule is not None and rule.action == "-"

    def checkpoint_folders(self) -> "list[str]":
        """The job's checkpoint folders this list holds back (and keeps on the targets), as ``ckpt/``."""
        return [rule.given for rule in self.rules if rule.origin == "checkpoints"]

    def rsync_args(self) -> "list[str]":
        return [rule.rsync_arg() for rule in self.rules]

    def walk(self, root: Path) -> FileSet:
        """Walk ``root`` the way rsync -r would with these rules (symlinks not followed)."""
        found = FileSet(root=root)
        pending = [""]
        while pending:
            rel_dir = pending.pop()
            try:
                entries = list(os.scandir(root / rel_dir if rel_dir else root))
            except OSError as err:
                raise UsageError(f"cannot read {root / rel_dir}: {err.strerror}; fix its permissions "
                                 f"or leave it out with a line '/{rel_dir}/' in {IGNORE_FILE}") from err
            for entry in entries:
                rel = f"{rel_dir}/{entry.name}" if rel_dir else entry.name
                st = entry.stat(follow_symlinks=False)
                is_dir = stat.S_ISDIR(st.st_mode)
                rule = self.match(rel, is_dir)
                if rule is not None and rule.action == "+" and rule.given and entry.name not in rule.given \
                        and self.held_back_by(rel, is_dir) is not None:
                    found.swept_in.append((rel + ("/" if is_dir else ""), spelt(rule)))
                if rule is not None and rule.action == "+" and rule.given:
                    found.reincluded.add(rule)
                if rule is not None and rule.origin == "secret":
                    asking = self.users_reinclude(rel, is_dir)
                    if asking is not None:
                        found.secrets_asked.append((rel + ("/" if is_dir else ""), asking))
                if rule is not None and rule.action == "-":
                    held = {"secret": found.held_back_secrets, "state": found.held_back_state,
                            "checkpoints": found.held_back_checkpoints}.get(rule.origin)
                    if held is not None:
                        held.append(rel + ("/" if is_dir else ""))
                    continue
                if is_dir:
                    found.dirs.append(rel)
                    pending.append(rel)
                elif stat.S_ISREG(st.st_mode):
                    found.files[rel] = "f"
                    found.total_bytes += st.st_size
                elif stat.S_ISLNK(st.st_mode):
                    found.files[rel] = "l"
                else:
                    found.specials.append((rel, special_kind(st.st_mode)))
        found.dirs.sort()
        found.held_back_secrets.sort()
        found.held_back_state.sort()
        found.held_back_checkpoints.sort()
        return found


def special_kind(mode: int) -> str:
    """What a file that is neither a folder, a regular file nor a link is, as a person names it."""
    if stat.S_ISFIFO(mode):
        return "a fifo"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode) else "not a regular file"


USERS_RULES = ("--exclude", IGNORE_FILE)  # the origins a person wrote (an ignore file's: its path and line)


def refuse_nothing_to_send(src: Path, filt: Filter, fileset: FileSet) -> None:
    """Exit 2 when the walk found no file to send: a sync of nothing is never what is meant (and with --delete it
    would empty DEST). Names the --exclude or .nodeweaveignore line that left out everything, when one did (W11:
    ``-x '*'`` planned "push 0 file(s)" with no word, while ``-x '/'`` was refused)."""
    if fileset.files:
        return
    mine = []
    for entry in sorted(os.scandir(src), key=lambda e: e.name):
        rule = filt.match(entry.name, entry.is_dir(follow_symlinks=False))
        if rule is not None and rule.action == "-" and rule.given and rule not in mine:
            mine.append(rule)
    if mine:
        said = ", ".join(f"{rule.origin} {as_typed(rule.given)}" for rule in mine[:3])
        raise UsageError(f"{said} leave{'s' if len(mine) == 1 else ''} out every file of SRC {src}, so nothing "
                         "would be sent; name only what to leave out ('data/', '*.bin', '/outputs/')")
    held = [*fileset.held_back_state, *fileset.held_back_checkpoints, *fileset.held_back_secrets]
    raise UsageError(f"SRC {src} holds no file to send" + (f" (held back: {', '.join(held[:5])})" if held else "")
                     + ": give the workspace folder (a sync of nothing, with --delete, would empty DEST)")


def spelt(rule: Rule) -> str:
    """A person's pattern as they wrote it: ``-x '!.env'``, or ``.nodeweaveignore:3: '!.env'``."""
    return f"-x {as_typed(rule.given)}" if rule.origin == "--exclude" else f"{rule.origin}: {as_typed(rule.given)}"


def refuse_credentials_asked(fileset: FileSet) -> "tuple[str, ...]":
    """Exit 2 for an ``--exclude '!PATTERN'`` that would do nothing but ask for credentials: every path it matches
    is credential-like, which only --include-secrets sends (walk9 A16; README: a flag that would do nothing is
    refused). A pattern that sent other files too, or a .nodeweaveignore line (kept for every sync), is said on the
    plan instead: the notes returned."""
    idle = [rule for rule in dict.fromkeys(rule for _, rule in fileset.secrets_asked)
            if rule.origin == "--exclude" and rule not in fileset.reincluded]
    if idle:
        rule = idle[0]
        named = [path for path, asking in fileset.secrets_asked if asking == rule]
        raise UsageError(f"{spelt(rule)} would do nothing: {', '.join(named[:5])} "
                         f"{'is' if len(named) == 1 else 'are'} credential-like, and a credential goes only with "
                         "--include-secrets (a `!` pattern never re-includes one); add --include-secrets to send "
                         "it, or leave the pattern off")
    said = {}
    for path, rule in fileset.secrets_asked:  # said where the pattern names it: `!*` sends all it may, quietly
        if path.rstrip("/").rsplit("/", 1)[-1] in rule.given:
            said.setdefault(rule, []).append(path)
    return tuple(f"{spelt(rule)} does not send {', '.join(paths[:5])}: credential-like, sent only with "
                 "--include-secrets" for rule, paths in said.items())


def gitignore_rules(lines: "list[str]", origin: str) -> "list[Rule]":
    """Translate gitignore lines into rsync rules, already in first-match-wins order."""
    rules: "list[Rule]" = []
    for number, raw in enumerate(lines, start=1):
        line = raw.rstrip("\n")
        if not line.endswith("\\ "):
            line = line.rstrip()
        if not line or line.startswith("#"):
            continue
        action = "-"
        if line.startswith("!"):
            action, line = "+", line[1:]
        elif line.startswith("\\!") or line.startswith("\\#"):
            line = line[1:]
        where = f"{origin}:{number}" if origin != "--exclude" else origin
        if "\n" in line or "\r" in line or line.strip("/") == "":
            raise UsageError(f"{where}: pattern {as_typed(raw.strip())} matches nothing useful; "
                             "write a gitignore pattern such as 'data/' or '*.bin'")
        for pattern in _gitignore_to_rsync(line):
            rules.append(Rule(action, pattern, where, raw.strip()))
    rules.reverse()  # gitignore: the last match wins; rsync: the first
    return rules


def _gitignore_to_rsync(pattern: str) -> "list[str]":
    trailing = "/" if pattern.endswith("/") else ""
    body = pattern.rstrip("/")
    if body.startswith("**/"):
        body = body[3:]
        anchored = False
    else:
        anchored = "/" in body
    body = body.lstrip("/")
    variants = _expand_double_star(body)
    prefix = "/" if anchored else ""
    return [prefix + v + trailing for v in sorted(variants, key=lambda v: (-len(v), v))]


def _expand_double_star(body: str) -> "set[str]":
    """gitignore's ``a/**/b`` also matches ``a/b``; rsync's does not, so add that variant."""
    head, sep, tail = body.partition("/**/")
    if not sep:
        return {body}
    return {f"{head}/**/{rest}" for rest in _expand_double_star(tail)} | {
        f"{head}/{rest}" for rest in _expand_double_star(tail)}


def git_ignored(src: Path) -> "list[str]":
    """What git ignores under ``src`` (nested .gitignore, info/exclude, global excludes), or []."""
    try:
        out = subprocess.run(["git", "-C", str(src), "ls-files", "--others", "--ignored",
                              "--exclude-standard", "--directory", "-z", "--", "."],
                             capture_output=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return []
    if out.returncode != 0:
        return []
    prefix = subprocess.run(["git", "-C", str(src), "rev-parse", "--show-prefix"],
                            capture_output=True, text=True, timeout=60).stdout.strip()
    paths = []
    for raw in out.stdout.split(b"\0"):
        rel = raw.decode("utf-8", "surrogateescape")
        if rel.startswith(prefix) and rel != prefix:
            paths.append(rel[len(prefix):])
    return sorted(paths)


def _literal(path: str) -> str:
    """An anchored rsync pattern matching exactly ``path`` (wildcards escaped)."""
    return "/" + re.sub(r"([*?\[\\])", r"\\\1", path)


def build_filter(src: Path, *, extra_excludes: "list[str]" = (), default_excludes: bool = True,
                 include_secrets: bool = False, use_gitignore: bool = True, state: "list[str]" = (),
                 checkpoints: "list[str]" = ()) -> Filter:
    """The rule list for ``src``: stamp, secrets, --exclude, .nodeweaveignore, nodeweave's state (``.nodeweave/``
    and ``state``: folders relative to ``src``, the run folders), the job's checkpoint folder (``checkpoints``,
    relative to ``src``: the nodes' saves, which a push must not overlay and ``--delete`` must not remove),
    git-ignored, defaults. The state and checkpoint rules follow --exclude and .nodeweaveignore, so a ``!``
    pattern there is the one explicit way to send them."""
    rules = [Rule("-", "/" + STAMP_FILE, "stamp"), Rule("-", "/" + CACHE_FILE, "stamp")]
    if not include_secrets:
        rules += [Rule("+", pattern, "secret-template") for pattern in SECRET_TEMPLATES]
        rules += [Rule("-", pattern, "secret") for pattern in SECRET_EXCLUDES]
    rules += gitignore_rules(list(extra_excludes), "--exclude")
    ignore_path = src / IGNORE_FILE
    if ignore_path.exists() and not ignore_path.is_file():  # a folder or a pipe is never skipped without a word (W67)
        raise UsageError(f"{ignore_path} is {bounded.file_kind(os.stat(ignore_path).st_mode)}, not a file of "
                         "gitignore patterns; move it away, or make it a text file with one pattern per line")
    if ignore_path.is_file():
        try:
            text = bounded.read_text(ignore_path, bounded.TEXT_CAP, "an ignore file")
        except (OSError, UnicodeDecodeError) as err:
            why = getattr(err, "strerror", None) or err
            raise UsageError(f"{ignore_path}: cannot read it ({why}); it must be UTF-8 text "
                             "with one gitignore pattern per line") from err
        rules += gitignore_rules(text.splitlines(), str(ignore_path))
    rules += [Rule("-", pattern, "state") for pattern in STATE_EXCLUDES]
    rules += [Rule("-", _literal(folder.strip("/")) + "/", "state") for folder in state]
    rules += [Rule("-", _literal(folder.strip("/")) + "/", "checkpoints", folder.strip("/") + "/")
              for folder in checkpoints]
    if use_gitignore:
        rules += [Rule("-", _literal(path), "gitignore") for path in git_ignored(src)]
    if default_excludes:
        rules += [Rule("-", pattern, "default") for pattern in DEFAULT_EXCLUDES]
    return Filter(rules)
