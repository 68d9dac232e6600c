"""``metrics``: node 0's Prometheus endpoint and the step lines it reads (docs/observability.md)."""

from __future__ import annotations

from nodeweave.entrypoint.planning.contract import METRICS_PORT
from nodeweave.entrypoint.errors import UsageError as EntrypointUsageError
from nodeweave.spec.fields import boolean, integer
from nodeweave.spec.model import Metrics
from nodeweave.spec.nodes import Fields, Reader

KEYS = ("enabled", "port", "step_pattern", "host_port")
STEP_PATTERN = "a regular expression with a group for the step number, e.g. 'global_step=(\\d+)'"


def metrics(r: Reader, top: Fields) -> Metrics:
    f = r.fields(top.get("metrics"), "metrics", KEYS)
    node = f.get("step_pattern")
    pattern = None if node is None else r.field(lambda: _step_pattern(r, node), None)  # each field on its own
    enabled = boolean(r, f, "enabled", True)
    host_port = integer(r, f, "host_port", None, 1, 65535)
    port = integer(r, f, "port", METRICS_PORT, 1, 65535)
    if host_port is not None and not enabled:  # nothing is published with metrics off (walk12c C12)
        raise r.fail(f.get("host_port"), "metrics.host_port", f"{host_port} does nothing with metrics.enabled false "
                     "(node 0 serves no /metrics, so nothing is published)", "metrics.enabled true, or no host_port")
    return Metrics(enabled=enabled, port=port,
                   step_pattern=pattern, host_port=host_port)


def listening(r: Reader, top: Fields) -> Metrics:
    """Only what node 0 listens with (``enabled``, ``port``), for the ports' check across sections when another
    field of the section was refused (walk16a A33: a bad step_pattern hid a metrics.port that is the master port)."""
    f = r.fields(top.get("metrics"), "metrics", KEYS)
    return Metrics(enabled=boolean(r, f, "enabled", True), port=integer(r, f, "port", METRICS_PORT, 1, 65535))


def _step_pattern(r: Reader, node) -> str:
    from nodeweave.entrypoint.planning.contract import read_step_pattern

    pattern = r.string(node, "metrics.step_pattern", STEP_PATTERN)
    if pattern.strip() and pattern != pattern.strip():  # node 0 refuses it so (contract.padded_refusal: left9)
        from nodeweave.entrypoint.quoting import as_typed

        raise r.fail(node, "metrics.step_pattern", f"{as_typed(pattern)} has white space at an end, which node 0 "
                     "refuses in NODEWEAVE_STEP_PATTERN (never trimmed); write a space the pattern needs there "
                     "as [ ] or \\s", STEP_PATTERN)
    try:
        read_step_pattern(pattern, "metrics.step_pattern", "the spec")
    except EntrypointUsageError as err:
        problem = str(err).split(" (from the spec) ", 1)[-1].split("; accepted", 1)[0]
        from nodeweave.entrypoint.quoting import as_typed

        raise r.fail(node, "metrics.step_pattern", f"{as_typed(pattern)} {problem}", STEP_PATTERN) from None
    return pattern
