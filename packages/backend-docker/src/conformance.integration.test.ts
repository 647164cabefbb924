import Docker from 'dockerode';
import { dockerApiEngine, testBackend } from '@berth/testkit';
import { beforeAll } from 'vitest';
import { createDockerBackend } from './index.js';

// The engine from DOCKER_HOST, else the default local socket; the image built by the set-up.
const docker = new Docker();
const image = process.env.BERTH_TEST_IMAGE ?? 'localhost/berth-busybox:latest';

beforeAll(async () => {
  try {
    await docker.ping();
  } catch (error) {
    throw new Error(
      `no Docker Engine answers (${error instanceof Error ? error.message : String(error)}); ` +
        'start dockerd, or point DOCKER_HOST at a running engine, then run the tests again',
    );
  }
  try {
    await docker.getImage(image).inspect();
  } catch {
    throw new Error(
      `image ${image} is not on the Docker Engine; build the local test image with the set-up script, or set BERTH_TEST_IMAGE to an image with a busybox shell`,
    );
  }
});

testBackend({
  name: 'docker',
  image,
  create: (config) => createDockerBackend({ settings: config, docker }),
  engine: dockerApiEngine(docker),
});
