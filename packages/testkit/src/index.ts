export { testBackend, type BackendEngineHooks, type InspectedSandbox, type TestBackendOptions } from './test-backend.js';
export { dockerApiEngine, type DockerApiClient } from './docker-api-engine.js';
export {
  PROPERTY_TIMEOUT_MS,
  testPlatformAdapter,
  type PlatformAdapterInvalidVector,
  type PlatformAdapterValidVector,
  type PlatformAdapterVectors,
  type TestPlatformAdapterOptions,
} from './test-platform-adapter.js';
export { DRIVER_TEST_TIMEOUT_MS, testDriver, type DriverTestContext, type TestDriverOptions } from './test-driver.js';
export { whileSaturating } from './while-saturating.js';
