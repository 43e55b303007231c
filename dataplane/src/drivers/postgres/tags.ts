/** The `tags` header reaches PostgreSQL as a SQL comment in front of the statement. */
import type { StatementContext } from '../../engine/contract.js';

export function tagComment(ctx?: StatementContext): string {
  if (!ctx?.tags && !ctx?.executor) return '';
  const payload = JSON.stringify({ ...(ctx.executor ? { executor: ctx.executor } : {}), ...(ctx.tags ? { tags: ctx.tags } : {}) });
  // A comment cannot be closed early: `*/` and `/*` are broken up, so tag text cannot become SQL.
  return `/* ${payload.replace(/\*\//g, '* /').replace(/\/\*/g, '/ *')} */ `;
}

/** application_name: printable ASCII, at most 63 bytes (PostgreSQL truncates beyond that). */
export function applicationName(ctx: StatementContext): string {
  const text = `data-access ${JSON.stringify(ctx.tags ?? {})}`.replace(/[^\x20-\x7e]/g, '?');
  return text.slice(0, 63);
}
