/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Secret grants (secret.h). */
#include "config.h"

#include "secret.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* A secret file larger than this is a misconfiguration, not a key. */
#define SECRET_FILE_MAX ((off_t)64 * 1024)

static bool env_name_valid(const char *s)
{
	if (!s || !(g_ascii_isalpha(*s) || *s == '_'))
		return false;
	for (; *s; s++)
		if (!(g_ascii_isalnum(*s) || *s == '_'))
			return false;
	return true;
}

void secret_free(char *s)
{
	if (!s)
		return;
	explicit_bzero(s, strlen(s));
	g_free(s);
}

/* Why st (a secret file's) is not private to its owner, or NULL. */
static const char *file_not_private(const struct stat *st)
{
	if (st->st_uid != 0 && st->st_uid != geteuid())
		return "owned by another user (it must be root's or this user's)";
	if (st->st_mode & (S_IRWXG | S_IRWXO))
		return "readable or writable by others (it must be mode 0600 or 0400)";
	return NULL;
}

/* Reads what is left of fd into buf (cap bytes of room); one trailing
 * newline (and a CR before it) is dropped, as editors add them. */
static const char *read_all(int fd, char *buf, size_t cap)
{
	size_t n = 0;
	ssize_t k;
	while (n < cap && (k = read(fd, buf + n, cap - n)) != 0) {
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0 || n + (size_t)k >= cap)
			return k < 0 ? g_strerror(errno) : "changed while being read";
		n += (size_t)k;
	}
	if (n > 0 && buf[n - 1] == '\n')
		buf[--n] = '\0';
	if (n > 0 && buf[n - 1] == '\r')
		buf[--n] = '\0';
	if (n == 0)
		return "empty";
	return memchr(buf, '\0', n) ? "contains a NUL byte" : NULL;
}

/* A whole secret file into memory the caller owns. */
static int read_file(const char *path, bool private_file, char **ret, const char **ret_why)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0) {
		*ret_why = g_strerror(errno);
		return -errno;
	}
	struct stat st;
	int r = 0;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		*ret_why = "not a regular file";
		r = -EINVAL;
	} else if (private_file && (*ret_why = file_not_private(&st))) {
		r = -EPERM;
	} else if (st.st_size > SECRET_FILE_MAX) {
		*ret_why = "larger than 64 KiB";
		r = -EFBIG;
	} else {
		size_t cap = (size_t)st.st_size + 1;
		char *buf = g_malloc0(cap + 1);
		if ((*ret_why = read_all(fd, buf, cap))) {
			explicit_bzero(buf, cap + 1);
			g_free(buf);
			r = -EINVAL;
		} else {
			*ret = buf;
		}
	}
	close(fd);
	return r;
}

int secret_resolve(const cfg_node *n, bool private_file, char **ret, char *why, size_t whylen)
{
	if (!n || n->kind != CFG_MAP || n->keys->len != 1) {
		snprintf(why, whylen,
			 "a secret must be {env: NAME} or {file: PATH}; "
			 "secrets are never written into the policy");
		return -EINVAL;
	}
	const char *how = ((const cfg_node *)n->keys->pdata[0])->scalar;
	const cfg_node *v = n->items->pdata[0];
	if (v->kind != CFG_SCALAR) {
		snprintf(why, whylen, "%s: expected a string", how);
		return -EINVAL;
	}
	if (strcmp(how, "env") == 0) {
		if (!env_name_valid(v->scalar)) {
			snprintf(why, whylen, "'%s' is not an environment variable name",
				 v->scalar);
			return -EINVAL;
		}
		const char *val = g_getenv(v->scalar);
		if (!val || !*val) {
			snprintf(why, whylen, "environment variable %s is not set", v->scalar);
			return -ENOENT;
		}
		*ret = g_strdup(val);
		return 0;
	}
	if (strcmp(how, "file") == 0) {
		if (v->scalar[0] != '/') {
			snprintf(why, whylen, "secret file '%s' is not an absolute path",
				 v->scalar);
			return -EINVAL;
		}
		const char *reason = NULL;
		int r = read_file(v->scalar, private_file, ret, &reason);
		if (r < 0)
			snprintf(why, whylen, "secret file %s: %s", v->scalar, reason);
		return r;
	}
	snprintf(why, whylen, "a secret must be {env: NAME} or {file: PATH}, not {%s: ...}", how);
	return -EINVAL;
}
