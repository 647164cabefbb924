"""What a test's gateway leaves on the host besides containers and processes, and how it goes: the
nftables tables of its egress policy, and the disks Berth mounted under its root.
"""

from __future__ import annotations

import ipaddress
import json
import os
import re
import secrets
import subprocess
from pathlib import Path

# This run's own docker_network_pool, so the pool's egress table is this run's (another test run on
# the machine, of this or an earlier release, keeps its own); removed after the last test, unless a
# sandbox network of the pool is still on the host: the attack suite picks its pools from the same
# 384 /20s, beside this one.
NETWORK_POOL = f"10.{224 + secrets.randbelow(24)}.{16 * secrets.randbelow(16)}.0/20"


def remove_egress_tables(node: str, runtime: Path, sandbox_root: Path, last: bool) -> None:
    """Removes the nftables tables a test's gateway made: its installation's and, with the test's last
    gateway, the pool's.

    Their names come from Berth's own functions (``@berth/sandbox-runtime/driver``, built at ``runtime``), not a
    copy of them.
    """
    if not (sandbox_root / ".berth-installation-key").is_file():
        return  # no sandbox was ever named here: no table either
    script = (
        f"import({json.dumps(runtime.as_uri())}).then((m) => console.log(m.installationTableName(m.installationTag("
        f"{{ sandboxRoot: {json.dumps(os.fspath(sandbox_root))}, pool: {json.dumps(NETWORK_POOL)} }})), "
        f"m.egressTableName({json.dumps(NETWORK_POOL)})))"
    )
    names = subprocess.run(
        [node, "--input-type=module", "-e", script], capture_output=True, text=True, check=False
    ).stdout.split()
    for table in names[: 2 if last and not pool_in_use(NETWORK_POOL) else 1]:
        subprocess.run(["nft", "delete", "table", "inet", table], capture_output=True, check=False)


def pool_in_use(pool: str) -> bool:
    """Whether a host interface has an IPv4 address inside ``pool``: a sandbox network of it exists, whoever made it."""
    network = ipaddress.ip_network(pool)
    listing = subprocess.run(["ip", "-o", "-4", "addr", "show"], capture_output=True, text=True, check=False).stdout
    addresses = (field.split("/")[0] for line in listing.splitlines() for field in line.split()[3:4])
    return any(ipaddress.ip_address(address) in network for address in addresses)


def unmount_under(root: Path) -> None:
    """Unmounts what Berth mounted under a test's root (each user's disk), innermost first, so it can be deleted."""
    prefix = os.fspath(root) + os.sep
    try:
        with open("/proc/self/mountinfo", encoding="utf-8") as mountinfo:
            points = [line.split(" ")[4] for line in mountinfo if len(line.split(" ")) > 4]
    except OSError:
        return
    points = [re.sub(r"\\([0-7]{3})", lambda match: chr(int(match.group(1), 8)), point) for point in points]
    for point in sorted((point for point in points if point.startswith(prefix)), key=len, reverse=True):
        subprocess.run(["umount", "--lazy", point], capture_output=True, check=False)
