export * from './test-backend.js';
export * from './test-platform-adapter.js';
export { saturatingLockFile, whileSaturating } from './while-saturating.js';
