import { mergeConfig } from 'vitest/config';
import { berthVitestConfig } from '../../vitest.shared.js';

// Rootless tests run as another user through scripts/run-rootless-suite.sh, never here.
export default mergeConfig(berthVitestConfig({ name: 'backend-podman', kind: 'unit' }), { test: { exclude: ['**/*.rootless.test.ts'] } });
