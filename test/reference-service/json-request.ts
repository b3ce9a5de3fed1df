/** A JSON POST for `app.request(path, post(body))`; a string body goes as it is (malformed JSON). */
export function post(body: unknown, headers: Record<string, string> = {}): RequestInit {
  return {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  };
}
