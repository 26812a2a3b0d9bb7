/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "config.h"

#include "ttypeer.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/ioctl.h>
#include <termios.h>

int tty_peer_prepare(int fd, uint16_t *ret_rows, uint16_t *ret_cols)
{
	struct termios t;
	struct winsize ws = { 0 };
	if (tcgetattr(fd, &t) < 0)
		return -errno;
	cfmakeraw(&t);
	if (tcsetattr(fd, TCSANOW, &t) < 0 ||
	    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) < 0)
		return -errno;
	ioctl(fd, TIOCGWINSZ, &ws);
	*ret_rows = ws.ws_row ? ws.ws_row : 24;
	*ret_cols = ws.ws_col ? ws.ws_col : 80;
	return 0;
}
