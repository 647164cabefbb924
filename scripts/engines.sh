#!/usr/bin/env bash
# Makes sure a Docker Engine and a rootful Podman API service answer, and that the local
# base image exists on both, and that Docker has gVisor's runtime. Leaves an engine that already
# runs alone but for that runtime entry (a reload: its containers keep running). Safe to run twice.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

DOCKER_SOCKET="/var/run/docker.sock"
PODMAN_SOCKET="/run/podman/podman.sock"
# A second rootful Podman service whose containers run under gVisor (ensure_gvisor).
PODMAN_GVISOR_SOCKET="/run/podman-gvisor/podman.sock"

docker_answers() { curl -fsS --max-time 2 --unix-socket "$1" http://localhost/_ping >/dev/null 2>&1; }

wait_for_socket() {
  local socket="$1" name="$2" log="$3"
  for _ in $(seq 1 120); do
    if docker_answers "$socket"; then say "$name answers on $socket"; return 0; fi
    sleep 0.5
  done
  say "$name did not answer on $socket within 60 s; its log: $log"; tail -n 20 "$log" >&2 || true
  return 1
}

install_packages() {
  local missing=()
  command -v dockerd >/dev/null 2>&1 || missing+=(docker.io)
  command -v podman >/dev/null 2>&1 || missing+=(podman)
  [ -x /bin/busybox ] && /bin/busybox --list 2>/dev/null | grep -qx wget || missing+=(busybox-static)
  command -v curl >/dev/null 2>&1 || missing+=(curl)
  command -v newuidmap >/dev/null 2>&1 || missing+=(uidmap)
  command -v slirp4netns >/dev/null 2>&1 || missing+=(slirp4netns)
  # The egress policy (nftables) and the per-user disks (ext4 images on loop devices).
  command -v nft >/dev/null 2>&1 || [ -x /usr/sbin/nft ] || missing+=(nftables)
  command -v mkfs.ext4 >/dev/null 2>&1 || [ -x /usr/sbin/mkfs.ext4 ] || missing+=(e2fsprogs)
  command -v losetup >/dev/null 2>&1 || [ -x /usr/sbin/losetup ] || missing+=(mount)
  if [ "${#missing[@]}" -gt 0 ]; then
    say "installing ${missing[*]} from Debian's packages"
    apt_get update -qq >&2
    apt_get install -y -qq "${missing[@]}" >&2
  fi
}

ensure_docker() {
  if [ -n "${DOCKER_HOST:-}" ]; then say "DOCKER_HOST is set ($DOCKER_HOST); leaving that engine alone"; return; fi
  if docker_answers "$DOCKER_SOCKET"; then say "Docker Engine already answers on $DOCKER_SOCKET"; return; fi
  say "starting dockerd in the background (log: /var/log/berth-dockerd.log)"
  as_root bash -c 'nohup dockerd >/var/log/berth-dockerd.log 2>&1 &'
  wait_for_socket "$DOCKER_SOCKET" "Docker Engine" /var/log/berth-dockerd.log
}

ensure_podman() {
  if docker_answers "$PODMAN_SOCKET"; then say "Podman API already answers on $PODMAN_SOCKET"; return; fi
  say "starting podman system service in the background (log: /var/log/berth-podman.log)"
  as_root mkdir -p /run/podman
  # Started from /: the service keeps its working folder, and conmon fails in one deleted since (a removed clone).
  (cd / && as_root bash -c "nohup podman system service --time=0 unix://$PODMAN_SOCKET >/var/log/berth-podman.log 2>&1 &")
  wait_for_socket "$PODMAN_SOCKET" "Podman API" /var/log/berth-podman.log
}

# The root filesystem of the base image: busybox-static with its applet links, and the
# account files a shell expects.
build_rootfs_tar() {
  local dir; dir="$(mktemp -d)"
  chmod 0755 "$dir" # the image's /: non-root users in the sandbox (rootless keep-id) must traverse it
  mkdir -p "$dir/bin" "$dir/etc" "$dir/root" "$dir/tmp" "$dir/workspace" "$dir/proc" "$dir/sys" "$dir/dev" "$dir/usr/bin" "$dir/usr/sbin" "$dir/sbin"
  cp /bin/busybox "$dir/bin/busybox"
  chroot "$dir" /bin/busybox --install -s >/dev/null 2>&1 || (cd "$dir/bin" && for applet in $(./busybox --list); do [ -e "$applet" ] || ln -s busybox "$applet"; done)
  printf 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n' >"$dir/etc/passwd"
  printf 'root:x:0:\nnogroup:x:65534:\n' >"$dir/etc/group"
  chmod 1777 "$dir/tmp"
  tar -C "$dir" -cf "$1" .
  rm -rf "$dir"
}

# An image counts as present when it is this version of the base image (bump on any change).
BASE_IMAGE_VERSION=2
docker_has_image() { docker image inspect -f '{{json .Config.Env}}' "$BERTH_BASE_IMAGE" 2>/dev/null | grep -q "BERTH_BASE_IMAGE_VERSION=$BASE_IMAGE_VERSION"; }
podman_has_image() { "$@" image inspect -f '{{json .Config.Env}}' "$BERTH_BASE_IMAGE" 2>/dev/null | grep -q "BERTH_BASE_IMAGE_VERSION=$BASE_IMAGE_VERSION"; }
IMPORT_CHANGES=(-c 'CMD ["/bin/sh"]' -c 'WORKDIR /workspace' -c 'ENV PATH=/usr/sbin:/usr/bin:/sbin:/bin' -c "ENV BERTH_BASE_IMAGE_VERSION=$BASE_IMAGE_VERSION")

ensure_base_image() {
  local tarball
  tarball="$(mktemp --suffix=.tar)"; chmod 0644 "$tarball"
  build_rootfs_tar "$tarball"
  if docker_answers "$DOCKER_SOCKET" && ! docker_has_image; then
    say "importing $BERTH_BASE_IMAGE into Docker"
    docker import "${IMPORT_CHANGES[@]}" "$tarball" "$BERTH_BASE_IMAGE" >/dev/null
  fi
  if docker_answers "$PODMAN_SOCKET" && ! podman_has_image podman; then
    say "importing $BERTH_BASE_IMAGE into Podman"
    podman import -q "${IMPORT_CHANGES[@]}" "$tarball" "$BERTH_BASE_IMAGE" >/dev/null
  fi
  if [ -n "${ROOTLESS_USER_READY:-}" ] && ! podman_has_image as_rootless podman; then
    say "importing $BERTH_BASE_IMAGE into $ROOTLESS_USER's rootless Podman"
    as_rootless podman import -q "${IMPORT_CHANGES[@]}" "$tarball" "$BERTH_BASE_IMAGE" >/dev/null
  fi
  rm -f "$tarball"
  say "base image $BERTH_BASE_IMAGE is present"
}

# Rootless Podman: an ordinary user with subordinate ids and their own API service, so the
# Podman backend's suite can run rootless too.
ROOTLESS_USER="${BERTH_ROOTLESS_USER:-berth-rootless}"
as_rootless() {
  local uid; uid="$(id -u "$ROOTLESS_USER")"
  (cd / && runuser -u "$ROOTLESS_USER" -- env XDG_RUNTIME_DIR="/run/user/$uid" HOME="$(getent passwd "$ROOTLESS_USER" | cut -d: -f6)" PATH=/usr/local/bin:/usr/bin:/bin "$@")
}

ensure_rootless_podman() {
  if [ "$(id -u)" != 0 ]; then say "not root: skipping the rootless Podman user set-up"; return; fi
  if ! id "$ROOTLESS_USER" >/dev/null 2>&1; then
    say "creating the user $ROOTLESS_USER for rootless Podman"
    useradd -m -s /bin/bash "$ROOTLESS_USER"
  fi
  grep -q "^$ROOTLESS_USER:" /etc/subuid || usermod --add-subuids 200000-265535 "$ROOTLESS_USER"
  grep -q "^$ROOTLESS_USER:" /etc/subgid || usermod --add-subgids 200000-265535 "$ROOTLESS_USER"
  # slirp4netns needs to open /dev/net/tun; some machines ship it as 0600.
  if [ -c /dev/net/tun ] && [ "$(stat -c %a /dev/net/tun)" != 666 ]; then
    say "making /dev/net/tun usable by ordinary users (mode 0666) for rootless networking"
    chmod 0666 /dev/net/tun
  fi
  local uid runtime socket
  uid="$(id -u "$ROOTLESS_USER")"; runtime="/run/user/$uid"; socket="$runtime/podman/podman.sock"
  install -d -m 0700 -o "$ROOTLESS_USER" -g "$ROOTLESS_USER" "$runtime" "$runtime/podman"
  if docker_answers "$socket"; then
    say "rootless Podman API already answers on $socket"
  else
    touch /var/log/berth-podman-rootless.log && chown "$ROOTLESS_USER" /var/log/berth-podman-rootless.log
    # Processes killed while /run stays (a machine reset between runs by killing everything)
    # leave this user's Podman state naming a pause process and conmons that are gone: every
    # podman command of the user then stops at once with "invalid internal status, try resetting
    # the pause process with podman system migrate", the service too (seen: a whole run without
    # rootless Podman). `podman system migrate` resets that state; it deletes nothing.
    if ! as_rootless podman info >/dev/null 2>&1; then
      say "$ROOTLESS_USER's Podman does not answer \`podman info\` (state left by killed processes?): podman system migrate"
      as_rootless podman system migrate >>/var/log/berth-podman-rootless.log 2>&1 || true
    fi
    say "starting $ROOTLESS_USER's rootless podman system service (log: /var/log/berth-podman-rootless.log)"
    as_rootless bash -c "nohup podman system service --time=0 unix://$socket >>/var/log/berth-podman-rootless.log 2>&1 &"
    wait_for_socket "$socket" "rootless Podman API" /var/log/berth-podman-rootless.log
  fi
  ROOTLESS_USER_READY=1
}

# gVisor (`runsc`): a kernel of its own for each sandbox, registered with Docker as the runtime
# `runsc` (docs/gvisor.md; Podman 4.3's API ignores a container's runtime, so Berth refuses it there). Debian's package (bookworm: the 2022-12-19 release) cannot
# set up its own network stack on this kernel ("cannot run with network enabled in root network
# namespace": it takes every network namespace for the host's), so it is registered with
# --network=host: the sandbox's sockets are the host kernel's, inside the container's own network
# namespace (what that costs: docs/gvisor.md). Docker takes the flags in its runtime entry and
# reloads it on SIGHUP, running containers untouched.
RUNSC_ARGS=(--network=host)
DOCKER_CONFIG_FILE=/etc/docker/daemon.json

ensure_gvisor() {
  [ "$(id -u)" = 0 ] || { say "not root: skipping the gVisor runtime set-up"; return; }
  command -v runsc >/dev/null 2>&1 || install_debian_packages runsc
  local runsc; runsc="$(command -v runsc)"
  # Docker: merged into its configuration; an entry the operator made is left as it is.
  if [ -z "${DOCKER_HOST:-}" ] && ! docker info --format '{{json .Runtimes}}' 2>/dev/null | grep -q '"runsc"'; then
    say "registering runsc (${RUNSC_ARGS[*]}) with Docker in $DOCKER_CONFIG_FILE and reloading it"
    mkdir -p "$(dirname "$DOCKER_CONFIG_FILE")"
    RUNSC="$runsc" ARGS="${RUNSC_ARGS[*]}" FILE="$DOCKER_CONFIG_FILE" node -e '
      const fs = require("node:fs");
      const file = process.env.FILE;
      const config = fs.existsSync(file) ? JSON.parse(fs.readFileSync(file, "utf8")) : {};
      config.runtimes = { ...config.runtimes, runsc: { path: process.env.RUNSC, runtimeArgs: process.env.ARGS.split(" ") } };
      fs.writeFileSync(file + ".berth-new", JSON.stringify(config, null, 2) + "\n");
      fs.renameSync(file + ".berth-new", file);'
    pkill -HUP -x dockerd
    for _ in $(seq 1 40); do docker info --format '{{json .Runtimes}}' 2>/dev/null | grep -q '"runsc"' && break; sleep 0.25; done
    docker info --format '{{json .Runtimes}}' | grep -q '"runsc"' || { say "Docker did not take the runsc runtime; its log: /var/log/berth-dockerd.log"; return 1; }
  fi
  # Podman: its API service makes every container under the service's own runtime (4.3 ignores
  # the one a container asks for), so gVisor's sandboxes get a rootful service of their own, on
  # its own socket, sharing the rootful storage and images (docs/gvisor.md). Started from /, as
  # the other one.
  if ! docker_answers "$PODMAN_GVISOR_SOCKET"; then
    say "starting a rootful podman system service under gVisor on $PODMAN_GVISOR_SOCKET (log: /var/log/berth-podman-gvisor.log)"
    mkdir -p "$(dirname "$PODMAN_GVISOR_SOCKET")"
    (cd / || exit 1; nohup podman --runtime runsc --runtime-flag network=host system service --time=0 "unix://$PODMAN_GVISOR_SOCKET" </dev/null >/var/log/berth-podman-gvisor.log 2>&1 &)
    wait_for_socket "$PODMAN_GVISOR_SOCKET" "Podman API under gVisor" /var/log/berth-podman-gvisor.log
  fi
}

install_packages
ensure_docker
ensure_podman
ensure_gvisor
ensure_rootless_podman
ensure_base_image
