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

/** Host paths that, mounted into a sandbox, hand it the engine, the host or other users' files. */
function riskOfMount(source: string, sandboxDir: string, hermesHome: string): string | undefined {
  const normal = path.resolve(source);
  const within = (folder: string) => normal === folder || normal.startsWith(`${folder}${path.sep}`);
  const contains = (folder: string) => folder === normal || folder.startsWith(`${normal === '/' ? '' : normal}${path.sep}`);
  if (/\.sock$/.test(normal) || ['/var/run', '/run', '/run/podman', '/run/containerd', '/var/run/docker'].includes(normal) || within('/run/user')) {
    return "the container engine's socket: whoever holds it controls every sandbox and the host";
  }
  if (normal === '/') return "the host's whole root file system";
  if (['/proc', '/sys', '/dev', '/boot', '/etc', '/root', '/home', '/var/lib/docker', '/var/lib/containers', '/var/lib/kubelet'].some((folder) => within(folder))) {
    return `the host's ${normal} (system files, other accounts or other containers' data)`;
  }
  if (contains(sandboxDir) || within(sandboxDir)) return `the sandbox root ${sandboxDir}: every user's workspace and home`;
  if (contains(hermesHome) || within(hermesHome)) return `the gateway's home ${hermesHome}: its config, keys and every sandbox`;
  return undefined;
}

/**
 * Every setting that undoes part of the isolation Berth promises — the engine's socket, the
 * host's root or the sandbox root mounted in, dangerous capabilities, no-new-privileges off, a
 * runtime the engine does not have, an unbounded writable layer — each with its key and its
 * risk. `berth doctor` reports them (and fails); `register()` logs them as warnings.
 */
export function findIsolationRisks(config: TerminalConfig, context: { sandboxDir: string; hermesHome: string; runtimes?: readonly string[] }): IsolationRisk[] {
  const risks: IsolationRisk[] = [];
  config.docker_volumes.forEach((volume, index) => {
    const risk = riskOfMount(volume.split(':')[0]!, context.sandboxDir, context.hermesHome);
    if (risk) risks.push({ key: `terminal.docker_volumes.${index}`, risk: `${volume} mounts ${risk} into every sandbox` });
  });
  for (const capability of config.docker_cap_add) {
    const gives = DANGEROUS_CAPABILITIES[capability.replace(/^CAP_/, '')];
    if (gives) risks.push({ key: 'terminal.docker_cap_add', risk: `${capability} gives every sandbox ${gives}` });
  }
  if (!config.docker_no_new_privileges) {
    risks.push({ key: 'terminal.docker_no_new_privileges', risk: 'false lets a setuid program in a sandbox gain privileges it was not started with' });
  }
  if (config.docker_runtime && context.runtimes && !context.runtimes.includes(config.docker_runtime)) {
    risks.push({ key: 'terminal.docker_runtime', risk: `${config.docker_runtime} is not installed on the engine (it has ${context.runtimes.join(', ') || 'none'}): every sandbox fails to start` });
  }
  return risks;
}
