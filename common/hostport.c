/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "hostport.h"

#include <netdb.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

bool hostport_accepts(const char *host_port)
{
	const char *colon = host_port ? strrchr(host_port, ':') : NULL;
	if (!colon || colon == host_port || (size_t)(colon - host_port) >= 64)
		return false;
	char host[64];
	memcpy(host, host_port, (size_t)(colon - host_port));
	host[colon - host_port] = '\0';
	struct addrinfo hints = { .ai_family = AF_UNSPEC,
				  .ai_socktype = SOCK_STREAM,
				  .ai_flags = AI_NUMERICHOST | AI_NUMERICSERV };
	struct addrinfo *ai = NULL;
	if (getaddrinfo(host, colon + 1, &hints, &ai) != 0)
		return false;
	bool ok = false;
	int fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd >= 0) {
		ok = connect(fd, ai->ai_addr, ai->ai_addrlen) == 0;
		close(fd);
	}
	freeaddrinfo(ai);
	return ok;
}
