// End-to-end encryption as Parley does it (docs/security.md, "End-to-end encryption"): SFrame (RFC 9605) with the
// room's keys derived from its secret exactly as ParleySecurity derives them, on WebCrypto. The page seals chat and
// shows the safety code with it; its encoded-frame worker (sframe-worker.js) seals and opens media with it.
//
//   master    = PBKDF2-HMAC-SHA256(secret, "parley room key v1" 0x00 room, 210,000 rounds)      32 bytes
//   base_key  = HKDF-Expand-SHA256(master, "parley sender key v1" || KID, 32)     one HMAC: 32 bytes is one block
//   KID       = sender id (46 random bits) << 2 | stream (audio 0, video 1, chat 2)
//   key, salt = RFC 9605 §4.4.2 (HKDF with SHA-256 for AES-128-GCM, SHA-512 for AES-256-GCM)
//
// Media is sealed a whole encoded frame at a time (what an RTCRtpScriptTransform sees); see `sealVideoFrame`.

export const minimumSecretCharacters = 8;
export const pbkdf2Rounds = 210000;

/** The suites Parley offers, by the name the relay compares. */
export const suites = {
  "AES-128-GCM": { name: "AES-128-GCM", id: 4, keyBytes: 16, hash: "SHA-256" },
  "AES-256-GCM": { name: "AES-256-GCM", id: 5, keyBytes: 32, hash: "SHA-512" },
};

export const streams = { audio: 0n, video: 1n, chat: 2n };
const chatMetadata = new TextEncoder().encode("parley chat v1");
const utf8 = (text) => new TextEncoder().encode(text);

export function concat(...parts) {
  const out = new Uint8Array(parts.reduce((sum, part) => sum + part.length, 0));
  let at = 0;
  for (const part of parts) { out.set(part, at); at += part.length; }
  return out;
}

function bigEndian(value, bytes) {
  const out = new Uint8Array(bytes);
  let rest = BigInt(value);
  for (let index = bytes - 1; index >= 0; index--) { out[index] = Number(rest & 0xffn); rest >>= 8n; }
  return out;
}

/** Throws what is wrong with a room secret, with the terminal's words (`CallEncryptionError`). */
export function checkSecret(secret) {
  const characters = [...new Intl.Segmenter().segment(secret)].length;
  if (characters === 0) {
    throw new Error(`The room secret is empty; give one of at least ${minimumSecretCharacters} characters that every member knows.`);
  }
  if (characters < minimumSecretCharacters) {
    throw new Error(`The room secret has ${characters} characters; it needs at least ${minimumSecretCharacters} (a phrase is easiest to share by voice).`);
  }
}

/** The room's master key (a tenth of a second or so: the secret is stretched). */
export async function roomMaster(secret, room) {
  checkSecret(secret);
  const key = await crypto.subtle.importKey("raw", utf8(secret), "PBKDF2", false, ["deriveBits"]);
  const salt = concat(utf8("parley room key v1"), new Uint8Array([0]), utf8(room));
  const bits = await crypto.subtle.deriveBits({ name: "PBKDF2", hash: "SHA-256", salt, iterations: pbkdf2Rounds }, key, 256);
  return new Uint8Array(bits);
}

