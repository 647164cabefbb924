import { lstatSync, readlinkSync, statSync } from 'node:fs';
import path from 'node:path';
import type { TerminalConfig } from '@berth/core';

/** A setting that undoes part of a sandbox's isolation: the key at fault and what it exposes. */
export interface IsolationRisk {
  /** The dotted config key, e.g. `terminal.docker_cap_add`. */
  readonly key: string;
  /** What a hostile user could do with it, in one line. */
  readonly risk: string;
}

/** Capabilities that let a sandbox's root reach past the sandbox, and what each gives. */
const DANGEROUS_CAPABILITIES: Readonly<Record<string, string>> = {
  ALL: 'every capability, the host kernel included',
  SYS_ADMIN: 'mounts, namespaces and most of the kernel: the usual way out of a container',
  NET_ADMIN: "changes to the sandbox's network (firewall, routes, addresses), around the egress policy",
  SYS_PTRACE: 'tracing processes, and reading their memory and secrets',
  SYS_MODULE: 'loading kernel modules into the host',
  DAC_READ_SEARCH: 'opening host files by handle, past the mounts (the "shocker" escape)',
  SYS_RAWIO: "raw I/O to the host's devices and memory",
  NET_RAW: 'raw packets: spoofing on the sandbox network',
  SYS_BOOT: 'rebooting the host',
  SYS_TIME: "setting the host's clock",
  BPF: 'loading BPF programs into the host kernel',
  PERFMON: "watching the host's processes through perf",
  SYSLOG: "reading the host's kernel log",
  MAC_ADMIN: "changing the host's security policy",
};

/**
 * A path as the engine will find it: every symbolic link in it followed, dangling ones too (a
 * bind mount follows them, and a link may be made before its target), the part that does not
 * exist kept as written.
 */
function realPath(file: string): string {
  let pending = path.resolve(file).split(path.sep).filter(Boolean);
  let current: string = path.sep;
  for (let hops = 0; pending.length > 0; ) {
    const next = path.join(current, pending.shift()!);
    let link: string | undefined;
    try {
      link = lstatSync(next).isSymbolicLink() ? readlinkSync(next) : undefined;
    } catch {
      return path.join(next, ...pending);
    }
    if (link === undefined) {
      current = next;
    } else {
      // A loop of links: the engine refuses it too; stop where it starts.
      if (++hops > 40) return next;
      pending = [...path.resolve(current, link).split(path.sep).filter(Boolean), ...pending];
      current = path.sep;
    }
  }
  return current;
}

const within = (inner: string, outer: string): boolean => inner === outer || inner.startsWith(outer === '/' ? '/' : `${outer}${path.sep}`);

/** Folders whose contents hand a sandbox the host, the engine, or other users' files. */
const SYSTEM_FOLDERS = ['/proc', '/sys', '/dev', '/boot', '/etc', '/root', '/home'];
/** Where the engines keep their state and sockets: every container's files, and control of all of them. */
const ENGINE_FOLDERS = [
  '/var/lib/docker',
  '/var/lib/containers',
  '/var/lib/containerd',
  '/var/lib/kubelet',
  '/run/docker',
  '/run/podman',
  '/run/containerd',
  '/run/containers',
  '/run/user',
];

/** What a mount source must never be, contain or lie within, each with what it would hand a sandbox. */
function sensitivePlaces(context: { sandboxDir: string; hermesHome: string; engineSocket?: string | undefined }): Array<{ place: string; what: string }> {
  const socket = "the container engine's socket or state: whoever holds it controls every sandbox and the host";
  return [
    ...(context.engineSocket && path.isAbsolute(context.engineSocket) ? [{ place: context.engineSocket, what: socket }] : []),
    ...ENGINE_FOLDERS.map((place) => ({ place, what: socket })),
    { place: '/run', what: "the host's /run, where the container engines' sockets live: whoever holds one controls every sandbox and the host" },
    { place: '/var/run', what: "the host's /var/run, where the container engines' sockets live: whoever holds one controls every sandbox and the host" },
    { place: context.sandboxDir, what: `the sandbox root ${context.sandboxDir}: every user's workspace and home` },
    { place: context.hermesHome, what: `the gateway's home ${context.hermesHome}: its config, keys and every sandbox` },
    ...SYSTEM_FOLDERS.map((place) => ({ place, what: `the host's ${place} (system files, other accounts or other containers' data)` })),
  ];
}

