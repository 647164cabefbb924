import { berthVitestConfig } from '../../vitest.shared.js';

export default berthVitestConfig({ name: 'core', kind: 'unit' });
