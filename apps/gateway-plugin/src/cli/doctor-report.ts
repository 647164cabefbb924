/** The outcome of one doctor check. */
export interface DoctorCheck {
  readonly name:
    | 'config'
    | 'engine'
    | 'backend'
    | 'image'
    | 'sandbox-root'
    | 'variables'
    | 'secrets'
    | 'egress'
    | 'isolation'
    | 'runtime'
    | 'capacity'
    | 'shares'
    | 'frozen'
    | 'pool'
    | 'disk';
  readonly status: 'ok' | 'problem' | 'warning' | 'skipped';
  readonly detail: string;
  /** The one thing to do, for problems and warnings. */
  readonly fix?: string;
}

/** What `berth doctor --json` prints. */
export interface DoctorReport {
  readonly ok: boolean;
  readonly engine: {
    readonly name: string;
    readonly endpoint: string | null;
    readonly how: string | null;
    readonly reachable: boolean;
    readonly version: string | null;
    readonly apiVersion: string | null;
  };
  readonly config: { readonly file: string | null; readonly valid: boolean; readonly error: string | null };
  readonly image: { readonly name: string | null; readonly present: boolean | null };
  readonly sandboxRoot: { readonly path: string; readonly exists: boolean; readonly writable: boolean };
  readonly checks: readonly DoctorCheck[];
}
