// Run only by src/test-backend.integration.test.ts, in a child vitest, with the flaws to switch on.
import { testBackend } from '../src/test-backend.js';
import { createFlawedDockerBackend, runDocker, type BackendFlaw } from './create-flawed-docker-backend.js';

const flaws = new Set((process.env.BERTH_TESTKIT_FLAWS ?? '').split(',').filter(Boolean) as BackendFlaw[]);
const network = process.env.BERTH_TESTKIT_FLAWED_NETWORK ?? 'berth-testkit-flawed';

testBackend({
  name: 'flawed',
  image: process.env.BERTH_TEST_IMAGE ?? 'localhost/berth-busybox:latest',
  create: (config) => createFlawedDockerBackend(config, flaws, network),
  engine: {
    async removeContainer(containerId) {
      await runDocker(['rm', '-f', containerId]);
    },
    async inspect(containerId) {
      const found = await runDocker(['inspect', containerId]);
      const document = JSON.parse(found.out.toString())[0];
      return { env: document.Config.Env ?? [], labels: document.Config.Labels ?? {}, document };
    },
  },
});
