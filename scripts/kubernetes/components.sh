# shellcheck shell=bash
# The test cluster's processes: starting, checking and stopping each component, the storage
# class, the smoke test, and the address ranges it must keep clear of.
# Sourced by scripts/kubernetes.sh, whose settings and helpers it uses; read on its own, as
# by shellcheck, it sources them first.
[ -n "${KUBERNETES_VERSION:-}" ] || source "$(dirname "${BASH_SOURCE[0]}")/../kubernetes.sh"

# ---------------------------------------------------------------------------------------------
# Processes

# The pid of a component: the one its pid file names while that process still runs our binary,
# else any process whose executable is our binary (a pid file lost or left stale).
pid_of() {
  local program pid; program="$(program_of "$1")"
  if [ -f "$RUN/$1.pid" ]; then
    pid="$(cat "$RUN/$1.pid")"
    [ -n "$pid" ] && [ "$(readlink "/proc/$pid/exe" 2>/dev/null)" = "$program" ] && { echo "$pid"; return 0; }
  fi
  pid="$(find /proc -mindepth 2 -maxdepth 2 -name exe -lname "$program" 2>/dev/null | head -n1 | cut -d/ -f3)"
  [ -n "$pid" ] && echo "$pid"
}

running() { pid_of "$1" >/dev/null; }

program_of() { case "$1" in etcd) echo "$ETCD" ;; *) echo "$BIN/$1" ;; esac; }

port_of() {
  case "$1" in
    etcd) echo "$ETCD_CLIENT_PORT $ETCD_PEER_PORT" ;; kube-apiserver) echo "$APISERVER_PORT" ;;
    kube-controller-manager) echo "$CONTROLLER_MANAGER_PORT" ;; kube-scheduler) echo "$SCHEDULER_PORT" ;;
    kubelet) echo "$KUBELET_PORT $KUBELET_HEALTHZ_PORT" ;;
  esac
}

