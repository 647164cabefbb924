import { ConfigError, createPlatformRegistry, isBerthError, type PlatformRegistry, type TerminalConfig } from '@berth/core';
import { createTelegramAdapter } from '@berth/platform-telegram';
import { createWhatsAppAdapter } from '@berth/platform-whatsapp';
import { loadPlatformAdapters, type LoadPlatformAdaptersOptions } from './load-platform-adapters.js';

/**
 * The platform registry of a Berth gateway: the Telegram and WhatsApp adapters, then the
 * third-party adapters named in `terminal.platform_adapters`; the platforms of
 * `terminal.generic_platforms` get core's generic adapter, and any other is refused in one line
 * naming the known ones (a mistyped `--platform telegarm` never makes a new person).
 */
export async function createBerthPlatformRegistry(config: TerminalConfig, options: LoadPlatformAdaptersOptions = {}): Promise<PlatformRegistry> {
  // Imported statically: a missing built-in adapter must fail loudly, never hand its users to
  // the generic adapter, whose folder and variable forms differ.
  const registry = createPlatformRegistry({
    adapters: [createTelegramAdapter(), createWhatsAppAdapter()],
    genericPlatforms: config.generic_platforms,
  });
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
