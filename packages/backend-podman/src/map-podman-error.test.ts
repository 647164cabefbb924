import { describe, expect, it } from 'vitest';
import { dockerStatusOf, mapPodmanError } from './map-podman-error.js';

/** The shape of a dockerode error for a Podman answer. */
const podmanError = (statusCode: number, cause: string, message = cause) =>
  Object.assign(new Error(`(HTTP code ${statusCode}) server error - ${message}`), { statusCode, json: { cause, message, response: statusCode } });
const context = { engine: 'podman', endpoint: '/run/podman/podman.sock', action: 'create container berth-x' };

describe('mapPodmanError', () => {
  it("reads Podman's 500 for a taken name, a container in the wrong state and a removal in progress as Docker's 409: a conflict", () => {
    for (const error of [
      podmanError(500, 'that name is already in use', 'container create: creating container storage: the container name "berth-x" is already in use'),
      podmanError(500, 'container state improper', 'container state improper'),
      podmanError(500, 'container is being removed'),
    ]) {
      const mapped = mapPodmanError(error, context);
      expect(mapped.code).toBe('SANDBOX_CONFLICT');
      expect(mapped.cause).toBe(error);
      expect((error as { statusCode: number }).statusCode).toBe(500);
    }
  });

  it('reads an exec into a stopped container as gone, as the driver port says (the next command starts it again)', () => {
    // Podman 4.3's answer, as seen on the engine here.
    const error = podmanError(500, 'container state improper', 'can only create exec sessions on running containers: container state improper');
    expect(dockerStatusOf(error)).toBe(409);
    const mapped = mapPodmanError(error, { ...context, action: 'open a shell in berth-x' });
    expect(mapped.code).toBe('SANDBOX_GONE');
    expect(mapped.message).toContain('the next command starts it again');
  });

  it('maps the rest as Docker would', () => {
    expect(dockerStatusOf(podmanError(404, 'no such container'))).toBe(404);
    expect(mapPodmanError(podmanError(404, 'no such container'), context).code).toBe('SANDBOX_GONE');
    expect(mapPodmanError(podmanError(500, 'OCI runtime error'), context).code).toBe('ENGINE_ERROR');
    expect(mapPodmanError(Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' }), context).code).toBe('ENGINE_UNAVAILABLE');
    expect(dockerStatusOf(null)).toBeUndefined();
  });
});
