/**
 * Masking of brokered values in what an upstream sends back (docs/brokered-secrets.md). Heads
 * are masked whole: each form of a value is put back as the form the sandbox sent (its
 * placeholder, the Basic credential it encoded). Bodies are masked as they stream, length kept
 * (each byte of a value becomes `*`), so the upstream's framing stays true; and it fails closed:
 * bytes that may be the start of a value are held until the next piece shows what they are, and
 * a body that ends on them never passes them on whole.
 */

/** One form of a value in a head, and what the sandbox gets in its place. */
export interface HeadForm {
  readonly secret: string;
  readonly replacement: string;
}

/** The shortest start of a value that a body ending on it has masked: fewer bytes say too little to hide. */
const MIN_PARTIAL = 4;
const STAR = 0x2a;

/** `value` with every form in it replaced, the longest forms first (a value inside a longer form is masked with it). */
export function maskHeadValue(value: string, forms: readonly HeadForm[]): string {
  let masked = value;
  for (const form of forms) if (masked.includes(form.secret)) masked = masked.replaceAll(form.secret, form.replacement);
  return masked;
}

/** The forms sorted for {@link maskHeadValue}: longest first, none empty, each once. */
export function orderForms(forms: readonly HeadForm[]): HeadForm[] {
  const seen = new Set<string>();
  return forms.filter((form) => form.secret.length > 0 && !seen.has(form.secret) && seen.add(form.secret)).sort((a, b) => b.secret.length - a.secret.length);
}

/** A body's masker: {@link push} each piece, then {@link end} once the body ended whole. */
export class BodyMasker {
  readonly #secrets: readonly Buffer[];
  readonly #longest: number;
  #held: Buffer = Buffer.alloc(0);

  constructor(secrets: readonly string[]) {
    this.#secrets = [...new Set(secrets)].filter((secret) => secret.length > 0).map((secret) => Buffer.from(secret, 'utf8'));
    this.#longest = Math.max(0, ...this.#secrets.map((secret) => secret.length));
  }

  /** Whether there is anything to mask at all. */
  get active(): boolean {
    return this.#secrets.length > 0;
  }

  /** The part of `piece` (with what was held before it) that is safe to pass on now. */
  push(piece: Buffer): Buffer {
    if (!this.active) return piece;
    let data = this.#held.length > 0 ? Buffer.concat([this.#held, piece]) : piece;
    let copied = this.#held.length > 0;
    for (const secret of this.#secrets) {
      for (let at = data.indexOf(secret); at >= 0; at = data.indexOf(secret, at + secret.length)) {
        // Masked in a copy: the piece may be a view of a buffer someone else still reads.
        if (!copied) {
          data = Buffer.from(data);
          copied = true;
        }
        data.fill(STAR, at, at + secret.length);
      }
    }
    const keep = this.#partialAtEnd(data);
    this.#held = Buffer.from(data.subarray(data.length - keep));
    return data.subarray(0, data.length - keep);
  }

  /** What was held, once the body ended whole: a start of a value it ends on is masked. */
  end(): Buffer {
    const held = this.#held;
    this.#held = Buffer.alloc(0);
    if (held.length >= MIN_PARTIAL) held.fill(STAR);
    return held;
  }

  /** How many bytes at the end of `data` are the start of some value (which the next piece may complete). */
  #partialAtEnd(data: Buffer): number {
    const most = Math.min(this.#longest - 1, data.length);
    for (let length = most; length > 0; length--) {
      const tail = data.subarray(data.length - length);
      if (this.#secrets.some((secret) => secret.length > length && secret[0] === tail[0] && tail.equals(secret.subarray(0, length)))) return length;
    }
    return 0;
  }
}
