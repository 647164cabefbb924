export * from './create-podman-backend.js';
export * from './find-podman-socket.js';
export * from './read-podman-host.js';
export * from './adjust-podman-spec.js';
export * from './normalize-podman-error.js';
export * from './wrap-podman-client.js';
export * from './unlock-for-purge.js';
export * from './to-libpod-spec.js';
