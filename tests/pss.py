"""The Pod Security Standards' rules (kubernetes.io/docs/concepts/security/pod-security-standards, v1.29+)
and OpenShift's restricted-v2 SCC, as checks of a pod spec: a list of violations, empty when admitted.

No API server runs where the tests run, so the admission plugin itself cannot
be asked; these are the published tables, field by field, for the fields a
nodeweave pod can carry.
"""

from __future__ import annotations

BASELINE_CAPABILITIES = {"AUDIT_WRITE", "CHOWN", "DAC_OVERRIDE", "FOWNER", "FSETID", "KILL", "MKNOD",
                         "NET_BIND_SERVICE", "SETFCAP", "SETGID", "SETPCAP", "SETUID", "SYS_CHROOT"}
RESTRICTED_VOLUMES = {"configMap", "csi", "downwardAPI", "emptyDir", "ephemeral", "persistentVolumeClaim",
                      "projected", "secret"}
# restricted-v2 (openshift/cluster-kube-apiserver-operator bootstrap SCC): its volumes, and no fixed UID/fsGroup
RESTRICTED_V2_VOLUMES = RESTRICTED_VOLUMES


def _containers(pod):
    return list(pod.get("initContainers") or []) + list(pod.get("containers") or [])


def _seccomp(pod, container):
    own = ((container.get("securityContext") or {}).get("seccompProfile") or {}).get("type")
    return own or ((pod.get("securityContext") or {}).get("seccompProfile") or {}).get("type")


def baseline_violations(pod):
    found = []
    for flag in ("hostNetwork", "hostPID", "hostIPC"):
        if pod.get(flag):
            found.append(f"{flag}: true")
    for volume in pod.get("volumes") or []:
        if "hostPath" in volume:
            found.append(f"hostPath volume {volume['name']}")
    for container in _containers(pod):
        context = container.get("securityContext") or {}
        if context.get("privileged"):
            found.append("privileged")
        for cap in (context.get("capabilities") or {}).get("add") or []:
            if cap not in BASELINE_CAPABILITIES:
                found.append(f"capabilities.add {cap} is outside baseline's list")
        if any(port.get("hostPort") for port in container.get("ports") or []):
            found.append("hostPort")
        if context.get("procMount") not in (None, "Default"):
            found.append("procMount")
        if _seccomp(pod, container) == "Unconfined":
            found.append("seccompProfile Unconfined")
    return found


def restricted_violations(pod):
    found = [v for v in baseline_violations(pod) if not v.startswith("capabilities.add")]
    for volume in pod.get("volumes") or []:
        kinds = set(volume) - {"name"}
        if not kinds <= RESTRICTED_VOLUMES and "hostPath" not in kinds:
            found.append(f"volume {volume['name']} of type {sorted(kinds)}")
    pod_context = pod.get("securityContext") or {}
    for container in _containers(pod):
        context = container.get("securityContext") or {}
        if context.get("allowPrivilegeEscalation") is not False:
            found.append(f"{container['name']}: allowPrivilegeEscalation is not false")
        if not context.get("runAsNonRoot", pod_context.get("runAsNonRoot")):
            found.append(f"{container['name']}: runAsNonRoot is not true")
        if context.get("runAsUser", pod_context.get("runAsUser")) == 0:
            found.append(f"{container['name']}: runAsUser 0")
        if _seccomp(pod, container) not in ("RuntimeDefault", "Localhost"):
            found.append(f"{container['name']}: seccompProfile is not RuntimeDefault or Localhost")
        capabilities = context.get("capabilities") or {}
        if "ALL" not in (capabilities.get("drop") or []):
            found.append(f"{container['name']}: capabilities do not drop ALL")
        for cap in capabilities.get("add") or []:
            if cap != "NET_BIND_SERVICE":
                found.append(f"capabilities.add {cap}: only NET_BIND_SERVICE may be added")
    return found


def restricted_v2_violations(pod):
    """restricted-v2: restricted's rules, plus no fixed runAsUser or fsGroup (MustRunAsRange, MustRunAs)."""
    found = restricted_violations(pod)
    pod_context = pod.get("securityContext") or {}
    for field in ("runAsUser", "fsGroup"):
        if field in pod_context:
            found.append(f"pod securityContext.{field} is fixed ({pod_context[field]}): the SCC assigns it")
    for container in _containers(pod):
        if "runAsUser" in (container.get("securityContext") or {}):
            found.append(f"{container['name']}: runAsUser is fixed")
    return found
