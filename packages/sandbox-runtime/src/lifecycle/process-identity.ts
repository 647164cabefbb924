import { readFileSync, readlinkSync } from 'node:fs';

/**
 * A name for this process that no other process ever has, on this host or after it: the boot's
 * id, the pid namespace, the pid and the process's start time. A pid alone is not one: it is
 * reused, and every gateway that is pid 1 of its container has the same. Used to tell whether
 * something a process left (a spare network) belongs to a process that is gone.
 */
export function processIdentity(): string {
  return [bootId(), pidNamespace(), String(process.pid), startTime(process.pid) ?? ''].join('.');
}

function bootId(): string {
  try {
    return readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim().replace(/-/g, '');
  } catch {
    return '';
  }
}

function pidNamespace(): string {
  try {
    return /\[(\d+)\]/.exec(readlinkSync('/proc/self/ns/pid'))?.[1] ?? '';
  } catch {
    return '';
  }
}

/** The start time of a process, in clock ticks since boot (field 22 of `/proc/<pid>/stat`), or `undefined` when it is gone. */
function startTime(pid: number): string | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command name may hold spaces and parentheses: the fields after it follow its last ")".
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19];
  } catch {
    return undefined;
  }
}

/**
 * True only when the process an identity names is certainly gone: it is of this boot and this
 * pid namespace, and no process with its pid and start time exists. An identity from another
 * host, boot or namespace, or one this host cannot read, is never called gone.
 */
export function isProcessIdentityGone(identity: string): boolean {
  const [boot, namespace, pid, started] = identity.split('.');
  if (!boot || !namespace || !pid || !started || boot !== bootId() || namespace !== pidNamespace() || !/^\d+$/.test(pid)) return false;
  const now = startTime(Number(pid));
  return now === undefined || now !== started;
}
