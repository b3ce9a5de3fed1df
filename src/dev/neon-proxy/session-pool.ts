/**
 * The Postgres sessions behind the stand-in's SQL-over-HTTP endpoint, handed out and taken
 * back the way Neon's proxy does: every session comes back reset, a connect failure is
 * reported in Neon's shape, and a request whose client went away is cancelled.
 */
import { connect } from 'node:net';
import pg, { type PoolClient } from 'pg';
import { errorMessage, isPostgresError, NEON_MESSAGES, SqlOverHttpError } from './sql-errors.js';
import type { PostgresAddress } from './targets.js';

/**
 * Connections per pool (one pool per connection string). Enough for concurrent drains in tests
 * to really run in parallel, while a handful of test databases stays far below Postgres'
 * default `max_connections` of 100.
 */
const POOL_MAX_CONNECTIONS = 10;

/**
 * Idle pooled connections close after this long, so a test harness can drop a per-file
 * database shortly after its last HTTP query without `WITH (FORCE)`.
 */
const POOL_IDLE_TIMEOUT_MS = 5_000;

/** A request waiting longer than this for a Postgres connection fails instead of hanging a test. */
const POOL_CONNECT_TIMEOUT_MS = 10_000;

/**
 * Postgres' built-in default zone, which a compute whose configuration sets no TimeZone runs
 * with. initdb instead writes the host's zone into postgresql.conf, so without this a test
 * would see the developer's local time where production sees GMT.
 */
const COMPUTE_SESSION_OPTIONS = '-c TimeZone=GMT';

/**
 * Run on every session before it goes back to the pool. Neon resets each connection it hands
 * back (ROLLBACK, RESET ALL, DEALLOCATE ALL, UNLISTEN *, pg_advisory_unlock_all(), DISCARD
 * TEMP) and, without pool opt-in, uses a fresh one per request; DISCARD ALL is all of that
 * plus the plan and sequence caches, so a reused session looks like a fresh one.
 */
const SESSION_RESET_SQL = 'DISCARD ALL';

/** SQLSTATEs Neon treats as the user's mistake at connect time: answered 400, not 500. */
const CONNECT_USER_ERRORS = new Set(['3D000']);

/** Authentication failures, which Neon's proxy answers itself with its own message. */
const AUTHENTICATION_ERRORS = new Set(['28P01', '28000']);

/** Postgres' CancelRequest code (protocol message without a type byte). */
const CANCEL_REQUEST_CODE = 80_877_102;

/** Who to log in as, and where: parsed from the `Neon-Connection-String` header. */
export interface SqlConnection {
  address: PostgresAddress;
  user: string;
  password: string;
  database: string;
}

/**
 * A connect-time failure to answer instead of connecting, for tests of what production does
 * when a compute is starting, full or gone. See `NeonProxy.simulateConnectFailure`.
 */
export type SimulatedConnectFailure =
  /** Postgres refused the login with `code` (53300, 57P03, 57P01...): Neon answers 500. */
  | { kind: 'postgres'; code: string; message: string }
  /** The compute could not be reached: 500 `Couldn't connect to compute node`. */
  | { kind: 'compute-unreachable' }
  /** The control plane failed to wake or find the compute: 500 `Control plane request failed`. */
  | { kind: 'control-plane' };

/** Test-only switches, off unless a test turns them on. */
export class SessionFaults {
  connectFailure: SimulatedConnectFailure | undefined;
  /** Cut the socket of the next session handed out, without any Postgres message. */
  dropNextSession = false;
  /**
   * Replies to cut after the request ran to the end (a batch committed): the client sees a
   * network error for a statement that took effect.
   */
  cutRepliesAfterRun = 0;
  /** `POST /sql` requests received, answered or not: what a Worker would count as subrequests. */
  httpRequests = 0;
}

type LiveClient = PoolClient & { processID?: number | null; secretKey?: number | null };

/** One small `pg` pool per distinct target and login, kept until the proxy closes. */
export class PostgresPools {
  readonly #pools = new Map<string, pg.Pool>();
  readonly #reportBackgroundError: (error: Error) => void;
  readonly faults = new SessionFaults();
  #closed = false;

  constructor(reportBackgroundError: (error: Error) => void) {
    this.#reportBackgroundError = reportBackgroundError;
  }

