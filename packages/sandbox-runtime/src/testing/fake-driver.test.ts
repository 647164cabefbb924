import { testDriver } from '@berth/testkit';
import { createFakeDriver } from './fake-driver.js';

// The fake driver the runtime's policies are tested on keeps the driver port's promises, as a
// real driver must: the same conformance suite runs against Docker's and Podman's.
testDriver({ name: 'fake', driver: () => createFakeDriver({ images: ['busybox:1'] }), image: 'busybox:1' });
