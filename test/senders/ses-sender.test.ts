/**
 * The SES sender against real HTTP: the aws-ses-v2-local emulator for end-to-end delivery, and
 * small loopback servers speaking the SES query protocol (real SES XML bodies) to capture the
 * raw MIME and to play back SES's errors. The real @aws-sdk/client-ses makes every request.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  isPermanentDeliveryError,
  isRetryableDeliveryError,
  PermanentDeliveryError,
  type RetryableDeliveryError,
} from '../../src/core/errors.js';
import type { JsonValue } from '../../src/core/message.js';
import type { Sender } from '../../src/core/sender.js';
import { type LocalSes, startLocalSes } from '../../src/dev/local-ses.js';
import {
  SES_BLOCKED_RETRY_AFTER_MS,
  SES_THROTTLED_RETRY_AFTER_MS,
  type SesSenderConfig,
  sesConfigFromEnv,
  sesSender,
} from '../../src/senders/ses/index.js';
import {
  type LoopbackServer,
  type ReceivedRequest,
  startLoopbackServer,
  unusedPort,
} from '../support/loopback-http.js';
import { waitFor } from '../support/wait-for.js';
import { openSignal, outboundMessage } from './outbound-message.js';

const SES_NAMESPACE = 'http://ses.amazonaws.com/doc/2010-12-01/';

function sesConfig(endpoint: string): SesSenderConfig {
  return {
    region: 'us-east-1',
    credentials: { accessKeyId: 'AKIDLOCALTEST', secretAccessKey: 'local-test-secret' },
    endpoint,
    defaultFrom: 'Acme <no-reply@acme.example>',
  };
}

/** SES's success body for SendRawEmail. */
function sendRawEmailResponse(messageId: string): string {
  return `<SendRawEmailResponse xmlns="${SES_NAMESPACE}"><SendRawEmailResult><MessageId>${messageId}</MessageId></SendRawEmailResult><ResponseMetadata><RequestId>d5964849-c866-11e0-9beb-01a62d68c57f</RequestId></ResponseMetadata></SendRawEmailResponse>`;
}

/** SES's error body, as the query protocol sends it. */
function sesErrorResponse(type: 'Sender' | 'Receiver', code: string, message: string): string {
  return `<ErrorResponse xmlns="${SES_NAMESPACE}"><Error><Type>${type}</Type><Code>${code}</Code><Message>${message}</Message></Error><RequestId>3b1a7a3e-0d1f-4c8e-9e1e-7f1f1f1f1f1f</RequestId></ErrorResponse>`;
}

/** The form fields of an SES query-protocol request. */
function formOf(request: ReceivedRequest): URLSearchParams {
  return new URLSearchParams(request.body);
}

async function rejectionOf(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  throw new Error('expected the send to fail, but it succeeded');
}

describe('sesSender with the aws-ses-v2-local emulator', () => {
  let emulator: LocalSes;
  let emulatorUrl: string;

  beforeAll(async () => {
    emulator = await startLocalSes();
    emulatorUrl = emulator.url;
  });

  afterAll(async () => {
    await emulator.close();
  });

  it('delivers an email whose recipients, subject and bodies arrive intact', async () => {
    const subject = `Grüße aus Köln ✓ ${crypto.randomUUID()}`;
    const text = 'Hallo Zoë,\n\nyour order ships today. = not an escape\n\n— Acme';
    const html = '<p>Hallo Zoë,</p><p>your order <b>ships</b> today.</p>';
    const send = sesSender(sesConfig(emulatorUrl));
    const receipt = await send(
      outboundMessage('email', {
        to: ['Zoë Ünïcödé <zoe@example.com>', 'ada@example.com'],
        cc: 'Charles <charles@example.com>',
        replyTo: 'support@acme.example',
        subject,
        text,
        html,
      }),
      openSignal(),
    );
    // Attempt history's part: SES's status, and the endpoint it went to.
    expect(receipt).toEqual({ status: 200, destination: emulatorUrl });

    const store = (await (await fetch(`${emulatorUrl}/store`)).json()) as {
      emails: {
        from: string;
        subject: string;
        destination: { to: string[]; cc: string[] };
        replyTo: string[];
        body: { text?: string; html?: string };
      }[];
    };
    const email = store.emails.find((candidate) => candidate.subject === subject);
    expect(email).toBeDefined();
    // The emulator re-formats addresses with mailparser (it quotes display names).
    expect(email!.from).toMatch(/^"?Acme"? <no-reply@acme\.example>$/);
    expect(email!.destination.to.join(', ')).toMatch(/"?Zoë Ünïcödé"? <zoe@example\.com>/);
    expect(email!.destination.to.join(', ')).toContain('ada@example.com');
    expect(email!.destination.cc.join(', ')).toContain('charles@example.com');
    expect(email!.replyTo.join(', ')).toContain('support@acme.example');
    expect(email!.body.text?.replace(/\r\n/g, '\n').trim()).toBe(text);
    expect(email!.body.html?.trim()).toBe(html);
  });
});

