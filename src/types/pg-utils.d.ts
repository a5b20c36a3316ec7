/** node-postgres's own conversion of a query parameter to the text it sends (not in its typings). */
declare module 'pg/lib/utils' {
  export function prepareValue(value: unknown): string | Buffer | null;
}
