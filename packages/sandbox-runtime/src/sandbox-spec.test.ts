import { createPlatformRegistry, createSandboxResolver, parseTerminalConfig } from '@berth/core';
import { describe, expect, it } from 'vitest';
import { buildSandboxSpec, LABELS } from './sandbox-spec.js';
import { sandboxSettings } from './sandbox-settings.js';

const secret = 'ghp_this-must-never-be-stored';
const build = (input: Record<string, unknown> = {}, revision = 'r1') => {
  const config = parseTerminalConfig({ sandbox_dir: '/srv/berth', ...input });
  const request = createSandboxResolver({ config, registry: createPlatformRegistry(), environment: { HERMES_USER_TELEGRAM_5_TOKEN: secret } }).resolve({
    session: { platform: 'telegram', userId: '5' },
  });
  return {
    request,
    ...buildSandboxSpec({
      settings: sandboxSettings(config),
      image: config.docker_image,
      name: 'berth-x',
      scope: request.scope,
      paths: request.paths,
      engine: 'docker',
      specRevision: revision,
    }),
  };
};

describe('buildSandboxSpec', () => {
  it('hardens by default from the settings', () => {
    const { spec } = build();
    expect(spec.security).toEqual({
      capabilities: ['CHOWN', 'DAC_OVERRIDE', 'FOWNER', 'FSETID', 'KILL', 'SETGID', 'SETUID'],
      noNewPrivileges: true,
      readOnlyRoot: true,
    });
    expect(spec.limits).toEqual({ cpus: 1, memoryMb: 5120, pids: 512, nofile: 4096, nproc: 4096, tmpMb: 512, diskMb: 51_200 });
    expect(spec.hostname).toBe('sandbox');
    expect(spec.network).toBe(true);
  });

  it('mounts the scope folders and docker_volumes, and nothing else', () => {
    const { spec, request } = build({ docker_volumes: ['/srv/shared:/shared:ro'] });
    expect([spec.workspace, spec.home]).toEqual([request.paths.workspace, request.paths.home]);
    expect(spec.volumes).toEqual([{ source: '/srv/shared', target: '/shared', readOnly: true }]);
  });

  it('follows setting changes: memory, cpu, runtime, read-only, no network', () => {
    const { spec } = build({
      container_memory: '2g',
      container_cpu: 0.5,
      docker_runtime: 'runsc',
      docker_read_only: false,
      docker_cap_add: [],
      docker_no_new_privileges: false,
      docker_network: false,
    });
    expect(spec.limits).toMatchObject({ memoryMb: 2048, cpus: 0.5 });
    expect(spec.security).toEqual({ capabilities: [], noNewPrivileges: false, readOnlyRoot: false, runtime: 'runsc' });
    expect(spec.network).toBe(false);
  });

  it('stores no variable, only ownership labels', () => {
    const { spec, request } = build();
    expect(JSON.stringify(spec)).not.toContain(secret);
    expect(spec.labels).toMatchObject({
      [LABELS.managedBy]: 'berth',
      [LABELS.scope]: request.scope.key,
      [LABELS.kind]: 'user',
      [LABELS.platform]: 'telegram',
      [LABELS.user]: '5',
    });
  });

  it("digests the settings and the driver's revision: same input, same digest; any change, another", () => {
    expect(build().configHash).toBe(build().configHash);
    expect(build({ docker_pids_limit: 100 }).configHash).not.toBe(build().configHash);
    expect(build({}, 'r2').configHash).not.toBe(build().configHash);
    expect(build().spec.labels[LABELS.configHash]).toBe(build().configHash);
  });
});