describe('sesSender on the wire', () => {
  let ses: LoopbackServer;
  let nextResponse: { status: number; body: string } | 'hang';

  beforeAll(async () => {
    ses = await startLoopbackServer((request, response) => {
      if (formOf(request).get('Action') !== 'SendRawEmail') {
        response.writeHead(400).end();
        return;
      }
      if (nextResponse === 'hang') return;
      response.writeHead(nextResponse.status, { 'content-type': 'text/xml' });
      response.end(nextResponse.body);
    });
  });

  afterAll(() => ses.close());

  async function sendCaptured(payload: JsonValue, config: Partial<SesSenderConfig> = {}) {
    nextResponse = { status: 200, body: sendRawEmailResponse('0100018c-test') };
    const before = ses.requests.length;
    const message = outboundMessage('email', payload);
    await sesSender({ ...sesConfig(ses.url), ...config })(message, openSignal());
    expect(ses.requests).toHaveLength(before + 1);
    const form = formOf(ses.requests.at(-1)!);
    const raw = Buffer.from(form.get('RawMessage.Data')!, 'base64').toString('latin1');
    return { message, form, raw };
  }

  it('carries the message key in the X-Outbox-Message-Key header and the outbox-message-key tag', async () => {
    const { message, form, raw } = await sendCaptured({
      to: 'ada@example.com',
      subject: 'Key check',
      text: 'x',
      tags: { campaign: 'spring' },
    });
    const head = raw.slice(0, raw.indexOf('\r\n\r\n'));
    expect(head).toMatch(new RegExp(`^X-Outbox-Message-Key: ${message.key}$`, 'm'));
    expect(head).toMatch(new RegExp(`^Message-ID: <${message.key}@acme\\.example>$`, 'm'));
    expect(head).toMatch(/^Date: \w{3}, \d{2} \w{3} \d{4} \d{2}:\d{2}:\d{2} \+0000$/m);
    const tags = new Map<string, string>();
    for (let i = 1; form.has(`Tags.member.${i}.Name`); i++) {
      tags.set(form.get(`Tags.member.${i}.Name`)!, form.get(`Tags.member.${i}.Value`)!);
    }
    expect(tags).toEqual(
      new Map([
        ['outbox-message-key', message.key],
        ['campaign', 'spring'],
      ]),
    );
  });

  it('sends a CRLF, 7-bit multipart/alternative message, delivering to Bcc without a Bcc header', async () => {
    const { form, raw } = await sendCaptured({
      to: 'ada@example.com',
      cc: 'charles@example.com',
      bcc: ['audit@example.com', 'ADA@example.com'],
      subject: 'Ünïcödé',
      text: 'plain',
      html: '<p>rich</p>',
      configurationSet: 'transactional',
    });
    expect(raw).not.toMatch(/(?<!\r)\n/);
    expect(raw).toMatch(/^[\x20-\x7e\r\n]*$/);
    expect(raw).toMatch(/^Content-Type: multipart\/alternative;/m);
    expect(raw).toMatch(/^Subject: =\?UTF-8\?B\?/m);
    expect(raw).not.toMatch(/^Bcc:/im);
    expect(raw).not.toContain('audit@example.com');
    const destinations = [...form.entries()]
      .filter(([name]) => name.startsWith('Destinations.member.'))
      .map(([, value]) => value);
    // The same address twice is one destination.
    expect(destinations).toEqual(['ada@example.com', 'charles@example.com', 'audit@example.com']);
    expect(form.get('ConfigurationSetName')).toBe('transactional');
  });

  it('uses the configured default from and configuration set when the payload names none', async () => {
    const { form, raw } = await sendCaptured(
      { to: 'ada@example.com', subject: 'Defaults', text: 'x' },
      { defaultFrom: 'billing@acme.example', defaultConfigurationSet: 'default-set' },
    );
    expect(raw).toMatch(/^From: <billing@acme\.example>$/m);
    expect(form.get('ConfigurationSetName')).toBe('default-set');
  });

  it('fails permanently, without calling SES, for a payload that does not validate', async () => {
    const before = ses.requests.length;
    const error = await rejectionOf(
      sesSender(sesConfig(ses.url))(
        outboundMessage('email', { to: 'ada@example.com', subject: 'x\r\nBcc: a@b.co', text: 'x' }),
        openSignal(),
      ),
    );
    expect(isPermanentDeliveryError(error)).toBe(true);
    expect((error as Error).message).toContain('payload.subject');
    expect(ses.requests).toHaveLength(before);
  });

  it('fails permanently when neither the payload nor the config gives a from', async () => {
    const { defaultFrom: _omitted, ...config } = sesConfig(ses.url);
    const error = await rejectionOf(
      sesSender(config)(
        outboundMessage('email', { to: 'ada@example.com', subject: 'x', text: 'x' }),
        openSignal(),
      ),
    );
    expect(isPermanentDeliveryError(error)).toBe(true);
  });

  it('counts an email as delivered when SES answers 2xx with a reply the SDK cannot read', async () => {
    nextResponse = { status: 200, body: '<not-xml' };
    const before = ses.requests.length;
    await sesSender(sesConfig(ses.url))(
      outboundMessage('email', { to: 'ada@example.com', subject: 'Accepted', text: 'x' }),
      openSignal(),
    );
    expect(ses.requests).toHaveLength(before + 1);
  });

  describe('maps SES errors to outcomes', () => {
    async function failureFor(status: number, body: string) {
      nextResponse = { status, body };
      return rejectionOf(
        sesSender(sesConfig(ses.url))(
          outboundMessage('email', { to: 'ada@example.com', subject: 'Errors', text: 'x' }),
          openSignal(),
        ),
      );
    }

    it('retries throttling ("Maximum sending rate exceeded") after the long throttle backoff', async () => {
      const error = await failureFor(
        400,
        sesErrorResponse('Sender', 'Throttling', 'Maximum sending rate exceeded.'),
      );
      expect(isRetryableDeliveryError(error)).toBe(true);
      expect((error as RetryableDeliveryError).retryAfterMs).toBe(SES_THROTTLED_RETRY_AFTER_MS);
      expect((error as Error).message).toContain('Throttling (HTTP 400)');
      expect(error).toMatchObject({
        providerCode: 'Throttling',
        status: 400,
        destination: ses.url,
      });
    });

    it.each(['Daily message quota exceeded.', 'Daily sending quota exceeded.'])(
      'retries a spent daily quota ("%s") after an hour, saying what an operator can do',
      async (text) => {
        const error = await failureFor(400, sesErrorResponse('Sender', 'Throttling', text));
        expect(isRetryableDeliveryError(error)).toBe(true);
        expect((error as RetryableDeliveryError).retryAfterMs).toBe(SES_BLOCKED_RETRY_AFTER_MS);
        expect((error as Error).message).toContain('quota');
      },
    );

    it.each([
      ['MessageRejected', 'Email address is not verified.'],
      ['MailFromDomainNotVerifiedException', 'MAIL FROM domain not verified.'],
      ['ConfigurationSetDoesNotExist', 'Configuration set transactional does not exist.'],
      ['InvalidParameterValue', 'Illegal address'],
    ])('dead-letters %s (HTTP 400)', async (code, text) => {
      const error = await failureFor(400, sesErrorResponse('Sender', code, text));
      expect(isPermanentDeliveryError(error)).toBe(true);
      expect(error).toBeInstanceOf(PermanentDeliveryError);
      expect((error as Error).message).toContain(text);
    });

    it('dead-letters an unlisted 4xx', async () => {
      const error = await failureFor(400, sesErrorResponse('Sender', 'SomethingNew', 'nope'));
      expect(isPermanentDeliveryError(error)).toBe(true);
    });

    it.each([
      ['AccountSendingPausedException', 'Account sending paused.'],
      ['ConfigurationSetSendingPausedException', 'Sending is paused for this configuration set.'],
    ])('retries %s after an hour, saying an operator must act', async (code, text) => {
      const error = await failureFor(400, sesErrorResponse('Sender', code, text));
      expect(isRetryableDeliveryError(error)).toBe(true);
      expect((error as RetryableDeliveryError).retryAfterMs).toBe(SES_BLOCKED_RETRY_AFTER_MS);
      expect((error as Error).message).toContain('an operator must act');
    });

    it('retries refused credentials after an hour instead of dead-lettering every message', async () => {
      const error = await failureFor(
        403,
        sesErrorResponse(
          'Sender',
          'SignatureDoesNotMatch',
          'The request signature does not match.',
        ),
      );
      expect(isRetryableDeliveryError(error)).toBe(true);
      expect((error as RetryableDeliveryError).retryAfterMs).toBe(SES_BLOCKED_RETRY_AFTER_MS);
    });

    it('retries a 503 with the drain backoff (no retry-after)', async () => {
      const error = await failureFor(
        503,
        sesErrorResponse('Receiver', 'ServiceUnavailable', 'Service is unavailable.'),
      );
      expect(isRetryableDeliveryError(error)).toBe(true);
      expect((error as RetryableDeliveryError).retryAfterMs).toBeUndefined();
      expect((error as Error).message).toContain('HTTP 503');
    });

    it('retries a 5xx whose body is not SES XML (a proxy error page)', async () => {
      const error = await failureFor(502, '<html><body>Bad Gateway</body></html>');
      expect(isRetryableDeliveryError(error)).toBe(true);
      expect((error as Error).message).toContain('HTTP 502');
    });
  });

  it('retries when SES cannot be reached', async () => {
    const port = await unusedPort();
    const error = await rejectionOf(
      sesSender(sesConfig(`http://127.0.0.1:${port}`))(
        outboundMessage('email', { to: 'ada@example.com', subject: 'x', text: 'x' }),
        openSignal(),
      ),
    );
    expect(isRetryableDeliveryError(error)).toBe(true);
    expect((error as Error).message).toContain('ECONNREFUSED');
  });

  it('gives up on a hanging SES call when the signal fires, as a retryable failure', async () => {
    nextResponse = 'hang';
    const before = ses.requests.length;
    const controller = new AbortController();
    const sending = rejectionOf(
      sesSender(sesConfig(ses.url))(
        outboundMessage('email', { to: 'ada@example.com', subject: 'x', text: 'x' }),
        controller.signal,
      ),
    );
    await waitFor('the request to reach SES', () => ses.requests.length > before);
    controller.abort(new Error('send timeout'));
    const error = await sending;
    expect(isRetryableDeliveryError(error)).toBe(true);
    expect((error as Error).message).toContain('time was up');
  });
});

