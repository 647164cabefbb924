export * from './test-backend.js';
export * from './test-platform-adapter.js';
