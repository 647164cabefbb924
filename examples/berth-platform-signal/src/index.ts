import { createSignalAdapter } from './create-signal-adapter.js';

export * from './create-signal-adapter.js';

/**
 * The factory the Berth gateway plugin calls when `terminal.platform_adapters` names this
 * package: a module's default export is an adapter, or a function returning one.
 */
export default createSignalAdapter;
