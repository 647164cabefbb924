import { berthVitestConfig } from '../../vitest.shared.js';

// A pod's first start on a shared 2-core machine takes seconds; the suite's own timeouts apply.
export default berthVitestConfig({ name: 'backend-kubernetes', kind: 'integration' });
