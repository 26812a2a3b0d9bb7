// SPDX-License-Identifier: LGPL-2.1-or-later
// E2B's official JavaScript SDK (pinned in package-lock.json) against `cordon server`
// (TAP). Run by tests/e2b/test-e2b-sdk.sh, which starts the server and sets E2B_API_URL,
// E2B_SANDBOX_URL and E2B_API_KEY; the sandboxes run on the kernel tier.
import { Sandbox, CommandExitError, AuthenticationError, RateLimitError } from 'e2b'

let n = 0
let failed = 0
const ok = (cond, what, detail) => {
  n++
  if (cond) console.log(`ok ${n} - ${what}`)
  else {
    failed++
    console.log(`not ok ${n} - ${what}${detail !== undefined ? `\n# ${String(detail).replace(/\n/g, '\n# ')}` : ''}`)
  }
}
const rejects = async (p) => {
  try {
    await p
    return null
  } catch (e) {
    return e
  }
}

const waitFor = async (cond, ms) => {
  for (const until = Date.now() + ms; Date.now() < until;) {
    if (cond()) return true
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
  return cond()
}

const sbx = await Sandbox.create('base', { timeoutMs: 60_000 })
ok(/^i[a-z0-9]{20}$/.test(sbx.sandboxId), 'create: an E2B-shaped sandbox id', sbx.sandboxId)

// A command: stdout, stderr and the exit code, apart.
const e = await rejects(sbx.commands.run('echo hello; echo oops >&2; exit 3'))
ok(e instanceof CommandExitError, 'a non-zero exit is a CommandExitError', e)
ok(e?.exitCode === 3, 'exit code 3', e?.exitCode)
ok(e?.stdout === 'hello\n', 'stdout', JSON.stringify(e?.stdout))
ok(e?.stderr === 'oops\n', 'stderr', JSON.stringify(e?.stderr))
const r0 = await sbx.commands.run('printf "%s" "$FOO"', { envs: { FOO: 'bar' } })
ok(r0.exitCode === 0 && r0.stdout === 'bar', 'exit 0 and the request envs', JSON.stringify(r0))
const confined = await sbx.commands.run('grep -E "^(NoNewPrivs|Seccomp):" /proc/self/status')
ok(/NoNewPrivs:\s+1/.test(confined.stdout) && /Seccomp:\s+2/.test(confined.stdout),
  'the command runs confined (kernel tier: no new privileges, seccomp)', confined.stdout)

// Live output through the callback.
const seen = []
await sbx.commands.run('echo one; sleep 0.2; echo two', { onStdout: (d) => seen.push(d) })
ok(seen.join('') === 'one\ntwo\n', 'onStdout streams the output', JSON.stringify(seen))

// A background command, listed, then killed.
const bg = await sbx.commands.run('sleep 600', { background: true })
const procs = await sbx.commands.list()
ok(procs.some((p) => p.pid === bg.pid), 'commands.list shows the background command', JSON.stringify(procs))
const t0 = Date.now()
ok(await bg.kill() === true, 'kill() on the background command')
const killed = await rejects(bg.wait())
ok(killed instanceof CommandExitError && killed.exitCode === -1 && Date.now() - t0 < 10_000,
  'the killed command ends by a signal (exitCode -1), promptly', killed)
ok(await sbx.commands.kill(bg.pid) === false, 'killing it again: not found')

// Re-attaching: a command whose client disconnected keeps running; commands.connect(pid)
// gets what it printed meanwhile (kept by the server) and the rest, then its end.
const ticker = await sbx.commands.run('sleep 0.3; echo tick 1; sleep 0.7; echo tick 2; sleep 0.3; echo done',
  { background: true })
await ticker.disconnect()
await new Promise((resolve) => setTimeout(resolve, 700))
const tlist = await sbx.commands.list()
ok(tlist.some((p) => p.pid === ticker.pid), 'a disconnected command keeps running', JSON.stringify(tlist))
const live = []
const again1 = await sbx.commands.connect(ticker.pid, { onStdout: (d) => live.push(d) })
const tr = await again1.wait()
ok(again1.pid === ticker.pid && tr.exitCode === 0 && tr.stdout === 'tick 1\ntick 2\ndone\n',
  'commands.connect re-attaches: the output kept while detached, then the rest and the end',
  JSON.stringify(tr))
ok(live.join('') === 'tick 1\ntick 2\ndone\n', 'the connected handle streams it', JSON.stringify(live))
const noproc = await rejects(sbx.commands.connect(999999))
ok(noproc !== null && /not found/i.test(noproc.message), 'connecting to an unknown pid: not found', noproc)
// What is kept while no one reads is bounded (the newest 1 MiB of events): 3 MB printed
// while detached come back as their tail only.
const flood = await sbx.commands.run('sleep 0.3; head -c 3000000 /dev/zero | tr "\\0" a; touch flooded; sleep 2; echo END',
  { background: true })
await flood.disconnect()
ok(await (async () => {
  for (const until = Date.now() + 20_000; Date.now() < until;) {
    if (await sbx.files.exists('flooded')) return true
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
  return false
})(), 'the detached command printed 3 MB')
const fr = await (await sbx.commands.connect(flood.pid)).wait()
ok(fr.stdout.endsWith('aEND\n') && fr.stdout.length > 500_000 && fr.stdout.length < 1_100_000,
  'output kept while detached is bounded: its newest part', fr.stdout.length)
await sbx.files.remove('flooded')
// Two readers at once: both see the output printed after both attached.
const twice = await sbx.commands.run('read -r x; echo "[$x]"', { background: true, stdin: true })
const other = await sbx.commands.connect(twice.pid)
await twice.sendStdin('both\n')
const [w1, w2] = await Promise.all([twice.wait(), other.wait()])
ok(w1.stdout === '[both]\n' && w2.stdout === '[both]\n', 'two readers of one command each get its output',
  JSON.stringify([w1.stdout, w2.stdout]))

// A pseudo-terminal: sandbox.pty.create runs an interactive bash on a terminal of the size
// asked, typed input reaches it, resize changes the size (the work sees it), kill ends it.
let screen = ''
const dec = new TextDecoder()
const term = await sbx.pty.create({ cols: 80, rows: 24, onData: (d) => { screen += dec.decode(d) } })
const type = (text) => sbx.pty.sendInput(term.pid, new TextEncoder().encode(text))
await type('stty size; [ -t 0 ] && [ -t 1 ] && echo "tty-$((1+1))"; echo "mark-$((6*7))"\n')
ok(await waitFor(() => /mark-42/.test(screen), 10_000), 'pty: typed input runs in the shell', JSON.stringify(screen))
ok(/24 80/.test(screen) && /tty-2/.test(screen), 'pty: a terminal of 24x80 as stdin and stdout',
  JSON.stringify(screen))
await sbx.pty.resize(term.pid, { cols: 100, rows: 40 })
await type('stty size\n')
ok(await waitFor(() => /40 100/.test(screen), 10_000), 'pty: resize reaches the terminal', JSON.stringify(screen))
const plain = await rejects(sbx.pty.resize(ticker.pid, { cols: 10, rows: 10 }))
ok(plain !== null, 'resizing a process without a pty is refused', plain)
ok(await sbx.pty.kill(term.pid) === true, 'pty.kill')
const tk = await rejects(term.wait())
ok(tk instanceof CommandExitError && tk.exitCode === -1, 'the killed pty ends by the signal', tk)

// stdin.
const cat = await sbx.commands.run('tr a-z A-Z', { background: true, stdin: true })
await cat.sendStdin('hello ')
await cat.sendStdin('stdin\n')
await sbx.commands.closeStdin(cat.pid)
const catr = await cat.wait()
ok(catr.stdout === 'HELLO STDIN\n', 'stdin reaches the command', JSON.stringify(catr.stdout))

// Interactive stdin: the process runs at once and answers each line before the next is
// sent (a line-buffered reader echoing back), then ends when stdin is closed.
let echoed = ''
const sh = await sbx.commands.run('while read -r l; do echo "got $l"; done; echo bye',
  { background: true, stdin: true, onStdout: (d) => { echoed += d } })
await sh.sendStdin('first\n')
ok(await waitFor(() => echoed === 'got first\n', 5_000),
  'interactive stdin: the first line is answered while stdin is still open', JSON.stringify(echoed))
await new Promise((resolve) => setTimeout(resolve, 300))
ok(echoed === 'got first\n', 'nothing more before the second line', JSON.stringify(echoed))
await sh.sendStdin('second\n')
ok(await waitFor(() => echoed === 'got first\ngot second\n', 5_000),
  'interactive stdin: the second line is answered', JSON.stringify(echoed))
await sbx.commands.closeStdin(sh.pid)
const shr = await rejects(sh.wait().then((x) => { if (x.exitCode !== 0) throw x; return x }))
ok(shr === null && echoed === 'got first\ngot second\nbye\n',
  'closing stdin ends the reader, exit 0', `${shr} ${JSON.stringify(echoed)}`)
// A process killed while its stdin is open: the kill ends it, and input after it fails.
const cat2 = await sbx.commands.run('cat', { background: true, stdin: true })
await cat2.sendStdin('x\n')
ok(await cat2.kill() === true, 'kill() on a process reading stdin')
const k2 = await rejects(cat2.wait())
ok(k2 instanceof CommandExitError && k2.exitCode === -1, 'it ends by the signal', k2)
ok(await rejects(cat2.sendStdin('late\n')) !== null, 'input after the end is refused')

// Files: written, read, listed, and seen by commands.
await sbx.files.write('notes.txt', 'hello file\n')
await sbx.files.write('/home/user/src/main.c', 'int main(void) { return 0; }\n')
ok(await sbx.files.read('/home/user/notes.txt') === 'hello file\n', 'a written file reads back')
const viaCmd = await sbx.commands.run('cat notes.txt src/main.c')
ok(viaCmd.stdout === 'hello file\nint main(void) { return 0; }\n', 'a command sees the written files',
  JSON.stringify(viaCmd.stdout))
await sbx.commands.run('mkdir -p out && echo made > out/result.txt')
ok(await sbx.files.read('out/result.txt') === 'made\n', 'a file a command wrote reads back')
const top = await sbx.files.list('/home/user')
const names = top.map((x) => `${x.name}:${x.type}`).sort()
ok(JSON.stringify(names) === JSON.stringify(['notes.txt:file', 'out:dir', 'src:dir']),
  'files.list: the home directory', JSON.stringify(top))
const deep = await sbx.files.list('/home/user', { depth: 2 })
ok(deep.map((x) => x.path).join(',') ===
  '/home/user/notes.txt,/home/user/out,/home/user/out/result.txt,/home/user/src,/home/user/src/main.c',
'files.list depth 2: pre-order, lexical', deep.map((x) => x.path).join(','))
const note = top.find((x) => x.name === 'notes.txt')
ok(note?.size === 11 && note?.path === '/home/user/notes.txt', 'an entry\'s size and path', JSON.stringify(note))
ok(await sbx.files.exists('notes.txt') === true && await sbx.files.exists('nope.txt') === false,
  'files.exists')
ok(await sbx.files.makeDir('made/deeper') === true && await sbx.files.makeDir('made/deeper') === false,
  'files.makeDir, then already there')
const moved = await sbx.files.rename('notes.txt', 'made/notes.txt')
ok(moved.path === '/home/user/made/notes.txt' && await sbx.files.exists('notes.txt') === false,
  'files.rename', JSON.stringify(moved))
await sbx.files.remove('made')
ok(await sbx.files.exists('made') === false, 'files.remove (recursive)')
const escape = await rejects(sbx.files.read('/etc/passwd'))
ok(escape !== null, 'a path outside the home directory is refused', escape)
const missing = await rejects(sbx.files.read('missing.txt'))
ok(missing !== null && /does not exist/.test(missing.message), 'reading a missing file: not found', missing)

// Pause: the kernel tier cannot freeze a sandbox, so pause is refused with cordon's reason
// and the sandbox runs on (test-e2b-pause covers a tier that can).
const np = await rejects(sbx.pause())
ok(np !== null && /does not support pause/.test(np.message), 'pause on a tier that cannot: cordon\'s reason', np)
ok((await sbx.commands.run('echo still')).stdout === 'still\n', 'the refused pause leaves it running')

// Watching a directory: files.watchDir sees what is made, written and removed in it (and
// below it when recursive), stop() ends the watch, a missing directory is refused.
await sbx.files.makeDir('watched/sub')
const changes = []
const watch = await sbx.files.watchDir('watched', (ev) => changes.push(`${ev.type} ${ev.name}`),
  { recursive: true })
await sbx.files.write('watched/a.txt', 'one')
await sbx.commands.run('echo more >> watched/a.txt; echo deep > watched/sub/b.txt; rm watched/a.txt')
const seenAll = () => ['create a.txt', 'write a.txt', 'create sub/b.txt', 'remove a.txt']
  .every((c) => changes.includes(c))
ok(await waitFor(seenAll, 10_000), 'watchDir: create, write and remove, in a subdirectory too',
  JSON.stringify(changes))
await watch.stop()
await new Promise((resolve) => setTimeout(resolve, 500))
const stopped = changes.length
await sbx.files.write('watched/late.txt', 'x')
await new Promise((resolve) => setTimeout(resolve, 700))
ok(changes.length === stopped, 'nothing after stop()', JSON.stringify(changes.slice(stopped)))
const flat = []
const flatWatch = await sbx.files.watchDir('watched', (ev) => flat.push(ev.name))
await sbx.files.write('watched/sub/c.txt', 'x')
await sbx.files.write('watched/top.txt', 'x')
ok(await waitFor(() => flat.includes('top.txt'), 10_000) && !flat.includes('sub/c.txt'),
  'a watch that is not recursive sees its directory only', JSON.stringify(flat))
await flatWatch.stop()
const nowatch = await rejects(sbx.files.watchDir('no-such-dir', () => {}))
ok(nowatch !== null, 'watching a missing directory is refused', nowatch)
ok((await sbx.commands.list()).every((p) => p.config.cmd !== '/usr/bin/python3'),
  'the watchers are not listed as commands')
await sbx.files.remove('watched')

// Timeout extended.
const before = await sbx.getInfo()
await sbx.setTimeout(300_000)
const after = await sbx.getInfo()
ok(after.endAt.getTime() - before.endAt.getTime() > 200_000, 'setTimeout extends endAt',
  `${before.endAt.toISOString()} -> ${after.endAt.toISOString()}`)
const listed = await Sandbox.list().nextItems()
ok(listed.some((x) => x.sandboxId === sbx.sandboxId), 'Sandbox.list shows it', JSON.stringify(listed))

// Killed: gone from the control plane and from envd.
ok(await sbx.kill() === true, 'kill the sandbox')
ok(await Sandbox.kill(sbx.sandboxId) === false, 'killing it again: not found (404)')
const gone = await rejects(sbx.commands.run('true'))
ok(gone !== null, 'a killed sandbox runs nothing (502)', gone)
const unknown = await rejects(Sandbox.getInfo('i00000000000000000000'))
ok(unknown !== null && /not found/i.test(unknown.message), 'an unknown sandbox: not found', unknown)

// A sandbox whose timeout lapses is killed.
const short = await Sandbox.create('base', { timeoutMs: 1_000 })
await new Promise((resolve) => setTimeout(resolve, 2_500))
const lapsed = await rejects(short.getInfo())
ok(lapsed !== null && /not found/i.test(lapsed.message), 'a sandbox is killed when its timeout lapses', lapsed)

// The key and the policy.
const bad = await rejects(Sandbox.create('base', { apiKey: 'e2b_' + '0'.repeat(40) }))
ok(bad instanceof AuthenticationError, 'a bad API key: 401', bad)
const refused = await rejects(Sandbox.create('strict'))
ok(refused !== null && /403/.test(refused.message) && /untrusted work requires microvm/.test(refused.message),
  'a refused trust level carries cordon\'s reason', refused?.message)
const unknownTemplate = await rejects(Sandbox.create('no-such-template'))
ok(unknownTemplate !== null && /not in the policy/.test(unknownTemplate.message), 'an unknown template', unknownTemplate)

// The per-key quota (the test's policy allows 3).
const held = []
for (let i = 0; i < 3; i++) held.push(await Sandbox.create('base', { timeoutMs: 60_000 }))
const over = await rejects(Sandbox.create('base'))
ok(over instanceof RateLimitError, 'the per-key quota: 429', over)
for (const h of held) await h.kill()
const again = await Sandbox.create('base')
ok(again.sandboxId !== undefined, 'a killed sandbox gives its quota slot back')
// Left running on purpose: test-e2b-sdk.sh stops the server now, which must kill it.
const held2 = await again.commands.run(`sleep ${process.env.CORDON_TEST_MARK}`, { background: true })
console.log(`# sdk-tests ${n}`)
console.log('# holding')
const ended = await rejects(held2.wait())
console.log(`# the held command ended: ${ended}`)
process.exit(failed ? 1 : 0)
