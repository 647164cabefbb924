/** A shell program file of this folder, bundled as its text (see program-file.ts). */
declare module '*.sh' {
  const text: string;
  export default text;
}
