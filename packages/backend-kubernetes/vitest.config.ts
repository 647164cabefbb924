import { berthVitestConfig } from '../../vitest.shared.js';

export default berthVitestConfig({ name: 'backend-kubernetes', kind: 'unit' });
