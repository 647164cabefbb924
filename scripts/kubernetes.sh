#!/usr/bin/env bash
# A real one-node Kubernetes for Berth's Kubernetes tests, on this machine and on loopback only:
# etcd, kube-apiserver, kube-controller-manager, kube-scheduler and a kubelet that runs pods on
# the local Docker Engine (dockershim). Everything comes from Debian: the `kubernetes` source
# package (1.20.2), built once with Debian's Go (with the patches in scripts/kubernetes/patches)
# into a cache outside the clone, and etcd taken from Debian's etcd-server package. See
# docs/backend-kubernetes.md ("The test cluster").
#
#   bash scripts/kubernetes.sh build    only bring the packages, sources and binaries (nothing starts)
#   bash scripts/kubernetes.sh up       build if needed, start, wait until node `localhost` is Ready
#   bash scripts/kubernetes.sh status   what runs; exit 0 when the cluster is up and Ready
#   bash scripts/kubernetes.sh down     stop it, remove its pods and data, put back what `up` changed
#   bash scripts/kubernetes.sh down --purge   also forget its certificates, logs and the pause image
#
# Safe to run twice: `up` leaves a cluster that already runs alone, `down` with nothing running
# only restores. Needs root (the kubelet does).
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

KUBERNETES_VERSION="1.20.2"
# The commit Debian's source package was cut from; only reported by `version` endpoints.
KUBERNETES_COMMIT="faecb196815e248d3ecfb03c680a4507229c2a56"
# Bump when the way the binaries are built changes; patches are hashed on their own.
BUILD_RECIPE_VERSION=2
# kubectl too: Debian's kubernetes-client crashes writing YAML (see the reflect2 patch).
BINARIES=(kube-apiserver kube-controller-manager kube-scheduler kubelet kubectl)
PATCH_DIR="$BERTH_ROOT/scripts/kubernetes/patches"

CACHE_ROOT="${BERTH_CACHE_DIR:-/var/cache/berth}"
STATE="${BERTH_KUBERNETES_DIR:-/var/lib/berth/kubernetes}"
PKI="$STATE/pki"
RUN="$STATE/run"
LOGS="$STATE/log"
SNAPSHOT="$STATE/restore"

PAUSE_IMAGE="localhost/berth-kubernetes-pause:3.2"
STORAGE_CLASS="berth-hostpath"
# The apiserver's service range; pods take their addresses from Docker's default bridge. Both
# must stay clear of Berth's sandbox network pool (docker_network_pool, 10.217.0.0/16).
SERVICE_RANGE="10.96.0.0/16"
SERVICE_FIRST_ADDRESS="10.96.0.1"
ETCD_CLIENT_PORT=2479
ETCD_PEER_PORT=2480
APISERVER_PORT=6443
KUBELET_PORT=10250
KUBELET_HEALTHZ_PORT=10248
CONTROLLER_MANAGER_PORT=10257
SCHEDULER_PORT=10259
# The controller-manager's built-in hostPath provisioner always works under this folder.
HOSTPATH_ROOT="/tmp/hostpath_pv"
# The kubelet's cgroups (kubepods and one per pod, where the pod's pids limit lives) go under
# this name in every cgroup v1 hierarchy, so `down` finds and removes exactly them.
CGROUP_ROOT="berth-kubernetes"
CGROUP_CONTROLLERS=(cpu cpuacct cpuset memory pids blkio devices freezer hugetlb systemd)
# Kubernetes has no per-pod pids limit in the Pod spec: it is the node's. The brief's default
# docker_pids_limit.
POD_PIDS_LIMIT=512
# What the kubelet would set at start (it is patched not to; checked and restored anyway).
TUNED_SYSCTLS=(vm.overcommit_memory vm.panic_on_oom kernel.panic kernel.panic_on_oops kernel.keys.root_maxkeys kernel.keys.root_maxbytes net.bridge.bridge-nf-call-iptables net.bridge.bridge-nf-call-ip6tables)
COMPONENTS=(etcd kube-apiserver kube-controller-manager kube-scheduler kubelet)

