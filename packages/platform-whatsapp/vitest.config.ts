import { berthVitestConfig } from '../../vitest.shared.js';

export default berthVitestConfig({ name: 'platform-whatsapp', kind: 'unit' });
