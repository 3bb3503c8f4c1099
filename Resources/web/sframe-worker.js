// The page's encoded-frame worker: every frame the browser sends passes through a send transform here and is sealed
// (SFrame, sframe.js) before its packetizer sees it; every frame that arrives is opened before its decoder does. The
// page gives each transform what it needs in its options: the side, the kind, an id for its transceiver, the room's
// master key, suite and this member's sender id. Frames that do not open are dropped and counted per transceiver,
// and the counts go to the page twice a second.
import { SFrameOpener, SFrameSender, openVideoFrame, sealVideoFrame, streams, suites } from "/web/sframe.js";

const counts = new Map();  // transceiver id → { opened, failed, sealed, lastError }

function count(id) {
  if (!counts.has(id)) counts.set(id, { opened: 0, failed: 0, sealed: 0, lastError: "" });
  return counts.get(id);
}

setInterval(() => {
  if (counts.size) self.postMessage({ type: "counts", counts: Object.fromEntries(counts) });
}, 500);

function sealing(options) {
  const suite = suites[options.suite];
  const stream = options.kind === "video" ? streams.video : streams.audio;
  const ready = SFrameSender.make(options.master, suite, options.senderID, stream);
  const counted = count(options.id);
  return async (frame, controller) => {
    const data = new Uint8Array(frame.data);
    if (data.length === 0) { controller.enqueue(frame); return; }
    try {
      const sender = await ready;
      const sealed = options.kind === "video" ? await sealVideoFrame(sender, data) : await sender.seal(data, new Uint8Array(0));
      frame.data = sealed.buffer;
      counted.sealed += 1;
      controller.enqueue(frame);
    } catch (error) {
      counted.failed += 1;
      counted.lastError = String(error.message || error);  // the frame is not sent at all: never in the clear
    }
  };
}

function opening(options) {
  const opener = new SFrameOpener(options.master, suites[options.suite]);
  const counted = count(options.id);
  return async (frame, controller) => {
    const data = new Uint8Array(frame.data);
    if (data.length === 0) { controller.enqueue(frame); return; }
    try {
      const opened = options.kind === "video"
        ? await openVideoFrame(opener, data)
        : (await opener.open(data, new Uint8Array(0))).plaintext;
      frame.data = opened.buffer;
      counted.opened += 1;
      controller.enqueue(frame);
    } catch (error) {
      counted.failed += 1;
      counted.lastError = String(error.message || error);
    }
  };
}

self.onrtctransform = (event) => {
  const { transformer } = event;
  const options = transformer.options;
  const transform = options.side === "send" ? sealing(options) : opening(options);
  transformer.readable.pipeThrough(new TransformStream({ transform })).pipeTo(transformer.writable);
};
