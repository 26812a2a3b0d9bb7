/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The wire protocol between the host (agent/client.c, linked by every plugin
 * family that runs the agent) and cordon-agent (inside the sandbox: a
 * container's pid 1, or a one-shot reached through `engine exec`).
 * Shared by both sides and dependency-free: the agent is a static binary.
 *
 * Agent -> host (its stdout): frames of one type byte, a 4-byte big-endian
 * payload length, then the payload. Frames keep the work's stdout and stderr
 * apart, carry the exit status (the engine's own exit code cannot tell
 * "exited 137" from "killed", nor a timeout or an OOM kill from either), and
 * let file operations return data and paths without a shell.
 *
 * Host -> agent `run` (its stdin): "<n>\n", then n bytes of environment
 * ("KEY=VALUE\0" each), then the work's stdin until EOF. The environment
 * travels on stdin because engine CLIs put `--env` values in their own argv,
 * where any local user can read them (/proc/PID/cmdline) and engines log them.
 *
 * Host -> agent `session` (pid 1 of a container started attached, `run -i`):
 * request frames in the same format on its stdin. A run is one RUN frame
 * (agent_run_request: "<timeout_ms>\0<cap>\0<workdir>\0<argc>\0", argc
 * argv strings, then "KEY=VALUE\0" environment strings to the end), STDIN
 * frames of the work's input and one STDIN_END; CANCEL while it runs. The
 * answers are those of `run` (HELLO, STARTED once the work runs, STDOUT, STDERR, STATUS or ERROR). END,
 * or EOF on its stdin, ends the session: the agent exits, so does the
 * container. (END first: a forked copy of the host's write end must not keep
 * a session alive.)
 * A file operation is one FILE frame ("OP\0ARG\0[ARG\0]": the arguments
 * `exec` gives the agent for read, write, glob or walk), STDIN frames of the
 * data a write stores, and one STDIN_END. The answers are those of the exec
 * path (DATA or PATH frames, then DONE or ERROR), and always a last STATUS
 * frame that ends the answer.
 * `relay SOCKET` is a FILE request of the session alone (gVisor's listen op,
 * agent/relay.c): the agent listens on 127.0.0.1:0 inside, answers the port as one
 * DATA frame (decimal), DONE and STATUS, and a process of its own carries each
 * connection to the host's unix socket SOCKET (under AGENT_RELAY_DIR). `exec` refuses it.
 * In a microVM guest SOCKET is AGENT_RELAY_CHANNEL "N": the connections become streams on
 * listener N of the guest's network channel (common/netmux.h), one process of the
 * agent's carrying them all.
 * A microVM guest's agent (agent/guest.c) takes one IDENTITY frame first, before
 * any other request, and stays root until it: "<machine-id>\0<hostname>\0<realtime
 * ns>\0" then AGENT_IDENTITY_ENTROPY_MIN..MAX bytes of the host's randomness to the end.
 * It mixes the bytes into the guest kernel's pool and reseeds its CRNG, writes
 * /etc/machine-id, sets the hostname and the clock, then drops to the work's uid for
 * good; the answer is DONE (or ERROR: the session then ends) and a last STATUS. A clone
 * restored from a template (plugins/qemu/clone.c) gets its own this way.
 * A run on a terminal is one TTY_RUN frame ("<rows>\0<cols>\0" then a RUN payload) and
 * one STDIN_END: the agent makes a pseudo-terminal inside the sandbox of that size, the
 * work's stdin, stdout and stderr and the controlling terminal of its session (setsid,
 * TIOCSCTTY). While it runs the host sends TTY_IN frames (bytes typed into the terminal),
 * TTY_RESIZE ("<rows> <cols>": the work gets SIGWINCH) and CANCEL; the terminal's output
 * comes as STDOUT frames, the end as any run's (STATUS or ERROR). A terminal has no EOF:
 * the work ends by itself, or is cancelled.
 * Nothing of the run is in any engine's argv.
 */
#ifndef CORDON_AGENT_PROTOCOL_H
#define CORDON_AGENT_PROTOCOL_H

#include <stddef.h>
#include <stdint.h>

