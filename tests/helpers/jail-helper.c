/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * jail-helper: small behaviours the local driver's tests run inside a sandbox.
 *
 *   fds                   print the open descriptors (one per line)
 *   ids                   print "pid pgid sid"
 *   deathsig              print the parent-death signal number
 *   flood BYTES           write BYTES bytes to stdout
 *   both                  write "out" to stdout and "err" to stderr
 *   grandchild LOCK       fork a grandchild that holds flock(LOCK) and sleeps;
 *                         the leader prints "locked" once it is held, sleeps
 *   grandchild-exit LOCK  the same, but the leader exits 0 once it is held
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <unistd.h>

static int print_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	if (!d)
		return 2;
	struct dirent *de;
	while ((de = readdir(d)))
		if (de->d_name[0] != '.' && atoi(de->d_name) != dirfd(d))
			printf("%s\n", de->d_name);
	closedir(d);
	return 0;
}

static int flood(long long bytes)
{
	static char buf[1 << 16];
	memset(buf, 'x', sizeof(buf));
	while (bytes > 0) {
		size_t n = bytes > (long long)sizeof(buf) ? sizeof(buf) : (size_t)bytes;
		ssize_t w = write(1, buf, n);
		if (w < 0)
			return errno == EPIPE ? 0 : 2;
		bytes -= w;
	}
	return 0;
}

/* The grandchild takes the lock and tells the leader through a pipe. */
static int grandchild(const char *lock, int leader_exits)
{
	int p[2];
	if (pipe(p) < 0)
		return 2;
	pid_t pid = fork();
	if (pid < 0)
		return 2;
	if (pid == 0) {
		close(p[0]);
		int fd = open(lock, O_RDWR | O_CREAT, 0600);
		if (fd < 0 || flock(fd, LOCK_EX) < 0)
			_exit(3);
		if (write(p[1], "L", 1) != 1)
			_exit(3);
		close(p[1]);
		for (;;)
			pause();
	}
	close(p[1]);
	char c;
	if (read(p[0], &c, 1) != 1)
		return 4;
	printf("locked\n");
	fflush(stdout);
	if (leader_exits)
		return 0;
	for (;;)
		pause();
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "";
	if (strcmp(mode, "fds") == 0)
		return print_fds();
	if (strcmp(mode, "ids") == 0) {
		printf("%d %d %d\n", (int)getpid(), (int)getpgid(0), (int)getsid(0));
		return 0;
	}
	if (strcmp(mode, "deathsig") == 0) {
		int sig = -1;
		if (prctl(PR_GET_PDEATHSIG, &sig) < 0)
			return 2;
		printf("%d\n", sig);
		return 0;
	}
	if (strcmp(mode, "flood") == 0 && argc > 2)
		return flood(atoll(argv[2]));
	if (strcmp(mode, "both") == 0) {
		fputs("out", stdout);
		fflush(stdout);
		fputs("err", stderr);
		return 0;
	}
	if (strcmp(mode, "grandchild") == 0 && argc > 2)
		return grandchild(argv[2], 0);
	if (strcmp(mode, "grandchild-exit") == 0 && argc > 2)
		return grandchild(argv[2], 1);
	fprintf(stderr, "jail-helper: unknown mode '%s'\n", mode);
	return 64;
}
