# shellcheck shell=bash
# The test cluster's certificates, kubeconfigs and kubelet configuration.
# Sourced by scripts/kubernetes.sh, whose settings and helpers it uses; read on its own, as
# by shellcheck, it sources them first.
[ -n "${KUBERNETES_VERSION:-}" ] || source "$(dirname "${BASH_SOURCE[0]}")/../kubernetes.sh"

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
