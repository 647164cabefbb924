// The one exit-code table of the file kit's programs (`*.sh` here): the programs exit with
// `"$NAME"`, and `fileProgram` puts the table's values in front of each program, so a number is
// written once, here, for the programs and the TypeScript that reads their statuses alike.

/** What a file program refuses, by its exit status. */
export const FILE_EXIT = {
  /** Nothing is at the path (or its folder is missing). */
  NOT_FOUND: 44,
  /** The path is a folder where a file was wanted. */
  IS_FOLDER: 45,
  /** The path is not a folder where one was wanted. */
  NOT_FOLDER: 46,
  /** Something is already at the path. */
  EXISTS: 47,
  /** The file is over the limit the caller gave. */
  TOO_LARGE: 48,
  /** A FIFO, socket or device: not a regular file. */
  NOT_REGULAR: 49,
  /** What was opened lies (through links) outside the roots the caller allows. */
  OUTSIDE: 50,
  /** The file has more than one hard link. */
  LINKED: 51,
} as const;

/** A name of {@link FILE_EXIT}. */
export type FileExitName = keyof typeof FILE_EXIT;

/** The name of an exit status of the table, or undefined for any other status. */
export function fileExitName(status: number): FileExitName | undefined {
  return (Object.keys(FILE_EXIT) as FileExitName[]).find((name) => FILE_EXIT[name] === status);
}
