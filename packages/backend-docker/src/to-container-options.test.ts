import { createPlatformRegistry, createSandboxResolver, parseTerminalConfig } from '@berth/core';
import { sandboxSettings } from '@berth/sandbox-runtime';
import { buildSandboxSpec, LABELS } from '@berth/sandbox-runtime/driver';
import { describe, expect, it } from 'vitest';
import { toContainerCreateOptions } from './to-container-options.js';

// The spec as the runtime builds it, then Docker's create request for it.
const secret = 'ghp_this-must-never-be-stored';
const build = (input: Record<string, unknown> = {}) => {
  const config = parseTerminalConfig({ sandbox_dir: '/srv/berth', ...input });
  const request = createSandboxResolver({ config, registry: createPlatformRegistry(), environment: { HERMES_USER_TELEGRAM_5_TOKEN: secret } }).resolve({
    session: { platform: 'telegram', userId: '5' },
  });
  const { spec } = buildSandboxSpec({
    settings: sandboxSettings(config),
    image: config.docker_image,
    name: 'berth-x',
    scope: request.scope,
    paths: request.paths,
    engine: 'docker',
    specRevision: 'test',
  });
  return { request, options: toContainerCreateOptions(spec, spec.network ? 'berth-x' : 'none') };
};

describe('toContainerCreateOptions', () => {
  it('hardens by default from the settings', () => {
    const host = build().options.HostConfig!;
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
    // A read-only root: the writable places are bounded tmpfs besides the scope's two folders.
    expect(host.Tmpfs).toEqual({
      '/tmp': 'rw,nosuid,nodev,size=512m,mode=1777',
      '/var/tmp': 'rw,nosuid,nodev,size=512m,mode=1777',
      '/run': 'rw,nosuid,nodev,size=16m,mode=755',
    });
    expect(host.Init).toBe(true);
    expect(host.ReadonlyRootfs).toBe(true);
    expect(host.NetworkMode).toBe('berth-x');
    expect(host.Privileged).toBeUndefined();
  });

  it('mounts the scope folders and docker_volumes, and nothing else (never the engine socket)', () => {
    const { options, request } = build({ docker_volumes: ['/srv/shared:/shared:ro'] });
    expect(options.HostConfig!.Mounts).toEqual([
      { Type: 'bind', Source: request.paths.workspace, Target: '/workspace', ReadOnly: false },
      { Type: 'bind', Source: request.paths.home, Target: '/root', ReadOnly: false },
      { Type: 'bind', Source: '/srv/shared', Target: '/shared', ReadOnly: true },
    ]);
    expect(options.HostConfig!.Binds).toBeUndefined();
    expect(JSON.stringify(options)).not.toContain('docker.sock');
  });

  it('follows setting changes: memory, cpu, runtime, read-only, no network', () => {
    const { options } = build({
      container_memory: '2g',
      container_cpu: 0.5,
      docker_runtime: 'runsc',
      docker_read_only: false,
      docker_cap_add: [],
      docker_no_new_privileges: false,
      docker_network: false,
    });
    expect(options.HostConfig).toMatchObject({
      Memory: 2048 * 1024 * 1024,
      NanoCpus: 5e8,
      Runtime: 'runsc',
      ReadonlyRootfs: false,
      CapAdd: [],
      SecurityOpt: [],
      NetworkMode: 'none',
    });
  });

  it('stores no variable, only ownership labels, and the same hostname for everyone', () => {
    const { options, request } = build();
    expect(options.Env).toEqual([]);
    expect(options.Hostname).toBe('sandbox');
    expect(JSON.stringify(options)).not.toContain(secret);
    expect(options.Labels).toMatchObject({
      [LABELS.managedBy]: 'berth',
      [LABELS.scope]: request.scope.key,
      [LABELS.kind]: 'user',
      [LABELS.platform]: 'telegram',
      [LABELS.user]: '5',
    });
  });
});