/* Where the agent and the sandbox root are, inside the sandbox. */
#define AGENT_PATH "/.cordon-agent"
#define AGENT_SANDBOX_ROOT "/work"
#define AGENT_SCRATCH_PATH "/tmp"
/* The uid and gid a microVM guest's agent and work run as, never root. */
#define AGENT_GUEST_UID 1000
/* A microVM guest's /work shared by virtio-fs (plugins/qemu/virtiofs.c): the device's tag,
 * and the kernel command line's key, cordon.virtiofs=rw or =ro. */
#define AGENT_VIRTIOFS_TAG "cordon.work"
#define AGENT_VIRTIOFS_ARG "cordon.virtiofs="
/* gVisor: the host's unix sockets the agent's relays connect to (agent/relay.c) */
#define AGENT_RELAY_DIR "/.cordon-relay"
/* A microVM guest: `relay channel:N` carries each connection as a stream on the guest's
 * network channel (its second port), to the host's listener N (plugins/qemu/net.c) */
#define AGENT_RELAY_CHANNEL "channel:"
/* What a stream the host opens on that channel is for: a port of the guest's loopback (1
 * to 65535: a served port's connections), or AGENT_CHANNEL_SESSION, one more session of the
 * agent's protocol (a run while another holds the first: serve). */
#define AGENT_CHANNEL_SESSION 0x10000u

#define AGENT_FRAME_HEADER 5
#define AGENT_FRAME_MAX (64u * 1024) /* largest payload the agent sends */
#define AGENT_ENV_MAX (1u << 20)     /* largest environment block it accepts */

enum agent_frame_type {
	AGENT_FRAME_HELLO = 'I',   /* payload: the agent's pid inside the container (decimal) */
	AGENT_FRAME_STDOUT = 'O',  /* the work's stdout bytes */
	AGENT_FRAME_STDERR = 'E',  /* the work's stderr bytes */
	AGENT_FRAME_STATUS = 'S',  /* "exit N" | "signal N", then words: timeout cancelled oom */
	AGENT_FRAME_ERROR = 'X',   /* "<code> <errno> <message>": the operation did not happen */
	AGENT_FRAME_DATA = 'D',    /* read: file bytes */
	AGENT_FRAME_PATH = 'P',    /* glob, walk: one path relative to the sandbox root */
	AGENT_FRAME_DONE = 'K',    /* a file operation completed; payload: optional text */
	AGENT_FRAME_STARTED = 'R', /* the work runs; payload: its pid in the sandbox (decimal) */
};

/* Host -> `session` agent. */
enum agent_request_type {
	AGENT_REQ_RUN = 'R',       /* a run (see above) */
	AGENT_REQ_STDIN = 'D',     /* the work's stdin bytes */
	AGENT_REQ_STDIN_END = 'F', /* end of the work's stdin: the work starts */
	AGENT_REQ_CANCEL = 'C',    /* kill the running work (as `kill`) */
	AGENT_REQ_END = 'Q',       /* end the session (as EOF) */
	AGENT_REQ_FILE = 'O',      /* a file operation (see above) */
	AGENT_REQ_IDENTITY = 'N',  /* a guest's first request: reseed and identity (above) */
	/* the terminal frames (see above) */
	AGENT_REQ_TTY_RUN = 'T',    /* a run on a terminal of the sandbox's */
	AGENT_REQ_TTY_IN = 'Y',     /* bytes typed into the running work's terminal */
	AGENT_REQ_TTY_RESIZE = 'W', /* the terminal's new size: "<rows> <cols>" */
};
#define AGENT_IDENTITY_ENTROPY_MIN 32u
#define AGENT_IDENTITY_ENTROPY_MAX 512u
#define AGENT_FILE_REQUEST_MAX (16u * 1024)            /* largest FILE payload */
#define AGENT_REQUEST_MAX (AGENT_ENV_MAX + (1u << 20)) /* largest RUN payload */

static inline void agent_frame_header(uint8_t out[AGENT_FRAME_HEADER], uint8_t type, uint32_t len)
{
	out[0] = type;
	out[1] = (uint8_t)(len >> 24);
	out[2] = (uint8_t)(len >> 16);
	out[3] = (uint8_t)(len >> 8);
	out[4] = (uint8_t)len;
}

static inline uint32_t agent_frame_length(const uint8_t hdr[AGENT_FRAME_HEADER])
{
	return (uint32_t)hdr[1] << 24 | (uint32_t)hdr[2] << 16 | (uint32_t)hdr[3] << 8 | hdr[4];
}

#endif /* CORDON_AGENT_PROTOCOL_H */
