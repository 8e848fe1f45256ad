/**
 * The rows of a raw query: TypeORM answers UPDATE … RETURNING with [rows, count] and a plain query
 * with the rows. Every raw query that reads its RETURNING rows goes through this.
 */
export function returned<T>(raw: unknown): T[] {
  const arr = raw as unknown[];
  return (Array.isArray(arr[0]) ? arr[0] : arr) as T[];
}
