/**
 * The Node-free helper that points the Neon driver at the local stand-in: the settings it
 * writes, and the loopback guard on a `NEON_LOCAL_PROXY`-style `host:port`.
 */
import { readFileSync } from 'node:fs';
import type { neonConfig as NeonConfigClass } from '@neondatabase/serverless';
import { describe, expect, it } from 'vitest';
import { applyNeonLocalProxy } from '../../src/dev/neon-local-config.js';

/** A stand-in for the driver's global `neonConfig` class: a function carrying the settings. */
function blankGlobalConfig(): typeof NeonConfigClass {
  return Object.assign(() => {}, {}) as unknown as typeof NeonConfigClass;
}

describe('applyNeonLocalProxy', () => {
  it.each([
    ['127.0.0.1:54330', 'http://127.0.0.1:54330/sql', '127.0.0.1:54330/v2?address='],
    ['localhost:5000', 'http://localhost:5000/sql', 'localhost:5000/v2?address='],
    ['[::1]:6000', 'http://[::1]:6000/sql', '[::1]:6000/v2?address='],
  ])('points HTTP and WebSocket at loopback %s', (authority, sqlUrl, wsPrefix) => {
    const config = blankGlobalConfig();
    applyNeonLocalProxy(config, authority);
    expect(config.fetchEndpoint).toBeTypeOf('function');
    expect((config.fetchEndpoint as (host: string, port: string) => string)('ep-x', '443')).toBe(
      sqlUrl,
    );
    expect((config.wsProxy as (host: string, port: string) => string)('db.local', '5432')).toBe(
      `${wsPrefix}${encodeURIComponent('db.local:5432')}`,
    );
    const { useSecureWebSocket, forceDisablePgSSL, pipelineConnect, pipelineTLS } = config;
    expect({ useSecureWebSocket, forceDisablePgSSL, pipelineConnect, pipelineTLS }).toEqual({
      useSecureWebSocket: false,
      forceDisablePgSSL: true,
      pipelineConnect: false,
      pipelineTLS: false,
    });
    // No constructor given: a Worker keeps its own global WebSocket.
    expect(config.webSocketConstructor).toBeUndefined();
  });

  it('sets the WebSocket constructor when one is passed', () => {
    const config = blankGlobalConfig();
    class FakeWebSocket {}
    applyNeonLocalProxy(config, '127.0.0.1:1', FakeWebSocket as never);
    expect(config.webSocketConstructor).toBe(FakeWebSocket);
  });

  it.each([
    ['10.0.0.5:5432'],
    ['db.example.com:443'],
    ['127.0.0.1'],
    ['127.0.0.1:0'],
    ['127.0.0.1:70000'],
    ['http://127.0.0.1:54330'],
    ['127.0.0.1.evil.example:80'],
  ])('refuses %s with a ConfigurationError and changes nothing', (authority) => {
    const config = blankGlobalConfig();
    expect(() => applyNeonLocalProxy(config, authority)).toThrow(
      expect.objectContaining({ name: 'ConfigurationError', code: 'OUTBOX_CONFIGURATION' }),
    );
    expect(config.fetchEndpoint).toBeUndefined();
  });

  it('imports nothing a Worker cannot load', () => {
    const source = readFileSync(
      new URL('../../src/dev/neon-local-config.ts', import.meta.url),
      'utf8',
    );
    const imports = [...source.matchAll(/^import .* from '([^']+)';$/gm)].map((match) => match[1]);
    expect(imports.filter((name) => name?.startsWith('node:') || name === 'ws')).toEqual([]);
  });
});
