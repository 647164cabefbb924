import { programText } from '../shell/program-file.js';
import { FILE_EXIT } from './file-exit-codes.js';
import readChunkFile from './read-chunk.sh';

/** The lines that set each name of the exit-code table, put in front of every file program. */
const EXIT_CODE_LINES = Object.entries(FILE_EXIT)
  .map(([name, status]) => `${name}=${status}`)
  .join('\n');

/** The text a file program of this folder sends: the exit-code table, then the program. */
export function fileProgram(file: string): string {
  return `${EXIT_CODE_LINES}\n${programText(file)}`;
}

/** Reads one chunk of a file: see read-chunk.sh. */
export const READ_CHUNK = fileProgram(readChunkFile);
