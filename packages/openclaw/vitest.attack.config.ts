import { berthVitestConfig } from '../../vitest.shared.js';

export default berthVitestConfig({ name: 'openclaw', kind: 'attack' });
