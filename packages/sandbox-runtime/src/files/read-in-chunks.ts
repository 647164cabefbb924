import { READ_CHUNK } from './file-programs.js';

// How the host reads a file out of a sandbox, in chunks that fit one command's output: the
// sandbox runs READ_CHUNK (read-chunk.sh) for each, and the host believes nothing it prints.
// It bounds what it decodes, counts the bytes it actually received against the limit and the
// size the sandbox claimed, and refuses, in one line and with nothing kept, on any mismatch.

/** What one run of a file program answered. */
export interface FileProgramResult {
  readonly exitCode: number;
  readonly stdout: string;
  readonly stderr: string;
  readonly timedOut: boolean;
  readonly truncated: boolean;
}

/** Why a read was refused on the host (the caller words it for its own users). */
export type ChunkedReadRefusal =
  /** The program exited non-zero: `result` says how (see FILE_EXIT). */
  | { readonly reason: 'exit'; readonly result: FileProgramResult }
  /** The size claimed is over the limit. */
  | { readonly reason: 'too-large'; readonly size: number }
  /** The size changed between chunks, or a chunk carried fewer bytes than the size left. */
  | { readonly reason: 'changed'; readonly before: number; readonly now: number }
  /** A chunk carried more bytes than the size claimed. */
  | { readonly reason: 'more-than-claimed'; readonly size: number; readonly received: number }
  /** No size, a malformed one, output that is not base64, or output cut at the output limit. */
  | { readonly reason: 'malformed'; readonly truncated: boolean }
  /** The signal aborted. */
  | { readonly reason: 'aborted' };

/** A read the host refused. */
export class ChunkedReadError extends Error {
  readonly refusal: ChunkedReadRefusal;

  constructor(refusal: ChunkedReadRefusal) {
    super(`the sandbox's file was refused on the host: ${refusal.reason}`);
    this.name = 'ChunkedReadError';
    this.refusal = refusal;
  }
}

/** What {@link readInChunks} needs. */
export interface ReadInChunksOptions {
  /** The file's absolute path in the sandbox. */
  readonly path: string;
  /** The folders what is opened must really lie in (a link that leads elsewhere is refused). */
  readonly roots: readonly string[];
  /** The most bytes the file may have. */
  readonly limit: number;
  /** The most characters one command's output may have. */
  readonly outputLimit: number;
  /** Runs READ_CHUNK in the sandbox with these arguments. */
  readonly run: (program: string, args: readonly string[]) => Promise<FileProgramResult>;
  readonly signal?: AbortSignal | undefined;
}

const BLOCK_SIZE = 4096;
const SIZE_LINE = /^(0|[1-9][0-9]{0,15})\n/;
const BASE64 = /^[A-Za-z0-9+/=\n]*$/;

/**
 * The file's bytes, exactly, or a {@link ChunkedReadError}: the host holds at most `limit` bytes
 * whatever the sandbox says, stops after the chunks the limit needs, and keeps nothing of a
 * read it refuses.
 */
export async function readInChunks(options: ReadInChunksOptions): Promise<Buffer> {
  const { limit } = options;
  // Chunks whose base64 form fits the output limit (4 characters per 3 bytes, with room for line ends).
  const blocksPerChunk = Math.max(1, Math.floor((options.outputLimit * 0.7) / BLOCK_SIZE));
  const chunkBytes = BLOCK_SIZE * blocksPerChunk;
  const mostChunks = Math.ceil(limit / chunkBytes) + 1;
  // The most characters an honest chunk prints: its size line, and its base64 in lines of 76.
  const mostCharacters = 20 + Math.ceil(chunkBytes / 3) * 4 + Math.ceil(chunkBytes / 57) + 1;
  const chunks: Buffer[] = [];
  let total = 0;
  let size: number | undefined;
  for (let chunk = 0; size === undefined || total < size; chunk++) {
    if (options.signal?.aborted) throw new ChunkedReadError({ reason: 'aborted' });
    if (chunk >= mostChunks) throw new ChunkedReadError({ reason: 'too-large', size: size ?? limit + 1 });
    const args = [options.path, String(BLOCK_SIZE), String(chunk * blocksPerChunk), String(blocksPerChunk), String(limit), ...options.roots];
    const result = await options.run(READ_CHUNK, args);
    if (result.exitCode !== 0) throw new ChunkedReadError({ reason: 'exit', result });
    const line = SIZE_LINE.exec(result.stdout);
    if (result.truncated || !line || result.stdout.length > mostCharacters) {
      throw new ChunkedReadError({ reason: 'malformed', truncated: result.truncated || result.stdout.length > mostCharacters });
    }
    const now = Number(line[1]);
    if (size !== undefined && now !== size) throw new ChunkedReadError({ reason: 'changed', before: size, now });
    // The sandbox's own check of the limit is its word only: the host's is this one.
    if (now > limit) throw new ChunkedReadError({ reason: 'too-large', size: now });
    size = now;
    const encoded = result.stdout.slice(line[0].length);
    // Masking replaces a secret's value with ***, which is not base64: the bytes would come back wrong.
    if (!BASE64.test(encoded)) throw new ChunkedReadError({ reason: 'malformed', truncated: false });
    const part = Buffer.from(encoded, 'base64');
    const expected = Math.min(chunkBytes, size - total);
    if (part.length > expected) throw new ChunkedReadError({ reason: 'more-than-claimed', size, received: total + part.length });
    if (part.length < expected) throw new ChunkedReadError({ reason: 'changed', before: size, now: total + part.length });
    chunks.push(part);
    total += part.length;
  }
  return Buffer.concat(chunks, total);
}
