/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The workspace stream: a directory tree as one byte stream, so that a microVM guest's
 * /work is filled from the host's workspace at open and, for a writable workspace, copied
 * back at close (plugins/qemu/workspace.c on the host, cordon-agent's `unpack` and `pack`
 * in the guest). One format, one packer, one unpacker, for both directions.
 *
 * A stream is records, each a 25-byte header (big-endian: type u8, mode u16, name length
 * u16, size u64, mtime seconds u64, mtime nanoseconds u32), the name, then `size` bytes of
 * data. Types: 'd' a directory, 'f' a regular file, 'e' the end (a stream without it is
 * cut short, and is refused). Nothing else exists: a symbolic link, a hard link, a device,
 * a FIFO, a socket, an owner or a set-id bit cannot be expressed.
 *
 * Packing walks from a directory descriptor with O_NOFOLLOW and never leaves its file
 * system: symbolic links, devices, FIFOs, sockets and anything on another mount are left
 * out (counted in the report); set-id and sticky bits are dropped; hard links become
 * separate files. A staging directory at the top (an unpack that died) is left out too. More than the limits' files or bytes fails the pack.
 *
 * Unpacking treats the stream as hostile. A name must be relative, of components neither
 * empty, "." nor "..", at most 4095 bytes; sizes and counts are checked against the limits
 * in the header, before any data is written. Every file is written first into a staging
 * directory made under the root (mode 0700, a random name), and only a stream that ended
 * well is committed: each directory made (mkdirat under its parent, resolved beneath the
 * root by pathres), each file renamed over its name (a symbolic link there is replaced,
 * never followed). A refused stream leaves the tree as it was.
 */
#pragma once

#include "visibility.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define WSARC_HEADER 25
#define WSARC_NAME_MAX 4095
#define WSARC_STAGE_PREFIX ".cordon-unpack-"

typedef struct wsarc_limits {
	uint64_t max_bytes; /* the files' data, all together */
	uint64_t max_files; /* entries: files and directories */
} wsarc_limits;

typedef struct wsarc_report {
	uint64_t files, dirs, bytes;
	/* pack: what was left out */
	uint64_t symlinks, special, other_mounts, setid;
	/* unpack: files already there with the same size and mtime (left alone), and entries
	 * that could not be committed (a directory where a file goes, or the reverse) */
	uint64_t unchanged, conflicts;
	const char *over; /* the limit a failure ran into ("bytes", "files"), or NULL */
} wsarc_report;

typedef int (*wsarc_emit_fn)(void *ctx, const void *data, size_t len);

/* Streams the tree under root_fd to emit (non-zero from emit stops it and is returned).
 * -EFBIG / -E2BIG over the limits (rep->over says which), -ENAMETOOLONG, or an errno. */
int wsarc_pack(int root_fd, const wsarc_limits *lim, wsarc_emit_fn emit, void *ctx,
	       wsarc_report *rep) CORDON_INTERNAL;

typedef struct wsarc_unpack_opts {
	wsarc_limits limits;
	mode_t mode_mask; /* applied to every mode the stream claims (0755: no g/o write) */
	bool chown;       /* give what is created uid:gid */
	uid_t uid;
	gid_t gid;
} wsarc_unpack_opts;

typedef struct wsarc_unpack wsarc_unpack;

/* Makes the staging directory under root_fd (kept as a descriptor by the unpack). NULL
 * with errno set. */
wsarc_unpack *wsarc_unpack_new(int root_fd, const wsarc_unpack_opts *opts) CORDON_INTERNAL;
/* Feeds the stream's bytes as they come; the first error sticks and is returned again. */
int wsarc_unpack_feed(wsarc_unpack *u, const void *data, size_t len) CORDON_INTERNAL;
/* Commits a stream that ended well (-EPROTO if it did not), then removes the staging.
 * Returns 0, the first commit error, or the stream's error (nothing committed then). */
int wsarc_unpack_finish(wsarc_unpack *u, wsarc_report *rep) CORDON_INTERNAL;
/* Removes the staging (what finish did not commit) and frees u. NULL is fine. */
void wsarc_unpack_free(wsarc_unpack *u) CORDON_INTERNAL;

/* Whether name is one a stream may carry (relative, no "", ".", ".." component, not the
 * staging's). */
bool wsarc_name_ok(const char *name, size_t len) CORDON_INTERNAL;
