import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createEngineReads, MAX_ENGINE_ANSWER_BYTES } from './engine-reads.js';
import { isEngineUnreachable, isGone, mapDockerError } from './map-docker-error.js';

// The engine here is an HTTP server on a Unix socket that answers as a test says; the real
// engines' answers are read by the Docker and Podman integration suites (every list and inspect
// of a sandbox goes through these reads).
let folder: string;
let socketPath: string;
let server: Server | undefined;
let seen: string[];

async function serve(answer: (request: IncomingMessage, response: ServerResponse) => void): Promise<void> {
  server = createServer((request, response) => {
    seen.push(request.url ?? '');
    answer(request, response);
  });
  await new Promise<void>((resolve) => server!.listen(socketPath, resolve));
}

beforeEach(async () => {
  folder = await mkdtemp(path.join(tmpdir(), 'berth-engine-reads-'));
  socketPath = path.join(folder, 'engine.sock');
  seen = [];
});

afterEach(async () => {
  server?.closeAllConnections();
  await new Promise((resolve) => (server ? server.close(resolve) : resolve(undefined)));
  server = undefined;
  await rm(folder, { recursive: true, force: true });
});

describe('createEngineReads', () => {
  it('asks for every container with the labels as a filter, and names an image with its slashes kept', async () => {
    await serve((request, response) => response.end(request.url?.startsWith('/containers') ? '[{"Id":"a1"}]' : '{"Id":"sha256:1"}'));
    const reads = createEngineReads({ socketPath });
    expect(await reads.listContainers(['berth.scope=task:x y', 'berth.managed-by=berth'])).toEqual([{ Id: 'a1' }]);
    await reads.inspectImage('localhost/berth-busybox:latest');
    const url = new URL(seen[0]!, 'http://engine');
    expect(url.pathname).toBe('/containers/json');
    expect(url.searchParams.get('all')).toBe('1');
    expect(JSON.parse(url.searchParams.get('filters')!)).toEqual({ label: ['berth.scope=task:x y', 'berth.managed-by=berth'] });
    expect(seen[1]).toBe('/images/localhost/berth-busybox:latest/json');
  });

  it("keeps a container's name from being read as a path or a query", async () => {
    await serve((_request, response) => response.end('{}'));
    await createEngineReads({ socketPath }).inspectContainer('../images/x?y#z');
    expect(seen[0]).toBe('/containers/..%2Fimages%2Fx%3Fy%23z/json');
  });

  it("answers 404 as dockerode does, so the one error mapping calls it gone, with the engine's words", async () => {
    await serve((_request, response) => {
      response.statusCode = 404;
      response.end('{"message":"No such container: nosuch"}');
    });
    const error = await createEngineReads({ socketPath })
      .inspectContainer('nosuch')
      .catch((caught: unknown) => caught);
    expect(isGone(error)).toBe(true);
    expect(mapDockerError(error, { engine: 'docker', endpoint: socketPath, action: 'inspect container nosuch' }).message).toContain(
      'No such container: nosuch',
    );
  });

  it('refuses an answer larger than its bound instead of holding it', async () => {
    await serve((_request, response) => {
      const chunk = Buffer.alloc(1024 * 1024, 0x20);
      let sent = 0;
      const more = (): void => {
        while (sent <= MAX_ENGINE_ANSWER_BYTES) {
          sent += chunk.length;
          if (!response.write(chunk)) return void response.once('drain', more);
        }
        response.end();
      };
      more();
    });
    await expect(createEngineReads({ socketPath }).listContainers([])).rejects.toThrow(/larger than/);
  });

  it('says the engine is unreachable when nothing listens', async () => {
    const error = await createEngineReads({ socketPath })
      .ping()
      .catch((caught: unknown) => caught);
    expect(isEngineUnreachable(error)).toBe(true);
  });
});
