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

# ---------------------------------------------------------------------------------------------
# Packages and sources

ensure_build_packages() {
  local missing=()
  command -v go >/dev/null 2>&1 || [ -x /usr/lib/go-1.19/bin/go ] || missing+=(golang-go)
  command -v openssl >/dev/null 2>&1 || missing+=(openssl)
  command -v gcc >/dev/null 2>&1 || missing+=(gcc libc6-dev)
  command -v curl >/dev/null 2>&1 || missing+=(curl)
  command -v patch >/dev/null 2>&1 || missing+=(patch)
  command -v iptables >/dev/null 2>&1 || missing+=(iptables)
  if [ "${#missing[@]}" -gt 0 ]; then
    k8s_say "installing ${missing[*]} from Debian's packages"
    apt_get update -qq >&2
    apt_get install -y -qq --no-install-recommends "${missing[@]}" >&2
  fi
}

# etcd is taken out of Debian's etcd-server .deb rather than installed, so no etcd service
# starts on the default ports of a machine with an init system.
ensure_tools() {
  [ -x "$ETCD" ] && return
  k8s_say "taking etcd from Debian's etcd-server package"
  local work; work="$(mktemp -d)"
  chmod 0755 "$work" # apt downloads as its own unprivileged user
  (cd "$work" && apt-get download etcd-server >&2) || {
    apt_get update -qq >&2
    (cd "$work" && apt-get download etcd-server >&2)
  }
  mkdir -p "$TOOLS"
  dpkg-deb -x "$work"/etcd-server_*.deb "$work/root"
  install -m 0755 "$work/root/usr/bin/etcd" "$ETCD"
  rm -rf "$work"
}

# The first Debian mirror this machine uses, as a deb-src entry, in an apt configuration of our
# own: the machine's sources.list and package lists are not touched.
write_source_list() {
  local list="$1"
  local uri suite
  if [ -f /etc/apt/sources.list.d/debian.sources ]; then
    uri="$(awk '/^URIs:/ {print $2; exit}' /etc/apt/sources.list.d/debian.sources)"
    suite="$(awk '/^Suites:/ {print $2; exit}' /etc/apt/sources.list.d/debian.sources)"
  elif [ -f /etc/apt/sources.list ]; then
    read -r uri suite < <(awk '$1 == "deb" && $0 !~ /security/ {for (i = 2; i <= NF; i++) if ($i !~ /^\[/) {print $i, $(i + 1); exit}}' /etc/apt/sources.list)
  fi
  # shellcheck disable=SC2015 # meant: unless both were found, die
  [ -n "${uri:-}" ] && [ -n "${suite:-}" ] || die "found no Debian mirror in /etc/apt/sources.list.d/debian.sources or /etc/apt/sources.list; add one and run again"
  echo "deb-src $uri $suite main" >"$list"
}

fetch_sources() {
  if ls "$SOURCES"/kubernetes_*.orig.tar.* >/dev/null 2>&1; then return; fi
  k8s_say "downloading Debian's kubernetes source package (apt-get source --download-only)"
  local apt; apt="$(mktemp -d)"
  mkdir -p "$apt/lists/partial" "$apt/parts" "$SOURCES.partial"
  write_source_list "$apt/sources.list"
  local options=(-o "Dir::Etc::SourceList=$apt/sources.list" -o "Dir::Etc::SourceParts=$apt/parts" -o "Dir::State::Lists=$apt/lists" -o "APT::Sandbox::User=root")
  apt-get "${options[@]}" update -qq >&2
  (cd "$SOURCES.partial" && apt-get "${options[@]}" source --download-only kubernetes >&2)
  rm -rf "$apt"
  ls "$SOURCES.partial"/kubernetes_*.orig.tar.* >/dev/null 2>&1 || die "apt-get source kubernetes gave no .orig tarball; see the output above"
  rm -rf "$SOURCES" && mv "$SOURCES.partial" "$SOURCES"
}

# ---------------------------------------------------------------------------------------------
# Building the server binaries (once per cache key)

binaries_built() {
  local binary
  for binary in "${BINARIES[@]}" pause; do [ -x "$BIN/$binary" ] || return 1; done
}

go_environment() {
  export GOPATH="$1/gopath" GOCACHE="$1/gocache" GO111MODULE=off GOPROXY=off GOFLAGS='' CGO_ENABLED=0
  export PATH="/usr/lib/go-1.19/bin:$PATH"
}

