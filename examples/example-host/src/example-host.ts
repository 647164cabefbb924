import { runWithSession, type ExecuteResult, type TerminalEnvironment, type TerminalEnvironmentProviderV1, type TerminalRegistryV1 } from '@berth/core';
import { createBerthPlugin } from '@berth/gateway-plugin';

/** A chat message as a platform delivers it to the gateway. */
export interface IncomingMessage {
  readonly platform: string;
  /** The sender's id as the platform gives it. */
  readonly senderId: string | number;
  readonly chatId: string | number;
  /** What the agent decided to run for this message. */
  readonly command: string;
}

/** Options of {@link createExampleHost}. */
export interface ExampleHostOptions {
  /** The gateway's `terminal:` section; the default config file is read when absent. */
  readonly config?: unknown;
  /** The gateway's environment (`HERMES_USER_*` credentials live here). @default process.env */
  readonly environment?: Readonly<Record<string, string | undefined>>;
  /** The environment the host's config selects. @default 'berth-docker' */
  readonly terminalName?: string;
}

/**
 * A gateway in miniature: it owns a terminal registry (with its own built-in names reserved),
 * registers the Berth plugin, and for every incoming message sets the session context before
 * its terminal tool runs the command, which is all Berth needs to pick the sender's sandbox.
 */
export function createExampleHost(options: ExampleHostOptions = {}) {
  const providers = new Map<string, TerminalEnvironmentProviderV1>();
  const terminal: TerminalRegistryV1 = {
    specificationVersion: 'v1',
    reservedNames: ['docker', 'local'],
    registerEnvironmentProvider(provider) {
      if (terminal.reservedNames?.includes(provider.name) || providers.has(provider.name)) throw new Error(`terminal name ${provider.name} is taken`);
      providers.set(provider.name, provider);
    },
  };
  const plugin = createBerthPlugin();
  let environment: TerminalEnvironment | undefined;

  return {
    terminal,
    plugin,
    /** Registers the plugin and opens the terminal tool's environment, once, for every chat. */
    async start(): Promise<void> {
      await plugin.register({
        specificationVersion: 'v1',
        terminal,
        ...(options.config !== undefined ? { config: options.config } : {}),
        ...(options.environment ? { environment: options.environment } : {}),
      });
      const provider = providers.get(options.terminalName ?? 'berth-docker');
      if (!provider) throw new Error(`no terminal environment ${options.terminalName ?? 'berth-docker'} was registered`);
      environment = await provider.createEnvironment({ taskId: 'example' });
    },
    /** What the gateway does with each message: set the session, then run the terminal tool. */
    handle(message: IncomingMessage): Promise<ExecuteResult> {
      if (!environment) throw new Error('call start() first');
      const tool = environment;
      const session = { platform: message.platform, userId: message.senderId, chatId: message.chatId, taskId: `chat-${message.chatId}` };
      return runWithSession(session, () => tool.execute(message.command));
    },
    /** A command with no user behind it (a scheduled job): the legacy task layout. */
    runWithoutUser(command: string): Promise<ExecuteResult> {
      if (!environment) throw new Error('call start() first');
      return environment.execute(command);
    },
    /** Releases the environment and the plugin's connections; sandboxes persist. */
    async stop(): Promise<void> {
      await environment?.cleanup();
      await plugin.close();
    },
  };
}

/** What {@link createExampleHost} returns. */
export type ExampleHost = ReturnType<typeof createExampleHost>;
