// The page a guest without Parley joins a room from (docs/browser.md, "The page"). It speaks the relay's own
// signaling (the WebSocket and JSON of `parley join`, docs/protocol.md) with its WebRTC offer in the join; the relay
// answers it and puts each peer on one of its receive pairs (`slots`). No build step, nothing fetched from elsewhere.
import { layout } from "/web/layout.js";
import { SFrameOpener, SFrameSender, checkSecret, openChat, roomMaster, safetyCode, sealChat, streams, suites } from "/web/sframe.js";

const $ = (id) => document.getElementById(id);
const query = new URLSearchParams(location.search);

// The terminal's minimum readable tile (16x6 cells) in CSS pixels, on a 1:1 "cell".
const layoutOptions = { cellAspect: 1, minimumTileWidth: 160, minimumTileHeight: 90, stripCapacity: 4 };
// The relay's limit on one signaling message; the offer must fit in the join.
const messageLimit = 16384;
const chatLimit = 500;
const roomPunctuation = "!#$%&()+,-:;<=.>?@[]^_`{|}~";

const call = {
  socket: null, pc: null, stream: null, you: 0, room: "", name: "", host: 0, members: new Map(), order: [],
  slots: [], unseen: [], tracks: new Map(), full: null, page: 0, pendingDigit: null, micMuted: false,
  cameraOff: false, dominant: 0, recorders: new Map(), errors: [], chat: [], layout: null, left: null,
  lastTiles: "", tilesTimer: 0, pingTimer: 0, pairs: 0, joinedAt: 0, offerBytes: 0,
  info: false, tileStats: new Map(), counters: new Map(), statsTimer: 0, measured: 0, e2ee: null,
};

// ---------------------------------------------------------------------------------------------------- names

/** The room name as the relay keeps it: legal characters only, 64 bytes, outer spaces trimmed. */
export function cleanRoom(typed) {
  const kept = [...typed].filter((c) => /[A-Za-z0-9 ]/.test(c) || roomPunctuation.includes(c)).join("").slice(0, 64);
  const room = kept.trim();
  if (!room) throw new Error("The room name has no character a room name keeps: use letters, digits, spaces or "
    + roomPunctuation + ", e.g. standup.");
  return room;
}

/** The display name as the relay checks it, or an error saying what to type instead. */
export function checkName(name) {
  if (!name) throw new Error("Your name is empty: pick a name such as alice.");
  if ([...name].length > 128) throw new Error(`Your name is ${[...name].length} characters long: the limit is 128.`);
  if (/\s/.test(name)) throw new Error(`Your name "${name}" contains a space: use ${name.replace(/\s/g, "_")} instead.`);
  if (/\p{Cc}/u.test(name)) throw new Error("Your name contains a control character: use printable characters only.");
  return name;
}

// ---------------------------------------------------------------------------------------------------- password

const hex = (bytes) => [...new Uint8Array(bytes)].map((b) => b.toString(16).padStart(2, "0")).join("");
const fromHex = (text) => new Uint8Array(text.match(/../g).map((pair) => parseInt(pair, 16)));
const utf8 = (text) => new TextEncoder().encode(text);
const concat = (...parts) => {
  const out = new Uint8Array(parts.reduce((sum, part) => sum + part.length, 0));
  let at = 0;
  for (const part of parts) { out.set(part, at); at += part.length; }
  return out;
};

/** The room password's verifier, as Parley's RoomPassword: PBKDF2-HMAC-SHA256, 210,000 rounds, salted with the room. */
async function passwordVerifier(password, room) {
  const key = await crypto.subtle.importKey("raw", utf8(password), "PBKDF2", false, ["deriveBits"]);
  const salt = concat(utf8("parley room password v1"), new Uint8Array([0]), utf8(room));
  return new Uint8Array(await crypto.subtle.deriveBits({ name: "PBKDF2", hash: "SHA-256", salt, iterations: 210000 }, key, 256));
}

