// Typed query errors: the server maps `status` to the HTTP code and `param` to the offending parameter.

export type QueryErrorStatus = 400 | 404;

/** A query could not be answered because of its arguments (400) or a missing resource (404). */
export class QueryError extends Error {
  readonly status: QueryErrorStatus;
  /** The request parameter at fault, when there is one (e.g. `lanes`, `t0`, `key`). */
  readonly param?: string;

  constructor(status: QueryErrorStatus, message: string, param?: string) {
    super(message);
    this.name = 'QueryError';
    this.status = status;
    if (param !== undefined) this.param = param;
  }
}

/** A bad argument: HTTP 400 naming the parameter. */
export function badArgument(param: string | undefined, message: string): QueryError {
  return new QueryError(400, message, param);
}

/** A missing resource: HTTP 404. */
export function notFound(message: string, param?: string): QueryError {
  return new QueryError(404, message, param);
}
