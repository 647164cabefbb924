import { BerthError, type TerminalEnvironmentProviderV1, type TerminalRegistryV1 } from '@berth/core';

/** A terminal registry that keeps providers in memory: what a host implements, in a few lines. */
export interface InProcessTerminalRegistry extends TerminalRegistryV1 {
  /** The provider registered under `name`; throws when there is none. */
  get(name: string): TerminalEnvironmentProviderV1;
  /** Every registered provider name. */
  names(): string[];
}

/** Creates an {@link InProcessTerminalRegistry}; `reservedNames` stand for the host's built-ins. */
export function createInProcessTerminalRegistry(options: { reservedNames?: readonly string[] } = {}): InProcessTerminalRegistry {
  const providers = new Map<string, TerminalEnvironmentProviderV1>();
  const reservedNames = options.reservedNames ?? ['docker', 'local'];
  return {
    specificationVersion: 'v1',
    reservedNames,
    registerEnvironmentProvider(provider) {
      if (reservedNames.includes(provider.name) || providers.has(provider.name)) {
        throw new BerthError('PROVIDER_NAME_TAKEN', `terminal environment name ${provider.name} is already taken; register under another name`);
      }
      providers.set(provider.name, provider);
    },
    get(name) {
      const provider = providers.get(name);
      if (!provider) throw new BerthError('PROVIDER_UNKNOWN', `no terminal environment ${name} is registered; register the Berth plugin first`);
      return provider;
    },
    names: () => [...providers.keys()],
  };
}
