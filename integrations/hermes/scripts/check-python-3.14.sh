#!/usr/bin/env bash
# The Hermes bridge's static checks and engine-free tests (scripts/check.sh) under Python 3.14,
# the Python that upstream Hermes 0.21 requires; the host's Debian bookworm has 3.11. A minimal
# Debian sid root (debootstrap --variant=minbase, then python3 3.14, mypy, flake8, pytest, PyYAML
# and pip from Debian's packages) is built once per version into the machine's cache, beside the
# test cluster's binaries ($BERTH_CACHE_DIR, default /var/cache/berth), and check.sh runs inside it
# through chroot, in a mount namespace of its own (unshare): no container engine. The checkout is
# mounted read-only at /berth, a fresh tmpfs at /tmp, so a run leaves nothing in the cached root.
# Safe to run twice: a present root is only checked. docs/testing.md says more.
# shellcheck source=python-3.14-root.sh
source "$(dirname "${BASH_SOURCE[0]}")/python-3.14-root.sh"
ensure_python_root
BERTH_ROOT_RO="$BERTH_ROOT" in_root "$ROOT" bash /berth/integrations/hermes/scripts/check.sh
