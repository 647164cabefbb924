import { createPlatformRegistry, createSandboxResolver, parseTerminalConfig, ConfigError } from '@berth/core';
import { sandboxSettings } from '@berth/sandbox-runtime';
import { buildSandboxSpec } from '@berth/sandbox-runtime/driver';
import { describe, expect, it } from 'vitest';
import { LABELS_ANNOTATION, POD_ANNOTATION } from './kubernetes-labels.js';
import { buildNetworkPolicies, buildSandboxClaim, buildSandboxPod } from './to-kubernetes-objects.js';

const userId = '15550001234';
function specOf(config: Record<string, unknown> = {}) {
  const terminal = parseTerminalConfig({ sandbox_dir: '/srv/berth', container_memory: 512, container_cpu: 2, ...config });
  const request = createSandboxResolver({
    config: terminal,
    registry: createPlatformRegistry(),
    environment: { HERMES_USER_TELEGRAM_15550001234_GITHUB_TOKEN: 'ghp_secret_value' },
  }).resolve({
    session: { platform: 'telegram', userId },
  });
  return buildSandboxSpec({
    settings: sandboxSettings(terminal),
    image: 'busybox',
    name: 'berth-0123456789abcdef01234567',
    scope: request.scope,
    paths: request.paths,
    engine: 'kubernetes',
    specRevision: 'kubernetes-1',
    extraLabels: { 'dev.berth.test': 'run1' },
  }).spec;
}

describe('the objects a sandbox is', () => {
  it('is a hardened pod: no token, no service variables, all capabilities dropped but the few, no escalation, seccomp, limits', () => {
    const pod = buildSandboxPod(specOf(), { diskMb: 1024 });
    const spec = pod.spec!;
    const container = spec.containers[0]!;
    expect(spec.automountServiceAccountToken).toBe(false);
    expect(spec.enableServiceLinks).toBe(false);
    expect(spec.hostname).toBe('sandbox');
    expect(spec.securityContext?.seccompProfile?.type).toBe('RuntimeDefault');
    expect(container.securityContext).toMatchObject({
      privileged: false,
      allowPrivilegeEscalation: false,
      capabilities: { drop: ['ALL'], add: ['CHOWN', 'DAC_OVERRIDE', 'FOWNER', 'FSETID', 'KILL', 'SETGID', 'SETUID'] },
    });
    expect(container.resources).toEqual({ limits: { cpu: '2000m', memory: '512Mi' }, requests: { cpu: '200m', memory: '51Mi' } });
    expect(container.env).toBeUndefined();
    expect(spec.volumes?.find((volume) => volume.name === 'tmp')?.emptyDir).toEqual({ medium: 'Memory', sizeLimit: '512Mi' });
  });

  it("asks for the RuntimeClass docker_runtime names (gVisor's, say), and for none without it", () => {
    expect(buildSandboxPod(specOf({ docker_runtime: 'gvisor' }), { diskMb: 1024 }).spec?.runtimeClassName).toBe('gvisor');
    expect(buildSandboxPod(specOf(), { diskMb: 1024 }).spec?.runtimeClassName).toBeUndefined();
  });

  it("says nothing in the pod about whose sandbox it is, and holds no variable's value anywhere", () => {
    const spec = specOf();
    const pod = buildSandboxPod(spec, { diskMb: 1024 });
    const claim = buildSandboxClaim(spec, pod, { diskMb: 1024 });
    expect(JSON.stringify(pod)).not.toContain(userId);
    expect(JSON.stringify(pod)).not.toContain('telegram');
    expect(JSON.stringify(pod)).not.toContain('/srv/berth');
    expect(JSON.stringify([pod, claim])).not.toContain('ghp_secret_value');
    expect(pod.metadata?.labels).toMatchObject({ 'app.kubernetes.io/managed-by': 'berth', 'berth.dev/network': 'default', 'berth.dev/test': 'run1' });
  });

  it('keeps the files in a claim of container_disk on the configured class, with the record in its annotations', () => {
    const spec = specOf();
    const pod = buildSandboxPod(spec, { diskMb: 2048 });
    const claim = buildSandboxClaim(spec, pod, { diskMb: 2048, storageClass: 'fast', installation: 'abc' });
    expect(claim.spec).toEqual({ accessModes: ['ReadWriteOnce'], storageClassName: 'fast', resources: { requests: { storage: '2048Mi' } } });
    expect(JSON.parse(claim.metadata!.annotations![LABELS_ANNOTATION]!)).toEqual(spec.labels);
    expect(JSON.parse(claim.metadata!.annotations![POD_ANNOTATION]!)).toEqual(pod);
    expect(claim.metadata?.labels?.['berth.dev/installation']).toBe('abc');
    expect(pod.spec?.containers[0]?.volumeMounts?.map((mount) => `${mount.mountPath}=${mount.subPath ?? ''}`)).toEqual([
      '/workspace=workspace',
      '/root=home',
      '/tmp=',
    ]);
  });

  it('without network: the deny-all policy selects the pod, and it has no resolver', () => {
    const pod = buildSandboxPod(specOf({ docker_network: false }), { diskMb: 1024 });
    expect(pod.metadata?.labels?.['berth.dev/network']).toBe('none');
    expect(pod.spec).toMatchObject({ dnsPolicy: 'None', dnsConfig: { nameservers: ['127.0.0.1'] } });
    const [denyIngress, noNetwork] = buildNetworkPolicies();
    expect(denyIngress?.spec).toEqual({ podSelector: { matchLabels: { 'app.kubernetes.io/managed-by': 'berth' } }, policyTypes: ['Ingress'] });
    expect(noNetwork?.spec?.podSelector?.matchLabels).toEqual({ 'app.kubernetes.io/managed-by': 'berth', 'berth.dev/network': 'none' });
    expect(noNetwork?.spec?.policyTypes).toEqual(['Ingress', 'Egress']);
  });

  it('refuses docker_volumes, which a node does not have, naming the key', () => {
    expect(() => buildSandboxPod(specOf({ docker_volumes: ['/srv/data:/data:ro'] }), { diskMb: 1024 })).toThrow(ConfigError);
    expect(() => buildSandboxPod(specOf({ docker_volumes: ['/srv/data:/data:ro'] }), { diskMb: 1024 })).toThrow(/terminal\.docker_volumes/);
  });
});
