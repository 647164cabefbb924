# shellcheck shell=bash
# The test cluster's binaries: Debian's packages and sources, the build (once per cache key),
# and the images the kubelet needs.
# Sourced by scripts/kubernetes.sh, whose settings and helpers it uses; read on its own, as
# by shellcheck, it sources them first.
[ -n "${KUBERNETES_VERSION:-}" ] || source "$(dirname "${BASH_SOURCE[0]}")/../kubernetes.sh"

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
