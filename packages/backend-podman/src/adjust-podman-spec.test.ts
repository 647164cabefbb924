import { toContainerCreateOptions } from '@berth/backend-docker';
import { createPlatformRegistry, createSandboxResolver, parseTerminalConfig, type TerminalConfig } from '@berth/core';
import { sandboxSettings } from '@berth/sandbox-runtime';
import { buildSandboxSpec } from '@berth/sandbox-runtime/driver';
import type Dockerode from 'dockerode';
import { describe, expect, it } from 'vitest';
import { adjustPodmanCreate, adjustPodmanHostConfig } from './adjust-podman-spec.js';
import { decidePodmanHost, type PodmanHost } from './read-podman-host.js';
import { toLibpodSpec } from './to-libpod-spec.js';

const config = parseTerminalConfig({ sandbox_dir: '/srv/berth', docker_image: 'localhost/berth-busybox:latest' });
const request = createSandboxResolver({ config, registry: createPlatformRegistry(), environment: {} }).resolve({
  session: { platform: 'telegram', userId: '123' },
});
const rootful: PodmanHost = { rootless: false, cgroupVersion: 'v2', resourceLimits: true, selinuxEnforcing: false, version: '4.3.1' };
const rootlessV1: PodmanHost = { ...rootful, rootless: true, cgroupVersion: 'v1', resourceLimits: false };

/** The create request the Podman driver sends: the runtime's spec, Docker's translation, Podman's last word. */
const specFor = (host: PodmanHost, networkMode = 'slirp4netns', settings: TerminalConfig = config): Dockerode.ContainerCreateOptions => {
  const { spec } = buildSandboxSpec({
    settings: sandboxSettings(settings),
    image: settings.docker_image,
    name: 'berth-x',
    scope: request.scope,
    paths: request.paths,
    engine: 'podman',
    specRevision: 'test',
  });
  return adjustPodmanCreate(toContainerCreateOptions(spec, networkMode), host);
};

describe('adjustPodmanHostConfig', () => {
  it('rootful: keeps the shared hardening, turns off the engine init, adds no user namespace', () => {
    const host = specFor(rootful).HostConfig!;
    expect(host).toMatchObject({
      Init: false,
      CapDrop: ['ALL'],
      SecurityOpt: ['no-new-privileges'],
      PidsLimit: config.docker_pids_limit,
      NetworkMode: 'slirp4netns',
    });
    expect(host.UsernsMode).toBeUndefined();
    expect(host.CapAdd).toEqual(config.docker_cap_add);
    expect(host.Ulimits).toEqual([
      { Name: 'nofile', Soft: config.docker_nofile, Hard: config.docker_nofile },
      { Name: 'nproc', Soft: config.docker_nproc, Hard: config.docker_nproc },
    ]);
    expect(specFor(rootful).Env).toEqual([]);
  });

  it('rootless: keep-id, HOME=/root, and no capability that could give a file to another id', () => {
    const spec = specFor({ ...rootlessV1, cgroupVersion: 'v2', resourceLimits: true });
    expect(spec.HostConfig).toMatchObject({ UsernsMode: 'keep-id', Init: false, PidsLimit: config.docker_pids_limit });
    expect(spec.HostConfig!.CapAdd).toEqual(config.docker_cap_add.filter((name) => !['CHOWN', 'SETUID', 'SETGID'].includes(name)));
    expect(spec.HostConfig!.CapAdd).not.toContain('CHOWN');
    expect(spec.Env).toEqual(['HOME=/root']);
  });

  it('rootless on cgroup v1: the nproc ulimit takes the pids limit, and the limits Podman would ignore are not stored', () => {
    const host = specFor(rootlessV1).HostConfig!;
    expect(host.Ulimits).toContainEqual({ Name: 'nproc', Soft: config.docker_pids_limit, Hard: config.docker_pids_limit });
    expect(host.Ulimits).toContainEqual({ Name: 'nofile', Soft: config.docker_nofile, Hard: config.docker_nofile });
    for (const key of ['PidsLimit', 'Memory', 'MemorySwap', 'NanoCpus'] as const) expect(host[key], key).toBeUndefined();
  });

  it('SELinux enforcing: the workspace and home become private-label binds; other mounts stay as they are', () => {
    const withVolume = parseTerminalConfig({ ...config, docker_volumes: ['/srv/shared:/shared:ro'] });
    const spec = specFor({ ...rootful, selinuxEnforcing: true }, 'none', withVolume);
    expect(spec.HostConfig!.Binds).toEqual([`${request.paths.workspace}:/workspace:rw,Z`, `${request.paths.home}:/root:rw,Z`]);
    expect(spec.HostConfig!.Mounts).toEqual([{ Type: 'bind', Source: '/srv/shared', Target: '/shared', ReadOnly: true }]);
  });

  it('SELinux enforcing: refuses a sandbox folder whose path the Binds form cannot carry', () => {
    const hostConfig: Dockerode.HostConfig = { Mounts: [{ Type: 'bind', Source: '/srv/a:b/workspace', Target: '/workspace', ReadOnly: false }] };
    expect(() => adjustPodmanHostConfig(hostConfig, { host: { ...rootful, selinuxEnforcing: true }, pidsLimit: 512 })).toThrow(/contains ":" or ","/);
  });
});