# Kubernetes 1.20 does not ship pkg/generated/openapi/zz_generated.openapi.go (its build makes
# it): generate it with the vendored openapi-gen, over every package that asks for it.
generate_openapi() {
  local tree="$1" work="$2"
  [ -f "$tree/pkg/generated/openapi/zz_generated.openapi.go" ] && return
  k8s_say "generating the OpenAPI definitions (pkg/generated/openapi)"
  (cd "$tree" && go build -o "$work/openapi-gen" ./vendor/k8s.io/kube-openapi/cmd/openapi-gen)
  local packages
  packages="$(cd "$tree" && grep -Rl --include='*.go' --exclude='*_test.go' '+k8s:openapi-gen=' pkg cmd plugin vendor/k8s.io 2>/dev/null \
    | grep -vE '^vendor/k8s.io/(code-generator|sample-apiserver)/' | xargs -n1 dirname | LC_ALL=C sort -u \
    | sed 's|^|k8s.io/kubernetes/|' | paste -sd, -)"
  [ -n "$packages" ] || die "found no package tagged +k8s:openapi-gen in $tree; is the source tree complete?"
  (cd "$tree" && "$work/openapi-gen" --logtostderr -i "$packages" -p k8s.io/kubernetes/pkg/generated/openapi \
    -O zz_generated.openapi -h vendor/k8s.io/code-generator/hack/boilerplate.go.txt \
    -r "$work/openapi-rule-violations.txt" --output-base "$GOPATH/src" >"$work/openapi-gen.log" 2>&1) \
    || { tail -n 20 "$work/openapi-gen.log" >&2; die "openapi-gen failed; its log: $work/openapi-gen.log"; }
}

# The pause container every pod starts with, from the tree's own pause.c, statically linked so
# it runs in an image of one file (no registry here has k8s.gcr.io/pause).
build_pause() {
  local tree="$1" out="$2"
  gcc -Os -static -o "$out/pause" "$tree/build/pause/linux/pause.c"
  strip "$out/pause"
}