check_ports_free() {
  local port holder
  for port in $(port_of "$1"); do
    holder="$(ss -Hltnp "sport = :$port" 2>/dev/null | grep -o 'users:(("[^"]*"' | head -n1 | cut -d'"' -f2 || true)"
    [ -z "$holder" ] || die "port $port (for $1) is taken by ${holder}; stop it, or stop the other cluster with its own tools, and run up again"
  done
}

start_component() { # name program arguments...
  local name="$1"; shift
  running "$name" && return
  check_ports_free "$name"
  [ -f "$LOGS/$name.log" ] && mv "$LOGS/$name.log" "$LOGS/$name.previous.log"
  rm -f "$RUN/$name.pid"
  # Its own session, and none of this script's lock descriptors: it outlives `up`, and must not
  # hold the lock that `down` takes.
  # The program writes its own pid (setsid forks when it would lead a process group).
  # shellcheck disable=SC2016 # expanded by the new bash: its own pid, its arguments
  setsid bash -c 'echo $$ >"$0"; exec "$@"' "$RUN/$name.pid" "$@" >"$LOGS/$name.log" 2>&1 </dev/null 8>&- 9>&- &
  local tries=0
  until [ -s "$RUN/$name.pid" ] || [ "$tries" -ge 50 ]; do sleep 0.1; tries=$((tries + 1)); done
  k8s_say "started $name (pid $(cat "$RUN/$name.pid" 2>/dev/null), log $LOGS/$name.log)"
}

wait_until() { # seconds description command... (the description is for the call's reader)
  local seconds="$1"; shift 2
  local deadline=$(( $(date +%s) + seconds ))
  until "$@" >/dev/null 2>&1; do
    [ "$(date +%s)" -lt "$deadline" ] || return 1
    sleep 0.5
  done
}

stop_component() {
  local name="$1" pid
  if pid="$(pid_of "$name")"; then
    kill -TERM "$pid" 2>/dev/null || true
    local tries=0
    while kill -0 "$pid" 2>/dev/null && [ "$tries" -lt 40 ]; do sleep 0.25; tries=$((tries + 1)); done
    # shellcheck disable=SC2015 # meant: kill it if it is still there; either way, go on
    kill -0 "$pid" 2>/dev/null && kill -KILL "$pid" 2>/dev/null || true
    k8s_say "stopped $name (pid $pid)"
  fi
  rm -f "$RUN/$name.pid"
}

component_failed() { k8s_say "$1 did not become ready within $2 s; the last lines of $LOGS/$1.log:"; tail -n 15 "$LOGS/$1.log" >&2 || true; exit 1; }

etcd_healthy() { curl -fs --max-time 2 "http://127.0.0.1:$ETCD_CLIENT_PORT/health" | grep -q '"health":"true"'; }
apiserver_ready() { kubectl_admin get --raw /readyz; }
secure_healthy() { curl -fsk --max-time 2 "https://127.0.0.1:$1/healthz"; }
kubelet_healthy() { curl -fs --max-time 2 "http://127.0.0.1:$KUBELET_HEALTHZ_PORT/healthz"; }
node_ready() {
  [ "$(kubectl_admin get node localhost -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}' 2>/dev/null)" = True ]
}

start_cluster() {
  mkdir -p "$RUN" "$LOGS" "$STATE/etcd" "$STATE/kubelet" "$STATE/dockershim" "$STATE/volume-plugins"
  start_component etcd "$ETCD" --name berth-test --data-dir "$STATE/etcd" \
    --listen-client-urls "http://127.0.0.1:$ETCD_CLIENT_PORT" --advertise-client-urls "http://127.0.0.1:$ETCD_CLIENT_PORT" \
    --listen-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" --initial-advertise-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" \
    --initial-cluster "berth-test=http://127.0.0.1:$ETCD_PEER_PORT" --quota-backend-bytes 1073741824
  wait_until 30 etcd etcd_healthy || component_failed etcd 30

  start_component kube-apiserver "$BIN/kube-apiserver" --etcd-servers="http://127.0.0.1:$ETCD_CLIENT_PORT" \
    --bind-address=127.0.0.1 --secure-port="$APISERVER_PORT" --advertise-address=127.0.0.1 --insecure-port=0 \
    --endpoint-reconciler-type=none --tls-cert-file="$PKI/apiserver.crt" --tls-private-key-file="$PKI/apiserver.key" \
    --client-ca-file="$PKI/ca.crt" --service-account-key-file="$PKI/service-accounts.pub" \
    --service-account-signing-key-file="$PKI/service-accounts.key" --service-account-issuer=https://kubernetes.default.svc \
    --kubelet-client-certificate="$PKI/apiserver-kubelet-client.crt" --kubelet-client-key="$PKI/apiserver-kubelet-client.key" \
    --kubelet-certificate-authority="$PKI/ca.crt" --kubelet-preferred-address-types=Hostname \
    --authorization-mode=Node,RBAC --service-cluster-ip-range="$SERVICE_RANGE" \
    --enable-admission-plugins=NodeRestriction --allow-privileged=false --profiling=false --event-ttl=30m
  wait_until 90 kube-apiserver apiserver_ready || component_failed kube-apiserver 90

  # hostPath provisioning: the controller-manager's own dynamic provisioner for one-node
  # clusters (kubernetes.io/host-path), so claims bind as on a cluster with a real one.
  start_component kube-controller-manager "$BIN/kube-controller-manager" --kubeconfig="$STATE/controller-manager.kubeconfig" \
    --authentication-kubeconfig="$STATE/controller-manager.kubeconfig" --authorization-kubeconfig="$STATE/controller-manager.kubeconfig" \
    --bind-address=127.0.0.1 --port=0 --secure-port="$CONTROLLER_MANAGER_PORT" \
    --service-account-private-key-file="$PKI/service-accounts.key" --root-ca-file="$PKI/ca.crt" \
    --use-service-account-credentials=true --leader-elect=false --controllers='*,-csrsigning,-nodeipam' \
    --enable-hostpath-provisioner=true --profiling=false
  start_component kube-scheduler "$BIN/kube-scheduler" --kubeconfig="$STATE/scheduler.kubeconfig" \
    --authentication-kubeconfig="$STATE/scheduler.kubeconfig" --authorization-kubeconfig="$STATE/scheduler.kubeconfig" \
    --bind-address=127.0.0.1 --port=0 --secure-port="$SCHEDULER_PORT" --leader-elect=false --profiling=false

  write_kubelet_config
  create_cgroup_root
  # The kubelet talks to the machine's Docker Engine through its built-in dockershim; its own
  # sockets, checkpoints and volume plugins stay inside the state folder.
  start_component kubelet "$BIN/kubelet" --kubeconfig="$STATE/node.kubeconfig" --config="$STATE/kubelet-config.yaml" \
    --root-dir="$STATE/kubelet" --cert-dir="$STATE/kubelet/pki" --hostname-override=localhost \
    --container-runtime=docker --docker-endpoint=unix:///var/run/docker.sock \
    --container-runtime-endpoint="unix://$RUN/dockershim.sock" --image-service-endpoint="unix://$RUN/dockershim.sock" \
    --experimental-dockershim-root-directory="$STATE/dockershim" --pod-infra-container-image="$PAUSE_IMAGE" \
    --volume-plugin-dir="$STATE/volume-plugins" --oom-score-adj=0 --v=1
  wait_until 60 kube-controller-manager secure_healthy "$CONTROLLER_MANAGER_PORT" || component_failed kube-controller-manager 60
  wait_until 60 kube-scheduler secure_healthy "$SCHEDULER_PORT" || component_failed kube-scheduler 60
  wait_until 60 kubelet kubelet_healthy || component_failed kubelet 60
  wait_until 90 "node localhost Ready" node_ready || component_failed kubelet 90
}

# The storage class Berth's tests name in kubernetes_storage_class (and the default class).
ensure_storage_class() {
  kubectl_admin apply -f - >/dev/null <<YAML
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata:
  name: $STORAGE_CLASS
  annotations: {storageclass.kubernetes.io/is-default-class: "true"}
provisioner: kubernetes.io/host-path
reclaimPolicy: Delete
volumeBindingMode: Immediate
YAML
}

# A claim bound by the provisioner, a pod from Berth's base image on it, and an exec whose exit
# code comes back: what Berth's tests need, checked once per start.
smoke_test() {
  local namespace=berth-smoke
  kubectl_admin delete namespace "$namespace" --wait=true --timeout=60s >/dev/null 2>&1 || true
  kubectl_admin create namespace "$namespace" >/dev/null
  # A pod is refused until the controller manager made the namespace's default service account
  # (a moment after the namespace, longer while the controller manager is still starting).
  local tries=0
  until kubectl_admin -n "$namespace" get serviceaccount default >/dev/null 2>&1; do
    tries=$((tries + 1))
    [ "$tries" -le 120 ] || die "the default service account of namespace $namespace was not made within 60 s; see $LOGS/kube-controller-manager.log"
    sleep 0.5
  done
  kubectl_admin -n "$namespace" apply -f - >/dev/null <<YAML
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: smoke}
spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 16Mi}}}
---
apiVersion: v1
kind: Pod
metadata: {name: smoke}
spec:
  automountServiceAccountToken: false
  terminationGracePeriodSeconds: 0
  containers:
  - name: smoke
    image: $BERTH_BASE_IMAGE
    imagePullPolicy: Never
    command: [/bin/sh, -c, 'trap "exit 0" TERM; while :; do sleep 1; done']
    volumeMounts: [{name: data, mountPath: /data}]
  volumes: [{name: data, persistentVolumeClaim: {claimName: smoke}}]
