export {
  createDockerBackend,
  createDockerDriver,
  dockerBackendOptionsSchema,
  type DockerBackend,
  type DockerBackendOptions,
  type DockerDriverOptions,
} from './create-docker-backend.js';
export { createDockerApiDriver, type DockerApiConnection, type DockerApiDriverOptions } from './create-docker-api-driver.js';
export { createEngineReads, dockerodeReads, type EngineReads } from './engine-reads.js';
export { findDockerEngine, type DockerEngineEndpoint } from './find-docker-engine.js';
export { mapDockerError, engineStatus, type EngineErrorContext } from './map-docker-error.js';
export { createSandboxNetworks, fixedSandboxNetwork, type SandboxNetworks } from './sandbox-networks.js';
export { toContainerCreateOptions } from './to-container-options.js';
