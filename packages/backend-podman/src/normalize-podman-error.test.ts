import { isConflict, mapEngineError } from '@berth/backend-docker';
import { describe, expect, it } from 'vitest';
import { dockerStatusOf, normalizePodmanError } from './normalize-podman-error.js';

/** The shape of a dockerode error for a Podman answer. */
const podmanError = (statusCode: number, cause: string, message = cause) => Object.assign(new Error(`(HTTP code ${statusCode}) server error - ${message}`), { statusCode, json: { cause, message, response: statusCode } });

describe('normalizePodmanError', () => {
  it("turns Podman's 500 for a taken name and for a stopped container into Docker's 409, which the shared mapping reads as a conflict", () => {
    for (const error of [
      podmanError(500, 'that name is already in use', 'container create: creating container storage: the container name "berth-x" is already in use'),
      podmanError(500, 'container state improper', 'can only create exec sessions on running containers: container state improper'),
    ]) {
      expect(isConflict(error)).toBe(false);
      normalizePodmanError(error);
      expect(isConflict(error)).toBe(true);
      expect(error).toMatchObject({ podmanStatusCode: 500 });
      expect(mapEngineError(error, { engine: 'podman', endpoint: '/run/podman/podman.sock', action: 'create container berth-x' }).code).toBe('SANDBOX_CONFLICT');
    }
  });

  it('leaves other errors as they are', () => {
    const missing = podmanError(404, 'no such container');
    expect(dockerStatusOf(normalizePodmanError(missing))).toBe(404);
    const other = podmanError(500, 'OCI runtime error');
    expect((normalizePodmanError(other) as { statusCode: number }).statusCode).toBe(500);
    expect(normalizePodmanError(new Error('socket hang up'))).toBeInstanceOf(Error);
    expect(dockerStatusOf(null)).toBeUndefined();
  });
});
