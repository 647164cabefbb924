import Dockerode from 'dockerode';
import { dockerApiEngine, testBackend } from '@berth/testkit';
import { beforeAll } from 'vitest';
import { createPodmanBackend } from './index.js';

// Rootful Podman (the set-up's service), or the socket BERTH_PODMAN_SOCKET names.
const socketPath = process.env.BERTH_PODMAN_SOCKET ?? '/run/podman/podman.sock';
const docker = new Dockerode({ socketPath });
const image = process.env.BERTH_TEST_IMAGE ?? 'localhost/berth-busybox:latest';

beforeAll(async () => {
  try {
    await docker.ping();
  } catch (error) {
    throw new Error(
      `no Podman API answers on ${socketPath} (${error instanceof Error ? error.message : String(error)}); ` +
        `start it with \`podman system service --time=0 unix://${socketPath}\` (or run scripts/engines.sh), then run the tests again`,
    );
  }
  try {
    await docker.getImage(image).inspect();
  } catch {
    throw new Error(
      `image ${image} is not in Podman's storage; build the local test image with the set-up script, or set BERTH_TEST_IMAGE to an image with a busybox shell`,
    );
  }
});

testBackend({
  name: 'podman',
  image,
  create: (config) => createPodmanBackend({ settings: config, socketPath }),
  engine: dockerApiEngine(docker),
});
