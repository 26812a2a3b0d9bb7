/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Kernel-carried connection pairs (sockmap.h), on raw bpf(2): the program
 * is fourteen instructions, which libbpf would not make shorter. */
#include "config.h"

#include "net/sockmap.h"

#include <errno.h>
#include <linux/bpf.h>
#include <linux/tcp.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef SO_COOKIE
#define SO_COOKIE 57
#endif

/* Two maps, both keyed by a socket's cookie (SO_COOKIE: unique for the
 * boot, whatever the socket's network namespace, unlike a 4-tuple):
 * "peers" holds each socket's peer under its own cookie, and is what the
 * program looks up; "carried" holds each socket under its own cookie and is
 * what the program is attached to. A socket joins "carried" only once both
 * of the pair are in "peers", so the program never runs for a socket whose
 * peer it cannot find (it would drop the bytes). */
struct net_sockmap {
	int peers;
	int carried;
	int prog;
};

static long sys_bpf(int cmd, union bpf_attr *attr)
{
	return syscall(SYS_bpf, cmd, attr, sizeof(*attr));
}

static int map_new(unsigned entries)
{
	union bpf_attr a;
	memset(&a, 0, sizeof(a));
	a.map_type = BPF_MAP_TYPE_SOCKHASH;
	a.key_size = sizeof(uint64_t);
	a.value_size = sizeof(uint32_t); /* a descriptor, on update */
	a.max_entries = entries;
	int fd = (int)sys_bpf(BPF_MAP_CREATE, &a); /* bpf(2) descriptors are close-on-exec */
	return fd < 0 ? -errno : fd;
}

#define INSN(c, d, s, o, i) \
	((struct bpf_insn){ .code = (c), .dst_reg = (d), .src_reg = (s), .off = (o), .imm = (i) })

/* An sk_skb stream verdict: key = bpf_get_socket_cookie(skb);
 * return bpf_sk_redirect_hash(skb, peers, &key, 0), flags 0 being the peer's
 * send side. A socket missing from peers (never the case, see above) has its
 * bytes dropped: fail closed. An empty skb (a bare FIN; the FIN itself is in
 * the socket's state) is dropped: redirected, the kernel's send of its zero
 * bytes counts as a broken pipe and stops the peer's sending (seen on 6.18). */
static int prog_load(int peers, char *log, size_t loglen)
{
	const struct bpf_insn insns[] = {
		INSN(BPF_LDX | BPF_MEM | BPF_W, BPF_REG_0, BPF_REG_1,
		     offsetof(struct __sk_buff, len), 0),
		INSN(BPF_JMP | BPF_JNE | BPF_K, BPF_REG_0, 0, 2, 0),
		INSN(BPF_ALU64 | BPF_MOV | BPF_K, BPF_REG_0, 0, 0, SK_DROP),
		INSN(BPF_JMP | BPF_EXIT, 0, 0, 0, 0),
		INSN(BPF_ALU64 | BPF_MOV | BPF_X, BPF_REG_6, BPF_REG_1, 0, 0),
		INSN(BPF_JMP | BPF_CALL, 0, 0, 0, BPF_FUNC_get_socket_cookie),
		INSN(BPF_STX | BPF_MEM | BPF_DW, BPF_REG_10, BPF_REG_0, -8, 0),
		INSN(BPF_ALU64 | BPF_MOV | BPF_X, BPF_REG_1, BPF_REG_6, 0, 0),
		INSN(BPF_LD | BPF_DW | BPF_IMM, BPF_REG_2, BPF_PSEUDO_MAP_FD, 0, peers),
		INSN(0, 0, 0, 0, 0),
		INSN(BPF_ALU64 | BPF_MOV | BPF_X, BPF_REG_3, BPF_REG_10, 0, 0),
		INSN(BPF_ALU64 | BPF_ADD | BPF_K, BPF_REG_3, 0, 0, -8),
		INSN(BPF_ALU64 | BPF_MOV | BPF_K, BPF_REG_4, 0, 0, 0),
		INSN(BPF_JMP | BPF_CALL, 0, 0, 0, BPF_FUNC_sk_redirect_hash),
		INSN(BPF_JMP | BPF_EXIT, 0, 0, 0, 0),
	};
	union bpf_attr a;
	memset(&a, 0, sizeof(a));
	a.prog_type = BPF_PROG_TYPE_SK_SKB;
	a.insns = (uint64_t)(uintptr_t)insns;
	a.insn_cnt = sizeof(insns) / sizeof(insns[0]);
	a.license = (uint64_t)(uintptr_t) "LGPL-2.1-or-later";
	a.log_buf = (uint64_t)(uintptr_t)log;
	a.log_size = (uint32_t)loglen;
	a.log_level = log ? 1 : 0;
	int fd = (int)sys_bpf(BPF_PROG_LOAD, &a);
	return fd < 0 ? -errno : fd;
}

