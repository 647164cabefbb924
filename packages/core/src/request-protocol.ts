// The limits and shapes of a request to run a command, which every side must agree on: core's
// config, `berth serve`'s parser, `sandboxCommandArgv`, the two `berth exec` parsers, the Perl
// client and the Python bridge. It imports nothing, so the spawned clients that must not load
// the rest of core (zod and yaml cost about 100 ms) take it from `@berth/core/request-protocol`.
// `requestProtocolConstants()` goes into the socket's wire contract,
// `integrations/hermes/berth_hermes/request_protocol.json` (scripts/write-request-protocol.ts),
// which the Python bridge reads; the Perl client names the values it needs, and a unit test
// (apps/gateway-plugin/src/socket/request-protocol-file.test.ts) checks them against that file.

/** The version of `berth serve`'s socket protocol; a request carries it as `v`. */
export const SANDBOX_SOCKET_PROTOCOL_VERSION = 1;

/** The largest request line `berth serve` reads, in bytes, newline excluded. @default 1 MiB */
export const MAX_SANDBOX_SOCKET_REQUEST_BYTES = 1024 * 1024;

/** The longest a command may be given before it is killed, in seconds (one day). */
export const MAX_COMMAND_TIMEOUT_SECONDS = 86_400;

/** Seconds before a command is killed when neither the request nor `terminal.timeout` says. */
export const DEFAULT_COMMAND_TIMEOUT_SECONDS = 180;

/** The exit status of a command killed at its timeout, as coreutils' `timeout` gives. */
export const TIMEOUT_EXIT_CODE = 124;

/** The exit status of a command stopped while it ran (Ctrl-C, `ExecRequest.signal`): 128 + SIGINT, as a shell gives. */
export const INTERRUPTED_EXIT_CODE = 130;

/** The exit status of a client (`berth`, the Perl client) when Berth itself fails, not the command. */
export const BERTH_FAILURE_EXIT_CODE = 125;

/**
 * A plain task id: the legacy layout keeps it as the folder name `{sandbox_dir}/docker/{task_id}`,
 * and the CLI and `sandboxCommandArgv` accept only these.
 */
export const PLAIN_TASK_ID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;

// A timeout written as text (a command line's, or a number's own spelling): digits, one dot.
const TIMEOUT_TEXT = /^\d+(?:\.\d+)?$/;

/**
 * Whether `text` is a command timeout a command line may give: a plain decimal number of seconds,
 * more than 0 and at most {@link MAX_COMMAND_TIMEOUT_SECONDS}. A number is checked as
 * `String(number)`, so `1e-7` and `NaN` are refused as their text would be.
 */
export function isCommandTimeoutText(text: string): boolean {
  const seconds = Number(text);
  return TIMEOUT_TEXT.test(text) && seconds > 0 && seconds <= MAX_COMMAND_TIMEOUT_SECONDS;
}

/**
 * Whether a command line or a spawned request names a user with both its platform and its id, or
 * names none: one without the other names nobody for sure, and is refused.
 */
export function platformAndUserTogether(platform: string | undefined, userId: string | undefined): boolean {
  return (platform === undefined) === (userId === undefined);
}

/** Where an attachment of a message lands in its sender's sandbox when the host names no other place (docs/files.md). */
export const ATTACHMENTS_FOLDER = '/workspace/attachments';

/** The values of this module that a client in another language needs, as the JSON file holds them. */
export interface RequestProtocolConstants {
  readonly protocolVersion: number;
  readonly maxRequestBytes: number;
  readonly maxCommandTimeoutSeconds: number;
  readonly defaultCommandTimeoutSeconds: number;
  readonly timeoutExitCode: number;
  readonly berthFailureExitCode: number;
  /** {@link PLAIN_TASK_ID_PATTERN}'s source, which Python's `re` reads the same way. */
  readonly plainTaskIdPattern: string;
  readonly attachmentsFolder: string;
}

/** The limits the wire contract (`request_protocol.json`) holds for the Python bridge and the Perl client. */
export function requestProtocolConstants(): RequestProtocolConstants {
  return {
    protocolVersion: SANDBOX_SOCKET_PROTOCOL_VERSION,
    maxRequestBytes: MAX_SANDBOX_SOCKET_REQUEST_BYTES,
    maxCommandTimeoutSeconds: MAX_COMMAND_TIMEOUT_SECONDS,
    defaultCommandTimeoutSeconds: DEFAULT_COMMAND_TIMEOUT_SECONDS,
    timeoutExitCode: TIMEOUT_EXIT_CODE,
    berthFailureExitCode: BERTH_FAILURE_EXIT_CODE,
    plainTaskIdPattern: PLAIN_TASK_ID_PATTERN.source,
    attachmentsFolder: ATTACHMENTS_FOLDER,
  };
}
