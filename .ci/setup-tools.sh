#!/usr/bin/env bash
# Tools the tests use as the real thing they check against, installed or the run stops here, naming
# the tool (with CI=true a test that skips for want of one of them fails: tests/ci_gate.py):
#   Slurm       a local slurmctld and two slurmd "nodes" judge and run the rendered sbatch scripts
#               (tests/slurm_cluster.py)
#   ShellCheck  every rendered shell script
#   kubectl     its built-in kustomize builds every rendered tree (test_manifests.py, test_examples.py,
#               test_cluster_targets.py, the kube e2e tests). The machine's kubectl is used when its
#               kustomize reads `patches:` (kustomize v4+, kubectl 1.21+); else Debian's kubernetes-client
#               is installed and must pass the same probe. Debian 12's is kubectl 1.20 (kustomize
#               v2.0.3), which cannot read `patches:`: on such a machine this script fails and says so.
#   Prometheus  promtool checks node 0's /metrics, and a real server scrapes a simulated job
#               (tests/test_metrics_prometheus.py): Debian's prometheus package gives both
#   Chromium    headless, loads `nodeweave dashboard`'s page from a simulated job and dumps its DOM
#               (tests/test_dashboard.py): Debian's chromium package
#   openssl, git, ssh-keygen  a test certificate, the git-ignore sync test, the ssh tests' keys
#   Debian's mirror, reached from a podman build with the host network: the sshd test images
#               (test_sync_ssh.py, e2e/test_cluster_ssh.py) apt-get install openssh-server.
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive
die() { echo "setup-tools: $*" >&2; exit 1; }
need=()
command -v slurmctld >/dev/null 2>&1 || need+=(slurm-wlm)
command -v shellcheck >/dev/null 2>&1 || need+=(shellcheck)
command -v openssl >/dev/null 2>&1 || need+=(openssl)
command -v git >/dev/null 2>&1 || need+=(git)
command -v ssh-keygen >/dev/null 2>&1 || need+=(openssh-client)
command -v kubectl >/dev/null 2>&1 || need+=(kubernetes-client)
{ command -v promtool && command -v prometheus; } >/dev/null 2>&1 || need+=(prometheus)
command -v chromium >/dev/null 2>&1 || need+=(chromium)
if [ "${#need[@]}" -gt 0 ]; then
  bash "$(dirname "$0")/apt-update-once.sh" || die "apt-get update failed: cannot install ${need[*]}"
  apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null || die "could not install ${need[*]}"
fi
for tool in slurmctld slurmd sbatch sinfo shellcheck openssl git ssh-keygen kubectl promtool prometheus chromium; do
  command -v "$tool" >/dev/null 2>&1 || die "$tool is still missing after the install"
done

# kubectl's kustomize must read what nodeweave renders: a `patches:` entry with a target.
probe=$(mktemp -d)
trap 'rm -rf "$probe"' EXIT
cat >"$probe/cm.yaml" <<'YAML'
apiVersion: v1
kind: ConfigMap
metadata: {name: probe}
data: {a: "1"}
YAML
cat >"$probe/kustomization.yaml" <<'YAML'
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources: [cm.yaml]
patches:
- target: {kind: ConfigMap, name: probe}
  patch: |-
    - op: replace
      path: /data/a
      value: "2"
YAML
built=$(kubectl kustomize "$probe" 2>&1) || true
grep -q 'a: "2"' <<<"$built" \
  || die "$(command -v kubectl) ($(kubectl version --client 2>/dev/null | head -1)) cannot build a kustomization with patches: (needs kustomize v4+, kubectl 1.21+; Debian 12's kubernetes-client is 1.20): ${built:0:300}"

# The sshd test images apt-get from Debian's mirror inside a podman build (host network).
python3 - <<'PY' || die "Debian's mirror (http://deb.debian.org/debian) does not answer: the sshd test images cannot be built"
import urllib.request
urllib.request.urlopen("http://deb.debian.org/debian/dists/bookworm/InRelease", timeout=30).read(1)
PY

echo "slurm: $(slurmctld -V); shellcheck: $(shellcheck --version | sed -n 2p); kubectl: $(kubectl version --client 2>/dev/null | head -1); Debian's mirror answers"
