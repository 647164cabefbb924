/**
 * One running engine exec with its standard streams: what a shell session is built on. The
 * engine layer makes these from dockerode; unit tests can make them from a local process.
 */
export interface ExecChannel {
  /** Writes to the process's stdin. */
  write(data: string | Uint8Array): void;
  /** Closes the process's stdin (the process sees end of file). */
  end(): void;
  /** Drops the connection; the engine then ends the process's stdin too. */
  destroy(): void;
  onStdout(listener: (chunk: Buffer) => void): void;
  onStderr(listener: (chunk: Buffer) => void): void;
  /** Called once when the connection ends, whoever ended it. */
  onClose(listener: () => void): void;
  /** The process's exit code once it ended, when the engine reports it. */
  exitCode(): Promise<number | undefined>;
}

/** Starts a process inside a sandbox and returns its channel. */
export type OpenExecChannel = (command: readonly string[], options?: { workingDir?: string }) => Promise<ExecChannel>;
