import { berthVitestConfig } from '../../vitest.shared.js';

export default berthVitestConfig({ name: 'adversarial', kind: 'attack' });
