import { parseTerminalConfig } from '@berth/core';
import { describe, expect, it } from 'vitest';
import { findIsolationRisks } from './isolation-risks.js';

const context = { sandboxDir: '/srv/berth/sandboxes', hermesHome: '/srv/berth', runtimes: ['runc'] };
const risksOf = (input: Record<string, unknown>) => findIsolationRisks(parseTerminalConfig(input), context);

describe('findIsolationRisks', () => {
  it('finds nothing in the defaults', () => {
    expect(risksOf({})).toEqual([]);
  });

  it('names every setting that undoes the isolation, each with its key and its risk', () => {
    const risks = risksOf({
      docker_volumes: ['/var/run/docker.sock:/var/run/docker.sock', '/:/host:ro', '/srv/berth/sandboxes:/all:ro', '/run/podman/podman.sock:/p.sock', '/srv/data:/data:ro', '/srv/berth/config:/c:ro', '/proc:/hostproc:ro'],
      docker_cap_add: ['CHOWN', 'SYS_ADMIN', 'NET_ADMIN', 'SYS_PTRACE', 'SYS_MODULE'],
      docker_no_new_privileges: false,
      docker_runtime: 'runsc',
    });
    const keys = risks.map((risk) => risk.key);
    expect(keys).toEqual([
      'terminal.docker_volumes.0',
      'terminal.docker_volumes.1',
      'terminal.docker_volumes.2',
      'terminal.docker_volumes.3',
      'terminal.docker_volumes.5',
      'terminal.docker_volumes.6',
      'terminal.docker_cap_add',
      'terminal.docker_cap_add',
      'terminal.docker_cap_add',
      'terminal.docker_cap_add',
      'terminal.docker_no_new_privileges',
      'terminal.docker_runtime',
    ]);
    expect(risks[0]!.risk).toMatch(/engine's socket/);
    expect(risks[1]!.risk).toMatch(/whole root file system/);
    expect(risks[2]!.risk).toMatch(/every user's workspace and home/);
    expect(risks.find((risk) => risk.risk.includes('SYS_ADMIN'))!.risk).toMatch(/mounts, namespaces/);
    expect(risks.at(-1)!.risk).toMatch(/runsc is not installed on the engine \(it has runc\)/);
    for (const risk of risks) expect(risk.risk).not.toMatch(/[\r\n]/);
  });
});
