// pingpong: the loopback TCP round trip with no Go runtime and no HTTP (scripts/trino-floor.sh).
// A forked server echoes what a client writes on one TCP_NODELAY connection; the client times N
// round trips of SIZE bytes (after 1,000 that warm up) and prints their p50, p90 and p99 in us.
// SERVER_CPU and CLIENT_CPU pin each side to a CPU (-1: not pinned).
//
//	cc -O2 -o pingpong pingpong.c && ./pingpong 5000 -1 -1 64
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static long long now(void) {
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1000000000LL + t.tv_nsec;
}

static int cmp(const void *a, const void *b) {
	long long x = *(const long long *)a, y = *(const long long *)b;
	return x < y ? -1 : x > y;
}

static void pin(int cpu) {
	if (cpu < 0)
		return;
	cpu_set_t s;
	CPU_ZERO(&s);
	CPU_SET(cpu, &s);
	if (sched_setaffinity(0, sizeof s, &s) != 0)
		perror("sched_setaffinity"), exit(1);
}

int main(int argc, char **argv) {
	if (argc < 4) {
		fprintf(stderr, "usage: pingpong N SERVER_CPU CLIENT_CPU [SIZE]\n");
		return 2;
	}
	int n = atoi(argv[1]), server = atoi(argv[2]), client = atoi(argv[3]);
	int size = argc > 4 ? atoi(argv[4]) : 64, one = 1;
	if (n < 1 || size < 1 || size > 4096) {
		fprintf(stderr, "pingpong: N must be at least 1 and SIZE 1 to 4096\n");
		return 2;
	}
	static char buf[4096];
	memset(buf, 'x', sizeof buf);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t al = sizeof a;
	int l = socket(AF_INET, SOCK_STREAM, 0);
	if (l < 0 || bind(l, (void *)&a, sizeof a) || listen(l, 1) || getsockname(l, (void *)&a, &al))
		perror("listen"), exit(1);
	pid_t p = fork();
	if (p == 0) {
		pin(server);
		int c = accept(l, 0, 0);
		setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
		for (;;) {
			int r = read(c, buf, sizeof buf);
			if (r <= 0 || write(c, buf, r) != r)
				_exit(0);
		}
	}
	pin(client);
	int s = socket(AF_INET, SOCK_STREAM, 0);
	if (connect(s, (void *)&a, sizeof a))
		perror("connect"), exit(1);
	setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
	long long *d = malloc(sizeof *d * n);
	for (int i = 0; i < n + 1000; i++) {
		long long t = now();
		if (write(s, buf, size) != size)
			perror("write"), exit(1);
		for (int got = 0; got < size;) {
			int r = read(s, buf, sizeof buf);
			if (r <= 0)
				perror("read"), exit(1);
			got += r;
		}
		if (i >= 1000)
			d[i - 1000] = now() - t;
	}
	close(s);
	wait(0);
	qsort(d, n, sizeof *d, cmp);
	printf("%.1f %.1f %.1f\n", d[n / 2] / 1e3, d[n * 9 / 10] / 1e3, d[n * 99 / 100] / 1e3);
	return 0;
}
