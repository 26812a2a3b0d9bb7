/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Prints 32 bytes of getrandom(2) in hex: copied into a microVM guest by test-microvm, where
 * no tool calls getrandom (busybox reads /dev/urandom). Static: the guest has no libc. */
#include <stdio.h>
#include <sys/random.h>

int main(void)
{
	unsigned char b[32];
	if (getrandom(b, sizeof(b), 0) != (ssize_t)sizeof(b))
		return 1;
	for (size_t i = 0; i < sizeof(b); i++)
		printf("%02x", b[i]);
	printf("\n");
	return 0;
}