build_binaries() {
  binaries_built && return
  exec 9>"$CACHE_ROOT/.kubernetes-build.lock"
  flock 9
  binaries_built && return
  k8s_say "building Kubernetes $KUBERNETES_VERSION (${BINARIES[*]}) into $BIN; about 7 minutes of 2 cores, once per machine"
  local started; started="$(date +%s)"
  local work="$CACHE_ROOT/kubernetes-build"
  local tree="$work/gopath/src/k8s.io/kubernetes"
  go_environment "$work"
  rm -rf "$work/gopath" && mkdir -p "$work/gopath/src/k8s.io" "$work/gocache"
  local tarball; tarball="$(ls "$SOURCES"/kubernetes_*.orig.tar.*)"
  tar -xf "$tarball" -C "$work/gopath/src/k8s.io"
  mv "$work/gopath/src/k8s.io/kubernetes-$KUBERNETES_VERSION" "$tree"
  local patch
  for patch in "$PATCH_DIR"/*.diff; do
    k8s_say "applying $(basename "$patch")"
    (cd "$tree" && patch -p1 --forward --quiet <"$patch")
  done
  generate_openapi "$tree" "$work"
  local ldflags="-s -w" package
  for package in k8s.io/kubernetes/vendor/k8s.io/component-base/version k8s.io/kubernetes/vendor/k8s.io/client-go/pkg/version; do
    ldflags+=" -X $package.gitVersion=v$KUBERNETES_VERSION -X $package.gitMajor=${KUBERNETES_VERSION%%.*}"
    ldflags+=" -X $package.gitMinor=$(echo "$KUBERNETES_VERSION" | cut -d. -f2) -X $package.gitCommit=$KUBERNETES_COMMIT -X $package.gitTreeState=clean"
  done
  rm -rf "$BIN.partial" && mkdir -p "$BIN.partial"
  local binary packages=()
  for binary in "${BINARIES[@]}"; do packages+=("./cmd/$binary"); done
  k8s_say "go build ${packages[*]}"
  # One go build for all of them: their shared packages are compiled once and the links overlap
  # the compiles. `providerless` leaves out the in-tree cloud providers (AWS, Azure, GCE,
  # OpenStack, vSphere), about half of what there is to compile, which a one-node test cluster
  # never uses. nice 19: the build, type-check and unit tests that run meanwhile keep the cores
  # they ask for; scripts/test.sh raises it to 0 once they are done (the pid of go is in
  # kubernetes-build.pid), so that the compile then shares the cores evenly with the suites.
  (cd "$tree" && exec nice -n 19 go build -p "$(nproc)" -tags selinux,notest,providerless -ldflags "$ldflags" -o "$BIN.partial/" "${packages[@]}") &
  local go_pid=$!
  echo "$go_pid" >"$CACHE_ROOT/kubernetes-build.pid"
  if ! wait "$go_pid"; then
    rm -f "$CACHE_ROOT/kubernetes-build.pid"
    k8s_say "go build failed (its output is above)"
    exit 1
  fi
  rm -f "$CACHE_ROOT/kubernetes-build.pid"
  build_pause "$tree" "$BIN.partial"
  rm -rf "$BIN" && mv "$BIN.partial" "$BIN"
  echo "$(( $(date +%s) - started ))" >"$CACHE/build-seconds"
  # The tree and Go's build cache are several GB; only the binaries are kept.
  rm -rf "$work"
  k8s_say "built in $(cat "$CACHE/build-seconds") s"
  flock -u 9
}

# ---------------------------------------------------------------------------------------------
# Images the kubelet needs: pause (imported once) and Berth's base image

ensure_images() {
  if ! docker image inspect "$PAUSE_IMAGE" >/dev/null 2>&1; then
    k8s_say "importing $PAUSE_IMAGE into Docker"
    local dir; dir="$(mktemp -d)"
    cp "$BIN/pause" "$dir/pause"
    tar -C "$dir" -cf - pause | docker import --change 'ENTRYPOINT ["/pause"]' - "$PAUSE_IMAGE" >/dev/null
    rm -rf "$dir"
  fi
  if ! docker image inspect "$BERTH_BASE_IMAGE" >/dev/null 2>&1; then
    k8s_say "$BERTH_BASE_IMAGE is missing from Docker; bringing it with scripts/engines.sh"
    bash "$BERTH_ROOT/scripts/engines.sh"
  fi
}

# ---------------------------------------------------------------------------------------------
# Certificates and kubeconfigs (openssl; valid a year, remade when one expires within a day)

issue_certificate() { # name subject [extensions]
  local name="$1" subject="$2" extensions="${3:-}"
  openssl genrsa -out "$PKI/$name.key" 2048 2>/dev/null
  openssl req -new -key "$PKI/$name.key" -subj "$subject" -out "$PKI/$name.csr" 2>/dev/null
  printf 'basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth,clientAuth\n%s\n' "$extensions" >"$PKI/$name.ext"
  openssl x509 -req -in "$PKI/$name.csr" -CA "$PKI/ca.crt" -CAkey "$PKI/ca.key" -CAcreateserial -days 365 \
    -extfile "$PKI/$name.ext" -out "$PKI/$name.crt" 2>/dev/null
  rm -f "$PKI/$name.csr" "$PKI/$name.ext"
}

write_kubeconfig() { # file user certificate
  local file="$1" user="$2" certificate="$3"
  rm -f "$file"
  "$KUBECTL" config --kubeconfig="$file" set-cluster berth-test --server="https://127.0.0.1:$APISERVER_PORT" --certificate-authority="$PKI/ca.crt" --embed-certs >/dev/null
  "$KUBECTL" config --kubeconfig="$file" set-credentials "$user" --client-certificate="$PKI/$certificate.crt" --client-key="$PKI/$certificate.key" --embed-certs >/dev/null
  "$KUBECTL" config --kubeconfig="$file" set-context berth-test --cluster=berth-test --user="$user" >/dev/null
  "$KUBECTL" config --kubeconfig="$file" use-context berth-test >/dev/null
  chmod 0600 "$file"
}

pki_current() {
  local name
  for name in ca apiserver apiserver-kubelet-client kubelet-serving node controller-manager scheduler admin berth; do
    [ -f "$PKI/$name.crt" ] && openssl x509 -checkend 86400 -noout -in "$PKI/$name.crt" >/dev/null 2>&1 || return 1
  done
  [ -f "$PKI/service-accounts.key" ] && [ -f "$ADMIN_KUBECONFIG" ] && [ -f "$STATE/berth.kubeconfig" ]
}

ensure_pki() {
  pki_current && return
  k8s_say "making the cluster's certificates and kubeconfigs with openssl ($PKI)"
  rm -rf "$PKI" && install -d -m 0700 "$PKI"
  openssl genrsa -out "$PKI/ca.key" 2048 2>/dev/null
  openssl req -x509 -new -key "$PKI/ca.key" -subj "/CN=berth-test-cluster-ca" -days 365 -out "$PKI/ca.crt" 2>/dev/null
  issue_certificate apiserver "/CN=kube-apiserver" \
    "subjectAltName=IP:127.0.0.1,IP:$SERVICE_FIRST_ADDRESS,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local"
  issue_certificate apiserver-kubelet-client "/CN=kube-apiserver-kubelet-client"
  issue_certificate kubelet-serving "/CN=localhost" "subjectAltName=DNS:localhost,IP:127.0.0.1"
  issue_certificate node "/O=system:nodes/CN=system:node:localhost"
  issue_certificate controller-manager "/CN=system:kube-controller-manager"
  issue_certificate scheduler "/CN=system:kube-scheduler"
  issue_certificate admin "/O=system:masters/CN=berth-test-admin"
  # A user with no rights of its own: tests bind docs/backend-kubernetes.md's Role to it, so the
  # Role is proven to be enough.
  issue_certificate berth "/CN=berth"
  openssl genrsa -out "$PKI/service-accounts.key" 2048 2>/dev/null
  openssl rsa -in "$PKI/service-accounts.key" -pubout -out "$PKI/service-accounts.pub" 2>/dev/null
  chmod 0600 "$PKI"/*.key
  write_kubeconfig "$ADMIN_KUBECONFIG" berth-test-admin admin
  write_kubeconfig "$STATE/berth.kubeconfig" berth berth
  write_kubeconfig "$STATE/node.kubeconfig" system:node:localhost node
  write_kubeconfig "$STATE/controller-manager.kubeconfig" system:kube-controller-manager controller-manager
  write_kubeconfig "$STATE/scheduler.kubeconfig" system:kube-scheduler scheduler
}

write_kubelet_config() {
  cat >"$STATE/kubelet-config.yaml" <<YAML
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: 127.0.0.1
port: $KUBELET_PORT
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: $KUBELET_HEALTHZ_PORT
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: false}
  x509: {clientCAFile: $PKI/ca.crt}
# Only holders of a certificate from this cluster's CA reach the kubelet, on loopback.
authorization: {mode: AlwaysAllow}
tlsCertFile: $PKI/kubelet-serving.crt
tlsPrivateKeyFile: $PKI/kubelet-serving.key
cgroupDriver: cgroupfs
# Pod-level cgroups under a root of their own: where podPidsLimit is enforced (a fork bomb in a
# sandbox stops at it), and what the script removes when it stops the cluster.
cgroupsPerQOS: true
cgroupRoot: /$CGROUP_ROOT
enforceNodeAllocatable: [pods]
podPidsLimit: $POD_PIDS_LIMIT
failSwapOn: false
# The machine is shared: no iptables rules of the kubelet's, no hairpin changes on Docker's
# bridge, no image garbage collection (Docker's images are not the kubelet's), no evictions.
makeIPTablesUtilChains: false
hairpinMode: none
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard: {memory.available: "1Mi", nodefs.available: "1%", imagefs.available: "1%", nodefs.inodesFree: "1%"}
maxPods: 60
serializeImagePulls: false
clusterDomain: cluster.local
YAML
}

# ---------------------------------------------------------------------------------------------
# What `up` changes on the machine, recorded before the first start and put back by `down`

iptables_tables=(filter nat mangle)

take_snapshot() {
  [ -f "$SNAPSHOT/taken" ] && return
  mkdir -p "$SNAPSHOT"
  local name
  for name in "${TUNED_SYSCTLS[@]}"; do
    sysctl -n "$name" >/dev/null 2>&1 && echo "$name=$(sysctl -n "$name")"
  done >"$SNAPSHOT/sysctl"
  local table
  for table in "${iptables_tables[@]}"; do
    iptables -t "$table" -S >"$SNAPSHOT/iptables-$table" 2>/dev/null || true
    ip6tables -t "$table" -S >"$SNAPSHOT/ip6tables-$table" 2>/dev/null || true
  done
  local folder
  for folder in /var/log/pods /var/log/containers "$HOSTPATH_ROOT"; do
    if [ -d "$folder" ]; then ls -A "$folder" >"$SNAPSHOT/entries$(echo "$folder" | tr / _)"; fi
  done
  docker ps -aq --filter label=io.kubernetes.pod.uid >"$SNAPSHOT/kubernetes-containers" 2>/dev/null || true
  # dockershim sets -999 on the engine's daemons every 5 minutes where the machine lets it.
  local daemon pid
  for daemon in dockerd containerd; do
    for pid in $(pgrep -x "$daemon" 2>/dev/null || true); do echo "$pid $(cat "/proc/$pid/oom_score_adj" 2>/dev/null)"; done
  done >"$SNAPSHOT/oom-score-adj"
  date +%s >"$SNAPSHOT/taken"
}

restore_sysctls() {
  [ -f "$SNAPSHOT/sysctl" ] || return 0
  local line name value
  while IFS= read -r line; do
    name="${line%%=*}"; value="${line#*=}"
    if [ "$(sysctl -n "$name" 2>/dev/null)" != "$value" ]; then
      k8s_say "putting back $name=$value (was changed to $(sysctl -n "$name"))"
      sysctl -q -w "$name=$value" >/dev/null
    fi
  done <"$SNAPSHOT/sysctl"
}

restore_oom_scores() {
  [ -f "$SNAPSHOT/oom-score-adj" ] || return 0
  local pid value
  while read -r pid value; do
    # shellcheck disable=SC2015 # meant: unless both hold, next line
    [ -n "$value" ] && [ -e "/proc/$pid" ] || continue
    if [ "$(cat "/proc/$pid/oom_score_adj")" != "$value" ]; then
      k8s_say "putting back oom_score_adj $value of $(cat "/proc/$pid/comm") (pid $pid)"
      echo "$value" >"/proc/$pid/oom_score_adj" 2>/dev/null || true
    fi
  done <"$SNAPSHOT/oom-score-adj"
}

# The kubelet's cgroup root in every hierarchy: made (cpuset needs its cpus and mems filled in by
# hand) before the kubelet starts, removed deepest first once no pod's container is left.
create_cgroup_root() {
  local controller base
  for controller in "${CGROUP_CONTROLLERS[@]}"; do
    base="/sys/fs/cgroup/$controller"
    [ -d "$base" ] || continue
    mkdir -p "$base/$CGROUP_ROOT"
    if [ "$controller" = cpuset ]; then
      [ -s "$base/$CGROUP_ROOT/cpuset.cpus" ] || cat "$base/cpuset.cpus" >"$base/$CGROUP_ROOT/cpuset.cpus"
      [ -s "$base/$CGROUP_ROOT/cpuset.mems" ] || cat "$base/cpuset.mems" >"$base/$CGROUP_ROOT/cpuset.mems"
    fi
  done
}

remove_cgroup_root() {
  local folder
  # Every hierarchy, the unified one of a hybrid machine included (the kubelet makes it there too).
  for folder in /sys/fs/cgroup/*/"$CGROUP_ROOT" "/sys/fs/cgroup/$CGROUP_ROOT"; do
    [ -d "$folder" ] || continue
    find "$folder" -depth -type d -exec rmdir {} \; 2>/dev/null || true
    # shellcheck disable=SC2002 # cat: a folder gone meanwhile counts 0 processes, with no error message
    [ -d "$folder" ] && k8s_say "could not remove $folder (processes left in it: $(cat "$folder/cgroup.procs" 2>/dev/null | wc -l))"
  done
  return 0
}

