/*
 * The unchanged conformance suite, run as an ordinary user against that user's own rootless
 * Podman service, found by discovery (CONTAINER_HOST unset: $XDG_RUNTIME_DIR/podman/podman.sock).
 * Started by scripts/run-rootless-suite.sh.
 */
import Dockerode from 'dockerode';
import { dockerApiEngine, testBackend } from '@berth/testkit';
import { beforeAll, expect } from 'vitest';
import { createPodmanBackend, findPodmanSocket, readPodmanHost } from './index.js';

const image = process.env.BERTH_TEST_IMAGE ?? 'localhost/berth-busybox:latest';
let docker: Dockerode | undefined;
const engine = (): Dockerode => {
  if (!docker) throw new Error('the rootless engine was not found in beforeAll');
  return docker;
};

beforeAll(async () => {
  const found = await findPodmanSocket();
  docker = new Dockerode(found.endpoint);
  // The suite must not pass against a rootful service by accident.
  expect((await readPodmanHost(docker)).rootless, `the Podman service discovery found (${found.label}) is not rootless`).toBe(true);
  try {
    await docker.getImage(image).inspect();
  } catch {
    throw new Error(`image ${image} is not in this user's Podman storage; import it as this user (scripts/engines.sh does), or set BERTH_TEST_IMAGE`);
  }
});

testBackend({
  name: 'podman rootless',
  image,
  create: (config) => createPodmanBackend({ settings: config }),
  engine: dockerApiEngine(engine),
});
