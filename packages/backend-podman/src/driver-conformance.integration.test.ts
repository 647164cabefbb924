import { testDriver } from '@berth/testkit';
import { createPodmanDriver } from './index.js';

// The driver port's promises (testDriver), kept by the Podman driver itself, below the runtime:
// rootful Podman (the set-up's service), or the socket BERTH_PODMAN_SOCKET names.
const socketPath = process.env.BERTH_PODMAN_SOCKET ?? '/run/podman/podman.sock';

testDriver({
  name: 'podman',
  driver: () => createPodmanDriver({ socketPath }),
  image: process.env.BERTH_TEST_IMAGE ?? 'localhost/berth-busybox:latest',
});
