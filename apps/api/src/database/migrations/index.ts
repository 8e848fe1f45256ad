import { Foundation1796015261736 } from './1796015261736-Foundation';
// Checked-in migrations, oldest first. Generate a new one with `npm run migration:generate -- Name`.
export const MIGRATIONS: Function[] = [Foundation1796015261736];
