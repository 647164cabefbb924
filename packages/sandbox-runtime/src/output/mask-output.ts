import { createRedactor, REDACTED } from '@berth/core';
import { MIN_SECRET_LENGTH } from '@berth/core/driver';
import { cutNotice, type HeadTailBuffer } from './head-tail-buffer.js';

/** Fragments shorter than this at a cut are left alone: two characters identify no secret. */
const MIN_EDGE_FRAGMENT = 3;

/** Masks a secret cut in two by the output limit: the head's end that begins a secret, the tail's start that ends one. */
function maskEdges(head: string, tail: string, secrets: readonly string[]): { head: string; tail: string } {
  let headCut = 0;
  let tailCut = 0;
  for (const secret of secrets) {
    for (let length = Math.min(secret.length - 1, head.length); length >= MIN_EDGE_FRAGMENT && length > headCut; length--) {
      if (head.endsWith(secret.slice(0, length))) headCut = length;
    }
    for (let length = Math.min(secret.length - 1, tail.length); length >= MIN_EDGE_FRAGMENT && length > tailCut; length--) {
      if (tail.startsWith(secret.slice(secret.length - length))) tailCut = length;
    }
  }
  return {
    head: headCut > 0 ? `${head.slice(0, head.length - headCut)}${REDACTED}` : head,
    tail: tailCut > 0 ? `${REDACTED}${tail.slice(tailCut)}` : tail,
  };
}

/**
 * The text of one output stream, secrets masked with core's redactor. When the output was cut,
 * head and tail are masked apart and a secret split by the cut is masked on both sides, so no
 * piece of it survives at the edges.
 */
export function maskOutput(buffer: HeadTailBuffer, secrets: readonly string[] | undefined, limit: number): string {
  if (!secrets || secrets.length === 0) return buffer.text();
  const redactor = createRedactor(secrets);
  if (!redactor.active) return buffer.text();
  const { head, cut, tail } = buffer.parts();
  if (cut === 0) return redactor.redact(head);
  const edges = maskEdges(
    redactor.redact(head),
    redactor.redact(tail),
    secrets.filter((secret) => secret.length >= MIN_SECRET_LENGTH),
  );
  return `${edges.head}${cutNotice(cut, limit)}${edges.tail}`;
}
