// SPDX-License-Identifier: LGPL-2.1-or-later
// 32 concurrent clients of E2B's SDK against cordon server (run by bench/bench-e2b): each
// does create + run `echo` + kill in a loop for BENCH_E2B_SECONDS (default 60). Prints the
// throughput, p50 and p99 of one cycle, and the errors.
import { Sandbox } from 'e2b'

const clients = Number(process.env.BENCH_E2B_CLIENTS || 32)
const seconds = Number(process.env.BENCH_E2B_SECONDS || 60)
const until = Date.now() + seconds * 1000
const lat = []
const errors = []

async function client () {
  while (Date.now() < until) {
    const t0 = performance.now()
    try {
      const sbx = await Sandbox.create('base', { timeoutMs: 60_000 })
      const r = await sbx.commands.run('echo hi')
      if (r.stdout !== 'hi\n') throw new Error(`stdout ${JSON.stringify(r.stdout)}`)
      await sbx.kill()
      lat.push(performance.now() - t0)
    } catch (e) {
      errors.push(String(e))
    }
  }
}

const t0 = performance.now()
await Promise.all(Array.from({ length: clients }, client))
const wall = (performance.now() - t0) / 1000
lat.sort((a, b) => a - b)
const q = (p) => lat.length ? lat[Math.min(lat.length - 1, Math.floor(p * lat.length))].toFixed(1) : 'n/a'
console.log(`${clients} SDK clients, ${seconds} s: ${lat.length} cycles (create + run echo + kill), ` +
  `${(lat.length / wall).toFixed(1)}/s, p50 ${q(0.5)} ms, p99 ${q(0.99)} ms, ${errors.length} errors`)
if (errors.length) console.log(`first error: ${errors[0]}`)
