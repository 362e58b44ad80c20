// node-redis's own scanDump/loadChunk loop, binary-safe (buffers), over a 22 MB filter, in
// RESP2 and RESP3, against the host on the port given: node node-redis-round-trip.js PORT
const { createClient, RESP_TYPES } = require('redis');
(async () => {
  const port = Number(process.argv[2]);
  for (const RESP of [2, 3]) {
    const base = createClient({ socket: { port }, RESP });
    await base.connect();
    const client = base.withTypeMapping({ [RESP_TYPES.BLOB_STRING]: Buffer });
    await client.del(['big', 'copy']);
    await client.cf.reserve('big', 10000000, { EXPANSION: 0 });
    await client.cf.insert('big', Array.from({ length: 1000 }, (_, i) => `item${i}`));
    const chunks = [];
    let iterator = 0;
    for (;;) {
      const { iterator: next, chunk } = await client.cf.scanDump('big', iterator);
      if (Number(next) === 0) break;
      chunks.push([Number(next), chunk]);
      iterator = Number(next);
    }
    const bytes = chunks.reduce((n, [, c]) => n + c.length, 0);
    if (chunks.length < 2 || bytes <= 16 << 20) throw new Error(`${chunks.length} chunks, ${bytes} bytes`);
    for (const [it, chunk] of chunks) await client.cf.loadChunk('copy', it, chunk);
    for (let i = 0; i < 1000; i++) {
      if (!(await client.cf.exists('copy', `item${i}`))) throw new Error(`item${i} missing from the copy`);
    }
    console.log(`RESP${RESP}: ${chunks.length} chunks, ${bytes} bytes, the copy holds every item`);
    await base.quit();
  }
})().catch((e) => { console.error(e); process.exit(1); });
