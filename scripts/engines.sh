#!/usr/bin/env bash
# Makes sure a Docker Engine and a rootful Podman API service answer, and that the local
# base image exists on both. Leaves an engine that already runs alone. Safe to run twice.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

DOCKER_SOCKET="/var/run/docker.sock"
PODMAN_SOCKET="/run/podman/podman.sock"

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
  if [ "${#missing[@]}" -gt 0 ]; then
    say "installing ${missing[*]} from Debian's packages"
    as_root apt-get update -qq >&2
    DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq "${missing[@]}" >&2
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
  as_root bash -c "nohup podman system service --time=0 unix://$PODMAN_SOCKET >/var/log/berth-podman.log 2>&1 &"
  wait_for_socket "$PODMAN_SOCKET" "Podman API" /var/log/berth-podman.log
}

# The root filesystem of the base image: busybox-static with its applet links, and the
# account files a shell expects.
build_rootfs_tar() {
  local dir; dir="$(mktemp -d)"
  mkdir -p "$dir/bin" "$dir/etc" "$dir/root" "$dir/tmp" "$dir/workspace" "$dir/proc" "$dir/sys" "$dir/dev" "$dir/usr/bin" "$dir/usr/sbin" "$dir/sbin"
  cp /bin/busybox "$dir/bin/busybox"
  chroot "$dir" /bin/busybox --install -s >/dev/null 2>&1 || (cd "$dir/bin" && for applet in $(./busybox --list); do [ -e "$applet" ] || ln -s busybox "$applet"; done)
  printf 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n' >"$dir/etc/passwd"
  printf 'root:x:0:\nnogroup:x:65534:\n' >"$dir/etc/group"
  chmod 1777 "$dir/tmp"
  tar -C "$dir" -cf "$1" .
  rm -rf "$dir"
}

ensure_base_image() {
  local tarball=""
  if docker_answers "$DOCKER_SOCKET" && ! docker image inspect "$BERTH_BASE_IMAGE" >/dev/null 2>&1; then
    tarball="$(mktemp --suffix=.tar)"; build_rootfs_tar "$tarball"
    say "importing $BERTH_BASE_IMAGE into Docker"
    docker import -c 'CMD ["/bin/sh"]' -c 'WORKDIR /workspace' "$tarball" "$BERTH_BASE_IMAGE" >/dev/null
  fi
  if docker_answers "$PODMAN_SOCKET" && ! podman image exists "$BERTH_BASE_IMAGE"; then
    [ -n "$tarball" ] || { tarball="$(mktemp --suffix=.tar)"; build_rootfs_tar "$tarball"; }
    say "importing $BERTH_BASE_IMAGE into Podman"
    podman import -c 'CMD ["/bin/sh"]' -c 'WORKDIR /workspace' "$tarball" "$BERTH_BASE_IMAGE" >/dev/null
  fi
  [ -z "$tarball" ] || rm -f "$tarball"
  say "base image $BERTH_BASE_IMAGE is present"
}

install_packages
ensure_docker
ensure_podman
ensure_base_image
