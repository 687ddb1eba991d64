/**
 * The LIKE pattern that finds `term` anywhere in a lower-cased column: `%`, `_` and `\` of the term match only
 * themselves (PostgreSQL's default escape character is the backslash).
 */
export const likePattern = (term: string): string => `%${term.toLowerCase().replace(/[\\%_]/g, m => `\\${m}`)}%`
