import { mkdtemp, mkdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { ConfigError, EngineUnavailableError } from '@berth/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { findKubernetesCluster } from './find-kubernetes-cluster.js';

let folder: string;
const kubeconfig = (server: string, contexts: string[]) =>
  [
    'apiVersion: v1',
    'kind: Config',
    `current-context: ${contexts[0]}`,
    'clusters:',
    ...contexts.map((name, index) => `- name: ${name}\n  cluster:\n    server: ${server.replace('N', String(index))}`),
    'users:',
    '- name: u\n  user:\n    token: t',
    'contexts:',
    ...contexts.map((name) => `- name: ${name}\n  context:\n    cluster: ${name}\n    user: u`),
  ].join('\n');

beforeAll(async () => {
  folder = await mkdtemp(path.join(tmpdir(), 'berth-kubeconfig-'));
  await writeFile(path.join(folder, 'explicit'), kubeconfig('https://explicit-N:6443', ['one', 'two']));
  await writeFile(path.join(folder, 'variable'), kubeconfig('https://variable-N:6443', ['v']));
  await mkdir(path.join(folder, 'home', '.kube'), { recursive: true });
  await writeFile(path.join(folder, 'home', '.kube', 'config'), kubeconfig('https://home-N:6443', ['h']));
});
afterAll(() => rm(folder, { recursive: true, force: true }));

describe('findKubernetesCluster', () => {
  it('takes terminal.kubernetes_kubeconfig, then $KUBECONFIG, then ~/.kube/config, as kubectl does', () => {
    const home = path.join(folder, 'home');
    const environment = { KUBECONFIG: `${path.join(folder, 'missing')}:${path.join(folder, 'variable')}`, HOME: home };
    expect(findKubernetesCluster({ kubeconfig: path.join(folder, 'explicit'), environment })).toMatchObject({ endpoint: 'https://explicit-0:6443' });
    expect(findKubernetesCluster({ environment })).toMatchObject({
      endpoint: 'https://variable-0:6443',
      discovery: `$KUBECONFIG (${path.join(folder, 'variable')}), context v`,
    });
    expect(findKubernetesCluster({ environment: { HOME: home } })).toMatchObject({ endpoint: 'https://home-0:6443' });
  });

  it('switches to terminal.kubernetes_context, and names the contexts there are when it is not one', () => {
    expect(findKubernetesCluster({ kubeconfig: path.join(folder, 'explicit'), context: 'two', environment: {} }).endpoint).toBe('https://explicit-1:6443');
    expect(() => findKubernetesCluster({ kubeconfig: path.join(folder, 'explicit'), context: 'three', environment: {} })).toThrow(ConfigError);
    expect(() => findKubernetesCluster({ kubeconfig: path.join(folder, 'explicit'), context: 'three', environment: {} })).toThrow(
      /kubernetes_context is three, but .* has only one, two; set it to one of those/,
    );
  });

  it('says in one line what to set when there is no cluster at all, or the file is missing', () => {
    expect(() => findKubernetesCluster({ environment: { HOME: path.join(folder, 'nowhere') } })).toThrow(EngineUnavailableError);
    expect(() => findKubernetesCluster({ kubeconfig: path.join(folder, 'absent'), environment: {} })).toThrow(
      /terminal\.kubernetes_kubeconfig is .*absent, which does not exist/,
    );
  });
});