# Removes only rules and chains that mention KUBE- and were not there before `up`.
restore_iptables() {
  local tool table rule chain
  for tool in iptables ip6tables; do
    command -v "$tool" >/dev/null 2>&1 || continue
    for table in "${iptables_tables[@]}"; do
      [ -f "$SNAPSHOT/$tool-$table" ] || continue
      while IFS= read -r rule; do
        grep -qxF -- "$rule" "$SNAPSHOT/$tool-$table" && continue
        k8s_say "removing $tool -t $table ${rule}"
        eval "$tool -t $table -D ${rule#-A }" 2>/dev/null || true
      done < <("$tool" -t "$table" -S 2>/dev/null | grep -E '^-A ' | grep -- 'KUBE-' || true)
      while IFS= read -r chain; do
        grep -qxF -- "-N $chain" "$SNAPSHOT/$tool-$table" && continue
        k8s_say "removing $tool -t $table chain $chain"
        "$tool" -t "$table" -F "$chain" 2>/dev/null || true
        "$tool" -t "$table" -X "$chain" 2>/dev/null || true
      done < <("$tool" -t "$table" -S 2>/dev/null | awk '$1 == "-N" && $2 ~ /^KUBE-/ {print $2}' || true)
    done
  done
}

# A folder the cluster writes into outside its state folder: removed when `up` made it, else
# only the entries that appeared since.
restore_folder() {
  local folder="$1" record; record="$SNAPSHOT/entries$(echo "$folder" | tr / _)"
  [ -d "$folder" ] || return 0
  if [ ! -f "$record" ]; then rm -rf "$folder"; return; fi
  local entry
  while IFS= read -r entry; do
    grep -qxF -- "$entry" "$record" || rm -rf "${folder:?}/$entry"
  done < <(ls -A "$folder")
}

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
