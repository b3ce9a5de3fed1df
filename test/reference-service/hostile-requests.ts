/**
 * Arbitraries for the reference service's property suite: hostile text, bodies, headers and
 * paths, and well-formed writes that carry hostile text where free text is allowed.
 */
import fc from 'fast-check';

/** Strings that have broken parsers, SQL builders and templates, and any valid Unicode. */
export const metacharacters = fc.constantFrom(
  "'",
  '"',
  '\\',
  "'; DROP TABLE app.users; --",
  '<script>alert(1)</script>',
  '&amp;&lt;',
  // biome-ignore lint/suspicious/noTemplateCurlyInString: a template placeholder is the hostile text
  '${process.env}',
  '{{schema}}',
  '%s%n%00',
  '\\u0000',
  '$1',
  'Robert"); --',
  '🎉👩‍👩‍👧',
  '\u202e\u2028\u2029',
  'Ω≈ç√∫',
);
export const hostileText = fc.oneof(
  fc.string({ unit: 'binary', maxLength: 40 }),
  metacharacters,
  fc.tuple(metacharacters, fc.string({ unit: 'binary', maxLength: 10 })).map(([a, b]) => a + b),
  fc.string({ maxLength: 8 }).map((s) => `${s}\u0000`),
  fc.constantFrom('\ud800', 'x\udfff', '\ud83d'),
);
const anyJson = fc.jsonValue({ maxDepth: 3 });
const hostileValue = fc.oneof(hostileText, anyJson, fc.uuid(), fc.integer(), fc.double());

export const hostileBody = fc.oneof(
  anyJson.map((value) => JSON.stringify(value)),
  hostileText,
  fc.constantFrom('', '{', '{"email": ', 'null', '[]', '{"__proto__": {"x": 1}}', '\u0000'),
  fc
    .record(
      {
        email: fc.oneof(fc.emailAddress(), hostileValue),
        name: hostileValue,
        userId: fc.oneof(fc.uuid(), hostileValue),
        items: fc.oneof(
          fc.array(
            fc.record(
              { sku: hostileValue, qty: hostileValue, unitPriceCents: hostileValue },
              { requiredKeys: [] },
            ),
            { maxLength: 3 },
          ),
          hostileValue,
        ),
        url: fc.oneof(fc.webUrl(), hostileValue),
        events: fc.oneof(
          fc.array(fc.constantFrom('user.created', 'order.created', 'x'), { maxLength: 3 }),
          hostileValue,
        ),
      },
      { requiredKeys: [] },
    )
    .map((value) => JSON.stringify(value)),
);

/** Header values a client can actually send: Latin-1 without NUL, CR or LF. */
export const headerText = fc.string({
  unit: fc.integer({ min: 0x20, max: 0xff }).map((code) => String.fromCharCode(code)),
  maxLength: 60,
});
/** Headers as a client might send them, the operator token among the guesses. */
export function hostileHeaders(operatorToken: string) {
  return fc.record(
    {
      'content-type': fc.oneof(
        fc.constantFrom('application/json', 'application/json; charset=utf-8', 'text/plain'),
        headerText,
      ),
      authorization: fc.oneof(
        fc.constantFrom(
          `Bearer ${operatorToken}`,
          'Bearer wrong',
          `bearer  ${operatorToken}`,
          'Basic x',
        ),
        headerText,
      ),
      'idempotency-key': fc.oneof(fc.uuid(), headerText),
      cookie: headerText,
    },
    { requiredKeys: [] },
  );
}

/** A user the generated orders can name, so well-formed orders reach the write too. */
export const KNOWN_USER_ID = '00000000-0000-4000-8000-000000000001';

/** Requests that pass validation, carrying hostile strings wherever free text is allowed. */
export const wellFormedRequest = fc.oneof(
  fc.record({
    path: fc.constant('/signups'),
    body: fc.record({ email: fc.emailAddress(), name: hostileText }),
  }),
  fc.record({
    path: fc.constant('/orders'),
    body: fc.record({
      userId: fc.constant(KNOWN_USER_ID),
      items: fc.array(
        fc.record({
          sku: hostileText,
          qty: fc.integer({ min: 1, max: 1000 }),
          unitPriceCents: fc.integer({ min: 0, max: 100_000_000 }),
        }),
        { minLength: 1, maxLength: 4 },
      ),
    }),
  }),
  fc.record({
    path: fc.constant('/webhook-endpoints'),
    body: fc.record({
      url: fc.oneof(fc.webUrl(), hostileText),
      events: fc.subarray(['user.created', 'order.created'], { minLength: 1 }),
    }),
  }),
);

const DOMAIN_PATHS = ['/signups', '/orders', '/webhook-endpoints'];
/** Every field a caller sends, and the one header with rules of its own. */
export const CALLER_FIELDS = [
  'email',
  'name',
  'userId',
  'items',
  'url',
  'events',
  'Idempotency-Key',
];
/** A few keys reused across runs, so replays and key-with-another-body refusals happen too. */
export const RETRY_KEYS = ['retry-a', 'retry-b', 'retry-c'];
export const hostilePath = fc.oneof(
  fc.constantFrom(...DOMAIN_PATHS, '/', '/nope', '/signups/', '/%00', '/signups/..%2Fadmin', '//x'),
  fc.string({ unit: 'binary', maxLength: 20 }).map((segment) => `/${encodeURIComponent(segment)}`),
);
export const method = fc.constantFrom('GET', 'POST', 'POST', 'POST', 'PUT', 'DELETE', 'PATCH');
