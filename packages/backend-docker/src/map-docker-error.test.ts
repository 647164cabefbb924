import { EngineUnavailableError, SandboxError } from '@berth/core';
import { describe, expect, it } from 'vitest';
import { isAlreadyDone, isConflict, isGone, mapDockerError } from './map-docker-error.js';

const context = { engine: 'docker', endpoint: '/var/run/docker.sock', action: 'start container berth-x' };
const status = (statusCode: number, message = 'engine says no'): Error =>
  Object.assign(new Error(`(HTTP code ${statusCode}) unexpected - ${message} `), { statusCode });

describe('engine status mapping', () => {
  it('classifies 404, 304 and 409', () => {
    expect(isGone(status(404))).toBe(true);
    expect(isAlreadyDone(status(304))).toBe(true);
    expect(isConflict(status(409))).toBe(true);
    expect(isGone(status(500))).toBe(false);
    expect(isGone(new Error('plain'))).toBe(false);
  });

  it('names the socket when the engine does not answer', () => {
    for (const code of ['ECONNREFUSED', 'ENOENT']) {
      const error = mapDockerError(Object.assign(new Error(`connect ${code} /var/run/docker.sock`), { code }), context);
      expect(error).toBeInstanceOf(EngineUnavailableError);
      expect((error as EngineUnavailableError).endpoint).toBe('/var/run/docker.sock');
      expect(error.message).toContain('/var/run/docker.sock');
      expect(error.message).toContain(code);
      expect(error.message.split('\n')).toHaveLength(1);
    }
  });

  it('maps statuses to codes with the engine words, in one line', () => {
    expect(mapDockerError(status(404, 'No such container: berth-x'), context)).toMatchObject({ code: 'SANDBOX_GONE' });
    expect(mapDockerError(status(409, 'name in use'), context)).toMatchObject({ code: 'SANDBOX_CONFLICT' });
    // A container that stopped between a look and an exec: 500 on Docker 20.10, 409 on newer engines.
    expect(mapDockerError(status(500, 'Container abc is not running: Exited (137) Less than a second ago'), context)).toMatchObject({ code: 'SANDBOX_GONE' });
    expect(mapDockerError(status(409, 'container abc is not running'), context)).toMatchObject({ code: 'SANDBOX_GONE' });
    const other = mapDockerError(status(500, 'boom\nsecond line'), context);
    expect(other).toBeInstanceOf(SandboxError);
    expect(other.message).toBe('could not start container berth-x: the docker engine answered 500 (boom)');
  });

  it('passes Berth errors through unchanged', () => {
    const original = new SandboxError('ENGINE_ERROR', 'already mapped');
    expect(mapDockerError(original, context)).toBe(original);
  });
});
