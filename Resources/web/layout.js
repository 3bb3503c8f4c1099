// The terminal's tile layout (Sources/ParleyRoom/VideoViewLayouter.swift) for the browser page: the same rules, so a
// guest sees the grid a Parley user sees. A pure function from tiles and a container to one rectangle per visible
// tile; the page calls it with CSS pixels and a cell aspect of 1. LayoutTableTests runs it against the Swift one.

/** Defaults as the terminal's LayoutOptions. */
export const defaultOptions = { cellAspect: 2.0, minimumTileWidth: 16, minimumTileHeight: 6, stripCapacity: 4 };

const div = (a, b) => Math.trunc(a / b);

function splitCells(length, parts) {
  if (parts <= 0) return [];
  const base = div(Math.max(0, length), parts);
  const extra = Math.max(0, length) % parts;
  return Array.from({ length: parts }, (_, index) => (index < extra ? base + 1 : base));
}

/** Columns and rows of the equal grid: ceil(sqrt(count)) along the visually longer side. */
export function gridShape(count, container, cellAspect = 2.0) {
  if (count <= 0) return { columns: 0, rows: 0 };
  let long = 1;
  while (long * long < count) long += 1;
  const short = div(count + long - 1, long);
  const wide = container.width >= container.height * cellAspect;
  return wide ? { columns: long, rows: short } : { columns: short, rows: long };
}

/** Tiles per page: the most tiles whose grid keeps every tile at the readable minimum, at least one. */
export function pageSize(tileCount, container, options = defaultOptions) {
  if (tileCount <= 1) return Math.max(1, tileCount);
  let count = tileCount;
  while (count > 1) {
    const shape = gridShape(count, container, options.cellAspect);
    if (div(container.width, shape.columns) >= options.minimumTileWidth
      && div(container.height, shape.rows) >= options.minimumTileHeight) break;
    count -= 1;
  }
  return count;
}

function gridRects(count, container, options) {
  const shape = gridShape(count, container, options.cellAspect);
  if (shape.columns <= 0) return [];
  const widths = splitCells(container.width, shape.columns);
  const heights = splitCells(container.height, shape.rows);
  const rects = [];
  let top = container.y;
  for (let row = 0; row < shape.rows; row++) {
    const inRow = Math.min(shape.columns, count - row * shape.columns);
    if (inRow <= 0) break;
    const rowWidth = widths.slice(0, inRow).reduce((sum, width) => sum + width, 0);
    let left = container.x + div(container.width - rowWidth, 2);
    for (let column = 0; column < inRow; column++) {
      rects.push({ x: left, y: top, width: widths[column], height: heights[row] });
      left += widths[column];
    }
    top += heights[row];
  }
  return rects;
}

function cornerRect(selfTile, container, options) {
  const cellAspect = options.cellAspect > 0 ? options.cellAspect : 2.0;
  const containerAspect = container.width / (container.height * cellAspect);
  const size = selfTile.videoSize;
  const aspect = size && size.width > 0 && size.height > 0 ? size.width / size.height : containerAspect;
  let width = div(container.width, 4);
  let height = Math.round(width / (aspect * cellAspect));
  const maxHeight = container.height - 2;
  if (height > maxHeight) {
    height = maxHeight;
    width = Math.min(width, Math.round(height * aspect * cellAspect));
  }
  if (width < 4 || height < 2) return null;
  const x = container.x + container.width - width - (container.width - width >= 1 ? 1 : 0);
  return { x, y: container.y + 1, width, height };
}

