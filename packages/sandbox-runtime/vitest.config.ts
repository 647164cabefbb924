import { berthVitestConfig } from '../../vitest.shared.js';

export default berthVitestConfig({ name: 'sandbox-runtime', kind: 'unit' });
