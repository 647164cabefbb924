import { testDriver } from '@berth/testkit';
import Docker from 'dockerode';
import { createDockerDriver } from './index.js';

// The driver port's promises (testDriver), kept by the Docker driver itself, below the runtime.
const docker = new Docker();

testDriver({
  name: 'docker',
  driver: () => createDockerDriver({ docker }),
  image: process.env.BERTH_TEST_IMAGE ?? 'localhost/berth-busybox:latest',
});
