/** TypeORM answers UPDATE … RETURNING with [rows, count] (and a plain query with the rows). */
export function returned<T>(raw: unknown): T[] {
  const arr = raw as unknown[];
  return (Array.isArray(arr[0]) ? arr[0] : arr) as T[];
}