static int prog_attach(int prog, int map)
{
	union bpf_attr a;
	memset(&a, 0, sizeof(a));
	a.target_fd = (uint32_t)map;
	a.attach_bpf_fd = (uint32_t)prog;
	a.attach_type = BPF_SK_SKB_STREAM_VERDICT;
	return sys_bpf(BPF_PROG_ATTACH, &a) < 0 ? -errno : 0;
}

static void close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

static int self_check(net_sockmap *m);

void net_sockmap_free(net_sockmap *m)
{
	if (!m)
		return;
	close_fd(&m->prog);
	close_fd(&m->carried);
	close_fd(&m->peers);
	free(m);
}

int net_sockmap_new(unsigned max_pairs, net_sockmap **ret, char *why, size_t whylen)
{
	net_sockmap *m = calloc(1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	m->prog = m->carried = -1;
	const char *step = "the peers map";
	int r = m->peers = map_new(2 * max_pairs);
	if (r >= 0) {
		step = "the carried map";
		r = m->carried = map_new(2 * max_pairs);
	}
	if (r >= 0) {
		step = "the verdict program";
		r = m->prog = prog_load(m->peers, NULL, 0);
	}
	if (r >= 0) {
		step = "attaching the program";
		r = prog_attach(m->prog, m->carried);
	}
	if (r >= 0) {
		step = "the self-check (bytes and a FIN through a joined pair)";
		r = self_check(m) > 0 ? 0 : -EPROTO;
	}
	if (r < 0) {
		snprintf(why, whylen, "%s: %s", step, strerror(-r));
		net_sockmap_free(m);
		return r;
	}
	*ret = m;
	return 0;
}

static int cookie_of(int fd, uint64_t *ret)
{
	socklen_t len = sizeof(*ret);
	return getsockopt(fd, SOL_SOCKET, SO_COOKIE, ret, &len) < 0 ? -errno : 0;
}

static int map_put(int map, uint64_t key, int fd)
{
	uint32_t value = (uint32_t)fd;
	union bpf_attr a;
	memset(&a, 0, sizeof(a));
	a.map_fd = (uint32_t)map;
	a.key = (uint64_t)(uintptr_t)&key;
	a.value = (uint64_t)(uintptr_t)&value;
	a.flags = BPF_NOEXIST;
	return sys_bpf(BPF_MAP_UPDATE_ELEM, &a) < 0 ? -errno : 0;
}

static void map_del(int map, uint64_t key)
{
	union bpf_attr a;
	memset(&a, 0, sizeof(a));
	a.map_fd = (uint32_t)map;
	a.key = (uint64_t)(uintptr_t)&key;
	sys_bpf(BPF_MAP_DELETE_ELEM, &a);
}

/* Runs the socket's data-ready hook, now the verdict's, over what it
 * received before it joined: TCP signals readiness again on a change of
 * SO_RCVLOWAT. */
static int kick(int fd)
{
	int one = 1;
	return setsockopt(fd, SOL_SOCKET, SO_RCVLOWAT, &one, sizeof(one)) < 0 ? -errno : 0;
}

int net_sockmap_join(net_sockmap *m, int a, int b)
{
	uint64_t ka = 0, kb = 0;
	int r = cookie_of(a, &ka);
	if (r == 0)
		r = cookie_of(b, &kb);
	if (r < 0)
		return r;
	if ((r = map_put(m->peers, ka, b)) < 0)
		return r;
	if ((r = map_put(m->peers, kb, a)) < 0 || (r = map_put(m->carried, ka, a)) < 0 ||
	    (r = map_put(m->carried, kb, b)) < 0) {
		map_del(m->carried, ka);
		map_del(m->peers, kb);
		map_del(m->peers, ka);
		return r;
	}
	if (kick(a) < 0 || kick(b) < 0)
		return -ECONNABORTED; /* joined, and bytes may wait unseen: the caller closes both */
	return 0;
}

static int tcp_info_of(int fd, struct tcp_info *ti)
{
	socklen_t len = sizeof(*ti);
	memset(ti, 0, sizeof(*ti));
	if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, ti, &len) < 0)
		return -errno;
	return len >= offsetof(struct tcp_info, tcpi_bytes_retrans) + sizeof(ti->tcpi_bytes_retrans)
		       ? 0
		       : -ENOSYS;
}

/* from's bytes_received counts its peer's FIN as one (the sequence number
 * it takes); to's bytes written is what was sent once plus what waits. */
int net_sockmap_flushed(int from, int to)
{
	struct tcp_info in = { 0 }, out = { 0 };
	int r = tcp_info_of(from, &in);
	if (r == 0)
		r = tcp_info_of(to, &out);
	if (r < 0)
		return r;
	uint64_t received = in.tcpi_bytes_received ? in.tcpi_bytes_received - 1 : 0;
	uint64_t written = out.tcpi_bytes_sent - out.tcpi_bytes_retrans + out.tcpi_notsent_bytes;
	return written >= received;
}

/* ---- the self-check: this kernel carries bytes and FINs as relied on ---------------- */