/** HKDF-Expand-SHA256 of at most 32 bytes: the first block, HMAC(prk, info || 0x01). */
async function expand(prk, info, bytes) {
  const key = await crypto.subtle.importKey("raw", prk, { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
  return new Uint8Array(await crypto.subtle.sign("HMAC", key, concat(info, new Uint8Array([1])))).slice(0, bytes);
}

/** Eight digits ("1234 5678"), equal for everyone with the same secret, room and suite. */
export async function safetyCode(master, suite) {
  const bytes = await expand(master, concat(utf8("parley safety code v1"), bigEndian(suite.id, 2)), 4);
  const code = (((bytes[0] << 24) >>> 0) + (bytes[1] << 16) + (bytes[2] << 8) + bytes[3]) % 100000000;
  const digits = String(code).padStart(8, "0");
  return `${digits.slice(0, 4)} ${digits.slice(4)}`;
}

/** The SFrame key and salt of key id `kid` (a BigInt). */
export async function sframeKey(master, kid, suite) {
  return keyFromBase(await expand(master, concat(utf8("parley sender key v1"), bigEndian(kid, 8)), 32), kid, suite);
}

/** RFC 9605 §4.4.2: key and salt from a base key. */
export async function keyFromBase(base, kid, suite) {
  const context = concat(bigEndian(kid, 8), bigEndian(suite.id, 2));
  const input = await crypto.subtle.importKey("raw", base, "HKDF", false, ["deriveBits"]);
  const derive = async (label, bytes) => new Uint8Array(await crypto.subtle.deriveBits(
    { name: "HKDF", hash: suite.hash, salt: new Uint8Array(0), info: concat(utf8(label), context) }, input, bytes * 8));
  const key = await derive("SFrame 1.0 Secret key ", suite.keyBytes);
  const salt = await derive("SFrame 1.0 Secret salt ", 12);
  const aes = await crypto.subtle.importKey("raw", key, "AES-GCM", false, ["encrypt", "decrypt"]);
  return { kid, aes, salt, key };
}

// ---------------------------------------------------------------------------------------------------- the header

function field(value) {
  if (value < 8n) return { bits: Number(value), bytes: [] };
  const bytes = [];
  for (let rest = value; rest > 0n; rest >>= 8n) bytes.unshift(Number(rest & 0xffn));
  return { bits: 0x8 | (bytes.length - 1), bytes };
}

/** RFC 9605 §4.3: the config byte, then the key id and the counter in as few bytes as they need. */
export function encodeHeader(kid, counter) {
  const k = field(kid);
  const c = field(counter);
  return new Uint8Array([(k.bits << 4) | c.bits, ...k.bytes, ...c.bytes]);
}

/** The key id, counter and length of the header at the front of `bytes`; throws when it is cut short. */
export function parseHeader(bytes) {
  if (bytes.length < 1) throw new Error("truncated SFrame header: needed 1 byte, had 0");
  const config = bytes[0];
  const kidLength = config & 0x80 ? ((config >> 4) & 0x7) + 1 : 0;
  const ctrLength = config & 0x08 ? (config & 0x7) + 1 : 0;
  const length = 1 + kidLength + ctrLength;
  if (bytes.length < length) throw new Error(`truncated SFrame header: needed ${length} bytes, had ${bytes.length}`);
  const read = (from, count) => {
    let value = 0n;
    for (let index = from; index < from + count; index++) value = (value << 8n) | BigInt(bytes[index]);
    return value;
  };
  const kid = kidLength ? read(1, kidLength) : BigInt((config >> 4) & 0x7);
  const counter = ctrLength ? read(1 + kidLength, ctrLength) : BigInt(config & 0x7);
  return { kid, counter, length };
}

function nonce(salt, counter) {
  const out = salt.slice();
  const tail = bigEndian(counter, 12);
  for (let index = 0; index < 12; index++) out[index] ^= tail[index];
  return out;
}

// ---------------------------------------------------------------------------------------------------- sealing

/** One stream's sender: its key id and a counter that never repeats. */
export class SFrameSender {
  constructor(key) { this.key = key; this.counter = 0n; }

  static async make(master, suite, senderID, stream) {
    return new SFrameSender(await sframeKey(master, (BigInt(senderID) << 2n) | stream, suite));
  }

  /** header || ciphertext || tag, `metadata` authenticated with it. */
  async seal(plaintext, metadata) {
    const counter = this.counter;
    this.counter += 1n;  // taken before the await: frames sealed at once never share a counter
    const header = encodeHeader(this.key.kid, counter);
    const sealed = await crypto.subtle.encrypt(
      { name: "AES-GCM", iv: nonce(this.key.salt, counter), additionalData: concat(header, metadata), tagLength: 128 },
      this.key.aes, plaintext);
    return concat(header, new Uint8Array(sealed));
  }
}

const windowSize = 1024n;
const keysKept = 256;

/** Opens the room's SFrame payloads: each key id's key derived when it first authenticates, a replay window each. */
export class SFrameOpener {
  constructor(master, suite) {
    this.master = master;
    this.suite = suite;
    this.keys = new Map();  // kid (string) → { key, highest, seen: Set of counters (strings) in the window }
  }

  /** The plaintext of `bytes` (header || ciphertext || tag) and its key id; throws what was wrong. */
  async open(bytes, metadata) {
    const { kid, counter, length } = parseHeader(bytes);
    if (bytes.length - length < 16) throw new Error(`truncated SFrame ciphertext: ${bytes.length - length} bytes, fewer than the 16-byte tag`);
    const id = String(kid);
    let entry = this.keys.get(id);
    const known = Boolean(entry);
    if (!entry) entry = { key: await sframeKey(this.master, kid, this.suite), highest: -1n, seen: new Set() };
    if (entry.highest >= 0n) {
      if (counter + windowSize <= entry.highest) throw new Error(`SFrame counter ${counter} of key ${kid} is older than the replay window`);
      if (entry.seen.has(String(counter))) throw new Error(`SFrame counter ${counter} of key ${kid} was seen before (a replay)`);
    }
    const header = bytes.subarray(0, length);
    let plaintext;
    try {
      plaintext = new Uint8Array(await crypto.subtle.decrypt(
        { name: "AES-GCM", iv: nonce(entry.key.salt, counter), additionalData: concat(header, metadata), tagLength: 128 },
        entry.key.aes, bytes.subarray(length)));
    } catch {
      throw new Error(`SFrame authentication failed for key ${kid}: another room secret, or altered bytes`);
    }
    // Only a payload that authenticated moves the window or keeps a new key.
    entry.seen.add(String(counter));
    if (counter > entry.highest) {
      entry.highest = counter;
      if (entry.seen.size > Number(windowSize)) {
        for (const seen of entry.seen) if (BigInt(seen) + windowSize <= counter) entry.seen.delete(seen);
      }
    }
    this.keys.delete(id);
    this.keys.set(id, entry);  // most recently used last
    if (!known && this.keys.size > keysKept) this.keys.delete(this.keys.keys().next().value);
    return { plaintext, kid };
  }
}

// ---------------------------------------------------------------------------------------------------- frames

// A VP8 frame is sealed whole, with what a receiver's RTP depacketizer and the relay must read left clear:
//
//   keyframe   bytes 0-2 (frame tag: the keyframe bit), 3-5 zeroed (the start code, 9d 01 2a, put back on opening:
//              an eavesdropper's decoder finds no frame), 6-9 (width and height, which Chromium's depacketizer
//              reads); the rest sealed, the 10 clear bytes its metadata
//   other      byte 0 (the keyframe bit) clear; the rest sealed, that byte its metadata
//
// Opus frames are sealed whole, with no metadata.

export const startCode = [0x9d, 0x01, 0x2a];

/** The bytes of a sealed VP8 frame as they travel. */
export async function sealVideoFrame(sender, frame) {
  if (frame.length === 0) throw new Error("an empty video frame");
  if ((frame[0] & 0x01) === 0) {
    if (frame.length < 10) throw new Error(`a VP8 keyframe of ${frame.length} bytes (fewer than its 10-byte header)`);
    const clear = frame.slice(0, 10);
    clear.set([0, 0, 0], 3);
    return concat(clear, await sender.seal(frame.subarray(10), clear));
  }
  const clear = frame.slice(0, 1);
  return concat(clear, await sender.seal(frame.subarray(1), clear));
}

/** The VP8 frame in `wire` (as `sealVideoFrame` made it), opened; throws what was wrong. */
export async function openVideoFrame(opener, wire) {
  if (wire.length === 0) throw new Error("an empty video frame");
  const keyframe = (wire[0] & 0x01) === 0;
  const clearBytes = keyframe ? 10 : 1;
  if (wire.length < clearBytes + 1) throw new Error(`a sealed VP8 frame of ${wire.length} bytes is too short`);
  const clear = wire.slice(0, clearBytes);
  const { plaintext } = await opener.open(wire.subarray(clearBytes), clear);
  if (keyframe) clear.set(startCode, 3);
  return concat(clear, plaintext);
}

/** A chat line sealed under the chat stream's key, in base64 as signaling carries it. */
export async function sealChat(sender, text) {
  const sealed = await sender.seal(utf8(text), chatMetadata);
  return btoa(String.fromCharCode(...sealed));
}

/** The text of a sealed chat line (base64 SFrame). */
export async function openChat(opener, base64) {
  let bytes;
  try {
    bytes = Uint8Array.from(atob(base64), (c) => c.charCodeAt(0));
  } catch {
    throw new Error("the sealed chat line is not base64");
  }
  const { plaintext, kid } = await opener.open(bytes, chatMetadata);
  return { text: new TextDecoder("utf-8", { fatal: true }).decode(plaintext), kid };
}
