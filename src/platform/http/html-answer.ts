/**
 * The OpenAPI document of a public page route that answers its page as JSON, or as HTML when `Accept` prefers
 * `text/html` (the space page, the event page). Only the document changes (a `swaggerTransform`): the route's own
 * response schema stays the JSON page, which serializes the answer, names its `$schema` and is hoisted to
 * `components.schemas` (openapi.ts); the HTML is a reference to the named string schema of the route that always
 * answers HTML, which the hoisting leaves as it is.
 *
 * @example
 *   config: { swaggerTransform: ({ schema, url }) => ({ url, schema: withHtmlAnswer(schema, { description, json:
 * SpacePage, html: 'SpacePageHtml' }) }) }
 */
import type { FastifySchema } from 'fastify'

export function withHtmlAnswer (
  schema: FastifySchema,
  o: { description: string, json: unknown, html: string, headers?: Record<string, unknown> }
): FastifySchema {
  return {
    ...schema,
    response: {
      ...(schema.response as Record<string, unknown>),
      200: {
        description: o.description,
        ...(o.headers !== undefined ? { headers: o.headers } : {}),
        content: {
          'application/json': { schema: o.json },
          'text/html': { schema: { $ref: `#/components/schemas/${o.html}` } }
        }
      }
    }
  }
}
