// Times edgepack's wasm core against onnxruntime-web (wasm backend, 1 thread) in this one node process.
// usage: node bench.mjs JOB.json   (written by benchmarks/wasm_vs_onnxruntime_web.py; results as JSON on stdout)
// Per model, blocks alternate which side goes first; each block opens a fresh session on each side, calls it
// `warmup` times untimed, then `runs` times, each call timed on two clocks: wall time (performance.now()) and the
// process's CPU time (process.cpuUsage(), user + system, microseconds); a block's median per clock is kept.
// `runs` makes the slower side's block about `blockMs` of wall time (at least 3).
import { readFileSync } from "node:fs";
import { openPlan } from "./edgepack_side.mjs";
import { loadOrt, openModel } from "./ort_side.mjs";

const job = JSON.parse(readFileSync(process.argv[2], "utf8"));
const ort = await loadOrt(job.ortEntry);
const core = new WebAssembly.Module(readFileSync(job.core));
const median = (values) => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
};
const bytesOf = (path) => new Uint8Array(readFileSync(path)); // a fresh buffer at offset 0: typed views align

async function open(side, model) {
  if (side === "edgepack") {
    const run = openPlan(core, model.plan);
    return { run: async (feeds) => run(feeds), release: async () => {} };
  }
  return openModel(ort, model.onnx);
}

// Milliseconds of each of `count` calls, by clock.
async function timed(session, feeds, count) {
  const times = { wall: [], cpu: [] };
  for (let i = 0; i < count; i++) {
    const cpu = process.cpuUsage();
    const start = performance.now();
    await session.run(feeds);
    times.wall.push(performance.now() - start);
    const used = process.cpuUsage(cpu);
    times.cpu.push((used.user + used.system) / 1000);
  }
  return times;
}

function maxAbsDiff(ours, theirs) {
  let worst = 0;
  for (const [name, want] of Object.entries(theirs)) {
    const got = ours[name];
    if (!got || got.length !== want.length) throw new Error(`output ${name} differs in size`);
    for (let i = 0; i < want.length; i++) worst = Math.max(worst, Math.abs(Number(got[i]) - Number(want[i])));
  }
  return worst;
}

const SIDES = ["edgepack", "onnxruntime-web"];
const results = [];
for (const spec of job.cases) {
  const model = { plan: bytesOf(spec.plan), onnx: bytesOf(spec.model) };
  const feeds = Object.fromEntries(spec.inputs.map((input) => [input.name,
    { dtype: input.dtype, dims: input.dims, bytes: bytesOf(input.file) }]));
  const first = {};
  let slowest = 0;
  for (const side of SIDES) {
    const session = await open(side, model);
    first[side] = await session.run(feeds);
    slowest = Math.max(slowest, median((await timed(session, feeds, job.warmup + 1)).wall));
    await session.release();
  }
  const runs = Math.max(3, Math.round(job.blockMs / slowest));
  const blocks = { wall: { edgepack: [], "onnxruntime-web": [] }, cpu: { edgepack: [], "onnxruntime-web": [] } };
  for (let block = 0; block < job.blocks; block++) {
    for (const side of block % 2 === 0 ? SIDES : [...SIDES].reverse()) {
      const session = await open(side, model);
      await timed(session, feeds, job.warmup);
      for (const [clock, times] of Object.entries(await timed(session, feeds, runs))) {
        blocks[clock][side].push(median(times));
      }
      await session.release();
    }
  }
  results.push({ name: spec.name, runs, blocks, maxAbsDiff: maxAbsDiff(first.edgepack, first["onnxruntime-web"]) });
}
process.stdout.write(JSON.stringify({ ortVersion: ort.env.versions?.web ?? "", node: process.version, results }));
