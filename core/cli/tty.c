/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The user's terminal during `cordon run -t` and `cordon shell`: raw mode (every key goes to
 * the sandbox's own terminal, whose line discipline handles ^C, ^Z and echo for the work),
 * restored on every exit path: after the run, in the stop signals' handler (a second signal
 * kills cordon, so the first restores), and at exit. tcsetattr is async-signal-safe.
 *
 * SIGWINCH: the handler reads the new size and writes one {rows, cols} record to a pipe the
 * library reads (cordon_run_options.tty_resize_fd), which resizes the sandbox's terminal.
 */
#include "config.h"

#include "cli.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

static struct termios saved;
static int raw_fd = -1;
static volatile sig_atomic_t raw_on;
static int winch_pipe[2] = { -1, -1 };
static int size_fd = -1;

void cli_tty_restore(void)
{
	if (!raw_on)
		return;
	tcsetattr(raw_fd, TCSADRAIN, &saved);
	raw_on = 0;
}

static void restore_at_exit(void) { cli_tty_restore(); }

int cli_tty_raw(int fd)
{
	if (!isatty(fd) || tcgetattr(fd, &saved) < 0)
		return 0; /* not a terminal: nothing to change, nothing to restore */
	static bool registered;
	if (!registered && atexit(restore_at_exit) == 0)
		registered = true;
	struct termios raw = saved;
	cfmakeraw(&raw);
	raw_fd = fd;
	raw_on = 1;
	if (tcsetattr(fd, TCSADRAIN, &raw) < 0) {
		raw_on = 0;
		return -errno;
	}
	return 0;
}

/* The terminal's size: stdout's, else stdin's; false when neither is a terminal. */
static bool read_size(uint16_t rc[2])
{
	struct winsize ws;
	int fd = size_fd >= 0 ? size_fd : STDOUT_FILENO;
	if (ioctl(fd, TIOCGWINSZ, &ws) < 0 || !ws.ws_row || !ws.ws_col)
		return false;
	rc[0] = ws.ws_row;
	rc[1] = ws.ws_col;
	return true;
}

static void on_winch(int sig)
{
	(void)sig;
	int e = errno;
	uint16_t rc[2];
	if (read_size(rc) && write(winch_pipe[1], rc, sizeof(rc)) < 0) {
		/* full: the library has older sizes to read, and reads this one next time */
	}
	errno = e;
}

int cli_tty_size_start(uint16_t *ret_rows, uint16_t *ret_cols)
{
	size_fd = isatty(STDOUT_FILENO) ? STDOUT_FILENO : isatty(STDIN_FILENO) ? STDIN_FILENO : -1;
	uint16_t rc[2] = { 0, 0 };
	if (size_fd >= 0)
		read_size(rc);
	*ret_rows = rc[0];
	*ret_cols = rc[1];
	if (size_fd < 0 || pipe2(winch_pipe, O_CLOEXEC | O_NONBLOCK) < 0)
		return -1;
	struct sigaction sa = { .sa_handler = on_winch, .sa_flags = SA_RESTART };
	sigemptyset(&sa.sa_mask);
	sigaction(SIGWINCH, &sa, NULL);
	return winch_pipe[0];
}
