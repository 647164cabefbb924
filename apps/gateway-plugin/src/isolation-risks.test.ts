import { mkdirSync, mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
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
      docker_volumes: [
        '/var/run/docker.sock:/var/run/docker.sock',
        '/:/host:ro',
        '/srv/berth/sandboxes:/all:ro',
        '/run/podman/podman.sock:/p.sock',
        '/srv/data:/data:ro',
        '/srv/berth/config:/c:ro',
        '/proc:/hostproc:ro',
      ],
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

  it('names a writable root layer and a disabled disk limit: both let a user fill a disk', () => {
    const risks = risksOf({ docker_read_only: false, container_disk: 0 });
    expect(risks.map((risk) => risk.key)).toEqual(['terminal.docker_read_only', 'terminal.container_disk']);
    expect(risks[0]!.risk).toMatch(/writable layer unbounded/);
    expect(risks[1]!.risk).toMatch(/no limit on \/workspace and \/root/);
  });

  it('follows links and parent folders: a mount that is, holds or lies within a sensitive place is named, whatever its path says', () => {
    const folder = mkdtempSync(path.join(tmpdir(), 'berth-risks-'));
    try {
      const hermes = path.join(folder, 'hermes');
      const sandboxes = path.join(hermes, 'sandboxes');
      mkdirSync(sandboxes, { recursive: true });
      mkdirSync(path.join(folder, 'data'));
      const socket = path.join(folder, 'engine.socket-file');
      symlinkSync(socket, path.join(folder, 'innocent'));
      symlinkSync(sandboxes, path.join(folder, 'shared'));
      symlinkSync('/etc', path.join(folder, 'config-files'));
      const volumes = [
        `${folder}/innocent:/tools`,
        `${folder}/shared:/s:ro`,
        '/var:/hostvar:ro',
        `${folder}/config-files/ssl:/ssl:ro`,
        `${folder}:/everything:ro`,
        `${folder}/data:/data:ro`,
        '/run/user/0:/r',
      ];
      const risks = findIsolationRisks(parseTerminalConfig({ docker_volumes: volumes }), { sandboxDir: sandboxes, hermesHome: hermes, engineSocket: socket });
      const byKey = Object.fromEntries(risks.map((risk) => [risk.key, risk.risk]));
      expect(Object.keys(byKey)).toEqual([0, 1, 2, 3, 4, 6].map((index) => `terminal.docker_volumes.${index}`));
      expect(byKey['terminal.docker_volumes.0']).toMatch(new RegExp(`engine's socket or state.*${folder}/innocent leads to ${socket}`));
      expect(byKey['terminal.docker_volumes.1']).toMatch(/the sandbox root .*every user's workspace and home \(.*shared leads to .*sandboxes\)/);
      expect(byKey['terminal.docker_volumes.2']).toMatch(/\/var, which holds the container engine's socket or state/);
      expect(byKey['terminal.docker_volumes.3']).toMatch(/the host's \/etc/);
      expect(byKey['terminal.docker_volumes.4']).toMatch(new RegExp(`${folder}, which holds .*engine's socket|${folder}, which holds the sandbox root`));
      expect(byKey['terminal.docker_volumes.6']).toMatch(/engine's socket or state/);
      for (const risk of risks) expect(risk.risk).not.toMatch(/[\r\n]/);
    } finally {
      rmSync(folder, { recursive: true, force: true });
    }
  });
});
