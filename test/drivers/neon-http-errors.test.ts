/**
 * Failures over Neon's HTTP driver, classified as Neon reports them. Each case is a reply
 * Neon's proxy sends (status and JSON body as `sql_over_http.rs` builds them), served from a
 * loopback HTTP server and read by the real `@neondatabase/serverless` driver through our
 * `neonHttpExecutor`, so the error under test is the one production hands us.
 */
import type { ServerResponse } from 'node:http';
import { neon, neonConfig } from '@neondatabase/serverless';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { neonHttpExecutor } from '../../src/drivers/neon-http.js';
import { isRetryableDatabaseError, neonHttpFailure } from '../../src/drivers/postgres-errors.js';
import { type LoopbackServer, startLoopbackServer } from '../support/loopback-http.js';

/** Neon's error body: every field present, `code` and `severity` empty for its own errors. */
function neonErrorBody(message: string, fields: Record<string, string> = {}): string {
  return JSON.stringify({
    message,
    code: '',
    detail: null,
    hint: null,
    position: null,
    internalPosition: null,
    internalQuery: null,
    severity: '',
    where: null,
    table: null,
    column: null,
    schema: null,
    dataType: null,
    constraint: null,
    file: null,
    line: null,
    routine: null,
    ...fields,
  });
}

interface Reply {
  status: number;
  body: string;
}

const CONNECTION_STRING = 'postgres://app:secret@ep-test.localtest.me/neondb';

describe('Neon HTTP failures, as the driver reports them', () => {
  let server: LoopbackServer;
  let reply: Reply;

  beforeAll(async () => {
    server = await startLoopbackServer((_request, response: ServerResponse) => {
      response.writeHead(reply.status, { 'content-type': 'application/json' });
      response.end(reply.body);
    });
    neonConfig.fetchEndpoint = () => `${server.url}/sql`;
  });

  afterAll(async () => {
    await server?.close();
  });

  async function failureFor(next: Reply): Promise<Error> {
    reply = next;
    const db = neonHttpExecutor(neon(CONNECTION_STRING));
    try {
      await db.query('select 1');
    } catch (error) {
      return error as Error;
    }
    throw new Error('expected the query to fail');
  }

  it.each([
    ['too many connections', '53300', 'sorry, too many clients already'],
    ['a compute starting up', '57P03', 'the database system is starting up'],
    ['a compute shutting down', '57P01', 'terminating connection due to administrator command'],
  ])(
    'retries a connect-time 500 for %s, found by the SQLSTATE in its body',
    async (_, code, message) => {
      const error = await failureFor({
        status: 500,
        body: neonErrorBody(message, { code, severity: 'FATAL' }),
      });
      // The driver reads the body only for 400: no code reaches us but the message text.
      expect(error.message).toMatch(/^Server error \(HTTP status 500\): /);
      expect((error as { code?: unknown }).code).toBeUndefined();
      expect(neonHttpFailure(error)).toEqual({
        status: 500,
        sqlState: code,
        statementMayHaveRun: false,
        retryable: true,
      });
      expect(isRetryableDatabaseError(error)).toBe(true);
    },
  );

  it.each([["Couldn't connect to compute node"], ['Control plane request failed']])(
    'retries a 500 "%s": the statement never ran',
    async (message) => {
      const error = await failureFor({ status: 500, body: neonErrorBody(message) });
      expect(neonHttpFailure(error)).toMatchObject({ statementMayHaveRun: false, retryable: true });
      expect(isRetryableDatabaseError(error)).toBe(true);
    },
  );

  it.each([
    ['connection closed'],
    ['error communicating with the server: Connection reset by peer (os error 104)'],
  ])(
    'retries a 400 "%s" with an empty code, though the statement may have run',
    async (message) => {
      const error = await failureFor({ status: 400, body: neonErrorBody(message) });
      expect((error as { code?: unknown }).code).toBe('');
      expect(neonHttpFailure(error)).toMatchObject({ statementMayHaveRun: true, retryable: true });
      expect(isRetryableDatabaseError(error)).toBe(true);
    },
  );

  it('retries the 08P01 reply of a cancelled query', async () => {
    const error = await failureFor({
      status: 400,
      body: JSON.stringify({
        message: 'Query cancelled, connection was terminated',
        code: '08P01',
      }),
    });
    expect((error as { code?: unknown }).code).toBe('08P01');
    expect(isRetryableDatabaseError(error)).toBe(true);
  });

  it('retries a fetch that failed outright (nothing listening)', async () => {
    const closed = await startLoopbackServer(() => {});
    await closed.close();
    neonConfig.fetchEndpoint = () => `${closed.url}/sql`;
    try {
      const error = await failureFor({ status: 200, body: '' });
      expect(error.message).toMatch(/^Error connecting to database: TypeError: fetch failed/);
      expect(neonHttpFailure(error)).toMatchObject({ status: undefined, retryable: true });
      expect(isRetryableDatabaseError(error)).toBe(true);
    } finally {
      neonConfig.fetchEndpoint = () => `${server.url}/sql`;
    }
  });

  it.each([
    [
      'a wrong password or unknown role',
      400,
      neonErrorBody("password authentication failed for user 'app'"),
    ],
    ['a missing password', 400, neonErrorBody('missing authentication credentials')],
    [
      'a connect-time SQLSTATE that will not pass',
      500,
      neonErrorBody('no such role', { code: '28000' }),
    ],
    ['a reply Neon could not convert', 500, neonErrorBody('could not parse postgres response')],
    ['a result over 10 MiB', 507, neonErrorBody('response is too large (max is 10485760 bytes)')],
    [
      'a unique violation',
      400,
      neonErrorBody('duplicate key', { code: '23505', severity: 'ERROR' }),
    ],
  ])('does not retry %s', async (_, status, body) => {
    const error = await failureFor({ status, body });
    expect(isRetryableDatabaseError(error)).toBe(false);
  });

  it('retries a gateway 503 in front of Neon, whose outcome is unknown', async () => {
    const error = await failureFor({ status: 503, body: 'upstream unavailable' });
    expect(neonHttpFailure(error)).toMatchObject({ statementMayHaveRun: true, retryable: true });
  });
});
