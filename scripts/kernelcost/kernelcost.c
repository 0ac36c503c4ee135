// What this machine's kernel charges for the pieces of a relayed statement, as CPU time
// (getrusage: user + system of every process of the probe), not wall time, so that a busy
// machine moves the figures less than it moves a timed run. See scripts/kernelcost.sh.
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sched.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>

static double tv(struct timeval t) { return t.tv_sec + t.tv_usec / 1e6; }
static double self_cpu(void) { struct rusage r; getrusage(RUSAGE_SELF, &r); return tv(r.ru_utime) + tv(r.ru_stime); }
static double children_cpu(void) { struct rusage r; getrusage(RUSAGE_CHILDREN, &r); return tv(r.ru_utime) + tv(r.ru_stime); }
static void pin(int cpu) {
	if (cpu < 0) return;
	cpu_set_t s; CPU_ZERO(&s); CPU_SET(cpu, &s);
	if (sched_setaffinity(0, sizeof s, &s) != 0) { perror("sched_setaffinity"); exit(1); }
}
static void must(int ok, const char *what) { if (!ok) { perror(what); exit(1); } }
static void nodelay(int fd) { int one = 1; setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one); }
static int tcp_listen(int *port) {
	int l = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t n = sizeof a;
	must(l >= 0 && bind(l, (void *)&a, sizeof a) == 0 && getsockname(l, (void *)&a, &n) == 0 && listen(l, 4) == 0, "tcp listen");
	*port = ntohs(a.sin_port);
	return l;
}
static int tcp_dial(int port) {
	int c = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port), .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	must(c >= 0 && connect(c, (void *)&a, sizeof a) == 0, "tcp dial");
	nodelay(c);
	return c;
}
static int tcp_accept(int l) { int s = accept(l, 0, 0); must(s >= 0, "accept"); nodelay(s); return s; }

// One thread sends a request-sized message on one end and receives it on the other, then an
// answer-sized one back: the send path, the receiver's TCP work (on loopback, in the sender's
// softirq) and the copy out, without any wake-up.
static void segments(int n) {
	char buf[256]; memset(buf, 1, sizeof buf);
	int port, l = tcp_listen(&port), c = tcp_dial(port), s = tcp_accept(l);
	double t0 = self_cpu();
	for (int i = 0; i < n; i++) { send(c, buf, 20, 0); recv(s, buf, sizeof buf, 0); send(s, buf, 60, 0); recv(c, buf, sizeof buf, 0); }
	double tcp = (self_cpu() - t0) * 1e6 / (2.0 * n);
	int u[2]; must(socketpair(AF_UNIX, SOCK_STREAM, 0, u) == 0, "socketpair");
	t0 = self_cpu();
	for (int i = 0; i < n; i++) { send(u[0], buf, 20, 0); recv(u[1], buf, sizeof buf, 0); send(u[1], buf, 60, 0); recv(u[0], buf, sizeof buf, 0); }
	double ux = (self_cpu() - t0) * 1e6 / (2.0 * n);
	t0 = self_cpu();
	for (int i = 0; i < 5 * n; i++) syscall(SYS_getppid);
	printf("null system call %.2f us; a message sent and received in one thread: loopback TCP %.2f us, Unix stream %.2f us\n", (self_cpu() - t0) * 1e6 / (5.0 * n), tcp, ux);
}

// Two processes pass one byte back and forth over two pipes: each round trip wakes each once.
static void wake(int n, int ca, int cb) {
	int p1[2], p2[2]; char b = 0;
	must(pipe(p1) == 0 && pipe(p2) == 0, "pipe");
	double c0 = children_cpu(), s0 = self_cpu();
	if (fork() == 0) { pin(cb); for (int i = 0; i < n; i++) { if (read(p1[0], &b, 1) != 1 || write(p2[1], &b, 1) != 1) _exit(1); } _exit(0); }
	pin(ca);
	for (int i = 0; i < n; i++) { if (write(p1[1], &b, 1) != 1 || read(p2[0], &b, 1) != 1) exit(1); }
	wait(0);
	pin(-1);
	cpu_set_t all; CPU_ZERO(&all); for (int i = 0; i < CPU_SETSIZE; i++) CPU_SET(i, &all); sched_setaffinity(0, sizeof all, &all);
	printf("pipe ping-pong, CPUs %s: %.2f us a round trip (two wake-ups and two sleeps)\n", ca < 0 ? "free" : ca == cb ? "the same" : "apart",
		(children_cpu() - c0 + self_cpu() - s0) * 1e6 / n);
}

// A client's request and a server's answer over loopback TCP, direct or through a relay
// process that reads each message and writes it on (blocking calls, one pair; mode 2: the
// relay's leg to the server a Unix socket). CPU of all processes a round trip.
static void chain(int n, int mode, int cc, int cr, int cs) {
	char buf[256]; memset(buf, 1, sizeof buf);
	int sp, sl = tcp_listen(&sp);
	char path[108]; snprintf(path, sizeof path, "/tmp/kernelcost.%d.sock", getpid()); unlink(path);
	struct sockaddr_un ua = {.sun_family = AF_UNIX}; strcpy(ua.sun_path, path);
	int ul = -1;
	if (mode == 2) { ul = socket(AF_UNIX, SOCK_STREAM, 0); must(ul >= 0 && bind(ul, (void *)&ua, sizeof ua) == 0 && listen(ul, 4) == 0, "unix listen"); }
	double c0 = children_cpu();
	if (fork() == 0) {
		pin(cs);
		int s = mode == 2 ? accept(ul, 0, 0) : tcp_accept(sl);
		for (;;) { if (recv(s, buf, sizeof buf, 0) <= 0) _exit(0); send(s, buf, 60, 0); }
	}
	int port = sp;
	if (mode) {
		int rl = tcp_listen(&port);
		if (fork() == 0) {
			pin(cr);
			int a = tcp_accept(rl), b;
			if (mode == 2) { b = socket(AF_UNIX, SOCK_STREAM, 0); must(b >= 0 && connect(b, (void *)&ua, sizeof ua) == 0, "unix dial"); } else b = tcp_dial(sp);
			for (;;) {
				int k = recv(a, buf, sizeof buf, 0); if (k <= 0) _exit(0); send(b, buf, k, 0);
				k = recv(b, buf, sizeof buf, 0); if (k <= 0) _exit(0); send(a, buf, k, 0);
			}
		}
		close(rl);
	}
	if (fork() == 0) {
		pin(cc);
		int c = tcp_dial(port);
		for (int i = 0; i < n; i++) { send(c, buf, 20, 0); recv(c, buf, sizeof buf, 0); }
		_exit(0);
	}
	while (wait(0) > 0) {}
	close(sl); if (ul >= 0) { close(ul); unlink(path); }
	const char *how = mode == 2 ? "relayed, the relay's server leg a Unix socket" : mode ? "relayed" : "direct";
	printf("request/answer %s, %s: %.1f us a round trip\n", how, cc < 0 ? "CPUs free" : "pinned", (children_cpu() - c0) * 1e6 / n);
}

int main(int argc, char **argv) {
	int n = argc > 1 ? atoi(argv[1]) : 20000;
	segments(10 * n);
	wake(n, -1, -1);
	wake(n, 0, 0);
	wake(n, 0, 1);
	chain(n, 0, -1, -1, -1);
	chain(n, 1, -1, -1, -1);
	chain(n, 2, -1, -1, -1);
	chain(n, 0, 0, -1, 1);
	chain(n, 1, 0, 1, 1);
	return 0;
}
