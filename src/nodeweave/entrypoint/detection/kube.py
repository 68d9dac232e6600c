"""Kubernetes facts: the pod's namespace, the cluster domain, a StatefulSet's replica count, a pod's phase.

:func:`read_kube` gathers what every pod start may need (two small files:
the service-account namespace and /etc/resolv.conf), as a
:class:`~..model.Kube` that planning weighs as data. The node count of a
StatefulSet is ``.spec.replicas``, read from the API with the pod's
service-account token (stdlib ``urllib``, the CA from the token's
directory), so ``oc scale`` needs no YAML edit; the API is asked only when
planning says it needs the count (:class:`..planning.topology.ReplicasWanted`).
The manifests grant ``get`` on ``statefulsets``. ``NODEWEAVE_KUBE_API``
replaces the in-cluster address (``http://127.0.0.1:8001`` for ``kubectl
proxy``, or a test server).
"""

from ..errors import TopologyError
from ..model import Kube
from .host import SA_DIR, in_kubernetes


def read_kube(root, env):
    """The :class:`Kube` facts of this container: whether it is a pod, its namespace, the search domain."""
    pod = in_kubernetes(root, env)
    ns, ns_source = namespace(root, env)
    domain, entry = search_domain(root) if ns else (None, None)
    return Kube(pod=pod, namespace=ns, namespace_source=ns_source, search_domain=domain, search_entry=entry)


def namespace(root, env):
    """(namespace, source) from the service-account file, then POD_NAMESPACE."""
    text = root.read(f"{SA_DIR}/namespace")
    if text:
        return text, f"{SA_DIR}/namespace"
    if env.get("POD_NAMESPACE"):
        return env["POD_NAMESPACE"], "POD_NAMESPACE"
    return None, None


def search_domain(root):
    """(domain, search entry) from /etc/resolv.conf's ``svc.<domain>``, or (None, None).

    The kubelet writes ``search <ns>.svc.<domain> svc.<domain> <domain>`` into
    every pod's /etc/resolv.conf, so a cluster whose domain is not
    ``cluster.local`` needs no setting at all.
    """
    for line in (root.read("/etc/resolv.conf") or "").splitlines():
        fields = line.split()
        if fields and fields[0] == "search":
            for entry in fields[1:]:
                if entry.startswith("svc.") and len(entry) > 4:
                    return entry[4:].rstrip("."), entry
    return None, None


def _api_base(env):
    """The API server's base URL, or None outside a cluster (and without NODEWEAVE_KUBE_API)."""
    base = env.get("NODEWEAVE_KUBE_API")
    if base:
        return base.rstrip("/")
    host, port = env.get("KUBERNETES_SERVICE_HOST"), env.get("KUBERNETES_SERVICE_PORT", "443")
    if not host:
        return None
    return f"https://[{host}]:{port}" if ":" in host else f"https://{host}:{port}"


def _api_get(root, base, path, timeout):
    """GET ``path`` with the pod's service-account token; the JSON body. Raises urllib's errors."""
    import json
    import ssl
    import urllib.request

    url = f"{base}/{path}"
    request = urllib.request.Request(url, headers={"Accept": "application/json"})
    token = root.read(f"{SA_DIR}/token")
    if token:
        request.add_header("Authorization", f"Bearer {token}")
    context = None
    if url.startswith("https:"):
        try:
            context = ssl.create_default_context(cafile=root.at(f"{SA_DIR}/ca.crt"))
        except (OSError, ssl.SSLError):
            context = ssl.create_default_context()
    with urllib.request.urlopen(request, timeout=timeout, context=context) as response:
        return json.load(response)


def statefulset_replicas(root, env, name, ns, timeout=5.0):
    """``.spec.replicas`` of StatefulSet ``name`` in ``ns``; TopologyError naming the fix."""
    base = _api_base(env)
    if not base:
        raise TopologyError(
            f"cannot count the nodes of StatefulSet {name!r}: KUBERNETES_SERVICE_HOST is unset; "
            "set NODEWEAVE_NNODES (or --nnodes)")
    import urllib.error

    try:
        body = _api_get(root, base, f"apis/apps/v1/namespaces/{ns}/statefulsets/{name}", timeout)
    except urllib.error.HTTPError as err:
        hint = " (the pod's ServiceAccount needs a Role with get on statefulsets)" if err.code in (401, 403) else ""
        raise TopologyError(
            f"Kubernetes API answered {err.code} for statefulsets/{name} in namespace {ns}{hint}; "
            "or set NODEWEAVE_NNODES") from None
    except (OSError, ValueError) as err:
        raise TopologyError(
            f"cannot read statefulsets/{name} from the Kubernetes API at {base}: {err}; "
            "set NODEWEAVE_NNODES to skip the lookup") from None
    replicas = (body.get("spec") or {}).get("replicas")
    if not isinstance(replicas, int) or replicas < 1:
        raise TopologyError(f"statefulsets/{name} in {ns} has no usable .spec.replicas ({replicas!r})")
    return replicas


def pod_phase(root, env, name, timeout=3.0):
    """What the API says about pod ``name`` ('pod x is Pending: Unschedulable: ...'), or None; never raises.

    Node 0 asks for each node that did not check in: a Pending pod (no node
    fits, an image still pulling) is the commonest reason, and says what to fix.
    """
    base, (ns, _) = _api_base(env), namespace(root, env)
    if not base or not ns:
        return None
    import urllib.error

    try:
        body = _api_get(root, base, f"api/v1/namespaces/{ns}/pods/{name}", timeout)
    except urllib.error.HTTPError as err:
        return f"pod {name}: the API answered {err.code}" + (" (does it exist?)" if err.code == 404 else "")
    except (OSError, ValueError):
        return None
    status = body.get("status") or {}
    text = f"pod {name} is {status.get('phase') or 'in an unknown phase'}"
    for condition in status.get("conditions") or []:
        if condition.get("status") == "False" and condition.get("reason"):
            return f"{text}: {condition['reason']}: {str(condition.get('message') or '')[:160]}".rstrip(": ")
    waiting = [c.get("state", {}).get("waiting") for c in status.get("containerStatuses") or []]
    reasons = [w.get("reason") for w in waiting if w and w.get("reason")]
    return f"{text}: {', '.join(reasons)}" if reasons else text