describe('sesConfigFromEnv', () => {
  it('reads region, credentials, endpoint and defaults from an env object', () => {
    expect(
      sesConfigFromEnv({
        AWS_REGION: 'eu-west-1',
        AWS_ACCESS_KEY_ID: 'AKID',
        AWS_SECRET_ACCESS_KEY: 'secret',
        AWS_SESSION_TOKEN: 'token',
        AWS_ENDPOINT_URL_SES: 'http://127.0.0.1:8005',
        AWS_ENDPOINT_URL: 'http://ignored.example',
        OUTBOX_EMAIL_FROM: 'Acme <no-reply@acme.example>',
        OUTBOX_SES_CONFIGURATION_SET: 'transactional',
        SOME_BINDING: { notAString: true },
      }),
    ).toEqual({
      region: 'eu-west-1',
      credentials: { accessKeyId: 'AKID', secretAccessKey: 'secret', sessionToken: 'token' },
      endpoint: 'http://127.0.0.1:8005',
      defaultFrom: 'Acme <no-reply@acme.example>',
      defaultConfigurationSet: 'transactional',
    });
  });

  it('names every missing variable', () => {
    expect(() => sesConfigFromEnv({ AWS_ACCESS_KEY_ID: 'AKID' })).toThrow(
      /OUTBOX_SES_REGION \(or AWS_REGION\), AWS_SECRET_ACCESS_KEY/,
    );
  });

  it('calls SES in OUTBOX_SES_REGION, not the runtime region Lambda reserves AWS_REGION for', () => {
    const config = sesConfigFromEnv({
      OUTBOX_SES_REGION: 'eu-west-1',
      AWS_REGION: 'us-east-2',
      AWS_ACCESS_KEY_ID: 'AKID',
      AWS_SECRET_ACCESS_KEY: 'secret',
    });
    expect(config.region).toBe('eu-west-1');
  });

  it('refuses a region that is not one, naming the variable it came from', () => {
    const credentials = { AWS_ACCESS_KEY_ID: 'AKID', AWS_SECRET_ACCESS_KEY: 'secret' };
    expect(() => sesConfigFromEnv({ ...credentials, OUTBOX_SES_REGION: 'Ireland' })).toThrow(
      /OUTBOX_SES_REGION must be an AWS region such as us-east-1, got "Ireland"/,
    );
    expect(() => sesConfigFromEnv({ ...credentials, AWS_REGION: 'us-east-1 ' })).not.toThrow();
  });

  it('refuses a config that cannot work, at construction', () => {
    const base = sesConfig('http://127.0.0.1:1');
    const attempts: (() => Sender)[] = [
      () => sesSender({ ...base, region: '' }),
      () => sesSender({ ...base, credentials: { accessKeyId: '', secretAccessKey: 'x' } }),
      () => sesSender({ ...base, defaultFrom: 'not an address' }),
      () => sesSender({ ...base, endpoint: 'not a url' }),
    ];
    for (const attempt of attempts) expect(attempt).toThrow(/SES sender/);
  });
});