/**
 * Why a `docker_volumes` source hands a sandbox the engine, the host or other users' files, or
 * `undefined`. The source is read as the engine reads it (every link followed) and as written;
 * it is a risk when either is, contains or lies within the engine's socket or state, `/`, a
 * system folder, the sandbox root or the gateway's home.
 */
function riskOfMount(source: string, context: { sandboxDir: string; hermesHome: string; engineSocket?: string | undefined }): string | undefined {
  const written = path.resolve(source);
  const real = realPath(source);
  const forms = [...new Set([written, real])];
  const through = real !== written ? ` (${written} leads to ${real})` : '';
  const isSocket = (() => {
    try {
      return statSync(real).isSocket();
    } catch {
      return false;
    }
  })();
  if (isSocket || forms.some((form) => form.endsWith('.sock')))
    return `the container engine's socket${through}: whoever holds it controls every sandbox and the host`;
  if (forms.includes('/')) return `the host's whole root file system${through}`;
  for (const { place, what } of sensitivePlaces(context)) {
    const places = [...new Set([path.resolve(place), realPath(place)])];
    for (const form of forms) {
      for (const target of places) {
        if (within(form, target)) return `${what}${through}`;
        if (within(target, form)) return `${form}, which holds ${what}${through}`;
      }
    }
  }
  return undefined;
}

/**
 * Every setting that undoes part of the isolation Berth promises — a mount that is, holds or
 * lies within the engine's socket or state, the host's root, a system folder, the sandbox root
 * or the gateway's home (symbolic links followed, as the engine follows them), dangerous capabilities, no-new-privileges off, a
 * runtime the engine does not have, an unbounded writable layer — each with its key and its
 * risk. `berth doctor` reports them (and fails); `register()` logs them as warnings.
 */
export function findIsolationRisks(
  config: TerminalConfig,
  context: { sandboxDir: string; hermesHome: string; runtimes?: readonly string[]; engineSocket?: string | undefined },
): IsolationRisk[] {
  const risks: IsolationRisk[] = [];
  config.docker_volumes.forEach((volume, index) => {
    const risk = riskOfMount(volume.split(':')[0]!, context);
    if (risk) risks.push({ key: `terminal.docker_volumes.${index}`, risk: `${volume} mounts ${risk} into every sandbox` });
  });
  for (const capability of config.docker_cap_add) {
    const gives = DANGEROUS_CAPABILITIES[capability.replace(/^CAP_/, '')];
    if (gives) risks.push({ key: 'terminal.docker_cap_add', risk: `${capability} gives every sandbox ${gives}` });
  }
  if (!config.docker_no_new_privileges) {
    risks.push({ key: 'terminal.docker_no_new_privileges', risk: 'false lets a setuid program in a sandbox gain privileges it was not started with' });
  }
  if (!config.docker_read_only) {
    risks.push({
      key: 'terminal.docker_read_only',
      risk: "false leaves each container's own writable layer unbounded: a user can fill the engine's disk outside /workspace and /root",
    });
  }
  if (config.container_disk === 0) {
    risks.push({ key: 'terminal.container_disk', risk: "0 puts no limit on /workspace and /root: a user can fill the host's disk" });
  }
  if (config.docker_runtime && context.runtimes && !context.runtimes.includes(config.docker_runtime)) {
    risks.push({
      key: 'terminal.docker_runtime',
      risk: `${config.docker_runtime} is not installed on the engine (it has ${context.runtimes.join(', ') || 'none'}): every sandbox fails to start`,
    });
  }
  return risks;
}
