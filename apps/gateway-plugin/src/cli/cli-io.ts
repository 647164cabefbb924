/** A stream the CLI writes to. */
export interface CliStream {
  write(text: string): unknown;
  readonly isTTY?: boolean;
}

/** What the CLI reads from and writes to; the process's own streams outside tests. */
export interface CliIo {
  readonly stdout: CliStream;
  readonly stderr: CliStream;
  /** Stands for the gateway's environment. */
  readonly environment: Readonly<Record<string, string | undefined>>;
  readonly cwd: string;
  /**
   * Calls `listener` at SIGINT or SIGTERM (the process then does not end by itself: a second
   * signal ends it at once); returns the function that stops listening. Absent: not listened to.
   */
  readonly onInterrupt?: (listener: (signal: 'SIGINT' | 'SIGTERM') => void) => () => void;
}

/** Colour helpers that do nothing when the stream is not a terminal or `NO_COLOR` is set. */
export interface Colors {
  readonly enabled: boolean;
  green(text: string): string;
  red(text: string): string;
  yellow(text: string): string;
  bold(text: string): string;
  dim(text: string): string;
}

/** Colours for `stream`: on a terminal only, and never when `NO_COLOR` is set to anything non-empty. */
export function colorsFor(stream: Pick<CliStream, 'isTTY'>, environment: Readonly<Record<string, string | undefined>>): Colors {
  const enabled = stream.isTTY === true && !environment.NO_COLOR && environment.TERM !== 'dumb';
  const wrap = (open: number, close: number) => (text: string) => (enabled ? `\u001b[${open}m${text}\u001b[${close}m` : text);
  return { enabled, green: wrap(32, 39), red: wrap(31, 39), yellow: wrap(33, 39), bold: wrap(1, 22), dim: wrap(2, 22) };
}

/** Writes progress lines to stderr on a terminal only; piped output stays clean. */
export function progressReporter(io: CliIo): ((event: unknown) => void) | undefined {
  if (io.stderr.isTTY !== true) return undefined;
  let last = '';
  return (event) => {
    const text = describeProgress(event);
    if (!text || text === last) return;
    last = text;
    io.stderr.write(`berth: ${text}\n`);
  };
}

/** One line out of a backend's progress event (a string, or an object with a message). */
export function describeProgress(event: unknown): string | undefined {
  if (typeof event === 'string') return event;
  if (event && typeof event === 'object') {
    const record = event as Record<string, unknown>;
    const parts = [record.message ?? record.status ?? record.phase ?? record.stage, record.image, record.id, record.progress].filter(
      (part) => typeof part === 'string' && part.length > 0,
    );
    return parts.length > 0 ? parts.join(' ') : undefined;
  }
  return undefined;
}
