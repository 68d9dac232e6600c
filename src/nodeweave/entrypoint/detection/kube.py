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

from ..errors import TopologyError, UsageError
from ..hostport import http_url
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
    return http_url(host, port, path="", scheme="https")


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
    given = env.get("NODEWEAVE_KUBE_API")
    if given is not None and not given.strip():
        raise UsageError("NODEWEAVE_KUBE_API is set but empty (an unset variable in `-e NODEWEAVE_KUBE_API=$URL`?); "
                         "accepted: the API server's URL, http(s)://host:port, or leave it unset in a pod")
    if given and not given.strip().startswith(("http://", "https://")):
        raise UsageError(f"NODEWEAVE_KUBE_API {given!r} is not a URL; accepted: http(s)://host:port, the scheme "
                         "written out (the in-cluster API is https)")
    base = _api_base(env)
    if not base:
        raise TopologyError(
            f"cannot count the nodes of StatefulSet {name!r}: KUBERNETES_SERVICE_HOST is unset; "
            "set NODEWEAVE_NNODES (or --nnodes)")
    import http.client
    import urllib.error

    where = f"statefulsets/{name} from the Kubernetes API at {base}"
    try:
        body = _api_get(root, base, f"apis/apps/v1/namespaces/{ns}/statefulsets/{name}", timeout)
    except urllib.error.HTTPError as err:
        hint = " (the pod's ServiceAccount needs a Role with get on statefulsets)" if err.code in (401, 403) else ""
        raise TopologyError(
            f"Kubernetes API answered {err.code} for statefulsets/{name} in namespace {ns}{hint}; "
            "or set NODEWEAVE_NNODES") from None
    except ValueError:  # the body: JSON's own words ("Expecting value: line 1 column 1") name nothing the user fixes
        raise TopologyError(f"cannot read {where}: it answered something that is not JSON (an HTML page: a proxy "
                            "or a login in between?); set NODEWEAVE_NNODES to skip the lookup") from None
    except (OSError, http.client.HTTPException) as err:
        why = getattr(err, "reason", None) or err
        raise TopologyError(f"cannot read {where}: {why}; set NODEWEAVE_NNODES to skip the lookup") from None
    spec = body.get("spec") if isinstance(body, dict) else None
    replicas = spec.get("replicas") if isinstance(spec, dict) else None
    if not isinstance(replicas, int) or isinstance(replicas, bool) or replicas < 1:
        said = ".spec.replicas is missing" if replicas is None else f".spec.replicas is {replicas!r}"
        raise TopologyError(f"statefulsets/{name} in {ns}: {said} (not a StatefulSet's answer, or scaled to 0); "
                            "set NODEWEAVE_NNODES to skip the lookup")
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