k8s_say() { printf '[berth kubernetes] %s\n' "$*" >&2; }
die() { k8s_say "$*"; exit 1; }

# The cache key: the version, the patches' contents and the build recipe. A changed patch
# gives a new key, so the binaries are rebuilt; the old folder can be deleted by hand.
build_key() {
  { echo "$KUBERNETES_VERSION $BUILD_RECIPE_VERSION"; cat "$PATCH_DIR"/*.diff; } | sha256sum | cut -c1-12
}
BUILD_KEY="$(build_key)"
CACHE="$CACHE_ROOT/kubernetes-$KUBERNETES_VERSION-$BUILD_KEY"
BIN="$CACHE/bin"
SOURCES="$CACHE_ROOT/kubernetes-sources"
TOOLS="$CACHE_ROOT/kubernetes-tools"
KUBECTL="$BIN/kubectl"
ETCD="$TOOLS/etcd"
ADMIN_KUBECONFIG="$STATE/admin.kubeconfig"

kubectl_admin() { "$KUBECTL" --kubeconfig="$ADMIN_KUBECONFIG" --request-timeout=10s "$@"; }

require_root() {
  [ "$(id -u)" = 0 ] || die "needs root (the kubelet manages containers and mounts); run it as root or with sudo"
}

# The parts, each a concern of its own, that the commands below call.
source "$(dirname "${BASH_SOURCE[0]}")/kubernetes/build.sh"
source "$(dirname "${BASH_SOURCE[0]}")/kubernetes/certificates.sh"
source "$(dirname "${BASH_SOURCE[0]}")/kubernetes/host-state.sh"
source "$(dirname "${BASH_SOURCE[0]}")/kubernetes/components.sh"

# ---------------------------------------------------------------------------------------------
# Commands

cluster_up() { etcd_healthy && apiserver_ready >/dev/null 2>&1 && node_ready; }

memory_used() { # MiB resident in the five processes (the pods' containers are not counted)
  local total=0 name pid rss
  for name in "${COMPONENTS[@]}"; do
    pid="$(pid_of "$name" 2>/dev/null)" || continue
    rss="$(awk '/^VmRSS:/ {print $2}' "/proc/$pid/status" 2>/dev/null || echo 0)"
    total=$(( total + ${rss:-0} ))
  done
  echo $(( total / 1024 ))
}

command_up() {
  require_root
  if [ -f "$ADMIN_KUBECONFIG" ] && [ -x "$KUBECTL" ] && cluster_up; then
    k8s_say "the cluster already runs (node localhost Ready); leaving it alone. KUBECONFIG=$ADMIN_KUBECONFIG"
    return
  fi
  local started; started="$(date +%s.%N)"
  mkdir -p "$CACHE_ROOT" "$STATE"
  exec 8>"$STATE/.lock"
  flock 8
  ensure_build_packages
  ensure_tools
  binaries_built || fetch_sources
  build_binaries
  ensure_images
  check_ranges
  ensure_pki
  take_snapshot
  start_cluster
  ensure_storage_class
  smoke_test
  restore_sysctls
  restore_iptables
  restore_oom_scores
  local seconds; seconds="$(awk -v start="$started" -v end="$(date +%s.%N)" 'BEGIN {printf "%.1f", end - start}')"
  k8s_say "cluster up in $seconds s: node localhost Ready, $(memory_used) MiB for its processes"
  k8s_say "KUBECONFIG=$ADMIN_KUBECONFIG (admin), $STATE/berth.kubeconfig (user berth, no rights until a RoleBinding), storage class $STORAGE_CLASS"
}

command_status() {
  local name state=0 alive=0
  for name in "${COMPONENTS[@]}"; do
    if running "$name"; then printf '%-24s running (pid %s)\n' "$name" "$(pid_of "$name")"; alive=$((alive + 1))
    else printf '%-24s stopped\n' "$name"; state=1; fi
  done
  if [ "$alive" -gt 0 ] && [ -f "$ADMIN_KUBECONFIG" ] && node_ready; then
    printf '%-24s Ready\n' "node localhost"
    printf '%-24s %s MiB\n' "memory" "$(memory_used)"
    printf '%-24s %s\n' "kubeconfig (admin)" "$ADMIN_KUBECONFIG" "kubeconfig (berth)" "$STATE/berth.kubeconfig" "kubectl" "$KUBECTL"
  else
    printf '%-24s not Ready\n' "node localhost"; state=1
  fi
  [ "$alive" = 0 ] && return 3
  return "$state"
}

command_down() {
  require_root
  local purge="${1:-}" started; started="$(date +%s.%N)"
  mkdir -p "$STATE"
  exec 8>"$STATE/.lock"
  flock -w 900 8 || die "another scripts/kubernetes.sh holds $STATE/.lock for 15 minutes; see what it does (ps) and run down again"
  local hostpaths=()
  if [ -f "$ADMIN_KUBECONFIG" ] && [ -x "$KUBECTL" ] && running kube-apiserver && apiserver_ready >/dev/null 2>&1; then
    mapfile -t hostpaths < <(kubectl_admin get pv -o jsonpath='{range .items[*]}{.spec.hostPath.path}{"\n"}{end}' 2>/dev/null | grep "^$HOSTPATH_ROOT/" || true)
  fi
  stop_component kubelet
  # The pods' containers outlive the kubelet; remove the ones that were not there before `up`.
  local id
  while IFS= read -r id; do
    [ -n "$id" ] || continue
    [ -f "$SNAPSHOT/kubernetes-containers" ] && grep -qx "$id" "$SNAPSHOT/kubernetes-containers" && continue
    docker rm -f "$id" >/dev/null 2>&1 || true
  done < <(docker ps -aq --no-trunc --filter label=io.kubernetes.pod.uid 2>/dev/null | cut -c1-12)
  remove_cgroup_root
  stop_component kube-scheduler
  stop_component kube-controller-manager
  stop_component kube-apiserver
  stop_component etcd
  local mount
  while IFS= read -r mount; do umount "$mount" 2>/dev/null || umount -l "$mount" 2>/dev/null || true; done \
    < <(awk -v root="$STATE/kubelet" 'index($2, root) == 1 {print $2}' /proc/mounts | sort -r)
  local path
  for path in "${hostpaths[@]}"; do rm -rf "${path:?}"; done
  if [ -f "$SNAPSHOT/taken" ]; then
    restore_folder "$HOSTPATH_ROOT"
    restore_folder /var/log/pods
    restore_folder /var/log/containers
    restore_sysctls
    restore_iptables
    restore_oom_scores
  fi
  # The cluster's data goes with it: the next `up` starts from an empty cluster.
  rm -rf "$STATE/etcd" "$STATE/kubelet" "$STATE/dockershim" "$STATE/volume-plugins" "$RUN" "$SNAPSHOT"
  if [ "$purge" = --purge ]; then
    rm -rf "$STATE"
    docker image rm "$PAUSE_IMAGE" >/dev/null 2>&1 || true
    k8s_say "purged $STATE and $PAUSE_IMAGE (the built binaries stay in $CACHE)"
  fi
  k8s_say "down in $(awk -v start="$started" -v end="$(date +%s.%N)" 'BEGIN {printf "%.1f", end - start}') s"
}

# Everything `up` needs that takes long on a new machine, and nothing that starts: the test
# command runs this beside the suites that do not need the cluster.
command_build() {
  require_root
  mkdir -p "$CACHE_ROOT"
  local started; started="$(date +%s)"
  ensure_build_packages
  ensure_tools
  binaries_built || fetch_sources
  build_binaries
  k8s_say "binaries ready in $BIN ($(( $(date +%s) - started )) s)"
}

main() {
  case "${1:-}" in
    build) command_build ;;
    up) command_up ;;
    down) command_down "${2:-}" ;;
    status) command_status ;;
    *) echo "usage: bash scripts/kubernetes.sh build|up|down [--purge]|status" >&2; exit 2 ;;
  esac
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then main "$@"; fi
