export { testBackend, type BackendEngineHooks, type InspectedSandbox, type TestBackendOptions } from './test-backend.js';
export {
  PROPERTY_TIMEOUT_MS,
  testPlatformAdapter,
  type PlatformAdapterInvalidVector,
  type PlatformAdapterValidVector,
  type PlatformAdapterVectors,
  type TestPlatformAdapterOptions,
} from './test-platform-adapter.js';
export { whileSaturating } from './while-saturating.js';
