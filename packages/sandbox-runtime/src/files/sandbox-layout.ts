// The folders inside every sandbox, named once: the drivers mount them (sandbox-spec.ts), the
// shell starts in the workspace, and the file kit (this folder) puts files in and takes them out.
// Where an attachment lands is core's request protocol (`ATTACHMENTS_FOLDER`, which the Python
// bridge reads too): a folder of the workspace.

/** The in-container layout of a sandbox. */
export const SANDBOX_LAYOUT = {
  /** The user's workspace: their scope's folder, and where a shell starts. */
  workspace: '/workspace',
  /** The sandbox user's home (`~`). */
  home: '/root',
  /** The sandbox's own temporary folder. */
  temporary: '/tmp',
} as const;

/** The sandbox folders a file may be put in or taken from by the gateway: the user's own, and the sandbox's /tmp. */
export const FILE_ROOTS = [SANDBOX_LAYOUT.workspace, SANDBOX_LAYOUT.home, SANDBOX_LAYOUT.temporary] as const;
