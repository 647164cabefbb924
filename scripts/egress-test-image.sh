#!/usr/bin/env bash
# Builds the test-only image $BERTH_EGRESS_TEST_IMAGE (localhost/berth-egress-test:latest) on
# Docker and rootful Podman: a Debian bookworm rootfs from debootstrap (minbase, plus curl and
# python3) and the project's own Node binary in /usr/local/bin/node, for the integration tests
# that run HTTP clients inside a sandbox (HTTPS through HTTPS_PROXY, with a CA bundle the test
# mounts: the image holds no CA certificates). The base image has no registry to come from, so
# this one cannot either: debootstrap takes the packages from the Debian mirror of the host's own
# apt sources. Skipped when both engines already have this version of it (the images are the
# cache). Safe to run twice; leaves nothing behind on failure. docs/testing.md says more.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

# An image counts as present when it is this version (bump on any change to what goes in).
EGRESS_TEST_IMAGE_VERSION=1
SUITE=bookworm
# curl (with OpenSSL); python3, for its whole standard library: http.client and json are not in
# python3-minimal. minbase already has libstdc++6 and libgcc-s1, which node links against.
PACKAGES=curl,python3
NODE_BINARY="$BERTH_TOOLS/node/bin/node"
DOCKER_SOCKET="/var/run/docker.sock"
PODMAN_SOCKET="/run/podman/podman.sock"
IMPORT_CHANGES=(-c 'CMD ["/bin/sh"]' -c 'WORKDIR /workspace' -c 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' -c "ENV BERTH_EGRESS_TEST_IMAGE_VERSION=$EGRESS_TEST_IMAGE_VERSION")

engine_answers() { curl -fsS --max-time 2 --unix-socket "$1" http://localhost/_ping >/dev/null 2>&1; }
# has_image docker|podman
has_image() { "$1" image inspect -f '{{json .Config.Env}}' "$BERTH_EGRESS_TEST_IMAGE" 2>/dev/null | grep -q "BERTH_EGRESS_TEST_IMAGE_VERSION=$EGRESS_TEST_IMAGE_VERSION"; }

# Two runs at once take turns: the second then finds the image present.
lock=/run/lock/berth-egress-test-image.lock
[ -d /run/lock ] || lock=/tmp/berth-egress-test-image.lock
exec 9>"$lock"
flock 9

engines=()
engine_answers "$DOCKER_SOCKET" && ! has_image docker && engines+=(docker)
engine_answers "$PODMAN_SOCKET" && ! has_image podman && engines+=(podman)
if [ "${#engines[@]}" = 0 ]; then
  say "test image $BERTH_EGRESS_TEST_IMAGE (version $EGRESS_TEST_IMAGE_VERSION) is present"
  exit 0
fi
[ "$(id -u)" = 0 ] || { say "building $BERTH_EGRESS_TEST_IMAGE needs root (debootstrap, chroot)"; exit 1; }
[ -x "$NODE_BINARY" ] || { say "no Node binary at $NODE_BINARY to copy into $BERTH_EGRESS_TEST_IMAGE (the set-up installs it)"; exit 1; }

work="$(mktemp -d)"
rootfs="$work/rootfs"
log="$work/log"
# debootstrap mounts /proc and /sys in the rootfs while it configures, and may leave them there
# when it fails: unmounted first, and rm stays on this file system whatever happens.
cleanup() {
  awk -v prefix="$work/" 'index($2, prefix) == 1 { print $2 }' /proc/mounts | sort -r | while read -r mount; do umount -l "$mount" || true; done
  rm -rf --one-file-system "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

fail() {
  say "$1; the end of its log:"
  tail -n 20 "$log" >&2 || true
  [ -f "$rootfs/debootstrap/debootstrap.log" ] && tail -n 20 "$rootfs/debootstrap/debootstrap.log" >&2
  exit 1
}

debootstrap="$(command -v debootstrap || echo /usr/sbin/debootstrap)"
if [ ! -x "$debootstrap" ]; then
  say "installing debootstrap from Debian's packages"
  { apt_get update -qq && apt_get install -y -qq debootstrap; } >"$log" 2>&1 || fail "installing debootstrap failed"
  debootstrap="$(command -v debootstrap || echo /usr/sbin/debootstrap)"
fi
mirror="$(debian_mirror "$SUITE")"
if [ -z "$mirror" ]; then
  # apt knows a source's release only once it has read the source's index.
  apt_get update -qq >"$log" 2>&1 || fail "apt-get update failed"
  mirror="$(debian_mirror "$SUITE")"
fi
[ -n "$mirror" ] || { say "no Debian mirror with $SUITE's main in apt's sources (/etc/apt/sources.list, /etc/apt/sources.list.d/)"; exit 1; }

say "building $BERTH_EGRESS_TEST_IMAGE: debootstrap $SUITE (minbase, $PACKAGES) from $mirror, and node $("$NODE_BINARY" --version)"
"$debootstrap" --variant=minbase --include="$PACKAGES" "$SUITE" "$rootfs" "$mirror" >"$log" 2>&1 || fail "debootstrap failed"

# What a test image does without: apt's downloads and indexes, documentation, translations, the
# device nodes (the engines make /dev) and the build host's name and resolver (the engines write them).
rm -rf "${rootfs:?}"/var/cache/apt/archives/*.deb "${rootfs:?}"/var/cache/apt/*.bin "${rootfs:?}"/var/lib/apt/lists/* \
  "${rootfs:?}"/usr/share/doc/* "${rootfs:?}"/usr/share/man/* "${rootfs:?}"/usr/share/info/* "${rootfs:?}"/usr/share/locale/* \
  "${rootfs:?}"/dev/* "${rootfs:?}"/etc/hostname "${rootfs:?}"/etc/resolv.conf
install -m 0755 "$NODE_BINARY" "$rootfs/usr/local/bin/node"
install -d -m 0755 "$rootfs/workspace"
# The image's /: non-root users in the sandbox must traverse it.
chmod 0755 "$rootfs"
chmod 1777 "$rootfs/tmp"

# Every library node links against is in the image, and the three clients start.
chroot "$rootfs" /usr/bin/ldd /usr/local/bin/node >"$log" 2>&1 || fail "ldd /usr/local/bin/node failed in the rootfs"
if grep -q 'not found' "$log"; then fail "node needs libraries the rootfs lacks"; fi
chroot "$rootfs" /usr/bin/env -i PATH=/usr/local/bin:/usr/bin:/bin /bin/sh -c \
  'curl --version && python3 -c "import ssl, urllib.request, http.client, json" && node -e 0' >"$log" 2>&1 ||
  fail "curl, python3 or node does not start in the rootfs"

tarball="$work/rootfs.tar"
tar --numeric-owner -C "$rootfs" -cf "$tarball" .
for engine in "${engines[@]}"; do
  say "importing $BERTH_EGRESS_TEST_IMAGE into ${engine^}"
  old="$("$engine" image inspect -f '{{.Id}}' "$BERTH_EGRESS_TEST_IMAGE" 2>/dev/null || true)"
  case "$engine" in
    docker) docker import "${IMPORT_CHANGES[@]}" "$tarball" "$BERTH_EGRESS_TEST_IMAGE" >/dev/null ;;
    podman) podman import -q "${IMPORT_CHANGES[@]}" "$tarball" "$BERTH_EGRESS_TEST_IMAGE" >/dev/null ;;
  esac
  has_image "$engine" || { say "${engine^} does not show $BERTH_EGRESS_TEST_IMAGE version $EGRESS_TEST_IMAGE_VERSION after the import"; exit 1; }
  # The version it replaced goes once it has no name left (kept while a container uses it).
  if [ -n "$old" ] && [ "$("$engine" image inspect -f '{{len .RepoTags}}' "$old" 2>/dev/null)" = 0 ]; then
    "$engine" image rm "$old" >/dev/null 2>&1 || true
  fi
done
say "test image $BERTH_EGRESS_TEST_IMAGE (version $EGRESS_TEST_IMAGE_VERSION) is present"
