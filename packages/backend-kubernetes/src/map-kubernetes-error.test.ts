import { ConfigError, EngineUnavailableError, SandboxError } from '@berth/core';
import { ApiException } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { mapKubernetesError } from './map-kubernetes-error.js';

const context = { endpoint: 'https://10.0.0.1:6443', namespace: 'berth', action: 'create pod berth-ab' };
const status = (code: number, body: object) =>
  new ApiException(code, `HTTP-Code: ${code}\nMessage: x\nBody: ...\nHeaders: {}`, JSON.stringify({ kind: 'Status', ...body }), {});
const fetchFailed = (code: string) => Object.assign(new TypeError('fetch failed'), { cause: Object.assign(new Error(`connect ${code}`), { code }) });

describe('mapKubernetesError', () => {
  it('an API server that does not answer names its URL and what to check, in one line', () => {
    const error = mapKubernetesError(fetchFailed('ECONNREFUSED'), context);
    expect(error).toBeInstanceOf(EngineUnavailableError);
    expect(error.message).toBe(
      'could not create pod berth-ab: the Kubernetes API at https://10.0.0.1:6443 did not answer (ECONNREFUSED); ' +
        'check terminal.kubernetes_kubeconfig and terminal.kubernetes_context, or start the cluster',
    );
    expect(mapKubernetesError(fetchFailed('UNABLE_TO_VERIFY_LEAF_SIGNATURE'), context).message).toMatch(/certificate-authority/);
    const refusedEarly = Object.assign(new TypeError('fetch failed'), { cause: new Error('bad port') });
    expect(mapKubernetesError(refusedEarly, context)).toMatchObject({
      code: 'ENGINE_UNAVAILABLE',
      message: expect.stringContaining('did not answer (bad port)'),
    });
  });

  it('a missing namespace is a config error on terminal.kubernetes_namespace', () => {
    const error = mapKubernetesError(
      status(404, { message: 'namespaces "berth" not found', reason: 'NotFound', details: { name: 'berth', kind: 'namespaces' } }),
      context,
    );
    expect(error).toBeInstanceOf(ConfigError);
    expect(error.message).toMatch(/namespace berth does not exist on the cluster at https:\/\/10\.0\.0\.1:6443; create it \(kubectl create namespace berth\)/);
  });

  it("maps 404, 409, 403, 401 and the rest, keeping the server's own words on one line", () => {
    expect(mapKubernetesError(status(404, { message: 'pods "berth-ab" not found', details: { kind: 'pods' } }), context)).toMatchObject({
      code: 'SANDBOX_GONE',
    });
    expect(mapKubernetesError(status(409, { message: 'already exists' }), context)).toMatchObject({ code: 'SANDBOX_CONFLICT' });
    const forbidden = mapKubernetesError(status(403, { message: 'pods is forbidden: User "berth" cannot create resource "pods"' }), context);
    expect(forbidden).toBeInstanceOf(SandboxError);
    expect(forbidden.message).toBe(
      'could not create pod berth-ab: pods is forbidden: User "berth" cannot create resource "pods" (403); ' +
        'bind the Role in docs/backend-kubernetes.md to this user in namespace berth',
    );
    expect(mapKubernetesError(new ApiException(401, 'HTTP-Code: 401', 'undefined', {}), context)).toBeInstanceOf(EngineUnavailableError);
    const failed = mapKubernetesError(status(500, { message: 'etcdserver: request timed out\nmore' }), context);
    expect(failed).toMatchObject({
      code: 'ENGINE_ERROR',
      message: 'could not create pod berth-ab: the Kubernetes API answered 500 (etcdserver: request timed out)',
    });
  });

  it('reads a refused exec upgrade from the WebSocket error', () => {
    expect(mapKubernetesError({ message: 'Unexpected server response: 404' }, context)).toMatchObject({ code: 'SANDBOX_GONE' });
    expect(mapKubernetesError({ message: 'Unexpected server response: 403' }, context).message).toMatch(/bind the Role/);
  });
});
