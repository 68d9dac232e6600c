"""The training's step number from its own log lines: the common loggers' real formats, or the spec's pattern.

No change to the script: node 0 reads what its launcher prints (the output
capture's seam) and takes the newest step from whichever line matches first:

- the spec's ``metrics.step_pattern`` (``NODEWEAVE_STEP_PATTERN``), a regular
  expression whose group ``step`` (or first group) is the step;
- TorchTitan: ``step:  10  loss:  7.8123  memory: ...``;
- DeepSpeed's engine: ``[Rank 0] step=10, skipped=0, lr=[...]``;
- Megatron-LM: `` iteration       10/     100 | consumed samples: ...``;
- Lightning's progress bar: ``Epoch 1:  45%|####5     | 45/100 [00:05<00:06, 8.50it/s, v_num=0]``
  (the global step: epoch x batches + batch);
- Hugging Face Trainer's and Accelerate scripts' tqdm bar: ``10%|#         | 50/500 [00:10<01:30,
  4.97it/s]`` (a bar in it/s or s/it: a download's B/s bar is not a step);
- Hugging Face Trainer's saves: ``Saving model checkpoint to out/checkpoint-500``.

Pure: :func:`find_step` on one line; :class:`LineSplitter` cuts a byte stream at ``\\n`` and ``\\r`` (a bar
redraws with ``\\r``).
"""

import re

TITAN = re.compile(r"\bstep:\s*(\d+)\s+loss:")
DEEPSPEED = re.compile(r"\bstep=(\d+), skipped=\d+")
MEGATRON = re.compile(r"\biteration\s+(\d+)/\s*\d+\s*\|")
LIGHTNING = re.compile(r"\bEpoch (\d+):\s+\d+%\|[^|]*\|\s*(\d+)/(\d+) \[[^\]]*?(?:it/s|s/it)")
TQDM = re.compile(r"\d+%\|[^|]*\|\s*(\d+)/(\d+) \[[^\]]*?(?:it/s|s/it)")
HF_SAVE = re.compile(r"Saving model checkpoint to \S*?checkpoint-(\d+)\b")
# the tutorials' and nodeweave's own examples' line: ``step 812 loss 0.0713``, ``[rank 0] step 3/100 loss ...``
PLAIN = re.compile(r"\bstep (\d+)(?:/\d+)?:? loss\b")
LOGGERS = (("torchtitan", TITAN), ("deepspeed", DEEPSPEED), ("megatron", MEGATRON), ("lightning", LIGHTNING),
           ("tqdm", TQDM), ("huggingface", HF_SAVE), ("plain", PLAIN))
LOOKS_LIKE_A_STEP = re.compile(r"(?i)\b(?:global_?)?(?:step|iter(?:ation)?)s?\b\W{0,3}(\d+)")
MAX_LINE = 4096


def compile_pattern(text):
    """The spec's pattern compiled; ValueError naming what is wrong (no group, not a regular expression)."""
    try:
        pattern = re.compile(text)
    except re.error as err:
        raise ValueError(f"not a regular expression ({err})") from None
    if "step" not in pattern.groupindex and pattern.groups < 1:
        raise ValueError("it has no group for the step number: add (?P<step>\\d+) or (\\d+)")
    return pattern


def find_step(line, pattern=None):
    """(logger, step) of the first format ``line`` matches, or None."""
    line = line[:MAX_LINE]
    if pattern is not None:
        match = pattern.search(line)
        if match:
            text = match.group("step") if "step" in pattern.groupindex else match.group(1)
            try:
                return "pattern", int(text)
            except (TypeError, ValueError):
                return None
    if "step" not in line and "iteration" not in line and "|" not in line and "checkpoint-" not in line:
        return None  # most lines: no regular expression run at all
    for name, regex in LOGGERS:
        match = regex.search(line)
        if not match:
            continue
        if name == "lightning":
            epoch, batch, per_epoch = (int(g) for g in match.groups())
            return name, epoch * per_epoch + batch
        return name, int(match.group(1))
    return None


def pattern_for(line):
    """A ``metrics.step_pattern`` that reads the step of ``line``, a line that looks like one (a word step or
    iteration and a number) that no format above reads; None when it does not look like one. For the note that
    no step line was read (walk7 B15: nothing said so, and top drew no step)."""
    line = line[:MAX_LINE]
    found = list(LOOKS_LIKE_A_STEP.finditer(line))
    if not found:
        return None
    # a save's name in a path (``from=ckpt/step-10.pt step=10``) is not where the line says its step
    match = next((m for m in found if not _in_a_path(line, m.start())), found[0])
    before = match.group(0)[:match.start(1) - match.start(0)]
    return re.escape(before).replace("\\ ", " ") + r"(?P<step>\d+)"


def _in_a_path(line, at):
    """Whether the word at ``at`` lies in a path (its whitespace-separated token holds a ``/`` or ``\\``)."""
    token = re.search(r"\S*$", line[:at]).group(0) + re.match(r"\S*", line[at:]).group(0)
    return "/" in token or "\\" in token


class LineSplitter:
    """Bytes in, whole lines out (``\\n`` or ``\\r`` ends one); a line past :data:`MAX_LINE` is cut there."""

    def __init__(self):
        self.partial = b""

    def feed(self, chunk):
        data = self.partial + chunk
        parts = re.split(rb"[\r\n]", data)
        self.partial = parts.pop()[-MAX_LINE:]
        return [part.decode("utf-8", "replace") for part in parts if part]


class StepTap:
    """A worker's newest step line, for its beats to node 0 (``LinkStall.beat_extra``): node 0 reads the steps from
    its own ranks' output, so in a generation recovery leaves it out of, the generation's rank 0 runs elsewhere and
    its lines reach node 0 only this way (walk18b B8: steps a second 0 on a job moving at 5 steps a second)."""

    def __init__(self, pattern=None, clock=None):
        import time

        self.pattern, self.clock = pattern, clock or time.monotonic
        self.splitters = {}
        self.newest = None  # (logger, step, clock time read)
        self.sent = None

    def output(self, target, chunk):
        splitter = self.splitters.setdefault(target, LineSplitter())
        for line in splitter.feed(chunk):
            found = find_step(line, self.pattern)
            if found is not None:
                self.newest = (found[0], found[1], self.clock())

    def extra(self):
        """``{"step": [logger, step, seconds since it was read]}`` once per new step line, ``{}`` between them: the
        age is a duration on this node, so node 0 dates it on its own clock (no clocks compared)."""
        newest = self.newest
        if newest is None or newest == self.sent:
            return {}
        self.sent = newest
        return {"step": [newest[0], newest[1], round(max(0.0, self.clock() - newest[2]), 3)]}
