import { StringDecoder } from 'node:string_decoder';
import { createRedactor } from '@berth/core';
import { MIN_SECRET_LENGTH } from '@berth/core/driver';

/** One output stream, masked piece by piece as it comes. */
export interface StreamMasker {
  write(chunk: Uint8Array): void;
  /** Sends what was held back; call once, when the command has ended. */
  end(): void;
}

/**
 * Masks a stream of output as it comes, so that a command's output can be shown live without a
 * secret ever passing: every piece is masked with core's redactor, as the whole result is, and
 * the end of what arrived is held back while it may be the beginning of a secret (so a secret
 * split across two pieces is never sent in part). A secret that arrived whole but spans the
 * place where the piece would be cut moves the cut past it. What is held goes out with the next
 * piece, or at the end. Bytes are decoded as UTF-8 across pieces.
 */
export function createStreamMasker(secrets: readonly string[] | undefined, emit: (text: string) => void): StreamMasker {
  const values = [...new Set((secrets ?? []).filter((value) => value.length >= MIN_SECRET_LENGTH))];
  const redactor = createRedactor(values);
  const decoder = new StringDecoder('utf8');
  let held = '';

  /** Where the text may be cut: before its longest end that begins a secret, and past any secret across that place. */
  const cutOf = (text: string): number => {
    let keep = 0;
    for (const value of values) {
      for (let length = Math.min(value.length - 1, text.length); length > keep; length--) {
        if (text.endsWith(value.slice(0, length))) {
          keep = length;
          break;
        }
      }
    }
    let cut = text.length - keep;
    for (let moved = true; moved; ) {
      moved = false;
      for (const value of values) {
        const from = Math.max(0, cut - value.length + 1);
        const at = text.indexOf(value, from);
        if (at !== -1 && at < cut && at + value.length > cut) {
          cut = at + value.length;
          moved = true;
        }
      }
    }
    return cut;
  };

  const send = (text: string): void => {
    if (text !== '') emit(redactor.redact(text));
  };

  return {
    write(chunk) {
      const text = held + decoder.write(Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength));
      if (!redactor.active) {
        held = '';
        send(text);
        return;
      }
      const cut = cutOf(text);
      held = text.slice(cut);
      send(text.slice(0, cut));
    },
    end() {
      const text = held + decoder.end();
      held = '';
      send(text);
    },
  };
}
