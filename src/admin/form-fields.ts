/** The fields of a dashboard form, as Hono's `parseBody({ all: true })` gives them. */
export type FormBody = Record<string, string | File | (string | File)[]>;

/** A single field's text; a file or a repeated field is not one a dashboard form sends. */
export function formText(form: FormBody, name: string): string | undefined {
  const value = form[name];
  return typeof value === 'string' ? value : undefined;
}

/** Every value of a repeated text field (the ticked ids); files are ignored. */
export function formTexts(form: FormBody, name: string): string[] {
  const value = form[name];
  const values = Array.isArray(value) ? value : value === undefined ? [] : [value];
  return values.filter((each): each is string => typeof each === 'string');
}
