export {
  createPodmanBackend,
  createPodmanDriver,
  type PodmanBackend,
  type PodmanBackendOptions,
  type PodmanDriver,
  type PodmanDriverOptions,
} from './create-podman-backend.js';
export { findPodmanSocket, type FindPodmanSocketOptions, type FoundPodmanSocket, type PodmanCandidate, type PodmanEndpoint } from './find-podman-socket.js';
export { readPodmanHost, type PodmanHost } from './read-podman-host.js';
export { mapPodmanError } from './map-podman-error.js';
