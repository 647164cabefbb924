// Declarations of the two OpenClaw SDK subpaths this package imports at runtime. OpenClaw
// provides them inside its gateway (it resolves `openclaw/plugin-sdk/*` for the plugins it
// loads); this package does not install OpenClaw. The types live in openclaw-sdk-types.ts.

declare module 'openclaw/plugin-sdk/plugin-entry' {
  /** OpenClaw's entry helper for non-channel plugins: returns the entry object it loads. */
  export function definePluginEntry(
    options: import('./openclaw-sdk-types.js').OpenClawPluginEntryOptions,
  ): import('./openclaw-sdk-types.js').OpenClawPluginEntry;
}

declare module 'openclaw/plugin-sdk/sandbox' {
  /** Registers (or replaces) a sandbox backend; returns a function that restores the previous one. */
  export function registerSandboxBackend(id: string, registration: import('./openclaw-sdk-types.js').OpenClawSandboxBackendRegistration): () => void;
}
