/**
 * Reads the PNG screenshots Chromium takes (8-bit RGB or RGBA, not interlaced) into pixels, so a
 * test can check what a screenshot shows: its size, and how much of it is a given colour.
 */
import { inflateSync } from 'node:zlib';

export interface Pixels {
  width: number;
  height: number;
  /** RGB or RGBA bytes, row after row. */
  data: Uint8Array;
  channels: 3 | 4;
}

const SIGNATURE = [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a];

export function decodePng(png: Uint8Array): Pixels {
  if (!SIGNATURE.every((byte, index) => png[index] === byte)) throw new Error('not a PNG');
  const view = new DataView(png.buffer, png.byteOffset, png.byteLength);
  let offset = 8;
  let width = 0;
  let height = 0;
  let channels: 3 | 4 = 4;
  const compressed: Uint8Array[] = [];
  while (offset < png.length) {
    const length = view.getUint32(offset);
    const type = String.fromCharCode(...png.subarray(offset + 4, offset + 8));
    const body = png.subarray(offset + 8, offset + 8 + length);
    if (type === 'IHDR') {
      width = view.getUint32(offset + 8);
      height = view.getUint32(offset + 12);
      const [depth, colour, , , interlace] = body.subarray(8, 13);
      if (depth !== 8 || (colour !== 2 && colour !== 6) || interlace !== 0) {
        throw new Error(`unsupported PNG: depth ${depth}, colour type ${colour}`);
      }
      channels = colour === 2 ? 3 : 4;
    } else if (type === 'IDAT') {
      compressed.push(body);
    } else if (type === 'IEND') {
      break;
    }
    offset += 12 + length;
  }
  const raw = inflateSync(Buffer.concat(compressed));
  return { width, height, channels, data: unfilter(raw, width, height, channels) };
}

/** Undoes each row's filter (PNG spec, section 9). */
function unfilter(raw: Uint8Array, width: number, height: number, channels: number): Uint8Array {
  const stride = width * channels;
  const out = new Uint8Array(stride * height);
  for (let y = 0; y < height; y++) {
    const filter = raw[y * (stride + 1)]!;
    const row = raw.subarray(y * (stride + 1) + 1, (y + 1) * (stride + 1));
    const at = y * stride;
    for (let x = 0; x < stride; x++) {
      const left = x >= channels ? out[at + x - channels]! : 0;
      const up = y > 0 ? out[at - stride + x]! : 0;
      const upLeft = y > 0 && x >= channels ? out[at - stride + x - channels]! : 0;
      let predicted = 0;
      if (filter === 1) predicted = left;
      else if (filter === 2) predicted = up;
      else if (filter === 3) predicted = (left + up) >> 1;
      else if (filter === 4) predicted = paeth(left, up, upLeft);
      out[at + x] = (row[x]! + predicted) & 0xff;
    }
  }
  return out;
}

function paeth(a: number, b: number, c: number): number {
  const p = a + b - c;
  const pa = Math.abs(p - a);
  const pb = Math.abs(p - b);
  const pc = Math.abs(p - c);
  if (pa <= pb && pa <= pc) return a;
  return pb <= pc ? b : c;
}

/** The share of pixels (0 to 1) within `tolerance` of `#rrggbb` in every channel. */
export function colourShare(pixels: Pixels, hex: string, tolerance = 2): number {
  const wanted = [1, 3, 5].map((start) => Number.parseInt(hex.slice(start, start + 2), 16));
  let matching = 0;
  const total = pixels.width * pixels.height;
  for (let index = 0; index < total; index++) {
    const at = index * pixels.channels;
    if (
      wanted.every((value, channel) => Math.abs(pixels.data[at + channel]! - value) <= tolerance)
    ) {
      matching += 1;
    }
  }
  return total === 0 ? 0 : matching / total;
}