describe('decidePodmanHost', () => {
  it('reads rootless, cgroup limits and SELinux from the engine and the local enforce flag', () => {
    expect(decidePodmanHost({ host: { security: { rootless: false }, cgroupVersion: 'v1' } }, undefined)).toMatchObject({
      rootless: false,
      resourceLimits: true,
      selinuxEnforcing: false,
    });
    expect(decidePodmanHost({ host: { security: { rootless: true }, cgroupVersion: 'v1', cgroupControllers: [] } }, undefined)).toMatchObject({
      rootless: true,
      resourceLimits: false,
    });
    expect(
      decidePodmanHost({ host: { security: { rootless: true }, cgroupVersion: 'v2', cgroupControllers: ['cpu', 'memory', 'pids'] } }, undefined).resourceLimits,
    ).toBe(true);
    expect(decidePodmanHost({ host: { security: { rootless: true }, cgroupVersion: 'v2', cgroupControllers: ['cpu'] } }, undefined).resourceLimits).toBe(false);
    expect(decidePodmanHost({ host: { security: { selinuxEnabled: true } } }, undefined).selinuxEnforcing).toBe(true);
    expect(decidePodmanHost({ host: { security: { selinuxEnabled: true } } }, false).selinuxEnforcing).toBe(false);
    expect(decidePodmanHost({ host: { security: { selinuxEnabled: false } } }, true).selinuxEnforcing).toBe(true);
  });
});

describe('toLibpodSpec', () => {
  it("carries every setting of the shared spec into Podman's own spec", () => {
    const spec = specFor({ ...rootlessV1, cgroupVersion: 'v2', resourceLimits: true });
    const libpod = toLibpodSpec(spec);
    expect(libpod).toMatchObject({
      name: 'berth-x',
      image: config.docker_image,
      entrypoint: ['/bin/sh', '-c', expect.stringContaining('trap "exit 0" TERM')],
      work_dir: '/workspace',
      env: { HOME: '/root' },
      cap_drop: ['ALL'],
      cap_add: spec.HostConfig!.CapAdd,
      no_new_privileges: true,
      init: false,
      netns: { nsmode: 'slirp4netns' },
      userns: { nsmode: 'keep-id' },
      restart_policy: 'no',
      stop_timeout: 3,
      resource_limits: {
        pids: { limit: config.docker_pids_limit },
        memory: { limit: config.container_memory * 1024 * 1024 },
        cpu: { period: 100_000, quota: Math.round(config.container_cpu * 100_000) },
      },
    });
    expect(libpod.r_limits).toEqual([
      { type: 'nofile', soft: config.docker_nofile, hard: config.docker_nofile },
      { type: 'nproc', soft: config.docker_nproc, hard: config.docker_nproc },
    ]);
    expect(libpod.labels).toEqual(spec.Labels);
    expect(libpod.mounts).toEqual([
      { destination: '/workspace', type: 'bind', source: request.paths.workspace, options: ['rbind', 'rw'] },
      { destination: '/root', type: 'bind', source: request.paths.home, options: ['rbind', 'rw'] },
      { destination: '/tmp', type: 'tmpfs', source: 'tmpfs', options: ['rw', 'nosuid', 'nodev', `size=${config.docker_tmp_size}m`, 'mode=1777'] },
      { destination: '/var/tmp', type: 'tmpfs', source: 'tmpfs', options: ['rw', 'nosuid', 'nodev', `size=${config.docker_tmp_size}m`, 'mode=1777'] },
      { destination: '/run', type: 'tmpfs', source: 'tmpfs', options: ['rw', 'nosuid', 'nodev', 'size=16m', 'mode=755'] },
    ]);
    expect(libpod.read_only_filesystem).toBe(true);
  });

  it('refuses a host setting it cannot translate rather than drop hardening silently', () => {
    expect(() => toLibpodSpec({ Image: 'i', HostConfig: { Privileged: false } as Dockerode.HostConfig })).toThrow(/HostConfig.Privileged/);
    expect(() => toLibpodSpec({ Image: 'i', HostConfig: { SecurityOpt: ['seccomp=unconfined'] } })).toThrow(/seccomp=unconfined/);
  });
});