function fullscreenRects(stripCount, container, options) {
  const capacity = Math.max(1, options.stripCapacity);
  if (stripCount <= 0) return { full: container, strip: [] };
  const tall = container.height * options.cellAspect > container.width;
  const strip = [];
  if (tall) {
    const stripHeight = div(container.height, 4);
    if (stripHeight < 1 || container.width < capacity) return { full: container, strip: [] };
    const widths = splitCells(container.width, capacity);
    const top = container.y + container.height - stripHeight;
    let left = container.x;
    for (let index = 0; index < stripCount; index++) {
      strip.push({ x: left, y: top, width: widths[index], height: stripHeight });
      left += widths[index];
    }
    return { full: { x: container.x, y: container.y, width: container.width, height: container.height - stripHeight }, strip };
  }
  const stripWidth = div(container.width, 4);
  if (stripWidth < 1 || container.height < capacity) return { full: container, strip: [] };
  const heights = splitCells(container.height, capacity);
  const left = container.x + container.width - stripWidth;
  let top = container.y;
  for (let index = 0; index < stripCount; index++) {
    strip.push({ x: left, y: top, width: stripWidth, height: heights[index] });
    top += heights[index];
  }
  return { full: { x: container.x, y: container.y, width: container.width - stripWidth, height: container.height }, strip };
}

/**
 * Lays out the self view (null when hidden) and the peers (join order, each {id, videoSize?}) in container
 * {x, y, width, height}. Returns {tiles: [{id, rect, kind, number}], numbered, page, pageCount, pageSize, fullscreen}:
 * alone, self fills; one peer fills with self inset top right; more, an equal grid split into pages below the
 * readable minimum; with `full` (3 or more tiles) one large tile and a strip of up to four.
 */
export function layout(selfTile, peers, full, page, container, options = defaultOptions) {
  const order = (selfTile ? [selfTile] : []).concat(peers);
  const empty = { tiles: [], numbered: [], page: 0, pageCount: 1, pageSize: 0, fullscreen: null };
  if (order.length === 0 || container.width <= 0 || container.height <= 0) return empty;
  if (order.length === 1) {
    const only = order[0];
    return {
      tiles: [{ id: only.id, rect: container, kind: "grid", number: 1 }], numbered: [only.id], page: 0,
      pageCount: 1, pageSize: 1, fullscreen: null,
    };
  }
  if (order.length === 2 && selfTile) {
    const peer = peers[0];
    const tiles = [{ id: peer.id, rect: container, kind: "grid", number: 2 }];
    const corner = cornerRect(selfTile, container, options);
    if (corner) tiles.push({ id: selfTile.id, rect: corner, kind: "corner", number: 1 });
    return { tiles, numbered: [selfTile.id, peer.id], page: 0, pageCount: 1, pageSize: 2, fullscreen: null };
  }
  const size = pageSize(order.length, container, options);
  const pageCount = div(order.length + size - 1, size);
  const currentPage = Math.min(Math.max(0, page), pageCount - 1);
  const pageStart = currentPage * size;
  const pageOrder = order.slice(pageStart, Math.min(order.length, pageStart + size));
  const numbered = pageOrder.map((tile) => tile.id);
  const number = (id) => {
    const index = numbered.indexOf(id);
    return index < 0 ? null : index + 1;
  };
  const fullIndex = full == null ? -1 : order.findIndex((tile) => tile.id === full);
  if (order.length >= 3 && fullIndex >= 0) {
    const others = order.map((_, index) => index).filter((index) => index !== fullIndex);
    let firstOnPage = others.findIndex((index) => index >= pageStart);
    if (firstOnPage < 0) firstOnPage = 0;
    const rotated = others.slice(firstOnPage).concat(others.slice(0, firstOnPage));
    const stripIDs = rotated.slice(0, Math.max(0, options.stripCapacity)).map((index) => order[index].id);
    const rects = fullscreenRects(stripIDs.length, container, options);
    const tiles = [{ id: full, rect: rects.full, kind: "full", number: number(full) }];
    stripIDs.forEach((id, index) => {
      if (index < rects.strip.length) tiles.push({ id, rect: rects.strip[index], kind: "strip", number: number(id) });
    });
    return { tiles, numbered, page: currentPage, pageCount, pageSize: size, fullscreen: full };
  }
  const rects = gridRects(pageOrder.length, container, options);
  const tiles = rects.map((rect, index) => ({ id: pageOrder[index].id, rect, kind: "grid", number: index + 1 }));
  return { tiles, numbered, page: currentPage, pageCount, pageSize: size, fullscreen: null };
}
