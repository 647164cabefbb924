import { ConfigError, createPlatformRegistry, isBerthError, type PlatformAdapterV1, type PlatformRegistry, type TerminalConfig } from '@berth/core';
import { loadPlatformAdapters, type LoadPlatformAdaptersOptions } from './load-platform-adapters.js';

async function builtInAdapter(specifier: string, factoryName: string): Promise<PlatformAdapterV1 | undefined> {
  try {
    const loaded = (await import(specifier)) as Record<string, unknown>;
    const factory = loaded[factoryName];
    return typeof factory === 'function' ? (factory as () => PlatformAdapterV1)() : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The platform registry of a Berth gateway: the Telegram and WhatsApp adapters, then the
 * third-party adapters named in `terminal.platform_adapters`; other platforms get core's
 * generic adapter.
 */
export async function createBerthPlatformRegistry(config: TerminalConfig, options: LoadPlatformAdaptersOptions = {}): Promise<PlatformRegistry> {
  const registry = createPlatformRegistry();
  const builtIns = [
    await builtInAdapter('@berth/platform-telegram', 'createTelegramAdapter'),
    await builtInAdapter('@berth/platform-whatsapp', 'createWhatsAppAdapter'),
  ];
  for (const adapter of builtIns) if (adapter) registry.register(adapter);
  const thirdParty = await loadPlatformAdapters(config.platform_adapters, options);
  for (const [index, adapter] of thirdParty.entries()) {
    try {
      registry.register(adapter);
    } catch (error) {
      const key = `terminal.platform_adapters.${index}`;
      const why = isBerthError(error) ? error.message : String(error);
      throw new ConfigError(key, `${config.platform_adapters[index]} cannot be registered: ${why}`, { cause: error });
    }
  }
  return registry;
}
