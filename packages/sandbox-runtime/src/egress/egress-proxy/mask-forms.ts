import { base64Runs } from '@berth/core/driver';
import type { PlaceholderTable } from './placeholders.js';
import { type HeadForm, orderForms } from './secret-masker.js';

/** How many re-encoded Basic credentials are remembered per sandbox (each is masked in later answers too). */
const REMEMBERED_FORMS = 64;
/**
 * What the proxy masks in the answers a sandbox gets (docs/brokered-secrets.md): each value of
 * the sandbox as it is and percent-encoded (put back as the placeholder), each Basic credential
 * the proxy encoded for it (put back as the sandbox's own), and the value's bytes at any
 * alignment of base64. Kept per sandbox, so an answer that returns what an earlier request
 * carried (a log the API keeps, say) is masked too.
 */
export class MaskForms {
  readonly #produced = new Map<string, HeadForm>();

  /** Remembers forms a request carried (the Basic credentials the proxy encoded). */
  remember(forms: readonly HeadForm[]): void {
    for (const form of forms) {
      this.#produced.delete(form.secret);
      this.#produced.set(form.secret, form);
      if (this.#produced.size > REMEMBERED_FORMS) this.#produced.delete(this.#produced.keys().next().value!);
    }
  }

  /** Every form to mask for a sandbox with `table`, longest first. */
  formsFor(table: PlaceholderTable): HeadForm[] {
    const forms: HeadForm[] = [...this.#produced.values()];
    for (const [placeholder, brokered] of table) {
      if (brokered.value.length === 0) continue;
      forms.push({ secret: brokered.value, replacement: placeholder }, { secret: encodeURIComponent(brokered.value), replacement: placeholder });
      for (const run of base64Runs(brokered.value)) forms.push({ secret: run, replacement: '*'.repeat(run.length) });
    }
    return orderForms(forms);
  }
}
