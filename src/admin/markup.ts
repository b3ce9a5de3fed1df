import type { html } from 'hono/html';

/**
 * Markup built with `hono/html`'s `html` tag, which escapes every interpolated string: payloads,
 * keys, kinds and error texts are attacker-controllable, so none may be inserted any other way.
 */
export type Markup = ReturnType<typeof html>;