#define CHECK_BYTES 65536
#define CHECK_MS 1000

static int loopback_pair(int lsn, const struct sockaddr_in *a, int *ret_client)
{
	int c = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (c < 0)
		return -errno;
	if (connect(c, (const struct sockaddr *)a, sizeof(*a)) < 0) {
		int e = -errno;
		close(c);
		return e;
	}
	int s = accept4(lsn, NULL, NULL, SOCK_CLOEXEC);
	if (s < 0) {
		int e = -errno;
		close(c);
		return e;
	}
	*ret_client = c;
	return s;
}

/* All of n bytes of value v from fd, then (eof) its EOF, each within CHECK_MS. */
static bool receive_all(int fd, size_t n, char v, bool eof)
{
	char buf[8192];
	for (size_t got = 0; got < n || eof;) {
		struct pollfd p = { fd, POLLIN, 0 };
		if (poll(&p, 1, CHECK_MS) != 1)
			return false;
		ssize_t r = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
		if (r == 0)
			return got == n;
		if (r < 0 || got + (size_t)r > n)
			return false;
		for (ssize_t i = 0; i < r; i++)
			if (buf[i] != v)
				return false;
		got += (size_t)r;
		if (got == n && !eof)
			return true;
	}
	return true;
}

static bool send_all(int fd, size_t n, char v)
{
	char buf[8192];
	memset(buf, v, sizeof(buf));
	for (size_t off = 0; off < n;) {
		ssize_t w = send(fd, buf, n - off < sizeof(buf) ? n - off : sizeof(buf),
				 MSG_NOSIGNAL);
		if (w <= 0)
			return false;
		off += (size_t)w;
	}
	return true;
}

/* client -> a ~ b -> server and back, then client's FIN passed on as the
 * forwarder does (POLLRDHUP, then net_sockmap_flushed): every byte arrives,
 * then the FIN. */
static bool carries(net_sockmap *m, int lsn, const struct sockaddr_in *addr)
{
	int client = -1, server = -1;
	int a = loopback_pair(lsn, addr, &client);
	int b = a < 0 ? -1 : loopback_pair(lsn, addr, &server);
	bool ok = b >= 0 && send_all(client, 100, 'q') && net_sockmap_join(m, a, b) == 0 &&
		  receive_all(server, 100, 'q', false) && send_all(server, CHECK_BYTES, 'r') &&
		  receive_all(client, CHECK_BYTES, 'r', false) &&
		  send_all(client, CHECK_BYTES, 's') && shutdown(client, SHUT_WR) == 0;
	struct pollfd p = { a, POLLRDHUP, 0 };
	ok = ok && poll(&p, 1, CHECK_MS) == 1 && !(p.revents & POLLERR);
	int f = 0;
	for (int i = 0; ok && i < CHECK_MS && (f = net_sockmap_flushed(a, b)) == 0; i++)
		poll(NULL, 0, 1);
	ok = ok && f == 1 && shutdown(b, SHUT_WR) == 0 &&
	     receive_all(server, CHECK_BYTES, 's', true);
	int fds[] = { client, server, a, b };
	for (int i = 0; i < 4; i++)
		if (fds[i] >= 0)
			close(fds[i]);
	return ok;
}

/* Once per process: whether the kernel carries a pair as relied on here
 * (bytes queued before the join, both ways, the FIN's bookkeeping). A kernel
 * that does otherwise keeps the relay. */
static int self_check(net_sockmap *m)
{
	static int verdict; /* 0 unknown, 1 good, -1 not */
	int v = __atomic_load_n(&verdict, __ATOMIC_ACQUIRE);
	if (v)
		return v;
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t alen = sizeof(a);
	int lsn = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (lsn < 0)
		return -1; /* not the kernel's fault: looked at again next time */
	bool ok = bind(lsn, (struct sockaddr *)&a, sizeof(a)) == 0 && listen(lsn, 4) == 0 &&
		  getsockname(lsn, (struct sockaddr *)&a, &alen) == 0 && carries(m, lsn, &a);
	close(lsn);
	v = ok ? 1 : -1;
	__atomic_store_n(&verdict, v, __ATOMIC_RELEASE);
	return v;
}

static unsigned map_entries(int map)
{
	uint64_t key, next;
	unsigned n = 0;
	union bpf_attr a;
	memset(&a, 0, sizeof(a));
	a.map_fd = (uint32_t)map;
	a.key = 0; /* the first key */
	a.next_key = (uint64_t)(uintptr_t)&next;
	while (sys_bpf(BPF_MAP_GET_NEXT_KEY, &a) == 0 && n < 1u << 20) {
		n++;
		key = next;
		a.key = (uint64_t)(uintptr_t)&key;
	}
	return n;
}

/* Both maps: a socket closed leaves each (the kernel unlinks every entry
 * whose value it is), so a pair half gone shows as an odd count here. */
unsigned net_sockmap_count(const net_sockmap *m)
{
	return map_entries(m->peers) + map_entries(m->carried);
}