  /**
   * Lends a session to `work` and takes it back. A session that is not idle afterwards (a lone
   * `BEGIN`), that failed other than with a Postgres ERROR, or whose request was aborted is
   * destroyed; any other is reset before reuse, so no request sees another's session state.
   *
   * When `signal` aborts (the HTTP client went away), the running statement is cancelled like
   * Neon does, and `work` should stop before its next statement.
   */
  async withClient<T>(
    connection: SqlConnection,
    signal: AbortSignal,
    work: (client: PoolClient) => Promise<T>,
  ): Promise<T> {
    const client = (await this.#connect(connection)) as LiveClient;
    if (signal.aborted) {
      client.release();
      throw new SqlOverHttpError(
        400,
        'query was cancelled while stuck trying to connect to the database',
      );
    }
    const cancel = () => sendCancelRequest(connection.address, client);
    signal.addEventListener('abort', cancel, { once: true });
    // A socket lost mid-request fails the running query; pg may also emit it on the client.
    const ignoreClientError = () => {};
    client.on('error', ignoreClientError);
    let failure: unknown;
    try {
      const running = work(client);
      if (this.faults.dropNextSession) {
        this.faults.dropNextSession = false;
        dropSocket(client);
      }
      return await running;
    } catch (error) {
      failure = error;
      throw error;
    } finally {
      signal.removeEventListener('abort', cancel);
      const reusable =
        !signal.aborted &&
        client.getTransactionStatus() === 'I' &&
        (failure === undefined ||
          failure instanceof SqlOverHttpError ||
          (isPostgresError(failure) && failure.severity === 'ERROR'));
      // The listener stays until the session is back in the pool: a session killed during its
      // reset (pg_terminate_backend, a restart) reports the loss on the client too.
      this.#giveBack(client, reusable, ignoreClientError);
    }
  }

  async closeAll(): Promise<void> {
    this.#closed = true;
    const pools = [...this.#pools.values()];
    this.#pools.clear();
    await Promise.all(pools.map((pool) => pool.end()));
  }

  /** Resets in the background: the response does not wait for it, the next borrower does. */
  #giveBack(client: PoolClient, reusable: boolean, onClientError: () => void): void {
    if (!reusable) {
      // A destroyed session keeps the listener: its socket may still report the loss.
      client.release(true);
      return;
    }
    client.query(SESSION_RESET_SQL).then(
      () => {
        client.off('error', onClientError);
        client.release();
      },
      (error: unknown) => {
        client.release(true);
        this.#reportBackgroundError(error instanceof Error ? error : new Error(String(error)));
      },
    );
  }

  async #connect(connection: SqlConnection): Promise<PoolClient> {
    if (this.#closed) throw new SqlOverHttpError(503, 'the local Neon proxy is shutting down');
    const injected = this.faults.connectFailure;
    if (injected !== undefined) throw simulatedConnectError(injected);
    try {
      return await this.#pool(connection).connect();
    } catch (error) {
      throw connectError(error, connection);
    }
  }

  #pool(connection: SqlConnection): pg.Pool {
    const { address, user, password, database } = connection;
    const key = JSON.stringify([address.host, address.port, user, password, database]);
    let pool = this.#pools.get(key);
    if (pool === undefined) {
      pool = new pg.Pool({
        host: address.host,
        port: address.port,
        user,
        password,
        database,
        // Neon does not forward the driver's application_name to the compute.
        options: COMPUTE_SESSION_OPTIONS,
        ssl: false,
        max: POOL_MAX_CONNECTIONS,
        idleTimeoutMillis: POOL_IDLE_TIMEOUT_MS,
        connectionTimeoutMillis: POOL_CONNECT_TIMEOUT_MS,
        allowExitOnIdle: true,
      });
      // An idle session killed by Postgres is removed by the pool; nobody is waiting on it.
      pool.on('error', this.#reportBackgroundError);
      // A session killed (pg_terminate_backend, a restart) can report on the client at moments
      // no query or pool listener covers; unheard, that error would end the proxy's process.
      pool.on('connect', (client) => client.on('error', this.#reportBackgroundError));
      this.#pools.set(key, pool);
    }
    return pool;
  }
}

/**
 * Neon's replies to a failed connect. Its proxy checks the password itself, so a wrong
 * password or an unknown role is a 400 with its own message and no code. An unknown database
 * is the user's error (400 with the SQLSTATE); any other Postgres refusal (too many
 * connections, starting up, shutting down) is a 500 whose body names the SQLSTATE, and a
 * compute that does not answer at all is a 500 with no code.
 */
function connectError(error: unknown, connection: SqlConnection): SqlOverHttpError {
  if (isPostgresError(error)) {
    if (AUTHENTICATION_ERRORS.has(error.code)) {
      return new SqlOverHttpError(400, NEON_MESSAGES.passwordFailed(connection.user), {
        cause: error,
      });
    }
    const status = CONNECT_USER_ERRORS.has(error.code) ? 400 : 500;
    return new SqlOverHttpError(status, error.message, { cause: error, postgres: error });
  }
  return new SqlOverHttpError(500, NEON_MESSAGES.computeUnreachable, {
    cause: new Error(
      `${connection.address.host}:${connection.address.port}: ${errorMessage(error)}`,
    ),
  });
}

function simulatedConnectError(failure: SimulatedConnectFailure): SqlOverHttpError {
  switch (failure.kind) {
    case 'postgres':
      return new SqlOverHttpError(500, failure.message, {
        postgres: { code: failure.code, severity: 'FATAL' },
      });
    case 'compute-unreachable':
      return new SqlOverHttpError(500, NEON_MESSAGES.computeUnreachable);
    case 'control-plane':
      return new SqlOverHttpError(500, NEON_MESSAGES.controlPlane);
  }
}

/**
 * Asks Postgres to cancel whatever `client`'s backend is running, over a new connection, as
 * any Postgres client cancels. The session is destroyed afterwards, so a cancel that arrives
 * late cannot hit another request's statement.
 */
function sendCancelRequest(address: PostgresAddress, client: LiveClient): void {
  const { processID, secretKey } = client;
  if (typeof processID !== 'number' || typeof secretKey !== 'number') return;
  const message = Buffer.alloc(16);
  message.writeInt32BE(16, 0);
  message.writeInt32BE(CANCEL_REQUEST_CODE, 4);
  message.writeInt32BE(processID, 8);
  message.writeInt32BE(secretKey, 12);
  const socket = connect(address, () => socket.end(message));
  socket.on('error', () => {}); // the backend may already be gone; nothing to do then
}

/**
 * Cuts a session's socket without a word from Postgres: what a compute that dies (OOM kill,
 * host loss) looks like to the proxy. Reaches into pg's connection because there is no public
 * handle on the socket; test-only.
 */
function dropSocket(client: PoolClient): void {
  const internals = client as unknown as { connection?: { stream?: { destroy(): void } } };
  internals.connection?.stream?.destroy();
}