/** The proof over the relay's challenge: HMAC-SHA256 under the verifier of challenge ‖ room ‖ 0 ‖ name. */
async function passwordProof(verifier, nonce, room, name) {
  const key = await crypto.subtle.importKey("raw", verifier, { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
  return hex(await crypto.subtle.sign("HMAC", key, concat(nonce, utf8(room), new Uint8Array([0]), utf8(name))));
}

// ---------------------------------------------------------------------------------------------------- encryption

/** The room's end-to-end encryption from its secret (typed here, never sent): the master key, this member's random
 * sender id, the safety code, the chat stream's sender and an opener, and the worker that seals and opens media. */
async function startEncryption(secret, room, suite) {
  checkSecret(secret);
  if (typeof RTCRtpScriptTransform === "undefined") {
    throw new Error("This browser cannot take part in end-to-end encryption: it needs RTCRtpScriptTransform "
      + "(Chromium 141 or later). Join with parley join, or from a newer browser.");
  }
  lobbyStatus("Deriving the room key from the secret…");
  const master = await roomMaster(secret, room);
  const random = crypto.getRandomValues(new Uint32Array(2));
  const senderID = ((BigInt(random[0] & 0x3fff) << 32n) | BigInt(random[1])).toString();  // 46 random bits
  const worker = new Worker("/web/sframe-worker.js", { type: "module" });
  const e2ee = {
    suite, master, senderID, worker, safety: await safetyCode(master, suite), counts: {}, last: new Map(), mids: new Map(),
    failing: new Set(), chatSender: await SFrameSender.make(master, suite, senderID, streams.chat),
    chatOpener: new SFrameOpener(master, suite),
  };
  worker.onmessage = (event) => {
    if (event.data.type !== "counts" || call.e2ee !== e2ee) return;
    e2ee.counts = event.data.counts;
    noteDecryption(e2ee);
  };
  return e2ee;
}

/** Every frame `transceiver` sends goes through the worker to be sealed, every frame it receives to be opened.
 * Chromium takes a transform only if it is set before the offer is made (set later, it is silently ignored and
 * frames go out as they are), so this runs as each transceiver is added; `id` names it in the worker's counts
 * until its mid is known. */
function attachTransform(transceiver, id, e2ee) {
  const options = {
    kind: transceiver.receiver.track.kind, id, master: e2ee.master, suite: e2ee.suite.name, senderID: e2ee.senderID,
  };
  if (transceiver.direction === "sendonly") {
    transceiver.sender.transform = new RTCRtpScriptTransform(e2ee.worker, Object.assign({ side: "send" }, options));
  } else {
    transceiver.receiver.transform = new RTCRtpScriptTransform(e2ee.worker, Object.assign({ side: "receive" }, options));
  }
}

/** A peer whose frames stopped opening (and none opened since) uses another secret: its tile and the chat say so. */
function noteDecryption(e2ee) {
  for (const [id, now] of Object.entries(e2ee.counts)) {
    const mid = e2ee.mids.get(id);
    if (mid === undefined) continue;  // a transceiver of an offer too large to send
    const last = e2ee.last.get(mid) || { opened: 0, failed: 0 };
    e2ee.last.set(mid, now);
    const slot = call.slots.find((s) => s.audio === mid || s.video === mid);
    if (!slot) continue;
    if (now.opened > last.opened) {
      e2ee.failing.delete(slot.member);
    } else if (now.failed > last.failed && !e2ee.failing.has(slot.member)) {
      e2ee.failing.add(slot.member);
      const member = call.members.get(slot.member);
      logChat("system", `${member ? member.name : "A member"}: can't decrypt: different room secret`);
    }
  }
}

/** The text of a delivered chat line, or what to show instead of it. */
async function chatText(message) {
  const e2ee = call.e2ee;
  if (!e2ee) return message.sealed ? "(an end-to-end encrypted line: this page has no room secret)" : message.text;
  if (!message.sealed) return "(sent without encryption in an encrypted room: not shown)";
  try {
    return (await openChat(e2ee.chatOpener, message.sealed)).text;
  } catch (error) {
    return `(could not be decrypted: different room secret? ${error.message})`;
  }
}

// ---------------------------------------------------------------------------------------------------- lobby

function lobbyStatus(text) { $("lobby-status").textContent = text; }

function showLobby(reason) {
  $("call").hidden = true;
  $("lobby").hidden = false;
  $("join").disabled = false;
  lobbyStatus(reason || "");
}

function setUpLobby() {
  const path = decodeURIComponent(location.pathname.slice(1));
  $("room").value = path;
  if (path) $("room").readOnly = true;
  $("name").value = query.get("name") || localStorage.getItem("parley.name") || "";
  $("join-form").addEventListener("submit", (event) => {
    event.preventDefault();
    join().catch((error) => fail(String(error.message || error)));
  });
  (path ? $("name") : $("room")).focus();
  if (query.get("join") === "1" && $("name").value) join().catch((error) => fail(String(error.message || error)));
}

// ---------------------------------------------------------------------------------------------------- joining

/** The camera's layers: largest first for the relay (`videoLayers`), the encodings as Chromium takes them. */
function layersFor(track) {
  const settings = track ? track.getSettings() : {};
  const width = settings.width || 640;
  const height = settings.height || 360;
  const even = (value) => Math.max(2, Math.floor(value / 2) * 2);
  // Chromium sends two layers of a camera up to 640x360 and three from 960x540 (libwebrtc's limit by size).
  const count = width * height >= 960 * 540 ? 3 : 2;
  const rids = ["f", "h", "q"].slice(0, count);
  const sizes = rids.map((_, index) => ({ width: even(width / 2 ** index), height: even(height / 2 ** index) }));
  const rates = { f: 1200000, h: 400000, q: 150000 };
  const encodings = rids.map((rid, index) => ({ rid, scaleResolutionDownBy: 2 ** index, maxBitrate: rates[rid] })).reverse();
  return { sizes, encodings };
}

function preferCodecs(transceiver, kind) {
  const codecs = RTCRtpReceiver.getCapabilities(kind).codecs.filter((codec) =>
    kind === "audio" ? codec.mimeType === "audio/opus" : codec.mimeType === "video/VP8" || codec.mimeType === "video/rtx");
  transceiver.setCodecPreferences(codecs);
}

/** The camera and microphone; `?processing=off` takes the microphone as it is (no echo cancellation, noise
 * suppression or gain control: for a headset, and what the mouth-to-ear benchmark measures, as for `parley join
 * --no-echo-cancel`). */
async function openDevices() {
  const audio = query.get("processing") === "off"
    ? { echoCancellation: false, noiseSuppression: false, autoGainControl: false, channelCount: 1 } : true;
  for (const constraints of [{ audio, video: { width: 640, height: 360 } }, { audio }, { video: true }]) {
    try { return await navigator.mediaDevices.getUserMedia(constraints); } catch (error) { call.errors.push(String(error)); }
  }
  return new MediaStream();
}

/** A peer connection whose offer fits one signaling message, with as many receive pairs as fit (at most 6). */
async function makeConnection(stream, layers, join) {
  for (let pairs = 6; pairs >= 1; pairs--) {
    const pc = new RTCPeerConnection({ bundlePolicy: "max-bundle", rtcpMuxPolicy: "require" });
    const audio = stream.getAudioTracks()[0];
    const video = stream.getVideoTracks()[0];
    const add = (trackOrKind, init) => {
      const transceiver = pc.addTransceiver(trackOrKind, init);
      preferCodecs(transceiver, transceiver.receiver.track.kind);
      if (call.e2ee) attachTransform(transceiver, `${pairs}:${pc.getTransceivers().length - 1}`, call.e2ee);
    };
    add(audio || "audio", { direction: "sendonly" });
    add(video || "video", { direction: "sendonly", sendEncodings: layers.encodings });
    for (let index = 0; index < pairs; index++) {
      add("audio", { direction: "recvonly" });
      add("video", { direction: "recvonly" });
    }
    await pc.setLocalDescription(await pc.createOffer());
    const bytes = utf8(JSON.stringify(Object.assign({}, join, { webrtc: pc.localDescription.sdp }))).length;
    if (bytes <= messageLimit - 512 || pairs === 1) {
      call.pairs = pairs;
      call.offerBytes = pc.localDescription.sdp.length;
      if (call.e2ee) pc.getTransceivers().forEach((transceiver, index) => call.e2ee.mids.set(`${pairs}:${index}`, transceiver.mid));
      return pc;
    }
    pc.close();
  }
}

function send(type, fields) {
  if (call.socket && call.socket.readyState === WebSocket.OPEN) {
    call.socket.send(JSON.stringify(Object.assign({ v: 1, type }, fields || {})));
  }
}

async function join() {
  const room = cleanRoom($("room").value);
  const name = checkName($("name").value.trim());
  const password = $("password").value;
  const secret = $("secret").value;
  localStorage.setItem("parley.name", name);
  $("join").disabled = true;
  lobbyStatus(password ? "Proving the room password…" : "Joining…");
  call.room = room;
  call.name = name;
  call.left = null;
  call.e2ee = secret ? await startEncryption(secret, room, suites[$("cipher").value]) : null;
  call.stream = call.stream || await openDevices();
  const video = call.stream.getVideoTracks()[0];
  const layers = layersFor(video);
  const request = { room, name, videoLayers: layers.sizes, audioMuted: !call.stream.getAudioTracks()[0], videoMuted: !video };
  if (call.e2ee) request.encryption = call.e2ee.suite.name;
  call.micMuted = request.audioMuted;
  call.cameraOff = request.videoMuted;
  call.pc = await makeConnection(call.stream, layers, request);
  call.pc.ontrack = (event) => {
    call.tracks.set(event.transceiver.mid, event.track);
    render();
  };
  call.pc.onconnectionstatechange = () => {
    if (call.pc && call.pc.connectionState === "failed") status("Media connection failed");
  };
  const verifier = password ? await passwordVerifier(password, room) : null;
  const socket = new WebSocket(`${location.protocol === "https:" ? "wss" : "ws"}://${location.host}/`);
  call.socket = socket;
  let proof = null;
  socket.onopen = () => {
    if (verifier) send("challenge"); else send("join", Object.assign({ webrtc: call.pc.localDescription.sdp }, request));
  };
  socket.onclose = () => {
    if (call.socket !== socket) return;
    stopCall();
    showLobby(call.left || "The connection to the relay closed. Join again when it is back.");
  };
  socket.onmessage = async (event) => {
    let message;
    try { message = JSON.parse(event.data); } catch { return; }
    switch (message.type) {
      case "challenge":
        proof = await passwordProof(verifier, fromHex(message.nonce), room, name);
        send("join", Object.assign({ webrtc: call.pc.localDescription.sdp, proof }, request));
        break;
      case "error":
        handleError(message, request, proof, verifier);
        break;
      default:
        await handle(message);
    }
  };
}

function handleError(message, request, proof, verifier) {
  call.errors.push(`${message.code}: ${message.message}`);
  if (message.code === "password-setup" && proof && verifier) {
    // A new room: it takes the password as its verifier (the password itself stays in this page).
    send("join", Object.assign({ webrtc: call.pc.localDescription.sdp, proof, verifier: hex(verifier) }, request));
    return;
  }
  if (message.code === "media-failed") call.left = message.message;
  if (call.you) { logChat("system", `Relay: ${message.message}`); return; }
  const advice = {
    "password-required": "This room has a password: type it above and join again.",
    "wrong-password": "That is not the room's password.",
    "encryption-mismatch": call.e2ee
      ? "The room's end-to-end encryption is not the one chosen here: pick its cipher, or leave the secret empty if the room has none."
      : "This room is end-to-end encrypted: type its secret under Room secret, pick its cipher and join again.",
  }[message.code];
  fail(advice ? `${advice} (${message.message})` : message.message);
}

function fail(reason) {
  stopCall();
  showLobby(reason);
}

// ---------------------------------------------------------------------------------------------------- the call

async function handle(message) {
  switch (message.type) {
    case "joined":
      call.you = message.you.id;
      call.host = message.host;
      call.joinedAt = performance.now();
      call.members = new Map();
      call.order = [];
      for (const member of [message.you].concat(message.members)) addMember(member);
      for (const id of message.recorders || []) call.recorders.set(id, "");
      await call.pc.setRemoteDescription({ type: "answer", sdp: message.media.webrtc });
      enterCall();
      break;
    case "chat-history":
      for (const line of message.lines) if (line.kind === "message") logChat("chat", `${line.from}: ${line.text}`);
      break;
    case "member-joined":
      addMember(message.member);
      logChat("system", `${message.member.name} joined`);
      break;
    case "member-left": {
      const member = call.members.get(message.id);
      call.members.delete(message.id);
      call.order = call.order.filter((id) => id !== message.id);
      if (call.full === message.id) call.full = null;
      if (member) logChat("system", `${member.name} left${message.reason === "quit" ? "" : ` (${message.reason})`}`);
      break;
    }
    case "mute": {
      const member = call.members.get(message.id);
      if (member) { member.audioMuted = message.audio; member.videoMuted = message.video; }
      break;
    }
    case "chat":
      logChat("chat", `${message.name}: ${await chatText(message)}`);
      break;
    case "slots":
      call.slots = message.slots;
      call.unseen = message.unseen || [];
      break;
    case "host":
      call.host = message.id;
      break;
    case "dominant-speaker":
      call.dominant = message.id;
      break;
    case "role": {
      const member = call.members.get(message.id);
      if (member) member.role = message.role;
      break;
    }
    case "recording":
      if (message.recording) call.recorders.set(message.id, message.name); else call.recorders.delete(message.id);
      logChat("system", `${message.name} ${message.recording ? "started" : "stopped"} recording`);
      break;
    case "video-layers":
      await setSentLayers(message.active);
      break;
    case "removed":
      call.left = `${message.by} removed you from the call: ${message.message}`;
      break;
    default:
      return;
  }
  render();
}

function addMember(member) {
  if (!call.members.has(member.id)) call.order.push(member.id);
  call.members.set(member.id, member);
}

/** The relay's `video-layers` (largest first) turned into the encodings' `active`: only layers somebody receives. */
async function setSentLayers(active) {
  const sender = call.pc.getTransceivers()[1].sender;
  const parameters = sender.getParameters();
  if (!parameters.encodings) return;
  const order = ["f", "h", "q"];
  for (const encoding of parameters.encodings) {
    const index = order.indexOf(encoding.rid);
    // A layer the relay does not list is one the page did not declare: keep it as it is.
    if (index >= 0 && index < active.length) encoding.active = active[index];
  }
  await sender.setParameters(parameters);
}

function enterCall() {
  $("lobby").hidden = true;
  $("call").hidden = false;
  $("room-title").textContent = call.room;
  $("lock").textContent = call.e2ee ? `🔒 ${call.e2ee.safety}` : "";
  logChat("system", `You joined ${call.room} as ${call.name}. Others join with parley join ${parleyLink()}`);
  call.pingTimer = setInterval(() => send("ping", { token: Date.now() }), 2000);
  call.statsTimer = setInterval(() => measure().catch(() => {}), 1000);
  history.replaceState(null, "", "/" + encodeURIComponent(call.room));
}

function stopCall() {
  clearInterval(call.pingTimer);
  clearInterval(call.statsTimer);
  call.tileStats = new Map();
  call.counters = new Map();
  clearTimeout(call.tilesTimer);
  if (call.pc) call.pc.close();
  if (call.e2ee) call.e2ee.worker.terminate();
  call.e2ee = null;
  $("lock").textContent = "";
  const socket = call.socket;
  call.socket = null;
  if (socket && socket.readyState <= WebSocket.OPEN) socket.close();
  call.pc = null;
  call.you = 0;
  call.slots = [];
  call.tracks = new Map();
  call.members = new Map();
  call.order = [];
  call.full = null;
  call.lastTiles = "";
  $("grid").replaceChildren();
}

function leaveCall(reason) {
  send("leave");
  stopCall();
  showLobby(reason);
}

function status(text) { $("status").textContent = text; }

function logChat(kind, text) {
  call.chat.push({ kind, text });
  if (call.chat.length > chatLimit) call.chat.shift();
  const lines = $("chat-lines");
  const item = document.createElement("li");
  item.className = kind;
  item.textContent = text;
  lines.appendChild(item);
  while (lines.children.length > chatLimit) lines.firstChild.remove();
  lines.scrollTop = lines.scrollHeight;
}

// ---------------------------------------------------------------------------------------------------- drawing

function slotOf(id) { return call.slots.find((slot) => slot.member === id); }

function peerVideo(id) {
  const slot = slotOf(id);
  return slot ? call.tracks.get(slot.video) : null;
}

function videoSize(track) {
  const settings = track ? track.getSettings() : {};
  return settings.width && settings.height ? { width: settings.width, height: settings.height } : null;
}

/** One tile's element, kept across renders so its video plays on. */
function tileElement(id) {
  let tile = document.getElementById(`tile-${id}`);
  if (!tile) {
    tile = document.createElement("div");
    tile.id = `tile-${id}`;
    tile.className = "tile";
    tile.innerHTML = '<video autoplay playsinline muted></video><div class="placeholder"></div><span class="number"></span><span class="label"></span><span class="stats"></span>';
    tile.addEventListener("dblclick", () => toggleFull(id));
    $("grid").appendChild(tile);
  }
  return tile;
}

function render() {
  if (!call.you) return;
  const stage = $("grid");
  const container = { x: 0, y: 0, width: stage.clientWidth, height: stage.clientHeight };
  const selfTrack = call.stream && call.stream.getVideoTracks()[0];
  const peers = call.order.filter((id) => id !== call.you).map((id) => ({ id, videoSize: videoSize(peerVideo(id)) }));
  call.layout = layout({ id: call.you, videoSize: videoSize(selfTrack) }, peers, call.full, call.page, container, layoutOptions);
  call.page = call.layout.page;
  if (call.full !== null && call.layout.fullscreen === null) call.full = null;
  const shown = new Set();
  call.layout.tiles.forEach((placed, index) => {
    const id = placed.id;
    const member = call.members.get(id) || { name: "?" };
    shown.add(`tile-${id}`);
    const tile = tileElement(id);
    tile.className = `tile ${placed.kind}${call.dominant === id && id !== call.you ? " speaking" : ""}`;
    Object.assign(tile.style, {
      left: `${placed.rect.x}px`, top: `${placed.rect.y}px`, width: `${placed.rect.width}px`,
      height: `${placed.rect.height}px`, zIndex: String(index + 1),
    });
    const track = id === call.you ? selfTrack : peerVideo(id);
    const off = id === call.you ? call.cameraOff : member.videoMuted;
    const video = tile.querySelector("video");
    if (track && video.srcObject?.getVideoTracks()[0] !== track) video.srcObject = new MediaStream([track]);
    video.hidden = !track || off;
    const placeholder = tile.querySelector(".placeholder");
    placeholder.textContent = !track || off
      ? (off ? `${member.name}: camera off` : (call.unseen.includes(id) ? `${member.name}: no picture (this page shows ${call.pairs} peers' video)` : member.name))
      : "";
    placeholder.hidden = placeholder.textContent === "";
    tile.querySelector(".number").textContent = placed.number ? String(placed.number) : "";
    const muted = id === call.you ? call.micMuted : member.audioMuted;
    const locked = call.e2ee && call.e2ee.failing.has(id) ? " · can't decrypt: different room secret" : "";
    tile.querySelector(".label").textContent = `${member.name}${id === call.you ? " (you)" : ""}${muted ? " · muted" : ""}${locked}`;
    const stats = tile.querySelector(".stats");
    stats.textContent = call.info ? (call.tileStats.get(id) || "measuring…") : "";
    stats.hidden = !call.info;
  });
  for (const tile of [...stage.children]) if (!shown.has(tile.id)) tile.remove();
  renderAudio();
  renderRoster();
  renderControls();
  const pages = call.layout.pageCount > 1 ? `page ${call.layout.page + 1}/${call.layout.pageCount}` : "";
  $("page-label").textContent = pages;
  $("recording").textContent = call.recorders.size ? "● recording" : "";
  scheduleTiles();
}

/** Every peer in a slot is heard (an audio element per slot, kept while the slot's member stays). */
function renderAudio() {
  const wanted = new Set();
  for (const slot of call.slots) {
    const track = call.tracks.get(slot.audio);
    if (!track) continue;
    const key = `audio-${slot.audio}`;
    wanted.add(key);
    let element = document.getElementById(key);
    if (!element) {
      element = document.createElement("audio");
      element.id = key;
      element.autoplay = true;
      document.body.appendChild(element);
    }
    if (element.srcObject?.getAudioTracks()[0] !== track) element.srcObject = new MediaStream([track]);
  }
  for (const element of [...document.querySelectorAll("audio")]) if (!wanted.has(element.id)) element.remove();
}

function renderRoster() {
  const list = $("members");
  list.replaceChildren();
  for (const id of call.order) {
    const member = call.members.get(id);
    const item = document.createElement("li");
    const muted = id === call.you ? call.micMuted : member.audioMuted;
    const off = id === call.you ? call.cameraOff : member.videoMuted;
    const marks = [id === call.host ? "host" : "", member.kind === "terminal" ? "terminal" : "",
      muted ? "muted" : "", off ? "camera off" : "", member.role === "audience" ? "audience" : "",
      call.recorders.has(id) ? "recording" : ""].filter(Boolean);
    item.textContent = `${member.name}${id === call.you ? " (you)" : ""}${marks.length ? ` — ${marks.join(", ")}` : ""}`;
    list.appendChild(item);
  }
}

function renderControls() {
  $("mic").textContent = call.micMuted ? "Unmute (m)" : "Mute (m)";
  $("mic").classList.toggle("off", call.micMuted);
  $("camera").textContent = call.cameraOff ? "Camera on (v)" : "Camera off (v)";
  $("camera").classList.toggle("off", call.cameraOff);
}

/** The size each peer is drawn at, so the relay sends it the layer its tile needs (at most four times a second). */
function scheduleTiles() {
  if (call.tilesTimer) return;
  call.tilesTimer = setTimeout(() => {
    call.tilesTimer = 0;
    if (!call.layout) return;
    const scale = window.devicePixelRatio || 1;
    const sizes = new Map(call.order.filter((id) => id !== call.you).map((id) => [id, { width: 0, height: 0 }]));
    for (const placed of call.layout.tiles) {
      if (placed.id === call.you || !sizes.has(placed.id)) continue;
      sizes.set(placed.id, {
        width: Math.min(8192, Math.round(placed.rect.width * scale)),
        height: Math.min(8192, Math.round(placed.rect.height * scale)),
      });
    }
    const tiles = [...sizes].slice(0, 64).map(([id, size]) => ({ id, width: size.width, height: size.height }));
    const text = JSON.stringify(tiles);
    if (text === call.lastTiles) return;
    call.lastTiles = text;
    send("tiles", { tiles });
  }, 250);
}

/** Kilobits per second of a byte counter since the last measurement (0 the first time). */
function rate(key, bytes, now) {
  const last = call.counters.get(key);
  call.counters.set(key, { bytes, now });
  if (!last || now <= last.now || bytes < last.bytes) return 0;
  return ((bytes - last.bytes) * 8) / (now - last.now);
}

/** The `i` figures of every tile, as the terminal's: what arrives per peer (size, frame rate, bit rate, loss) and
 * what this page sends (the camera's layers, their rate); every other second the room's `stats` report. */
async function measure() {
  if (!call.pc) return;
  const now = performance.now();
  const texts = new Map();
  const sent = { width: 0, height: 0, fps: 0, videoKbps: 0, audioKbps: 0, layers: [] };
  (await call.pc.getStats()).forEach((stat) => {
    if (stat.type === "inbound-rtp" && stat.kind === "video") {
      const slot = call.slots.find((s) => s.video === stat.mid);
      if (!slot) return;
      const kbps = rate(`in-${stat.mid}`, stat.bytesReceived || 0, now);
      const lost = Math.max(0, stat.packetsLost || 0);
      const got = stat.packetsReceived || 0;
      const last = call.counters.get(`loss-${stat.mid}`) || { lost: 0, got: 0 };
      call.counters.set(`loss-${stat.mid}`, { lost, got });
      const packets = Math.max(0, lost - last.lost) + Math.max(0, got - last.got);
      const loss = packets > 0 ? (100 * Math.max(0, lost - last.lost)) / packets : 0;
      texts.set(slot.member, `${stat.frameWidth || 0}x${stat.frameHeight || 0} · ${Math.round(stat.framesPerSecond || 0)} fps`
        + ` · ${Math.round(kbps)} kbit/s · ${loss.toFixed(1)}% lost`);
    } else if (stat.type === "outbound-rtp" && stat.kind === "video") {
      sent.videoKbps += rate(`out-${stat.rid || stat.ssrc}`, stat.bytesSent || 0, now);
      if (!stat.frameWidth) return;
      sent.layers.push(`${stat.frameWidth}x${stat.frameHeight}`);
      if (stat.frameWidth > sent.width) {
        sent.width = stat.frameWidth;
        sent.height = stat.frameHeight || 0;
        sent.fps = stat.framesPerSecond || 0;
      }
    } else if (stat.type === "outbound-rtp" && stat.kind === "audio") {
      sent.audioKbps += rate(`out-audio-${stat.ssrc}`, stat.bytesSent || 0, now);
    }
  });
  if (call.cameraOff) { sent.width = 0; sent.height = 0; sent.fps = 0; }
  const layers = sent.layers.length ? ` (sent as ${sent.layers.join(", ")})` : "";
  texts.set(call.you, call.cameraOff ? "camera off" : `${sent.width}x${sent.height} · ${Math.round(sent.fps)} fps`
    + ` · ${Math.round(sent.videoKbps)} kbit/s${layers}`);
  call.tileStats = texts;
  call.measured += 1;
  if (call.measured % 2 === 0) {
    send("stats", {
      width: sent.width, height: sent.height, fps: Number(sent.fps.toFixed(2)),
      videoKbps: Number(sent.videoKbps.toFixed(1)), audioKbps: Number(sent.audioKbps.toFixed(1)),
    });
  }
  if (call.info) render();
}

// ---------------------------------------------------------------------------------------------------- controls

function toggleMic() {
  const track = call.stream.getAudioTracks()[0];
  if (!track) { status("No microphone"); return; }
  call.micMuted = !call.micMuted;
  track.enabled = !call.micMuted;
  send("mute", { audio: call.micMuted });
  render();
}

function toggleCamera() {
  const track = call.stream.getVideoTracks()[0];
  if (!track) { status("No camera"); return; }
  call.cameraOff = !call.cameraOff;
  track.enabled = !call.cameraOff;
  send("mute", { video: call.cameraOff });
  render();
}

function toggleFull(id) {
  call.full = call.full === id ? null : id;
  render();
}

function parleyLink() {
  const scheme = location.protocol === "https:" ? "parley" : "ws";
  return `${scheme}://${location.host}/${encodeURIComponent(call.room)}`;
}

async function copyLink() {
  const link = `${location.origin}/${encodeURIComponent(call.room)}`;
  try {
    await navigator.clipboard.writeText(link);
    status(`Copied ${link}`);
  } catch {
    status(`Link: ${link}`);
  }
  logChat("system", `Invite: ${link} (a browser) or parley join ${parleyLink()}`);
}

function onKey(event) {
  if (!call.you || event.ctrlKey || event.altKey || event.metaKey) return;
  const typing = document.activeElement === $("chat-input");
  if (typing) {
    if (event.key === "Escape") $("chat-input").blur();
    return;
  }
  const key = event.key;
  if (/^[1-9]$/.test(key)) {
    // A tile's number twice: fullscreen it (twice again, or Esc: back to the grid).
    const number = Number(key);
    if (call.pendingDigit === number) {
      call.pendingDigit = null;
      const id = call.layout && call.layout.numbered[number - 1];
      if (id !== undefined) toggleFull(id);
    } else {
      call.pendingDigit = number;
      status(`${number}: again for fullscreen`);
    }
    event.preventDefault();
    return;
  }
  call.pendingDigit = null;
  const actions = {
    m: toggleMic, v: toggleCamera, l: copyLink, i: () => { call.info = !call.info; render(); },
    Escape: () => { call.full = null; render(); },
    t: () => $("chat-input").focus(), Enter: () => $("chat-input").focus(),
    "]": () => { call.page += 1; render(); }, "[": () => { call.page = Math.max(0, call.page - 1); render(); },
    r: () => document.body.classList.toggle("roster-hidden"),
  };
  if (actions[key]) { event.preventDefault(); actions[key](); }
}

function setUpCall() {
  $("mic").addEventListener("click", toggleMic);
  $("camera").addEventListener("click", toggleCamera);
  $("copy-link").addEventListener("click", copyLink);
  $("leave").addEventListener("click", () => leaveCall("You left the call."));
  $("chat-form").addEventListener("submit", (event) => {
    event.preventDefault();
    const text = $("chat-input").value.trim();
    if (!text) return;
    $("chat-input").value = "";
    if (!call.e2ee) { send("chat", { text }); return; }
    // Sealed under this member's chat key: the relay forwards a line it cannot read.
    sealChat(call.e2ee.chatSender, text).then((sealed) => send("chat", { text: "", sealed }),
      (error) => logChat("system", `Your line was not sent: ${error.message}`));
  });
  document.addEventListener("keydown", onKey);
  window.addEventListener("resize", render);
  window.addEventListener("beforeunload", () => send("leave"));
  setInterval(render, 1000);
}

// ---------------------------------------------------------------------------------------------------- inspection

/** What the page shows and decodes, for a person debugging it in the console and for the tests. */
async function snapshot() {
  const frames = {};
  const heard = {};
  if (call.pc) {
    (await call.pc.getStats()).forEach((stat) => {
      if (stat.type !== "inbound-rtp") return;
      const slot = call.slots.find((s) => s.video === stat.mid || s.audio === stat.mid);
      if (!slot) return;
      if (stat.kind === "video") frames[slot.member] = { decoded: stat.framesDecoded || 0, width: stat.frameWidth || 0 };
      else heard[slot.member] = stat.totalAudioEnergy || 0;
    });
  }
  return {
    you: call.you, room: call.room, host: call.host, pairs: call.pairs, offerBytes: call.offerBytes,
    members: call.order.map((id) => Object.assign({ id }, call.members.get(id))),
    slots: call.slots, unseen: call.unseen, frames, heard, micMuted: call.micMuted, cameraOff: call.cameraOff,
    fullscreen: call.full, layout: call.layout, chat: call.chat.map((line) => line.text), errors: call.errors,
    info: call.info ? Object.fromEntries(call.tileStats) : null,
    lobby: $("lobby").hidden ? null : $("lobby-status").textContent,
    encryption: call.e2ee ? {
      suite: call.e2ee.suite.name, safetyCode: call.e2ee.safety, lock: $("lock").textContent, counts: call.e2ee.counts,
      failing: [...call.e2ee.failing],
    } : null,
    sending: call.pc ? call.pc.getTransceivers()[1].sender.getParameters().encodings.map((e) => ({ rid: e.rid, active: e.active })) : [],
  };
}

window.parley = { snapshot, layout, cleanRoom, checkName };
setUpCall();
setUpLobby();
