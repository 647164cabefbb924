import { createPlatformRegistry, createSandboxResolver, parseTerminalConfig } from '@berth/core';
import { describe, expect, it } from 'vitest';
import { buildContainerSpec, LABELS } from './container-spec.js';

const secret = 'ghp_this-must-never-be-stored';
const build = (input: Record<string, unknown> = {}) => {
  const config = parseTerminalConfig({ sandbox_dir: '/srv/berth', ...input });
  const request = createSandboxResolver({ config, registry: createPlatformRegistry(), environment: { HERMES_USER_TELEGRAM_5_TOKEN: secret } }).resolve({ session: { platform: 'telegram', userId: '5' } });
  return { request, ...buildContainerSpec({ config, image: config.docker_image, name: 'berth-x', scope: request.scope, paths: request.paths, engine: 'docker', networkMode: 'berth-sandboxes' }) };
};

describe('buildContainerSpec', () => {
  it('hardens by default from the config', () => {
    const { spec } = build();
    const host = spec.HostConfig!;
    expect(host.CapDrop).toEqual(['ALL']);
    expect(host.CapAdd).toEqual(['CHOWN', 'DAC_OVERRIDE', 'FOWNER', 'FSETID', 'KILL', 'SETGID', 'SETUID']);
    expect(host.SecurityOpt).toEqual(['no-new-privileges']);
    expect(host.PidsLimit).toBe(512);
    expect(host.Memory).toBe(5120 * 1024 * 1024);
    expect(host.MemorySwap).toBe(host.Memory);
    expect(host.NanoCpus).toBe(1e9);
    expect(host.Ulimits).toEqual([
      { Name: 'nofile', Soft: 4096, Hard: 4096 },
      { Name: 'nproc', Soft: 4096, Hard: 4096 },
    ]);
    expect(host.Tmpfs).toEqual({ '/tmp': 'rw,nosuid,nodev,size=512m,mode=1777' });
    expect(host.Init).toBe(true);
    expect(host.ReadonlyRootfs).toBe(false);
    expect(host.Privileged).toBeUndefined();
  });

  it('mounts the scope folders and docker_volumes, and nothing else (never the engine socket)', () => {
    const { spec, request } = build({ docker_volumes: ['/srv/shared:/shared:ro'] });
    expect(spec.HostConfig!.Mounts).toEqual([
      { Type: 'bind', Source: request.paths.workspace, Target: '/workspace', ReadOnly: false },
      { Type: 'bind', Source: request.paths.home, Target: '/root', ReadOnly: false },
      { Type: 'bind', Source: '/srv/shared', Target: '/shared', ReadOnly: true },
    ]);
    expect(spec.HostConfig!.Binds).toBeUndefined();
    expect(JSON.stringify(spec)).not.toContain('docker.sock');
  });

  it('follows config changes: memory, cpu, runtime, read-only, no network', () => {
    const { spec } = build({ container_memory: '2g', container_cpu: 0.5, docker_runtime: 'runsc', docker_read_only: true, docker_cap_add: [], docker_no_new_privileges: false });
    expect(spec.HostConfig).toMatchObject({ Memory: 2048 * 1024 * 1024, NanoCpus: 5e8, Runtime: 'runsc', ReadonlyRootfs: true, CapAdd: [], SecurityOpt: [] });
  });

  it('stores no variable, only ownership labels', () => {
    const { spec, request } = build();
    expect(spec.Env).toEqual([]);
    expect(JSON.stringify(spec)).not.toContain(secret);
    expect(spec.Labels).toMatchObject({ [LABELS.managedBy]: 'berth', [LABELS.scope]: request.scope.key, [LABELS.kind]: 'user', [LABELS.platform]: 'telegram', [LABELS.user]: '5' });
  });

  it('hashes the settings: same config, same hash; any change, another hash', () => {
    expect(build().configHash).toBe(build().configHash);
    expect(build({ docker_pids_limit: 100 }).configHash).not.toBe(build().configHash);
    expect(build().spec.Labels![LABELS.configHash]).toBe(build().configHash);
  });
});
