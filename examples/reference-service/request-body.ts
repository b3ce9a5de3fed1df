import { zValidator } from '@hono/zod-validator';
import { errorResponse, type Issue } from 'outbox-relay/admin';
import { storableTextProblem } from 'outbox-relay/sql';
import { webhookUrlProblem } from 'outbox-relay/webhook';
import { z } from 'zod';

/** Validation failures become 400 `{error, issues: [{path, message}]}`. */
export function validJson<T extends z.ZodType>(schema: T) {
  return zValidator('json', schema, (result, c) => {
    if (!result.success) {
      const issues: Issue[] = result.error.issues.map((issue) => ({
        path: issue.path.filter((part): part is string | number => typeof part !== 'symbol'),
        message: issue.message,
      }));
      return errorResponse(c, 400, 'invalid request body', issues);
    }
  });
}

/**
 * Text PostgreSQL can store (no NUL, no lone surrogate: the library's `checkStorableText` rule),
 * checked at the edge so it is a 400 naming the field rather than a driver error at INSERT.
 */
export function storableString() {
  return z.string().superRefine((text, ctx) => {
    const problem = storableTextProblem(text);
    if (problem !== undefined) ctx.addIssue({ code: 'custom', message: problem });
  });
}

/**
 * A display name: storable and free of C0 controls and DEL, because it goes into an email's
 * Subject header, where CR and LF would inject headers (the email validator refuses them too).
 */
export function displayName(maxLength: number) {
  return (
    storableString()
      .trim()
      .min(1)
      .max(maxLength)
      // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what it refuses
      .regex(/^[^\u0000-\u001f\u007f]*$/, 'must not contain control characters such as CR or LF')
  );
}

/**
 * A webhook URL under THE rule the webhook payload validator applies at every enqueue
 * (`webhookUrlProblem` accepts exactly what `checkWebhookUrl` accepts): nothing registered can
 * make a later enqueue refuse the message.
 */
export function webhookUrl() {
  return z.string().superRefine((url, ctx) => {
    const problem = webhookUrlProblem(url);
    if (problem !== undefined) ctx.addIssue({ code: 'custom', message: problem });
  });
}
