import { berthVitestConfig } from '../../vitest.shared.js';

export default berthVitestConfig({ name: 'install', kind: 'unit' });