YAML
  kubectl_admin -n "$namespace" wait --for=condition=Ready pod/smoke --timeout=90s >/dev/null \
    || { kubectl_admin -n "$namespace" describe pod smoke | tail -n 15 >&2; die "the smoke pod did not become Ready; see above and $LOGS/kubelet.log"; }
  local code=0
  kubectl_admin -n "$namespace" exec smoke -- /bin/sh -c 'echo ok > /data/smoke && exit 3' 2>/dev/null || code=$?
  [ "$code" = 3 ] || die "the smoke pod's exec gave exit code $code, not 3; see $LOGS/kube-apiserver.log and $LOGS/kubelet.log"
  kubectl_admin delete namespace "$namespace" --wait=false >/dev/null
  k8s_say "smoke test passed: claim bound, pod Ready, exec exit code returned"
}

# ---------------------------------------------------------------------------------------------
# Address ranges: the cluster's must not overlap Berth's sandbox pool

ip_to_number() { local IFS=.; read -r a b c d <<<"$1"; echo $(( (a << 24) + (b << 16) + (c << 8) + d )); }
ranges_overlap() { # cidr cidr
  local first="${1%/*}" first_bits="${1#*/}" second="${2%/*}" second_bits="${2#*/}"
  local bits=$(( first_bits < second_bits ? first_bits : second_bits ))
  local mask=$(( bits == 0 ? 0 : (0xFFFFFFFF << (32 - bits)) & 0xFFFFFFFF ))
  [ $(( $(ip_to_number "$first") & mask )) = $(( $(ip_to_number "$second") & mask )) ]
}
check_ranges() {
  local pool="${BERTH_DOCKER_NETWORK_POOL:-10.217.0.0/16}" pods
  pods="$(docker network inspect bridge -f '{{range .IPAM.Config}}{{.Subnet}} {{end}}' 2>/dev/null | awk '{print $1}')"
  ranges_overlap "$SERVICE_RANGE" "$pool" && die "the service range $SERVICE_RANGE overlaps Berth's docker_network_pool $pool; change SERVICE_RANGE in scripts/kubernetes.sh"
  if [ -n "$pods" ] && ranges_overlap "$pods" "$pool"; then
    die "Docker's default bridge ($pods), where the pods get their addresses, overlaps Berth's docker_network_pool $pool; give dockerd another bip or Berth another pool"
  fi
  return 0
}
